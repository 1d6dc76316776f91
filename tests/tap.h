/*
 * tap.h — a tiny Test Anything Protocol helper for shardflow's C tests.
 *
 * Header-only (static inline functions, so unused ones draw no warning): each test
 * is one .c file and no test helper library is linked.
 * Output is what build-aux/tap-driver.sh reads:
 *   1..N            the plan (plan(n), or printed by done_testing() if no plan was given)
 *   ok 3 - name     a passed check; "not ok 3 - name" a failed one
 *   # text          diagnostics (diag())
 *   1..0 # SKIP why the whole test is skipped (skip_all(), exit status 0: automake's
 *   TAP driver reads the skip from the plan and calls any non-zero status an ERROR)
 * The ok_* macros print file, line and both values when a check fails, so a log
 * alone tells what went wrong.
 */
#ifndef SF_TESTS_TAP_H
#define SF_TESTS_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_planned = -1; /* -1: no plan printed yet */
static int tap_run;
static int tap_failed;

/* Prints the plan; call once, before the first check (or let done_testing() do it). */
static inline void plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

/* Skips the whole test program: TAP's "1..0 # SKIP" plan, exit status 0 (see above). */
static inline void skip_all(const char *reason)
{
	printf("1..0 # SKIP %s\n", reason);
	fflush(stdout);
	exit(0);
}

/* A diagnostic line ("# ..."), on stdout so it stays next to the check it explains. */
__attribute__((format(printf, 1, 2))) static inline void diag(const char *fmt, ...)
{
	va_list ap;
	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

/* One check: prints "ok N - name" or "not ok N - name"; returns cond (0 or 1). */
__attribute__((format(printf, 2, 3))) static inline int ok(int cond, const char *fmt, ...)
{
	va_list ap;
	tap_run++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	return cond != 0;
}

/* Ends the test: prints the plan if none was given, reports a plan mismatch, and
 * returns the exit status for main (0 when every planned check ran and passed). */
static inline int done_testing(void)
{
	if (tap_planned < 0) {
		plan(tap_run);
	} else if (tap_planned != tap_run) {
		diag("planned %d checks but ran %d", tap_planned, tap_run);
		return 1;
	}
	if (tap_failed)
		diag("%d of %d checks failed", tap_failed, tap_run);
	return tap_failed ? 1 : 0;
}

/* The helpers behind the macros below: they know the caller's file and line. */
static inline int tap_int_eq(long long a, long long b, const char *as, const char *bs,
                             const char *name, const char *file, int line)
{
	int c = ok(a == b, "%s", name);
	if (!c)
		diag("  %s:%d: %s == %s: got %lld, expected %lld", file, line, as, bs, a, b);
	return c;
}

static inline int tap_close(double a, double b, double tol, const char *as, const char *bs,
                            const char *name, const char *file, int line)
{
	double d = fabs(a - b);
	int c =
	    ok(isfinite(a) && isfinite(b) && d <= tol, "%s (|diff| %.3g, tol %.3g)", name, d, tol);
	if (!c)
		diag("  %s:%d: %s ~ %s: got %.9g, expected %.9g, |diff| %.3g > tol %.3g", file,
		     line, as, bs, a, b, d, tol);
	return c;
}

static inline int tap_true(int cond, const char *cs, const char *name, const char *file, int line)
{
	int c = ok(cond, "%s", name);
	if (!c)
		diag("  %s:%d: expected %s", file, line, cs);
	return c;
}

/* a == b as integers. */
#define ok_int_eq(a, b, name)                                                                      \
	tap_int_eq((long long)(a), (long long)(b), #a, #b, name, __FILE__, __LINE__)
/* |a - b| <= tol, both finite. */
#define ok_close(a, b, tol, name)                                                                  \
	tap_close((double)(a), (double)(b), (double)(tol), #a, #b, name, __FILE__, __LINE__)
/* cond, printing the condition's text on failure. */
#define ok_true(cond, name) tap_true((cond) != 0, #cond, name, __FILE__, __LINE__)

#endif /* SF_TESTS_TAP_H */
