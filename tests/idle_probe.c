/*
 * idle_probe.c — the CPU an idle shardflow process burns.
 *
 *   idle_probe [MS]
 *
 * sf_init (StarPU with its compute and comm workers, nothing submitted), then MS
 * milliseconds of sleep in the main thread (default 1000), then sf_finalize. Prints
 *   idle_ms <slept> cpu_ms <the process's user + system CPU over the sleep>
 * With StarPU's own blocking drivers the last awake worker spins (a core's worth of
 * CPU); with the StarPU of scripts/build-starpu.sh it sleeps (tests/idle_spin.sh).
 */
#include "shardflow.h"
#include "examples/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double cpu_ms(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return -1.0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: idle_probe [MS] (1..60000, default 1000)\n");
}

int main(int argc, char **argv)
{
	int ms = 1000;
	cli_prog = "idle_probe";
	cli_usage = usage;
	int prc = cli_parse_int_operand(argc, argv, "MS", 1, 60000, &ms);
	if (prc)
		return prc == 1 ? 0 : prc;
	sf_context *ctx = NULL;
	CLI_CHECK_GOTO(sf_init(&argc, &argv, &ctx), fail);
	/* the workers find nothing to do within a few ms: let them settle first */
	struct timespec settle = {0, 100 * 1000 * 1000};
	nanosleep(&settle, NULL);
	double c0 = cpu_ms();
	struct timespec t = {ms / 1000, (ms % 1000) * 1000 * 1000};
	while (nanosleep(&t, &t) != 0)
		;
	double c1 = cpu_ms();
	printf("idle_ms %d cpu_ms %.1f\n", ms, c1 - c0);
	CLI_CHECK_GOTO(sf_finalize(ctx), fail);
	return 0;
fail:
	return 1;
}
