/*
 * grad_check.c — proves that the gradient a whole model computes through the library
 * is the derivative of its loss, for a model with every feature of the planner: the
 * "gpt" model of tests/test_models.h, a small GPT with integer token ids
 * (sf_graph_int_input), a learned position embedding and a sequence dimension (T = 5
 * rows per sample), units of several nodes (sf_graph_unit_begin) each a transformer
 * block (layernorms and causal self-attention of 2 heads: saved buffers), and an output
 * head tied to the token embedding's matrix (sf_graph_layer_tied: the matrix's gradient
 * is the sum of both uses).
 *
 * The gradient: one SGD step with lr 1, no momentum, no weight decay, from p0 gives
 * p1 = p0 - g, so g = p0 - p1. The loss: sf_model_predict's logits, with the
 * softmax cross-entropy computed here in double. Central differences D(h) (h = 3e-3)
 * and D(2h) of the loss on the parameter, set through a safetensors file (export once,
 * patch the float in the file, import). Parameters are sampled over the whole flat
 * vector (the embedding matrix that the head reads too, every block's linears) plus
 * named ones: the first block's layernorm weight and bias, weights of the q, k and v
 * parts of its QKV projection in both heads (the attention's three gradients), a q
 * bias and a k bias (whose gradient is 0: softmax ignores the q.b_k that every score of
 * a query gets), an attention output projection weight, a used row of the position
 * embedding and an unused one (t >= T: gradient 0). The loss of the step
 * (sf_model_loss) must also equal the loss computed here from the logits at p0
 * (relative 1e-5: derived, docs/testing.md).
 *
 * The bound, per parameter, derived from the run's own float32 rounding (no constant
 * measured on one CPU, docs/testing.md "Tolerances"): tests/grad_check.sh runs this
 * program three times, with every CPU worker rounding upward, then downward
 * (SHARDFLOW_ROUNDING; each writes what it measured: --dump), then to nearest, the run
 * checked (--up, --down: it reads the two others). How far a value moves between the
 * upward and the downward run (its rounding interval) bounds how far the rounding of
 * each operation moved it. The perturbed values p0 +- h, p0 +- 2h are made here on the
 * main thread, which rounds to nearest in every run: the three runs evaluate the same
 * floats (checked). |D(h) - g| <= G + R + T + S, with
 *   G  the gradient's rounding: the width of its interval, |g_up - g_down| (the span
 *      of g, g_up and g_down where g lies outside: docs/testing.md, "The rounding
 *      interval"), + eps32 (|g| + |p1|) (one rounding of g, one of p1 = p0 - g);
 *   R  the difference's rounding: (w(p + h) + w(p - h)) / 2h, w the width of a loss's
 *      interval plus the double cross-entropy's own rounding (loss_at: on the main
 *      thread, not bracketed, ~1e-15). A loss is a signed sum whose interval could
 *      close by chance; here it is ~3.5e-8 where the nearest run's losses carry ~1e-9
 *      of noise into the difference, ~2e-9 (below);
 *   T  the truncation, from the difference at 2h (Richardson, as tests/test_kernels_fd.c's
 *      check_fd_derived): D(a) = L' + c a^2 + d a^4, so |c h^2| <= (|D(2h) - D(h)| + both
 *      differences' R + both shifts) / 3, and D(h) - L' = c h^2 + d h^4. The d terms
 *      left out (6 |d| h^4 against the estimate: Richardson's own remainder) are a
 *      property of the loss, the same on every CPU, and small beside R: without the
 *      interval (tests/mutants/rounding-not-applied.patch, R = 0) |D(h) - g| exceeds
 *      G + T by at most 6e-7 (the largest gradient, 0.072, whose c h^2 is 1.7e-5;
 *      3.7e-7 elsewhere), the d terms and the nearest run's own rounding of the
 *      losses together, 0.05 of R (a second-order difference at h = 1e-2 was 1.3 %
 *      off on one weight: the embedding's weights are ~0.02 and a layernorm follows);
 *   S  the midpoint's shift: the floats p0 +- h need not be symmetric about p0, so D is
 *      the derivative at p0 + s; |L''| |s|, |L''| from the second difference of L(p0),
 *      L(p0 +- h) with its rounding.
 * The bounds come out at 1.6e-5 to 3.4e-5 (R ~1.2e-5 everywhere: a loss's interval is
 * ~3.5e-8 of 2.8); the measured |D(h) - g| is at most 0.51 of its bound (the largest
 * gradient, 0.072), a mean 0.03. A gradient 1e-3 of itself too large fails on that
 * entry (tests/mutants/pos-embedding-dw-scaled.patch, 2.6x its bound).
 *
 * One rank: the N-rank runs are compared with this one by tests/units.sh.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "examples/synthetic.h"
#include "shardflow.h"
#include "tests/tap.h"
#include "tests/test_models.h"

#define PROG "grad_check"
#define BATCH 4
#define EPS 3e-3f
#define NSPREAD 24
#define NNAMED 11
#define NSAMPLES (NSPREAD + NNAMED)

struct run {
	sf_model *m;
	int D, C, T, rows;
	float *x, *logits;
	int32_t *labels, *ids;
	struct sf_batch batch;
	const float *xin;
	const int32_t *idin;
	char path[256], ppath[300];
	unsigned char *file; /* the exported safetensors file */
	size_t file_len, data0;
};

/* Mean softmax cross-entropy of the model's logits at its current parameters; *err
 * (when not NULL): this double computation's own rounding on the main thread, which
 * SHARDFLOW_ROUNDING leaves to nearest (only the logits come from the workers): per
 * row, C exponentials and their sum (C + 2 units of 2^-53 of s, so of log s), the log
 * and the two terms added (3 units of their magnitudes), then the mean's 20 additions. */
static int loss_at(struct run *r, double *loss, double *err)
{
	int rc = sf_model_predict(r->m, &r->batch, r->logits);
	if (rc != SF_OK)
		return rc;
	double sum = 0.0, e = 0.0, mag = 0.0;
	for (int i = 0; i < r->rows; i++) {
		const float *z = r->logits + (size_t)i * r->C;
		double mx = z[0], s = 0.0;
		for (int c = 1; c < r->C; c++)
			mx = z[c] > mx ? z[c] : mx;
		for (int c = 0; c < r->C; c++)
			s += exp((double)z[c] - mx);
		double li = log(s) + mx - z[r->labels[i]];
		sum += li;
		mag += fabs(li);
		e += (r->C + 2 + 3 * (fabs(log(s)) + fabs(mx) + fabs((double)z[r->labels[i]]))) *
		     0x1p-53;
	}
	*loss = sum / r->rows;
	if (err)
		*err = (e + (r->rows + 1) * 0x1p-53 * mag) / r->rows;
	return SF_OK;
}

/* Imports the exported file with parameter k set to v (k < 0: unchanged). */
static int set_param(struct run *r, long k, float v)
{
	unsigned char *buf = malloc(r->file_len);
	if (!buf)
		return SF_ERR_NOMEM;
	memcpy(buf, r->file, r->file_len);
	if (k >= 0)
		memcpy(buf + r->data0 + (size_t)k * sizeof(float), &v, sizeof v);
	FILE *f = fopen(r->ppath, "wb");
	int ok_write = f && fwrite(buf, 1, r->file_len, f) == r->file_len;
	if (f && fclose(f) != 0)
		ok_write = 0;
	free(buf);
	if (!ok_write)
		return SF_ERR_IO;
	return sf_model_import_safetensors(r->m, r->ppath);
}

static int read_export(struct run *r)
{
	FILE *f = fopen(r->path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	r->file = malloc((size_t)n);
	int good = r->file && fread(r->file, 1, (size_t)n, f) == (size_t)n;
	fclose(f);
	if (!good || n < 8)
		return -1;
	uint64_t hl = 0;
	for (int i = 7; i >= 0; i--)
		hl = hl << 8 | r->file[i];
	r->file_len = (size_t)n;
	r->data0 = 8 + (size_t)hl;
	return 0;
}

/* The flat vector, units in graph order, each node's W then b: unit "embed" holds the
 * token embedding (V, C) then the position embedding (NP, C); each block ln_1 (w, b),
 * c_attn (W (3C, C), b (3C)), c_proj (W (C, C), b (C)), ln_2, c_fc, the MLP's c_proj. */
#define EMB_POS ((long)GPT_V * GPT_C)
#define BLOCK0 (EMB_POS + (long)GPT_NP * GPT_C)
#define QKV_W(b) (BLOCK0 + (b) * BLOCK_SIZE + 2 * GPT_C)
#define QKV_B(b) (QKV_W(b) + 3L * GPT_C * GPT_C)
#define PROJ_W(b) (QKV_B(b) + 3L * GPT_C)
#define BLOCK_SIZE                                                                                 \
	(2L * GPT_C + 3L * GPT_C * (GPT_C + 1) + (long)GPT_C * (GPT_C + 1) + 2L * GPT_C +          \
	 (long)GPT_MLP * (GPT_C + 1) + (long)GPT_C * (GPT_MLP + 1))

/* Parameter indices to check: NSPREAD evenly spread over the flat vector, from its
 * first (the embedding's weight, which the tied head reads too) to its last, then the
 * named ones. */
static long sample(int i, size_t n)
{
	const long C = GPT_C;
	switch (i - NSPREAD) {
	case 0: return BLOCK0 + 5;                      /* h0.ln_1 weight[5] */
	case 1: return BLOCK0 + C + 7;                  /* h0.ln_1 bias[7] */
	case 2: return QKV_W(0) + 3 * C + 5;            /* h0.attn.c_attn: q row 3 (head 0) */
	case 3: return QKV_W(0) + (C + 12) * C + 7;     /* k row 12 (head 1) */
	case 4: return QKV_W(0) + (2 * C + 2) * C + 1;  /* v row 2 (head 0) */
	case 5: return QKV_W(0) + (2 * C + 13) * C + 4; /* v row 13 (head 1) */
	case 6: return QKV_B(0) + 9;                    /* q bias 9 (head 1) */
	case 7: return QKV_B(0) + C + 3;                /* k bias 3: gradient 0 */
	case 8: return PROJ_W(1) + 3 * C + 9;           /* h1.attn.c_proj */
	case 9: return EMB_POS + 2 * C + 3;             /* wpe: row t = 2 < T */
	case 10: return EMB_POS + 6 * C + 1;            /* wpe: row t = 6 >= T, gradient 0 */
	}
	return (long)((uint64_t)i * (n - 1) / (NSPREAD - 1));
}

/* What one run measured of a sampled parameter k: its value p0 and after the step p1
 * (the gradient is p0 - p1), the loss L0 at p0, and at the four perturbed values x[j]
 * (p0 + h, p0 - h, p0 + 2h, p0 - 2h as floats) the loss L[j] and its double rounding
 * e[j] (loss_at). Written by --dump, one line a parameter. */
struct meas {
	long k;
	double p0, p1, l0, e0, x[4], L[4], e[4];
};

static const float step_of[4] = {EPS, -EPS, 2 * EPS, -2 * EPS};

static int write_meas(const char *path, const struct meas *m)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	for (int i = 0; i < NSAMPLES; i++) {
		fprintf(f, "%ld %.17g %.17g %.17g", m[i].k, m[i].p0, m[i].p1, m[i].l0);
		for (int j = 0; j < 4; j++)
			fprintf(f, " %.17g %.17g", m[i].x[j], m[i].L[j]);
		fputc('\n', f);
	}
	return fclose(f) == 0 ? 0 : -1;
}

static int read_meas(const char *path, struct meas *m)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, PROG ": cannot read %s\n", path);
		return -1;
	}
	int good = 1;
	for (int i = 0; i < NSAMPLES && good; i++) {
		good = fscanf(f, "%ld %lf %lf %lf", &m[i].k, &m[i].p0, &m[i].p1, &m[i].l0) == 4;
		for (int j = 0; j < 4 && good; j++)
			good = fscanf(f, "%lf %lf", &m[i].x[j], &m[i].L[j]) == 2;
	}
	fclose(f);
	if (!good)
		fprintf(stderr, PROG ": %s: expected %d lines of 12 numbers (written by --dump)\n",
		        path, NSAMPLES);
	return good ? 0 : -1;
}

/* The central difference at step j (0: h, 1: 2h) over the floats the run held: D, the
 * half step a and the midpoint's shift s from p0, and its rounding R from the losses'
 * rounding w[] (each loss's own interval plus its double rounding), over 2a. */
struct diff {
	double d, a, s, r;
};

static struct diff diff_at(const struct meas *m, int j, const double *w)
{
	struct diff x;
	double up = m->x[2 * j] - m->p0, dn = m->p0 - m->x[2 * j + 1]; /* exact */
	x.a = (up + dn) / 2, x.s = (up - dn) / 2;
	x.d = (m->L[2 * j] - m->L[2 * j + 1]) / (2 * x.a);
	x.r = (w[2 * j] + w[2 * j + 1]) / (2 * x.a);
	return x;
}

/* The width of a value's rounding interval: the span of the run's value and its two
 * twins' (as tests/dump_compare.c's --up/--down), |up - down| where the run's lies
 * between them, more where it does not. */
static double span3(double a, double up, double down)
{
	return fmax(a, fmax(up, down)) - fmin(a, fmin(up, down));
}

/* The derived bound on |D(h) - g| for one parameter, from the run (m) and the same
 * run rounded upward (u) and downward (v): tol, and its parts for the diagnostics. */
struct bound {
	double g, d, tol, grad, fd, trunc, shift;
};

static struct bound derive(const struct meas *m, const struct meas *u, const struct meas *v)
{
	const double eps32 = 0x1p-24;
	struct bound b;
	double w[4], w0 = span3(m->l0, u->l0, v->l0) + m->e0;
	for (int j = 0; j < 4; j++)
		w[j] = span3(m->L[j], u->L[j], v->L[j]) + m->e[j];
	struct diff d1 = diff_at(m, 0, w), d2 = diff_at(m, 1, w);
	double up = m->x[0] - m->p0, dn = m->p0 - m->x[1];
	/* |L''| near p0: the second divided difference over p0 - dn, p0, p0 + up, with its
	 * rounding, to first order (it only scales the midpoint shifts, ~1e-9) */
	double s2 = 2 * ((m->L[0] - m->l0) / up - (m->l0 - m->L[1]) / dn) / (up + dn);
	double r2 = 2 * ((w[0] + w0) / up + (w0 + w[1]) / dn) / (up + dn);
	double lpp = fabs(s2) + r2;
	b.g = m->p0 - m->p1;
	b.d = d1.d;
	/* the gradient's rounding: its interval, and one rounding of g and of p1 = p0 - g */
	b.grad = span3(b.g, u->p0 - u->p1, v->p0 - v->p1) + eps32 * (fabs(b.g) + fabs(m->p1));
	b.fd = d1.r;
	b.trunc = (fabs(d2.d - d1.d) + d1.r + d2.r + lpp * (fabs(d1.s) + fabs(d2.s))) /
	          ((d2.a * d2.a) / (d1.a * d1.a) - 1);
	b.shift = lpp * fabs(d1.s);
	b.tol = b.grad + b.fd + b.trunc + b.shift;
	return b;
}

/* The command line: --dump FILE or --up FILE --down FILE. */
static int parse_args(int argc, char **argv, const char **dump, const char **up,
                      const char **down)
{
	for (int i = 1; i < argc; i++) {
		const char **to = !strcmp(argv[i], "--dump") ? dump
		                  : !strcmp(argv[i], "--up") ? up
		                  : !strcmp(argv[i], "--down") ? down
		                                               : NULL;
		if (!to || i + 1 >= argc) {
			fprintf(stderr,
			        PROG ": %s %s: accepted: --dump FILE (write what this run "
			        "measured), or --up FILE --down FILE (the same run's dumps rounded "
			        "upward and downward: check this run within their interval)\n",
			        argv[i], to ? "needs a FILE" : "is not an option");
			return -1;
		}
		*to = argv[++i];
	}
	if (!*dump == !(*up && *down) || (*dump && (*up || *down))) {
		fprintf(stderr, PROG ": give either --dump FILE or both --up FILE and --down FILE "
		                     "(tests/grad_check.sh runs all three)\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	sf_context *ctx = NULL;
	cli_prog = PROG; /* the name in CLI_CHECK_GOTO's messages */
	sf_graph *g = NULL;
	struct run r = {0};
	float *p0 = NULL, *p1 = NULL;
	int64_t ticket;
	double step_loss = 0;
	size_t n = 0;
	const char *dump = NULL, *upf = NULL, *downf = NULL;
	static struct meas m[NSAMPLES], mu[NSAMPLES], md[NSAMPLES];

	if (parse_args(argc, argv, &dump, &upf, &downf))
		return 2;
	if (!dump && (read_meas(upf, mu) || read_meas(downf, md)))
		return 1;
	if (sf_init(&argc, &argv, &ctx) != SF_OK || build_model(MODEL_GPT, &g, &r.D, &r.C, &r.T))
		goto fail;
	struct sf_model_options o;
	sf_model_options_init(&o);
	o.batch = BATCH;
	o.lr = 1.0f;
	o.momentum = 0.0f;
	if (sf_model_create(ctx, g, &o, &r.m) != SF_OK)
		goto fail;
	r.rows = BATCH * r.T;
	r.x = malloc(sizeof(float) * (size_t)r.rows * r.D);
	r.labels = malloc(sizeof(int32_t) * (size_t)r.rows);
	r.ids = malloc(sizeof(int32_t) * (size_t)r.rows);
	r.logits = malloc(sizeof(float) * (size_t)r.rows * r.C);
	snprintf(r.path, sizeof r.path, "%s/grad_check.%d.safetensors",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	snprintf(r.ppath, sizeof r.ppath, "%s.patched", r.path);
	if (!r.x || !r.labels || !r.ids || !r.logits ||
	    fill_batch(MODEL_GPT, 7, 1, 0, r.rows, r.D, r.C, r.x, r.ids, r.labels, &r.batch,
	               &r.xin, &r.idin))
		goto fail;
	if (sf_model_param_count(r.m, &n) != SF_OK)
		goto fail;
	p0 = malloc(sizeof(float) * n);
	p1 = malloc(sizeof(float) * n);
	if (!p0 || !p1 || sf_model_params_get(r.m, p0, n) != SF_OK)
		goto fail;
	if (sf_model_export_safetensors(r.m, r.path) != SF_OK || read_export(&r))
		goto fail;

	/* the measurements: the perturbed values are computed here on the main thread
	 * (rounding to nearest in every run), so the three runs evaluate the same floats */
	for (int i = 0; i < NSAMPLES; i++) {
		long k = sample(i, n);
		m[i].k = k;
		m[i].p0 = p0[k];
		for (int j = 0; j < 4; j++) {
			float xj = p0[k] + step_of[j];
			m[i].x[j] = xj;
			if (set_param(&r, k, xj) || loss_at(&r, &m[i].L[j], &m[i].e[j]))
				goto fail;
		}
	}
	double l0, e0;
	if (set_param(&r, -1, 0) || loss_at(&r, &l0, &e0))
		goto fail;
	if (!dump) {
		plan(NSAMPLES + 6);
		/* the position embedding's tensor: its name, shape and place in the flat vector */
		char want[160];
		snprintf(want, sizeof want,
		         "\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%ld,%ld]}",
		         GPT_NP, GPT_C, EMB_POS * 4, BLOCK0 * 4);
		ok(memmem(r.file + 8, r.data0 - 8, want, strlen(want)) != NULL,
		   "the safetensors file holds %s", want);
		ok(n == (size_t)(BLOCK0 + GPT_N * BLOCK_SIZE),
		   "the model has the %ld parameters the named offsets assume (%zu)",
		   BLOCK0 + GPT_N * BLOCK_SIZE, n);
		int32_t keep = r.ids[1];
		r.ids[1] = r.D + 3; /* out of the vocabulary */
		int brc = sf_model_step(r.m, &r.batch, &ticket);
		ok(brc == SF_ERR_INVALID && strstr(sf_last_error(), "id of \"tok\"") &&
		       strstr(sf_last_error(), "[0, 16)"),
		   "a token id outside the vocabulary is refused before anything is submitted (%s)",
		   sf_last_error());
		r.ids[1] = keep;
	}
	if (sf_model_step(r.m, &r.batch, &ticket) || sf_model_loss(r.m, ticket, &step_loss) ||
	    sf_model_params_get(r.m, p1, n))
		goto fail;
	for (int i = 0; i < NSAMPLES; i++)
		m[i].p1 = p1[m[i].k], m[i].l0 = l0, m[i].e0 = e0;
	if (dump) {
		if (write_meas(dump, m)) {
			fprintf(stderr, PROG ": cannot write %s\n", dump);
			goto fail;
		}
		goto out;
	}
	ok(fabs(step_loss - l0) <= 1e-5 * fabs(l0),
	   "the step's loss equals the cross-entropy of the predicted logits (%.9g vs %.9g)",
	   step_loss, l0);
	int same = 1;
	for (int i = 0; i < NSAMPLES; i++) {
		same = same && mu[i].k == m[i].k && md[i].k == m[i].k && mu[i].p0 == m[i].p0 &&
		       md[i].p0 == m[i].p0;
		for (int j = 0; j < 4; j++)
			same = same && mu[i].x[j] == m[i].x[j] && md[i].x[j] == m[i].x[j];
	}
	ok(same, "the upward and downward runs perturbed the same %d parameters from the same "
	         "values to the same floats", NSAMPLES);
	double worst = 0, sum_ratio = 0;
	for (int i = 0; i < NSAMPLES; i++) {
		struct bound b = derive(&m[i], &mu[i], &md[i]);
		double err = fabs(b.d - b.g), ratio = err / fmax(b.tol, 1e-300);
		worst = fmax(worst, ratio), sum_ratio += ratio;
		ok(ratio <= 1.0,
		   "parameter %ld: gradient %.6g, finite difference %.6g (|diff| %.2e, bound %.2e: "
		   "gradient %.1e, FD rounding %.1e, truncation %.1e, shift %.1e)",
		   m[i].k, b.g, b.d, err, b.tol, b.grad, b.fd, b.trunc, b.shift);
	}
	ok(worst <= 1.0, "every sampled parameter within its derived bound (worst |diff| / bound "
	                 "%.3f, mean %.3f)",
	   worst, sum_ratio / NSAMPLES);
out:
	remove(r.path);
	remove(r.ppath);
	free(p0), free(p1), free(r.x), free(r.labels), free(r.ids), free(r.logits), free(r.file);
	sf_model_destroy(r.m);
	sf_graph_destroy(g);
	sf_finalize(ctx);
	return dump ? 0 : done_testing();
fail:
	fprintf(stderr, PROG ": failed: %s\n", sf_last_error());
	remove(r.path);
	remove(r.ppath);
	free(p0), free(p1), free(r.x), free(r.labels), free(r.ids), free(r.logits), free(r.file);
	sf_model_destroy(r.m);
	sf_graph_destroy(g);
	if (ctx)
		sf_finalize(ctx);
	return 1;
}
