/*
 * cli.h — what the training examples share on their command line and their progress
 * lines: strict number parsing, "--name value" / "--name=value" options from a table,
 * usage errors printed once (by the launcher's rank 0) with status 2, wall time and
 * ETAs. Header-only: each example is one program.
 */
#ifndef SF_EXAMPLES_CLI_H
#define SF_EXAMPLES_CLI_H

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Set by the example before parsing: its name and its usage text. */
static const char *cli_prog = "example";
static void (*cli_usage)(FILE *f);

/* The rank the launcher gave this process (before MPI is up), 0 when not launched by
 * mpirun: only rank 0 prints usage errors. */
static inline int cli_launcher_rank(void)
{
	static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return atoi(v);
	}
	return 0;
}

/* "<prog>: <function> failed: <status>" for a failed call given as its source text:
 * the function's name alone, not its arguments (the library has logged the details,
 * and a user reads no C). */
static inline void cli_call_failed(const char *prog, const char *call, const char *status)
{
	fprintf(stderr, "%s: %.*s failed: %s\n", prog, (int)strcspn(call, "( "), call, status);
}

/* A shardflow call in a function with a `done:` label: on failure, prints
 * "<prog>: <function> failed: <status>" (cli_call_failed) and jumps there. The caller
 * includes shardflow.h. */
#define CLI_CHECK(call)                                                                    \
	do {                                                                                   \
		int rc_ = (call);                                                                  \
		if (rc_ < 0) {                                                                     \
			cli_call_failed(cli_prog, #call, sf_strerror(rc_));                            \
			goto done;                                                                     \
		}                                                                                  \
	} while (0)

/* CLI_CHECK for a call that fails alike on every rank, as sf_init does on a bad
 * SHARDFLOW_* variable (the environment is every rank's): the launcher's rank 0 alone
 * says so, as the library does. */
#define CLI_CHECK_ALIKE(call)                                                              \
	do {                                                                                   \
		int rc_ = (call);                                                                  \
		if (rc_ < 0) {                                                                     \
			if (cli_launcher_rank() == 0)                                                  \
				cli_call_failed(cli_prog, #call, sf_strerror(rc_));                        \
			goto done;                                                                     \
		}                                                                                  \
	} while (0)

/* Prints "<prog>: <message>" and one line pointing at --help (rank 0 only), as GNU
 * tools do: the whole usage after a one-line mistake buried it; returns 2, the status
 * of a bad command line. */
__attribute__((format(printf, 1, 2))) static inline int cli_bad_usage(const char *fmt, ...)
{
	if (cli_launcher_rank() == 0) {
		va_list ap;
		fprintf(stderr, "%s: ", cli_prog);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, "\n");
		if (cli_usage)
			fprintf(stderr, "usage: %s [options]; '%s --help' lists them\n", cli_prog,
			        cli_prog);
	}
	return 2;
}

/* A whole decimal integer in [lo, hi]: 0, or -1 (empty, trailing text, out of range). */
static inline int cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* A finite number in [lo, hi]: 0, or -1. */
static inline int cli_parse_float(const char *s, float lo, float hi, float *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v) || v < lo || v > hi)
		return -1;
	*out = (float)v;
	return 0;
}

/* An int option in [lo, hi]: 0, or the status 2 with a message naming it. */
static inline int cli_int(const char *name, const char *val, int lo, int hi, int *out)
{
	int64_t v;
	if (cli_parse_i64(val, lo, hi, &v))
		return cli_bad_usage("%s \"%s\" is invalid: expected an integer in %d..%d", name,
		                     val, lo, hi);
	*out = (int)v;
	return 0;
}

/* A positive number of steps: 0, or 2. */
static inline int cli_steps(const char *name, const char *val, int64_t *out)
{
	if (cli_parse_i64(val, 1, INT64_MAX, out))
		return cli_bad_usage("%s \"%s\" is invalid: expected a positive number of steps",
		                     name, val);
	return 0;
}

/* The options of a program: those taking a value (names[k], handled by value(k, val,
 * ctx)) and flags (flags[j], by flag(j, ctx)); both return 0 or 2. */
struct cli_spec {
	const char *const *names;
	int nnames;
	const char *const *flags;
	int nflags;
	int (*value)(int k, char *val, void *ctx);
	int (*flag)(int j, void *ctx);
};

/* Parses argv: 0 ok, 1 --help printed, 2 bad usage (printed). */
static inline int cli_parse(int argc, char **argv, const struct cli_spec *sp, void *ctx)
{
	for (int i = 1; i < argc; i++) {
		char *arg = argv[i], *val = NULL, name[64];
		if (!strcmp(arg, "--help")) {
			if (cli_launcher_rank() == 0 && cli_usage)
				cli_usage(stdout);
			return 1;
		}
		if (strncmp(arg, "--", 2) != 0)
			return cli_bad_usage("unexpected argument \"%s\"", arg);
		const char *eq = strchr(arg, '=');
		snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		if (eq)
			val = (char *)eq + 1;
		int k = -1, rc;
		for (int j = 0; j < sp->nflags; j++)
			if (!strcmp(name, sp->flags[j]))
				k = j;
		if (k >= 0) {
			if (val)
				return cli_bad_usage("%s takes no value", name);
			if ((rc = sp->flag(k, ctx)))
				return rc;
			continue;
		}
		for (int j = 0; j < sp->nnames; j++)
			if (!strcmp(name, sp->names[j]))
				k = j;
		if (k < 0)
			return cli_bad_usage("unknown option \"%s\"", name);
		if (!val) {
			if (i + 1 >= argc)
				return cli_bad_usage("option %s needs a value", name);
			val = argv[++i];
		}
		if ((rc = sp->value(k, val, ctx)))
			return rc;
	}
	return 0;
}

/* the runtime's clock: simulated time in a simulation build (docs/scale.md) */
static inline double cli_now(void)
{
	double t = 0;
	sf_clock(&t);
	return t;
}

/* this thread's CPU time, user + system, in ms (0 where the clock is missing) */
static inline double cli_thread_cpu_ms(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* "1h02m" or "3m07s". */
static inline void cli_fmt_eta(double s, char *buf, size_t len)
{
	long t = (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, len, "%ldh%02ldm", t / 3600, (t / 60) % 60);
	else
		snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
}

#endif
