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
 * softmax cross-entropy computed here in double. Fourth-order central differences
 * (steps +-eps, +-2 eps, eps = 3e-3) on the parameter, set through a safetensors file
 * (export once, patch the float in the file, import). The embedding's weights are
 * ~0.02 and the layernorm after them curves the loss strongly: a second-order
 * difference with eps = 1e-2 was off by 1.3 % on one weight, and converged to the
 * gradient as eps shrank. A parameter passes when |fd - g| <= 1e-5: the forward runs
 * in float, so the loss carries ~1e-7 of rounding, up to ~1e-6 after the difference
 * whatever the gradient's size (the tolerance is 10x the worst sample's |fd - g|, see
 * the check), so a gradient wrong by 1e-3 of itself fails on the larger ones, where
 * the previous 2e-5 + 1e-3 |g| let it pass. Parameters are
 * sampled over the whole flat vector (the embedding matrix that the head reads too,
 * every block's linears) plus named ones: the first block's layernorm weight and bias,
 * weights of the q, k and v parts of its QKV projection in both heads (the attention's
 * three gradients), a q bias and a k bias (whose gradient is 0: softmax ignores the q.b_k
 * that every score of a query gets), an attention output projection weight, a used row
 * of the position embedding and an unused one (t >= T: gradient 0). The loss of the
 * step (sf_model_loss) must also equal the loss computed here from the logits at p0
 * (relative 1e-5).
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

/* Mean softmax cross-entropy of the model's logits at its current parameters. */
static int loss_at(struct run *r, double *loss)
{
	int rc = sf_model_predict(r->m, &r->batch, r->logits);
	if (rc != SF_OK)
		return rc;
	double sum = 0.0;
	for (int i = 0; i < r->rows; i++) {
		const float *z = r->logits + (size_t)i * r->C;
		double mx = z[0], s = 0.0;
		for (int c = 1; c < r->C; c++)
			mx = z[c] > mx ? z[c] : mx;
		for (int c = 0; c < r->C; c++)
			s += exp((double)z[c] - mx);
		sum += log(s) + mx - z[r->labels[i]];
	}
	*loss = sum / r->rows;
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

int main(int argc, char **argv)
{
	sf_context *ctx = NULL;
	cli_prog = PROG; /* the name in CLI_CHECK_GOTO's messages */
	sf_graph *g = NULL;
	struct run r = {0};
	float *p0 = NULL, *p1 = NULL;
	int64_t ticket;
	double loss0 = 0, step_loss = 0;
	size_t n = 0;

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
	snprintf(r.path, sizeof r.path, "%s/grad_check.%d.safetensors", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
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

	plan(NSAMPLES + 5);
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
	double fd[NSAMPLES];
	for (int i = 0; i < NSAMPLES; i++) {
		long k = sample(i, n);
		double lp, lm, lp2, lm2;
		if (set_param(&r, k, p0[k] + EPS) || loss_at(&r, &lp) ||
		    set_param(&r, k, p0[k] - EPS) || loss_at(&r, &lm) ||
		    set_param(&r, k, p0[k] + 2 * EPS) || loss_at(&r, &lp2) ||
		    set_param(&r, k, p0[k] - 2 * EPS) || loss_at(&r, &lm2))
			goto fail;
		/* fourth-order central difference, over the steps the floats actually hold */
		double h = ((double)(p0[k] + EPS) - (double)(p0[k] - EPS)) / 2;
		fd[i] = (8 * (lp - lm) - (lp2 - lm2)) / (12 * h);
	}
	if (set_param(&r, -1, 0) || loss_at(&r, &loss0))
		goto fail;
	int32_t keep = r.ids[1];
	r.ids[1] = r.D + 3; /* out of the vocabulary */
	int brc = sf_model_step(r.m, &r.batch, &ticket);
	ok(brc == SF_ERR_INVALID && strstr(sf_last_error(), "id of \"tok\"") &&
	       strstr(sf_last_error(), "[0, 16)"),
	   "a token id outside the vocabulary is refused before anything is submitted (%s)",
	   sf_last_error());
	r.ids[1] = keep;
	if (sf_model_step(r.m, &r.batch, &ticket) || sf_model_loss(r.m, ticket, &step_loss) ||
	    sf_model_params_get(r.m, p1, n))
		goto fail;
	ok(fabs(step_loss - loss0) <= 1e-5 * fabs(loss0),
	   "the step's loss equals the cross-entropy of the predicted logits (%.9g vs %.9g)",
	   step_loss, loss0);
	double worst = 0;
	for (int i = 0; i < NSAMPLES; i++) {
		long k = sample(i, n);
		double grad = (double)p0[k] - (double)p1[k], err = fabs(fd[i] - grad);
		/* the finite difference's own noise (the float forward's rounding in the loss,
		 * over 12 h): measured worst |diff| 1.09e-6 (parameter 1089, gradient 8.8e-4),
		 * 4.3e-7 on the largest gradient (0.072); 10x the worst, independent of |g| */
		double tol = 1e-5;
		worst = err / tol > worst ? err / tol : worst;
		ok(err <= tol, "parameter %ld: gradient %.6g, finite difference %.6g (|diff| %.2e, tol %.2e)",
		   k, grad, fd[i], err, tol);
	}
	ok(worst <= 1.0, "every sampled parameter within tolerance (worst |diff| / tol %.3f)", worst);
	remove(r.path);
	remove(r.ppath);
	free(p0), free(p1), free(r.x), free(r.labels), free(r.ids), free(r.logits), free(r.file);
	sf_model_destroy(r.m);
	sf_graph_destroy(g);
	sf_finalize(ctx);
	return done_testing();
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
