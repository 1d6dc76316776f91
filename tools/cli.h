/*
 * cli.h — the command line every program of the project parses the same way (tools,
 * examples, tests and benches): options from a table ("--name value", "--name=value",
 * flags, short aliases such as "-o"), operands, strict number parsing, and usage errors
 * printed once (by the launcher's rank 0) as "<prog>: <what>" plus one line pointing at
 * --help, with status 2. libc only: the tools that link nothing of the project
 * (shardflow-run, shardflow-rdb2txt) use it too; examples/cli.h adds what needs the
 * library (the CHECK macros, the runtime's clock). Header-only: each program is one
 * file.
 */
#ifndef SF_TOOLS_CLI_H
#define SF_TOOLS_CLI_H

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Set by the program before parsing: its name and its usage text (--help). */
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
static inline int cli_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v) || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* cli_parse_double into a float. */
static inline int cli_parse_float(const char *s, float lo, float hi, float *out)
{
	double v;
	if (cli_parse_double(s, lo, hi, &v))
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

/* A number option in [lo, hi]: 0, or 2 with a message naming it. */
static inline int cli_double(const char *name, const char *val, double lo, double hi, double *out)
{
	if (cli_parse_double(val, lo, hi, out))
		return cli_bad_usage("%s \"%s\" is invalid: expected a number in [%g, %g]", name,
		                     val, lo, hi);
	return 0;
}

/* A comma-separated list of min..max integers in [lo, hi] (layer widths "784,1024,10"):
 * *n of them in out; 0, or 2 with a message naming the option. */
static inline int cli_int_list(const char *name, const char *val, int lo, int hi, int min, int max,
                               int *out, int *n)
{
	char item[32];
	int64_t v;
	*n = 0;
	for (const char *p = val;; p++) {
		size_t len = strcspn(p, ",");
		snprintf(item, sizeof item, "%.*s", (int)len, p);
		if (*n == max || len >= sizeof item || cli_parse_i64(item, lo, hi, &v))
			break;
		out[(*n)++] = (int)v;
		p += len;
		if (!*p) {
			if (*n >= min)
				return 0;
			break;
		}
	}
	return cli_bad_usage("%s \"%s\" is invalid: expected %d to %d comma-separated integers "
	                     "in %d..%d",
	                     name, val, min, max, lo, hi);
}

/* A positive number of steps: 0, or 2. */
static inline int cli_steps(const char *name, const char *val, int64_t *out)
{
	if (cli_parse_i64(val, 1, INT64_MAX, out))
		return cli_bad_usage("%s \"%s\" is invalid: expected a positive number of steps",
		                     name, val);
	return 0;
}

/* An operand handler's answer that ends the parse: this operand and every argument
 * after it are the program's (a launcher's PROGRAM ARGS..., a database's NAMEs). */
enum { CLI_STOP = 3 };

/* The options of a program: those taking a value (names[k], handled by value(k, val,
 * ctx)) and flags (flags[j], by flag(j, ctx)); both return 0 or 2. A name is "--long"
 * or a short alias ("-o"). */
struct cli_spec {
	const char *const *names;
	int nnames;
	const char *const *flags;
	int nflags;
	int (*value)(int k, char *val, void *ctx);
	int (*flag)(int j, void *ctx);
};

/* A program's operands (arguments that are no option: "-" alone, or any after "--"):
 * operand(argp, ctx) takes *argp (argp points into argv, NULL-terminated) and returns
 * 0, 2 or CLI_STOP. */
typedef int (*cli_operand_fn)(char **argp, void *ctx);

static inline int cli_find(const char *name, const char *const *list, int n)
{
	for (int j = 0; j < n; j++)
		if (!strcmp(name, list[j]))
			return j;
	return -1;
}

static inline int cli_operand(cli_operand_fn operand, char **argp, void *ctx)
{
	if (!operand)
		return cli_bad_usage("unexpected argument \"%s\"", *argp);
	return operand(argp, ctx);
}

/* Parses argv, options anywhere and operands to operand() (NULL: none accepted): 0 ok,
 * 1 --help (or -h) printed, 2 bad usage (printed). */
static inline int cli_parse_operands(int argc, char **argv, const struct cli_spec *sp,
                                     cli_operand_fn operand, void *ctx)
{
	for (int i = 1; i < argc; i++) {
		char *arg = argv[i], *val = NULL, name[64];
		int k, rc;
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			if (cli_launcher_rank() == 0 && cli_usage)
				cli_usage(stdout);
			return 1;
		}
		if (!strcmp(arg, "--")) {
			for (i++; i < argc; i++)
				if ((rc = cli_operand(operand, argv + i, ctx)))
					return rc == CLI_STOP ? 0 : rc;
			return 0;
		}
		if (arg[0] != '-' || !arg[1]) {
			if ((rc = cli_operand(operand, argv + i, ctx)))
				return rc == CLI_STOP ? 0 : rc;
			continue;
		}
		const char *eq = strchr(arg, '=');
		snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		if (eq)
			val = (char *)eq + 1;
		if ((k = cli_find(name, sp->flags, sp->nflags)) >= 0) {
			if (val)
				return cli_bad_usage("%s takes no value", name);
			if ((rc = sp->flag(k, ctx)))
				return rc;
			continue;
		}
		if ((k = cli_find(name, sp->names, sp->nnames)) < 0)
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

/* cli_parse_operands for a program of options alone. */
static inline int cli_parse(int argc, char **argv, const struct cli_spec *sp, void *ctx)
{
	return cli_parse_operands(argc, argv, sp, NULL, ctx);
}

static inline int cli_one_operand(char **argp, void *ctx)
{
	char **slot = ctx;
	if (*slot)
		return cli_bad_usage("unexpected argument \"%s\" (one %s at most)", *argp, slot[1]);
	*slot = *argp;
	return 0;
}

/* A program whose command line is one optional integer operand (a probe's count):
 * *out in [lo, hi], left as it is when absent. 0, 1 (--help printed) or 2. */
static inline int cli_parse_int_operand(int argc, char **argv, const char *name, int lo, int hi,
                                        int *out)
{
	char *slot[2] = {NULL, (char *)name};
	const struct cli_spec sp = {NULL, 0, NULL, 0, NULL, NULL};
	int rc = cli_parse_operands(argc, argv, &sp, cli_one_operand, slot);
	if (rc || !slot[0])
		return rc;
	return cli_int(name, slot[0], lo, hi, out);
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
