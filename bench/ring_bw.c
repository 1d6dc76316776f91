/*
 * ring_bw.c — what the wire gives a ring collective, without StarPU.
 *
 * Runs the communication of one training step of the benchmark MLP as plain MPI:
 * for every unit an all-gather ring (forward), then a reduce-scatter ring per unit in
 * reverse order (backward), each ring step an MPI_Irecv + MPI_Isend pair like
 * comm/comm_mpi.c. The same pattern is timed with three ways of waiting:
 *
 *   whole, polled       one message per ring step, waited for as the comm worker
 *                       does (comm/mpi_wait.h: MPI_Testsome and naps paced by the
 *                       completions, --pace; SHARDFLOW_COMM_CHUNK=0)
 *   whole, MPI_Waitall  the same, waited for by MPI_Waitall (Open MPI busy-polls)
 *   pieces, polled      each ring step cut into pieces of --chunk bytes (default
 *                       61440, SHARDFLOW_COMM_CHUNK's default), up to 64 in flight
 *                       each way, polled as above: the library's ring step
 *
 * and prints, per mode, the median (min-max) step time over --reps repetitions, the
 * bytes one rank sends per step and the resulting rate per direction, next to the
 * line rate given with --rate-mbit. Every rank prints nothing but rank 0.
 *
 *   mpirun -np 2 bench/ring_bw [--widths 784,1024,1024,1024,10] [--reps 15]
 *                              [--chunk BYTES] [--rate-mbit 1000] [--regather]
 *                              [--pace X]
 *
 * --regather adds a second all-gather of the first unit, for backward (what shardflow
 * sent at depth 2 of a 4-unit model before a linear first layer's backward stopped
 * reading parameters). CPU is the process's user + system time per step, on the
 * busier rank.
 */
#include <mpi.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/mpi_wait.h"
#include "tools/cli.h"

#define MAXU 64

enum mode { POLL, WAIT, CHUNK, NMODES };
static const char *mode_name[NMODES] = {"whole, polled", "whole, MPI_Waitall", "pieces, polled"};

static int rank, nranks;
static size_t chunk_bytes = 61440; /* SHARDFLOW_COMM_CHUNK's default */
static double pace = SF_COMM_PACE; /* comm/mpi_wait.h; the library's by default */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* one ring step: send S floats from sbuf to next, receive S floats into rbuf */
static void ring_step(const float *sbuf, float *rbuf, size_t S, enum mode m)
{
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	if (m != WAIT) { /* the library's own ring step, whole (piece 0) or in pieces */
		size_t piece = m == CHUNK ? chunk_bytes / sizeof(float) : 0;
		_sf_ring_exchange(MPI_COMM_WORLD, next, prev, 11, sbuf, rbuf, S, MPI_FLOAT,
		                  sizeof(float), m == CHUNK && piece == 0 ? 1 : piece, pace, 0.0);
		return;
	}
	MPI_Request req[2];
	MPI_Irecv(rbuf, (int)S, MPI_FLOAT, prev, 11, MPI_COMM_WORLD, &req[0]);
	MPI_Isend(sbuf, (int)S, MPI_FLOAT, next, 11, MPI_COMM_WORLD, &req[1]);
	MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
}

static double cpu_now(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ring_bw [--widths W] [--reps N] [--chunk BYTES] [--rate-mbit R] "
	           "[--regather] [--pace X]\n");
}

struct options {
	int w[MAXU + 1], nw, reps, regather;
	double rate_mbit;
};

static const char *const option_names[] = {"--widths", "--reps", "--chunk", "--rate-mbit",
                                           "--pace"};
static const char *const flag_names[] = {"--regather"};

static int on_value(int k, char *val, void *ctx)
{
	struct options *o = ctx;
	int64_t v;
	switch (k) {
	case 0: return cli_int_list("--widths", val, 1, 1 << 20, 2, MAXU + 1, o->w, &o->nw);
	case 1: return cli_int("--reps", val, 1, 1000000, &o->reps);
	case 2:
		if (cli_parse_i64(val, 0, INT64_MAX, &v))
			return cli_bad_usage(
			    "--chunk \"%s\" is invalid: expected a number of bytes >= 0", val);
		chunk_bytes = (size_t)v;
		return 0;
	case 3: return cli_double("--rate-mbit", val, 1e-3, 1e9, &o->rate_mbit);
	default: return cli_double("--pace", val, 0, 1e9, &pace);
	}
}

static int on_flag(int j, void *ctx)
{
	(void)j;
	((struct options *)ctx)->regather = 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = {{784, 1024, 1024, 1024, 10}, 5, 15, 0, 1000};
	const struct cli_spec sp = {option_names, 5, flag_names, 1, on_value, on_flag};
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	cli_prog = "ring_bw";
	cli_usage = usage;
	int prc = cli_parse(argc, argv, &sp, &o);
	if (!prc && nranks < 2)
		prc = cli_bad_usage("needs at least 2 ranks (mpirun -np 2)");
	if (prc) {
		MPI_Finalize();
		return prc == 1 ? 0 : prc;
	}
	int reps = o.reps, regather = o.regather;
	double rate_mbit = o.rate_mbit;
	/* units: one per linear layer, I*O + O parameters, padded to a multiple of N */
	size_t S[MAXU];
	int nu = 0;
	for (int l = 1; l < o.nw; l++) {
		size_t P = (size_t)o.w[l - 1] * (size_t)o.w[l] + (size_t)o.w[l];
		S[nu++] = (P + (size_t)nranks - 1) / (size_t)nranks;
	}
	size_t maxS = 0, sent_floats = 0;
	for (int u = 0; u < nu; u++) {
		maxS = S[u] > maxS ? S[u] : maxS;
		/* all-gather + reduce-scatter: (N-1) blocks each way per collective */
		sent_floats += 2 * (size_t)(nranks - 1) * S[u];
		if (regather && u == 0)
			sent_floats += (size_t)(nranks - 1) * S[u];
	}
	float *full = calloc(maxS * (size_t)nranks, sizeof(float));
	float *scratch = calloc(maxS, sizeof(float));
	double *t = malloc((size_t)reps * NMODES * sizeof(double));
	double *c = malloc((size_t)reps * NMODES * sizeof(double));
	for (int rep = -2; rep < reps; rep++) {
		for (int m = 0; m < NMODES; m++) {
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = now(), c0 = cpu_now();
			for (int u = 0; u < nu; u++)
				for (int k = 0; k < nranks - 1; k++) {
					int sb = (rank - k + nranks) % nranks;
					int rb = (rank - k - 1 + 2 * nranks) % nranks;
					ring_step(full + (size_t)sb * S[u],
					          full + (size_t)rb * S[u], S[u], (enum mode)m);
				}
			for (int u = nu - 1; u >= 0; u--) {
				int reps_u = regather && u == 0 ? 2 : 1;
				for (int g = 0; g < reps_u; g++)
					for (int k = 0; k < nranks - 1; k++) {
						int sb = (rank - k - 1 + 2 * nranks) % nranks;
						ring_step(full + (size_t)sb * S[u], scratch, S[u],
						          (enum mode)m);
					}
			}
			double dt = now() - t0, worst = 0, dc = cpu_now() - c0, cmax = 0;
			MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
			MPI_Reduce(&dc, &cmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
			if (rep >= 0) {
				t[m * reps + rep] = worst;
				c[m * reps + rep] = cmax;
			}
		}
	}
	if (rank == 0) {
		double mb = (double)sent_floats * sizeof(float) / 1e6;
		printf("ranks %d, units %d, %.2f MB sent per rank and step, line %.0f Mbit/s "
		       "(wire time %.1f ms), chunk %zu bytes\n",
		       nranks, nu, mb, rate_mbit, mb * 8 / rate_mbit * 1e3, chunk_bytes);
		printf(
		    "| mode | step ms median (min-max) | Mbit/s per direction | of line rate | CPU "
		    "ms per step (median, busiest rank) |\n");
		printf("| --- | --- | --- | --- | --- |\n");
		for (int m = 0; m < NMODES; m++) {
			double *v = t + m * reps, *cv = c + m * reps;
			qsort(v, (size_t)reps, sizeof(double), cmp_double);
			qsort(cv, (size_t)reps, sizeof(double), cmp_double);
			double med = v[reps / 2];
			double mbit = mb * 8 / med;
			printf("| %s | %.1f (%.1f-%.1f) | %.0f | %.2f | %.1f |\n", mode_name[m],
			       med * 1e3, v[0] * 1e3, v[reps - 1] * 1e3, mbit, mbit / rate_mbit,
			       cv[reps / 2] * 1e3);
		}
	}
	free(full);
	free(scratch);
	free(t);
	free(c);
	MPI_Finalize();
	return 0;
}
