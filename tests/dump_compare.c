/*
 * dump_compare.c — compare two train_dump files (losses and parameters).
 *
 *   dump_compare [--bitwise | --rtol X [--floor F] | --up U --down D [--no-losses]]
 *                [--ignore FROM:TO]... A B
 *
 * --ignore FROM:TO leaves parameters [FROM, TO) out of the comparison (up to 16
 * ranges; the losses and every other parameter are compared). For AdamW on a model
 * with parameters whose true gradient is zero, a GPT's key bias (softmax is invariant
 * to a shift of a query's scores): AdamW scales the rounding noise of their gradient
 * sums up to a step of about lr whose sign depends on the order of the sums, so they
 * differ between differently-summed runs while nothing else does, the loss included
 * (which those parameters cannot change).
 *
 * --bitwise: every loss and every parameter must have the same bits (the prefetch
 * depth and the backward prefetch mode only reorder communication, never arithmetic,
 * so they must not change a single bit). --rtol X (default 1e-5): every relative
 * difference must be <= X.
 *
 * The relative difference of a and b is |a - b| / max(|a|, |b|, F), F = 1e-6 unless
 * --floor says otherwise. The floor keeps values at or near zero (a bias that starts at
 * 0, a weight that crosses zero) from turning rounding noise into a huge ratio: below
 * F in magnitude the test becomes an absolute one, |a - b| <= X F.
 *
 * Why the tests that compare differently-summed runs pass --floor 1e-3: the rounding
 * error of a parameter does not shrink with the parameter. Each update adds about
 * lr x |g| x 1e-7 of absolute noise whatever the value, so after a few steps every
 * parameter carries ~1e-10..1e-9 of it, and one that happens to sit near zero fails a
 * 1e-5 relative test with F = 1e-6 (measured: mlp, AdamW, 4 ranks vs 1, weight
 * 2.83372e-06 vs 2.83314e-06, "relative" 2e-4). With F = 1e-3 the absolute allowance
 * is 1e-8, still 100 to 10000 times below what a real sharding or averaging error
 * changes (a wrong update moves a parameter by lr x |g| ~ 1e-5..1e-3).
 *
 * --up U --down D: the rounding interval (docs/testing.md, "The rounding interval"). U
 * and D are B's run again with SHARDFLOW_ROUNDING=upward and downward: every operation
 * of every CPU worker rounded toward +inf, then toward -inf, the two extremes of the
 * model "each operation errs by at most eps32 of its result" that every derived bound of
 * the suite rests on. A run whose arithmetic differs from B's only by that rounding (the
 * same sums in another order, on other ranks, in other groups) lies within their
 * spread. Checked:
 *  - each step's loss: |a - b| <= w + eps32 max(|a|, |b|);
 *  - the parameters in blocks of SF_INTERVAL_BLOCK consecutive ones (the ignored left
 *    out): ||a - b||_2 <= ||w||_2 + eps32 ||b||_2,
 * where a value's width w is the span of b, u and d: |u - d| where b lies between them,
 * more where it does not (a value whose very direction of change is rounding noise,
 * AdamW's step on a gradient that rounding dominates: the reference is one more
 * sample of that noise, not necessarily between the two directed ones).
 * Blocks, not single values: a single value's spread can close by chance (rounding up
 * and down moved it by the same amount through sums of mixed signs), and a reordered
 * run's one-ulp difference there would fail a per-value test; over 128 neighbours (one
 * tensor's, mostly) the chance cancels. The eps32 term is the compared value's own
 * rounding to float. An interval that is zero everywhere (U = D: the rounding was not
 * applied) fails, whatever A and B. --no-losses leaves the losses out: under bf16 on
 * the wire the directed roundings of a signed sum cancel in the loss (rounding every
 * gradient up shortens half the steps and lengthens the others), so its spread is no
 * bound there (tests/bf16.sh).
 *
 * Prints the number of compared values, the max relative difference and where it
 * occurs (and, with --bitwise, how many values differ). Exit status: 0 equal under the
 * mode, 1 different (including a different number of steps or parameters, and nothing
 * to compare: no loss and no parameter outside the ignored ranges, which no mode calls
 * equal), 2 bad usage or an unreadable / malformed file (the message names the file
 * and problem).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

#define PROG "dump_compare"
#define SF_INTERVAL_BLOCK 128
#define EPS32 5.9604644775390625e-08 /* 2^-24 */
#define DUMP_MAGIC "SFDUMP1\n"

struct dump {
	int64_t nsteps;
	double *losses; /* (nsteps) */
	int64_t nparams;
	float *params; /* (nparams) */
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: " PROG " [--bitwise | --rtol X [--floor F] | --up U --down D [--no-losses]] "
	    "[--ignore FROM:TO]... A B\n"
	    "  relative difference = |a - b| / max(|a|, |b|, F); defaults X = 1e-5, F = 1e-6\n"
	    "  --up U --down D: within B's rounding interval (B's run rounded upward, downward)\n");
}

/* Reads a whole dump; on failure prints "<file>: <problem>" and returns -1. */
static int dump_read(const char *path, struct dump *d)
{
	memset(d, 0, sizeof(*d));
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, PROG ": %s: cannot open: %s\n", path, strerror(errno));
		return -1;
	}
	const char *problem = NULL;
	char magic[8];
	if (fread(magic, 1, 8, f) != 8 || memcmp(magic, DUMP_MAGIC, 8) != 0) {
		problem = "not a train_dump file (bad magic)";
		goto out;
	}
	if (fread(&d->nsteps, sizeof(d->nsteps), 1, f) != 1) {
		problem = "truncated before the step count";
		goto out;
	}
	if (d->nsteps < 0 || d->nsteps > (int64_t)1 << 30) {
		problem = "implausible step count";
		goto out;
	}
	d->losses = malloc(sizeof(double) * ((size_t)d->nsteps + 1));
	if (!d->losses) {
		problem = "out of memory";
		goto out;
	}
	if (fread(d->losses, sizeof(double), (size_t)d->nsteps, f) != (size_t)d->nsteps) {
		problem = "truncated in the losses";
		goto out;
	}
	if (fread(&d->nparams, sizeof(d->nparams), 1, f) != 1) {
		problem = "truncated before the parameter count";
		goto out;
	}
	if (d->nparams < 0 || d->nparams > (int64_t)1 << 34) {
		problem = "implausible parameter count";
		goto out;
	}
	d->params = malloc(sizeof(float) * ((size_t)d->nparams + 1));
	if (!d->params) {
		problem = "out of memory";
		goto out;
	}
	if (fread(d->params, sizeof(float), (size_t)d->nparams, f) != (size_t)d->nparams) {
		problem = "truncated in the parameters";
		goto out;
	}
	if (fgetc(f) != EOF)
		problem = "trailing bytes after the parameters";
	else if (ferror(f))
		problem = "read error";
out:
	fclose(f);
	if (problem) {
		fprintf(stderr, PROG ": %s: %s\n", path, problem);
		free(d->losses);
		free(d->params);
		memset(d, 0, sizeof(*d));
		return -1;
	}
	return 0;
}

static double rel_diff(double a, double b, double floor_)
{
	if (a == b) /* also equal infinities */
		return 0.0;
	if (isnan(a) || isnan(b))
		return INFINITY;
	double scale = fmax(fmax(fabs(a), fabs(b)), floor_);
	return fabs(a - b) / scale;
}

struct worst {
	double rel;
	const char *what;
	int64_t index;
	double a, b;
	int64_t nbits_differ;
};

static void account(struct worst *w, const char *what, int64_t i, double a, double b,
                    int bits_equal, double floor_)
{
	double r = rel_diff(a, b, floor_);
	if (!bits_equal)
		w->nbits_differ++;
	/* ">" keeps the earliest of equal differences (NaN counts as infinite) */
	if (r > w->rel) {
		*w = (struct worst){.rel = r,
		                    .what = what,
		                    .index = i,
		                    .a = a,
		                    .b = b,
		                    .nbits_differ = w->nbits_differ};
	}
}

#define MAX_IGNORE 16

/* "FROM:TO" with 0 <= FROM < TO: 0, or -1. */
static int parse_range(const char *s, int64_t *from, int64_t *to)
{
	char *end;
	errno = 0;
	long long a = strtoll(s, &end, 10);
	if (end == s || *end != ':' || errno || a < 0 || s[0] < '0' || s[0] > '9')
		return -1;
	const char *t = end + 1;
	long long b = strtoll(t, &end, 10);
	if (end == t || *end || errno || b <= a || t[0] < '0' || t[0] > '9')
		return -1;
	*from = a, *to = b;
	return 0;
}

struct options {
	int bitwise, nignore;
	int64_t ig_from[MAX_IGNORE], ig_to[MAX_IGNORE];
	double rtol, floor_;
	char *files[3]; /* A, B */
	int nfiles;
	char *up, *down; /* --up, --down */
	int no_losses;   /* --no-losses: the interval mode leaves the losses out */
};

static const char *const option_names[] = {"--ignore", "--rtol", "--floor", "--up", "--down"};
static const char *const flag_names[] = {"--bitwise", "--no-losses"};

static int on_value(int k, char *val, void *ctx)
{
	struct options *o = ctx;
	if (k == 0) {
		if (o->nignore == MAX_IGNORE ||
		    parse_range(val, &o->ig_from[o->nignore], &o->ig_to[o->nignore]))
			return cli_bad_usage(
			    "--ignore \"%s\" is invalid: expected FROM:TO with 0 <= "
			    "FROM < TO, at most %d of them",
			    val, MAX_IGNORE);
		o->nignore++;
		return 0;
	}
	if (k == 3 || k == 4) {
		*(k == 3 ? &o->up : &o->down) = val;
		return 0;
	}
	const char *opt = option_names[k];
	if (cli_parse_double(val, 0.0, INFINITY, k == 1 ? &o->rtol : &o->floor_))
		return cli_bad_usage("%s \"%s\" is invalid: expected a non-negative number", opt,
		                     val);
	return 0;
}

static int on_flag(int j, void *ctx)
{
	struct options *o = ctx;
	if (j == 0)
		o->bitwise = 1;
	else
		o->no_losses = 1;
	return 0;
}

static int on_operand(char **argp, void *ctx)
{
	struct options *o = ctx;
	if (o->nfiles == 2)
		return cli_bad_usage("unexpected argument \"%s\": two dumps, A and B, are compared",
		                     *argp);
	o->files[o->nfiles++] = *argp;
	return 0;
}

static int ignored(const struct options *o, int64_t k)
{
	for (int r = 0; r < o->nignore; r++)
		if (k >= o->ig_from[r] && k < o->ig_to[r])
			return 1;
	return 0;
}

static void dumps_free(struct dump *d, int n)
{
	for (int i = 0; i < n; i++) {
		free(d[i].losses);
		free(d[i].params);
	}
}

/* The worst ratio of a difference to its interval: the one that decides */
struct iworst {
	double ratio, diff, tol;
	const char *what;
	int64_t index; /* the step, or the block's first parameter */
};

static void iaccount(struct iworst *w, const char *what, int64_t i, double diff, double tol)
{
	double r = diff == 0.0 ? 0.0 : tol > 0.0 ? diff / tol : INFINITY;
	if (isnan(diff))
		r = INFINITY;
	if (r > w->ratio)
		*w = (struct iworst){r, diff, tol, what, i};
}

/* The interval's width at one value: the span of the reference and its two directed
 * twins (see the top) */
static double hull(double b, double u, double d)
{
	return fmax(b, fmax(u, d)) - fmin(b, fmin(u, d));
}

/* --up U --down D: A against B within B's rounding interval (see the top) */
static int interval_main(const struct options *o)
{
	const char *path[4] = {o->files[0], o->files[1], o->up, o->down};
	struct dump d[4];
	int n = 0;
	for (; n < 4; n++)
		if (dump_read(path[n], &d[n])) {
			dumps_free(d, n);
			return 2;
		}
	for (int i = 1; i < 4; i++)
		if (d[i].nsteps != d[0].nsteps || d[i].nparams != d[0].nparams) {
			printf("shapes differ: %s has %lld steps and %lld parameters, %s has %lld "
			       "steps and %lld parameters\n",
			       path[0], (long long)d[0].nsteps, (long long)d[0].nparams, path[i],
			       (long long)d[i].nsteps, (long long)d[i].nparams);
			dumps_free(d, 4);
			return 1;
		}
	const struct dump *a = &d[0], *b = &d[1], *u = &d[2], *dn = &d[3];
	struct iworst w = {0.0, 0.0, 0.0, "nothing", -1};
	double width = 0.0; /* the largest spread: 0 means U = D */
	for (int64_t k = 0; k < (o->no_losses ? 0 : a->nsteps); k++) {
		double sp = hull(b->losses[k], u->losses[k], dn->losses[k]);
		width = fmax(width, sp);
		iaccount(&w, "loss", k, fabs(a->losses[k] - b->losses[k]),
		         sp + EPS32 * fmax(fabs(a->losses[k]), fabs(b->losses[k])));
	}
	int64_t compared = 0, nblocks = 0, first = -1;
	double dd = 0.0, ww = 0.0, bb = 0.0;
	int inblock = 0;
	for (int64_t k = 0; k <= a->nparams; k++) {
		if (k < a->nparams && ignored(o, k))
			continue;
		if (inblock == SF_INTERVAL_BLOCK || (k == a->nparams && inblock)) {
			iaccount(&w, "parameter block from", first, sqrt(dd),
			         sqrt(ww) + EPS32 * sqrt(bb));
			nblocks++;
			dd = ww = bb = 0.0, inblock = 0;
		}
		if (k == a->nparams)
			break;
		double x = (double)a->params[k] - b->params[k];
		double s = hull(b->params[k], u->params[k], dn->params[k]);
		width = fmax(width, fabs(s));
		if (!inblock)
			first = k;
		dd += x * x, ww += s * s, bb += (double)b->params[k] * b->params[k];
		inblock++, compared++;
	}
	int64_t nlosses = o->no_losses ? 0 : a->nsteps;
	printf("compared %lld losses and %lld parameters (%lld blocks of up to %d",
	       (long long)nlosses, (long long)compared, (long long)nblocks, SF_INTERVAL_BLOCK);
	if (compared != a->nparams)
		printf(", %lld ignored", (long long)(a->nparams - compared));
	printf(") within the rounding interval of %s (%s, %s)\n", path[1], path[2], path[3]);
	int status = 0;
	if (nlosses + compared == 0) {
		printf("nothing compared: no loss and no parameter outside the ignored ranges\n");
		status = 1;
	} else if (width == 0.0) {
		printf("the interval is empty: %s and %s are the same run (was SHARDFLOW_ROUNDING "
		       "upward and downward given to them?)\n",
		       path[2], path[3]);
		status = 1;
	} else {
		status = w.ratio <= 1.0 ? 0 : 1;
		if (w.index < 0)
			printf("no value differs: within\n");
		else
			printf("largest difference over its interval: %.3g at %s %lld (%.3g over "
			       "%.3g): "
			       "%s\n",
			       w.ratio, w.what, (long long)w.index, w.diff, w.tol,
			       status ? "OUTSIDE" : "within");
	}
	dumps_free(d, 4);
	return status;
}

int main(int argc, char **argv)
{
	static struct options o = {.rtol = 1e-5, .floor_ = 1e-6};
	const struct cli_spec sp = {option_names, 5, flag_names, 2, on_value, on_flag};
	cli_prog = PROG;
	cli_usage = usage;
	int prc = cli_parse_operands(argc, argv, &sp, on_operand, &o);
	if (!prc && o.nfiles != 2)
		prc = cli_bad_usage("two dumps to compare, A and B, expected (got %d)", o.nfiles);
	if (!prc && !o.up != !o.down)
		prc = cli_bad_usage("--up and --down go together: the reference's run rounded "
		                    "upward and downward");
	if (!prc && o.no_losses && !o.up)
		prc = cli_bad_usage("--no-losses goes with --up and --down");
	if (!prc && o.up && o.bitwise)
		prc = cli_bad_usage("--bitwise and --up/--down are two modes: give one");
	if (prc)
		return prc == 1 ? 0 : prc;
	if (o.up)
		return interval_main(&o);
	int bitwise = o.bitwise, nignore = o.nignore;
	const int64_t *ig_from = o.ig_from, *ig_to = o.ig_to;
	double rtol = o.rtol, floor_ = o.floor_;
	const char *pa = o.files[0], *pb = o.files[1];
	struct dump a, b;
	if (dump_read(pa, &a))
		return 2;
	if (dump_read(pb, &b)) {
		free(a.losses);
		free(a.params);
		return 2;
	}

	int status = 0;
	if (a.nsteps != b.nsteps || a.nparams != b.nparams) {
		printf("shapes differ: %s has %lld steps and %lld parameters, %s has %lld steps "
		       "and %lld parameters\n",
		       pa, (long long)a.nsteps, (long long)a.nparams, pb, (long long)b.nsteps,
		       (long long)b.nparams);
		status = 1;
	} else {
		struct worst w = {.rel = 0.0, .what = "nothing", .index = -1};
		for (int64_t k = 0; k < a.nsteps; k++)
			account(&w, "loss", k, a.losses[k], b.losses[k],
			        !memcmp(&a.losses[k], &b.losses[k], sizeof(double)), floor_);
		int64_t nparams = 0;
		for (int64_t k = 0; k < a.nparams; k++) {
			int skip = 0;
			for (int r = 0; r < nignore; r++)
				skip |= k >= ig_from[r] && k < ig_to[r];
			if (skip)
				continue;
			account(&w, "param", k, a.params[k], b.params[k],
			        !memcmp(&a.params[k], &b.params[k], sizeof(float)), floor_);
			nparams++;
		}
		int64_t total = a.nsteps + nparams;
		printf("compared %lld values (%lld losses, %lld parameters", (long long)total,
		       (long long)a.nsteps, (long long)nparams);
		if (nparams != a.nparams)
			printf(", %lld ignored", (long long)(a.nparams - nparams));
		printf("): max relative difference %.3g", w.rel);
		if (w.index >= 0)
			printf(" at %s %lld (%.9g vs %.9g)", w.what, (long long)w.index, w.a, w.b);
		printf("\n");
		if (total == 0) {
			/* two empty dumps (or everything ignored) are "equal" only vacuously: a
			 * run that wrote nothing must not pass for one that trained the same */
			printf("nothing compared: %s and %s hold no loss and no parameter outside "
			       "the ignored ranges\n",
			       pa, pb);
			status = 1;
		} else if (bitwise) {
			printf("bitwise: %lld of %lld values differ\n", (long long)w.nbits_differ,
			       (long long)total);
			status = w.nbits_differ ? 1 : 0;
		} else {
			status = w.rel <= rtol ? 0 : 1; /* NaN compares false: different */
			printf("rtol %.3g, floor %.3g: %s\n", rtol, floor_,
			       status ? "DIFFERENT" : "equal");
		}
	}
	free(a.losses);
	free(a.params);
	free(b.losses);
	free(b.params);
	return status;
}
