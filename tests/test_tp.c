/*
 * test_tp.c — tensor parallelism's arithmetic, on one process (layers/tp.c and the
 * linear layers' CPU math, no StarPU, no MPI): K simulated TP ranks each compute their
 * slice of Megatron's MLP y = row(gelu(col(x))), and the pieces put together must be
 * the whole layers' results.
 *
 *  - slicing: a rank's slice of linear_col's rows (each of nparts blocks split) and of
 *    linear_row's columns, put back, is the whole layer bitwise; linear_row's bias is
 *    whole on every rank;
 *  - forward: the ranks' col outputs side by side (block by block) = the whole col
 *    output; the sum of the row partials (bias by rank 0 only) = the whole output;
 *  - backward: the sum of the col partial input gradients = the whole input gradient;
 *    each rank's weight gradients = its slice of the whole ones;
 *  - finite differences: the gradient the K ranks' pieces give of a loss of the
 *    output, against central differences of that loss computed in double, for x, W1,
 *    b1, W2 and b2, within the pieces' float32 rounding and the differences' truncation;
 *  - the shape rules (_sf_tp_local): what splits, what keeps a split, what joins it,
 *    and the refusals naming the node (a split input into a whole-only op, a
 *    linear_row on a whole input, split and whole inputs joined, heads or widths
 *    that do not divide by K); the vocabulary-parallel pieces (embedding_vp's rows,
 *    the cross-entropy on split logits, their refusals, embedding_vp's slices).
 * Shapes: B 3 rows, I 4, hidden O1 12, O2 5, K = 2, 3 and 4 (a col of 3 blocks: its
 * slices alone, as a fused QKV feeds attention, not a linear_row).
 */
#include "layers/layer.h"
#include "layers/linear.h"
#include "shardflow.h"
#include "tests/fp32_bounds.h"
#include "tests/tap.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B 3
#define I 4
#define O1 12
#define O2 5

static float frand(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static float gelu(float x)
{
	return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

static float gelu_d(float x)
{
	float u = 0.7978845608f * (x + 0.044715f * x * x * x), t = tanhf(u);
	return 0.5f * (1.0f + t) +
	       0.5f * x * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
}

/* a fake registry entry and node of a layer of kind k */
static struct _sf_layer_entry entry(const char *name, enum _sf_tp_kind k)
{
	struct _sf_layer_entry e;
	memset(&e, 0, sizeof e);
	snprintf(e.name, sizeof e.name, "%s", name);
	e.type.name = e.name;
	e.tp = k;
	return e;
}

static struct _sf_node node(const char *name, const struct _sf_layer_entry *e, int in0, int in1,
                            int dim, size_t nparams, void *config, size_t config_size)
{
	struct _sf_node n;
	memset(&n, 0, sizeof n);
	n.kind = e ? SF_NODE_LAYER : SF_NODE_INPUT;
	snprintf(n.name, sizeof n.name, "%s", name);
	n.type = e;
	n.nin = in0 < 0 ? 0 : in1 < 0 ? 1 : 2;
	n.in[0] = in0, n.in[1] = in1;
	n.dim = dim;
	n.nparams = nparams;
	n.tied_to = -1;
	n.group = -1;
	n.config = config;
	n.config_size = config_size;
	return n;
}

/* The whole MLP's loss L = sum(y * g) and its gradients, in double-checked float */
struct mlp {
	float x[B * I], w1[O1 * I + O1], w2[O2 * O1 + O2], g[B * O2];
};

/* The same loss in double (the float inputs exact, GELU's tanh form with exact
 * constants), with entry i of variable v (x, w1, w2) moved by delta: the function the
 * finite differences differentiate, so that their own rounding is ~1e-16 */
static double whole_loss_d(const struct mlp *p, int v, int i, double delta)
{
	double x[B * I], w1[O1 * I + O1], w2[O2 * O1 + O2], h[B * O1], l = 0.0;
	for (int k = 0; k < B * I; k++)
		x[k] = p->x[k];
	for (int k = 0; k < O1 * I + O1; k++)
		w1[k] = p->w1[k];
	for (int k = 0; k < O2 * O1 + O2; k++)
		w2[k] = p->w2[k];
	(v == 0 ? x : v == 1 ? w1 : w2)[i] += delta;
	for (int r = 0; r < B; r++)
		for (int o = 0; o < O1; o++) {
			double a = w1[O1 * I + o];
			for (int k = 0; k < I; k++)
				a += x[r * I + k] * w1[o * I + k];
			h[r * O1 + o] =
			    0.5 * a * (1.0 + tanh(sqrt(2.0 / M_PI) * (a + 0.044715 * a * a * a)));
		}
	for (int r = 0; r < B; r++)
		for (int o = 0; o < O2; o++) {
			double y = w2[O2 * O1 + o];
			for (int k = 0; k < O1; k++)
				y += h[r * O1 + k] * w2[o * O1 + k];
			l += y * p->g[r * O2 + o];
		}
	return l;
}

/* The K ranks' pieces: the loss's gradients, put together as the TP step does */
struct grads {
	float dx[B * I], dw1[O1 * I + O1], dw2[O2 * O1 + O2], y[B * O2];
};

static void tp_grads(const struct mlp *p, int K, int parts, struct grads *out)
{
	struct sf_linear_tp_config c1 = {.out_dim = O1,
	                                 .bias = 1,
	                                 .init_std = 0.0f,
	                                 .nparts = parts},
	                           c2 = {.out_dim = O2, .bias = 1, .init_std = 0.0f, .nparts = 0};
	struct _sf_layer_entry ecol = entry("linear_col", SF_TP_COL),
	                       erow = entry("linear_row", SF_TP_ROW);
	struct _sf_node ncol = node("fc1", &ecol, 0, -1, O1, O1 * I + O1, &c1, sizeof c1),
	                nrow = node("fc2", &erow, 1, -1, O2, O2 * O1 + O2, &c2, sizeof c2);
	struct sf_layer_info wcol = {.in_dim = {I}, .out_dim = O1, .nparams = O1 * I + O1},
	                     wrow = {.in_dim = {O1}, .out_dim = O2, .nparams = O2 * O1 + O2};
	int L = O1 / K; /* a rank's hidden columns */
	memset(out, 0, sizeof *out);
	float w1l[O1 * I + O1], w2l[O2 * O1 + O2], hpre[B * O1], h[B * O1], yr[B * O2];
	float dy[B * O2], dh[B * O1], dxr[B * I], dw1l[O1 * I + O1], dw2l[O2 * O1 + O2];
	float w1c[O1 * I + O1], w2c[O2 * O1 + O2];
	memcpy(w1c, p->w1, sizeof w1c);
	memcpy(w2c, p->w2, sizeof w2c);
	memcpy(dy, p->g, sizeof dy);
	for (int r = 0; r < K; r++) { /* forward: row partials summed (the all-reduce) */
		_sf_tp_params(&ncol, &wcol, K, r, w1c, w1l, true);
		_sf_tp_params(&nrow, &wrow, K, r, w2c, w2l, true);
		_sf_linear_fwd(B, I, L, p->x, w1l, w1l + L * I, hpre);
		for (int i = 0; i < B * L; i++)
			h[i] = gelu(hpre[i]);
		_sf_linear_fwd(B, L, O2, h, w2l, r == 0 ? w2l + O2 * L : NULL, yr);
		for (int i = 0; i < B * O2; i++)
			out->y[i] += yr[i];
	}
	for (int r = 0; r < K; r++) { /* backward: col partial input gradients summed */
		_sf_tp_params(&ncol, &wcol, K, r, w1c, w1l, true);
		_sf_tp_params(&nrow, &wrow, K, r, w2c, w2l, true);
		_sf_linear_fwd(B, I, L, p->x, w1l, w1l + L * I, hpre);
		for (int i = 0; i < B * L; i++)
			h[i] = gelu(hpre[i]);
		_sf_linear_bwd(B, L, O2, h, w2l, dy, dh, 0, dw2l, dw2l + O2 * L, 0);
		for (int i = 0; i < B * L; i++)
			dh[i] *= gelu_d(hpre[i]);
		_sf_linear_bwd(B, I, L, p->x, w1l, dh, dxr, 0, dw1l, dw1l + L * I, 0);
		for (int i = 0; i < B * I; i++)
			out->dx[i] += dxr[i];
		_sf_tp_params(&ncol, &wcol, K, r, out->dw1, dw1l, false);
		/* the row's weight slice is this rank's; its bias gradient is whole on each */
		_sf_tp_params(&nrow, &wrow, K, r, out->dw2, dw2l, false);
	}
}

static void check_mlp(int K, int parts)
{
	unsigned s = 7u + (unsigned)(K * 10 + parts);
	struct mlp p;
	for (int i = 0; i < B * I; i++)
		p.x[i] = frand(&s);
	for (int i = 0; i < O1 * I + O1; i++)
		p.w1[i] = 0.5f * frand(&s);
	for (int i = 0; i < O2 * O1 + O2; i++)
		p.w2[i] = 0.5f * frand(&s);
	for (int i = 0; i < B * O2; i++)
		p.g[i] = frand(&s);
	struct grads tg;
	tp_grads(&p, K, parts, &tg);

	/* the whole layers */
	float h[B * O1], hpre[B * O1], y[B * O2], dh[B * O1], dx[B * I];
	float dw1[O1 * I + O1], dw2[O2 * O1 + O2];
	_sf_linear_fwd(B, I, O1, p.x, p.w1, p.w1 + O1 * I, hpre);
	for (int i = 0; i < B * O1; i++)
		h[i] = gelu(hpre[i]);
	_sf_linear_fwd(B, O1, O2, h, p.w2, p.w2 + O2 * O1, y);
	_sf_linear_bwd(B, O1, O2, h, p.w2, p.g, dh, 0, dw2, dw2 + O2 * O1, 0);
	for (int i = 0; i < B * O1; i++)
		dh[i] *= gelu_d(hpre[i]);
	_sf_linear_bwd(B, I, O1, p.x, p.w1, dh, dx, 0, dw1, dw1 + O1 * I, 0);
	double e_y = 0, e_dx = 0, e_w1 = 0, e_w2 = 0;
	for (int i = 0; i < B * O2; i++)
		e_y = fmax(e_y, fabs(tg.y[i] - y[i]));
	for (int i = 0; i < B * I; i++)
		e_dx = fmax(e_dx, fabs(tg.dx[i] - dx[i]));
	for (int i = 0; i < O1 * I + O1; i++)
		e_w1 = fmax(e_w1, fabs(tg.dw1[i] - dw1[i]));
	for (int i = 0; i < O2 * O1 + O2; i++)
		e_w2 = fmax(e_w2, fabs(tg.dw2[i] - dw2[i]));
	/* The pieces sum the same products in other groups (a rank's columns, then the
	 * ranks' partials), so each result lies within the float32 rounding of both
	 * versions (tests/fp32_bounds.h), derived from the data's ranges (|x|, |g| <= 1,
	 * |w| <= 0.5), in eps32: hpre (|.| <= 2.5) within 5 x 2.5 of exact in each, 25
	 * apart; h 1.13 x 25 + 2 x 12 x 2.5 = 88; y (|.| <= 15.5, 13 terms) 12 x 0.5 x 88 +
	 * 2 x 13 x 15.5 = 933. Backward: dh (5 terms, |.| <= 2.5) 25 apart; gelu_d within 11
	 * of exact on |v| <= 2.5 (the test's tanhf form) and of slope 0.8: 0.8 x 25 + 2 x 11
	 * = 42; dh gelu_d (|.| <= 2.83) 1.13 x 25 + 2.5 x 42 + 2 x 2.83 = 139; dx (12 terms,
	 * |.| <= 17) 12 x 0.5 x 139 + 2 x 12 x 17 = 1241; dW1 and db1 (3 rows) 3 x 139 + 2 x
	 * 3 x 8.5 = 468; dW2 3 x 88 + 2 x 3 x 7.5 = 310. */
	const double t_y = 940 * SF_EPS32, t_dx = 1250 * SF_EPS32, t_w1 = 470 * SF_EPS32,
	             t_w2 = 310 * SF_EPS32;
	char name[200];
	snprintf(name, sizeof name,
	         "K %d, col of %d block(s): outputs, input and weight gradients = the whole "
	         "layers' within their float32 rounding (max |diff| %.2g %.2g %.2g %.2g)",
	         K, parts, e_y, e_dx, e_w1, e_w2);
	ok_true(e_y <= t_y && e_dx <= t_dx && e_w1 <= t_w1 && e_w2 <= t_w2, name);

	/* Finite differences of the loss in double (whole_loss_d), against the TP
	 * gradients. The tolerance of an entry, derived: the TP gradient's own float32
	 * rounding against the exact one, half the "apart" bounds above (each of them
	 * doubles every term of its chain, one per version): dx 625, dW1 and db1 235, dW2
	 * and db2 155 eps32; plus the difference's truncation, estimated from the
	 * difference at twice the step (D(a) = L' + c a^2 + O(a^4), D(2a) - D(a) = 3 c a^2:
	 * |D(2a) - D(a)| / 3; the a^4 term is ~1e-6 of it at a = 1e-3, GELU curving over
	 * ~1); plus the losses' rounding in double over the step: the float chain's 466
	 * per y with 2^-53 in place of eps32, doubled for libm's tanh, times sum |g| <= 15,
	 * over a: below 2e-9, counted as 2e-9. */
	const double gtol[3] = {625 * SF_EPS32, 235 * SF_EPS32, 155 * SF_EPS32};
	const double a = 1e-3, round = 2e-9;
	double worst = 0.0;
	const float *gs[] = {tg.dx, tg.dw1, tg.dw2};
	int ns[] = {B * I, O1 * I + O1, O2 * O1 + O2};
	for (int v = 0; v < 3; v++)
		for (int i = 0; i < ns[v]; i++) {
			double d1 = (whole_loss_d(&p, v, i, a) - whole_loss_d(&p, v, i, -a)) / (2 * a);
			double d2 =
			    (whole_loss_d(&p, v, i, 2 * a) - whole_loss_d(&p, v, i, -2 * a)) / (4 * a);
			double tol = gtol[v] + (fabs(d2 - d1) + 2 * round) / 3.0 + round;
			worst = fmax(worst, fabs(d1 - gs[v][i]) / tol);
		}
	snprintf(name, sizeof name,
	         "K %d, col of %d block(s): the TP pieces' gradient = finite differences in "
	         "double (worst %.2g of its derived bound)",
	         K, parts, worst);
	ok_true(worst <= 1.0, name);
}

static void check_slices(void)
{
	unsigned s = 99;
	float whole[O1 * I + O1], back[O1 * I + O1], local[O1 * I + O1];
	for (int i = 0; i < O1 * I + O1; i++)
		whole[i] = frand(&s);
	struct sf_linear_tp_config c = {.out_dim = O1, .bias = 1, .init_std = 0.0f, .nparts = 3};
	struct _sf_layer_entry ecol = entry("linear_col", SF_TP_COL);
	struct _sf_node n = node("qkv", &ecol, 0, -1, O1, O1 * I + O1, &c, sizeof c);
	struct sf_layer_info wi = {.in_dim = {I}, .out_dim = O1, .nparams = O1 * I + O1};
	memset(back, 0, sizeof back);
	for (int r = 0; r < 2; r++) {
		_sf_tp_params(&n, &wi, 2, r, whole, local, true);
		_sf_tp_params(&n, &wi, 2, r, back, local, false);
	}
	ok_true(memcmp(back, whole, sizeof whole) == 0,
	        "col of 3 blocks, K 2: the slices put back = the whole layer, bitwise");
	/* rank 1's first local row is block 0's row 2 (rows of a block: 4, 2 a rank);
	 * its third local row is block 1's row 2, i.e. whole row 6 */
	_sf_tp_params(&n, &wi, 2, 1, whole, local, true);
	ok_true(memcmp(local, whole + 2 * I, I * sizeof(float)) == 0 &&
	            memcmp(local + 2 * I, whole + 6 * I, I * sizeof(float)) == 0 &&
	            local[6 * I] == whole[O1 * I + 2],
	        "col of 3 blocks: rank 1 holds rows 2-3 of each block, with their biases");
	/* unequal blocks (grouped-query attention's q, k, v): 6, 3 and 3 rows on K 3,
	 * rank 2 holds rows 4-5, 8 and 11 */
	struct sf_linear_tp_config cu = {.out_dim = O1, .nparts = 3, .part_rows = {6, 3, 3}};
	struct _sf_node nu = node("qkv_gqa", &ecol, 0, -1, O1, O1 * I, &cu, sizeof cu);
	struct sf_layer_info wu = {.in_dim = {I}, .out_dim = O1, .nparams = O1 * I};
	memset(back, 0, sizeof back);
	for (int r = 0; r < 3; r++) {
		_sf_tp_params(&nu, &wu, 3, r, whole, local, true);
		_sf_tp_params(&nu, &wu, 3, r, back, local, false);
	}
	_sf_tp_params(&nu, &wu, 3, 2, whole, local, true);
	struct _sf_tp_run runs[SF_MAX_PARAM_TENSORS];
	int nr = _sf_tp_col_runs(&nu, 3, 2, runs);
	ok_true(nr == 3 && runs[0].local == 0 && runs[0].whole == 4 && runs[0].n == 2 &&
	            runs[1].local == 2 && runs[1].whole == 8 && runs[1].n == 1 &&
	            runs[2].local == 3 && runs[2].whole == 11 && runs[2].n == 1,
	        "col of blocks of 6, 3, 3, K 3: rank 2's output columns as runs (0->4 x2, 2->8, "
	        "3->11), what gather_output moves");
	ok_true(memcmp(back, whole, O1 * I * sizeof(float)) == 0 &&
	            memcmp(local, whole + 4 * I, 2 * I * sizeof(float)) == 0 &&
	            memcmp(local + 2 * I, whole + 8 * I, I * sizeof(float)) == 0 &&
	            memcmp(local + 3 * I, whole + 11 * I, I * sizeof(float)) == 0,
	        "col of blocks of 6, 3, 3 rows, K 3: rank 2 holds rows 4-5, 8, 11; put back "
	        "bitwise");
	float w2[O2 * O1 + O2], l2[O2 * O1 + O2];
	for (int i = 0; i < O2 * O1 + O2; i++)
		w2[i] = frand(&s);
	struct sf_linear_tp_config c2 = {.out_dim = O2, .bias = 1, .init_std = 0.0f, .nparts = 0};
	struct _sf_layer_entry erow = entry("linear_row", SF_TP_ROW);
	struct _sf_node n2 = node("proj", &erow, 0, -1, O2, O2 * O1 + O2, &c2, sizeof c2);
	struct sf_layer_info wi2 = {.in_dim = {O1}, .out_dim = O2, .nparams = O2 * O1 + O2};
	_sf_tp_params(&n2, &wi2, 4, 3, w2, l2, true);
	ok_true(memcmp(l2, w2 + 9, 3 * sizeof(float)) == 0 &&
	            memcmp(l2 + 3, w2 + O1 + 9, 3 * sizeof(float)) == 0 &&
	            memcmp(l2 + O2 * 3, w2 + O2 * O1, O2 * sizeof(float)) == 0,
	        "row, K 4: rank 3 holds columns 9-11 of every row, and the whole bias");
}

/* _sf_tp_local with node n's inputs' whole widths read from the graph, as
 * sf_model_create gives them */
static int tp_local(const struct _sf_node *g, int n, int K, const bool *in_split, int *in_local,
                    int *out_local, size_t *np, bool *out_split)
{
	for (int i = 0; i < g[n].nin; i++)
		in_local[i] = g[g[n].in[i]].dim;
	return _sf_tp_local(g, n, K, in_split, in_local, out_local, np, out_split);
}

/* The vocabulary-parallel pieces: embedding_vp's rows split and its output whole; a
 * cross-entropy loss takes split logits (labels whole), a regression loss does not; a
 * linear_nobias head tied to an embedding_vp computes its rows' columns (split), any
 * other tied type is refused; a vocabulary that does not divide by K is padded to K
 * ceil(V / K) rows (the embedding's rows, the head's columns, the loss's classes),
 * the padding zero in every slice and never put back; embedding_vp's slice of W is
 * its block of rows, put back bitwise. */
static void check_vocab_rules(void)
{
	struct _sf_layer_entry evp = entry("embedding_vp", SF_TP_VOCAB),
	                       ecol = entry("linear_col", SF_TP_COL),
	                       ehead = entry("linear_nobias", SF_TP_NONE);
	struct sf_linear_tp_config head = {.out_dim = 12};
	struct _sf_node g[7];
	g[0] = node("ids", NULL, -1, -1, 12, 0, NULL, 0);
	g[0].kind = SF_NODE_INT_INPUT;
	g[1] = node("wte", &evp, 0, -1, 8, 12 * 8, NULL, 0);
	g[2] = node("lm_head", &ecol, 1, -1, 12, 12 * 8, &head, sizeof head);
	g[3] = node("labels", NULL, -1, -1, 12, 0, NULL, 0);
	g[3].kind = SF_NODE_LABELS;
	g[4] = node("loss", NULL, 2, 3, 1, 0, NULL, 0);
	g[4].kind = SF_NODE_LOSS;
	g[5] = node("target", NULL, -1, -1, 12, 0, NULL, 0);
	g[6] = node("mse", NULL, 2, 5, 1, 0, NULL, 0);
	g[6].kind = SF_NODE_LOSS;
	int in_local[SF_MAX_INPUTS], out_local = 0;
	size_t np = 0;
	bool split = true;
	int rc = tp_local(g, 1, 3, (bool[]){false}, in_local, &out_local, &np, &split);
	ok_true(rc == SF_OK && !split && out_local == 8 && np == 4 * 8,
	        "embedding_vp, K 3: whole output, 4 of the 12 rows of W (4 x 8 parameters)");
	rc = tp_local(g, 1, 5, (bool[]){false}, in_local, &out_local, &np, &split);
	ok_true(rc == SF_OK && !split && out_local == 8 && np == 3 * 8,
	        "embedding_vp of 12 ids on K 5: ceil(12 / 5) = 3 rows a rank (padded to 15)");
	rc = tp_local(g, 4, 5, (bool[]){true, false}, in_local, &out_local, &np, &split);
	ok_true(rc == SF_OK && in_local[0] == 3,
	        "cross-entropy on the split logits of 12 classes, K 5: 3 columns a rank");
	struct _sf_vocab_slice a = _sf_tp_vocab_slice(12, 5, 3), b = _sf_tp_vocab_slice(12, 5, 4),
	                       c = _sf_tp_vocab_slice(13, 5, 4), d = _sf_tp_vocab_slice(12, 3, 2);
	ok_true(a.rows == 3 && a.first == 9 && a.valid == 3 && b.rows == 3 && b.first == 12 &&
	            b.valid == 0 && c.first == 12 && c.valid == 1 && d.rows == 4 && d.first == 8 &&
	            d.valid == 4,
	        "vocabulary slices: 12 on K 5, rank 3 [9, 12), rank 4 padding alone; 13 on K 5, "
	        "rank 4 one class; 12 on K 3, rank 2 [8, 12)");
	rc = tp_local(g, 4, 3, (bool[]){true, false}, in_local, &out_local, &np, &split);
	ok_true(rc == SF_OK && in_local[0] == 4 && _sf_tp_vocab_parallel_loss(g, 4),
	        "cross-entropy on split logits, K 3: its 4 of 12 classes (vocabulary-parallel)");
	rc = tp_local(g, 6, 3, (bool[]){true, false}, in_local, &out_local, &np, &split);
	ok_true(rc < 0 && strstr(sf_last_error(), "\"lm_head\"") &&
	            !_sf_tp_vocab_parallel_loss(g, 6),
	        "a regression loss on split predictions is refused, naming its input");
	g[2] = node("lm_head", &ehead, 1, -1, 12, 12 * 8, NULL, 0);
	g[2].tied_to = 1;
	rc = tp_local(g, 2, 3, (bool[]){false}, in_local, &out_local, &np, &split);
	ok_true(rc == SF_OK && split && out_local == 4 && np == 4 * 8 &&
	            _sf_tp_tied_vocab(g, 2),
	        "a linear_nobias head tied to an embedding_vp, K 3: its 4 of 12 logit columns, "
	        "the embedding's 4 x 8 rows");
	struct _sf_layer_entry eln = entry("layernorm", SF_TP_NONE);
	g[2] = node("odd", &eln, 1, -1, 8, 12 * 8, NULL, 0);
	g[2].tied_to = 1;
	rc = tp_local(g, 2, 3, (bool[]){false}, in_local, &out_local, &np, &split);
	ok_true(rc < 0 && strstr(sf_last_error(), "\"odd\" (layernorm) is tied to \"wte\""),
	        "another type tied to an embedding_vp is refused, naming both");
	float whole[12 * 8], local[4 * 8], back[12 * 8];
	for (int i = 0; i < 12 * 8; i++)
		whole[i] = (float)i, back[i] = -1.0f;
	struct sf_layer_info wi = {.nparams = 12 * 8, .out_dim = 8, .nin = 1};
	wi.in_dim[0] = 1, wi.in_range[0] = 12, wi.in_int[0] = 1;
	bool same = true;
	for (int r = 0; r < 3; r++) {
		_sf_tp_params(&g[1], &wi, 3, r, whole, local, true);
		same &= !memcmp(local, whole + r * 4 * 8, sizeof local);
		_sf_tp_params(&g[1], &wi, 3, r, back, local, false);
	}
	ok_true(same && !memcmp(back, whole, sizeof whole),
	        "embedding_vp's slices: rows [4 r, 4 r + 4) of W, put back whole bitwise");
	/* 10 rows on K 4: 3, 3, 3 and 1 (2 of padding); the padding zeroed, never put back */
	float w10[10 * 8], l3[3 * 8], b10[12 * 8]; /* b10: 10 rows, then 2 that must stay -1 */
	for (int i = 0; i < 12 * 8; i++)
		b10[i] = -1.0f, w10[i % 80] = (float)(i % 80) + 1.0f;
	wi.nparams = 10 * 8, wi.in_range[0] = 10;
	same = true;
	for (int r = 0; r < 4; r++) {
		int valid = r < 3 ? 3 : 1;
		for (int i = 0; i < 3 * 8; i++)
			l3[i] = 7.0f; /* stale: the padding must come out 0 */
		_sf_tp_params(&g[1], &wi, 4, r, w10, l3, true);
		same &= !memcmp(l3, w10 + r * 3 * 8, (size_t)valid * 8 * sizeof(float));
		for (int i = valid * 8; i < 3 * 8; i++)
			same &= l3[i] == 0.0f;
		for (int i = valid * 8; i < 3 * 8; i++)
			l3[i] = 9.0f; /* padding written back would land past the 10 rows */
		_sf_tp_params(&g[1], &wi, 4, r, b10, l3, false);
	}
	for (int i = 10 * 8; i < 12 * 8; i++)
		same &= b10[i] == -1.0f;
	ok_true(same && !memcmp(b10, w10, sizeof w10),
	        "embedding_vp of 10 rows on K 4: slices of 3, 3, 3, 1 (+2 zero rows), the "
	        "padding never put back");
}

/* the shape rules, on small hand-made graphs */
static void check_rules(void)
{
	struct _sf_layer_entry ecol = entry("linear_col", SF_TP_COL),
	                       erow = entry("linear_row", SF_TP_ROW),
	                       egelu = entry("gelu", SF_TP_ELEMENTWISE),
	                       eadd = entry("add", SF_TP_ELEMENTWISE),
	                       eln = entry("layernorm", SF_TP_NONE),
	                       eatt = entry("attention", SF_TP_HEADS);
	struct sf_linear_tp_config col = {.out_dim = 24, .bias = 1, .init_std = 0.0f, .nparts = 3},
	                           row = {.out_dim = 8, .bias = 1, .init_std = 0.0f, .nparts = 0};
	int heads = 4;
	struct _sf_node g[8];
	g[0] = node("x", NULL, -1, -1, 8, 0, NULL, 0);
	g[1] = node("c_attn", &ecol, 0, -1, 24, 24 * 8 + 24, &col, sizeof col);
	g[2] = node("attn", &eatt, 1, -1, 8, 0, &heads, sizeof heads);
	g[3] = node("c_proj", &erow, 2, -1, 8, 8 * 8 + 8, &row, sizeof row);
	g[4] = node("ln", &eln, 2, -1, 8, 16, NULL, 0);                /* a split input: refused */
	g[5] = node("mix", &eadd, 0, 2, 8, 0, NULL, 0);                /* whole + split: refused */
	g[6] = node("bad_row", &erow, 0, -1, 8, 72, &row, sizeof row); /* whole input */
	g[7] = node("gelu", &egelu, 2, -1, 8, 0, NULL, 0);
	bool split[8] = {false}, in_split[SF_MAX_INPUTS];
	int in_local[SF_MAX_INPUTS], out_local = 0;
	size_t np = 0;
	int rc[8];
	sf_log_set_quiet(1);
	for (int n = 1; n < 8; n++) {
		for (int i = 0; i < g[n].nin; i++)
			in_split[i] = split[g[n].in[i]];
		rc[n] = tp_local(g, n, 2, in_split, in_local, &out_local, &np, &split[n]);
		if (n == 1)
			ok_true(rc[n] == SF_OK && split[1] && out_local == 12 && np == 12 * 8 + 12,
			        "linear_col, K 2: output split, 12 of 24 columns, (12, 8) + 12 "
			        "parameters");
		if (n == 2)
			ok_true(rc[n] == SF_OK && split[2] && out_local == 4 && in_local[0] == 12,
			        "attention on a split QKV: split, 2 of its 4 heads");
		if (n == 3)
			ok_true(rc[n] == SF_OK && !split[3] && in_local[0] == 4 && out_local == 8 &&
			            np == 8 * 4 + 8,
			        "linear_row on a split input: whole output, (8, 4) + 8 parameters");
		if (n == 4)
			ok_true(rc[n] < 0 && strstr(sf_last_error(), "\"ln\"") &&
			            strstr(sf_last_error(), "end the split with a linear_row"),
			        "a layernorm on a split input is refused, naming it");
		if (n == 5)
			ok_true(rc[n] < 0 && strstr(sf_last_error(), "\"mix\"") &&
			            strstr(sf_last_error(), "all be split or all whole"),
			        "an add of a whole and a split input is refused, naming it");
		if (n == 6)
			ok_true(rc[n] < 0 && strstr(sf_last_error(), "\"bad_row\"") &&
			            strstr(sf_last_error(), "takes a split input"),
			        "a linear_row on a whole input is refused, naming it");
		if (n == 7)
			ok_true(rc[n] == SF_OK && split[7] && out_local == 4,
			        "gelu on a split input keeps the split");
	}
	/* rope on the split QKV: its q and k heads (rotated 16 of 24 columns, heads of 4) */
	struct _sf_layer_entry erope = entry("rope", SF_TP_ROPE);
	struct sf_rope_config rc8 = {16, 4, 10000.0f};
	struct _sf_node gr[2] = {g[0], g[1]};
	struct _sf_node rn = node("rope", &erope, 1, -1, 24, 0, &rc8, sizeof rc8);
	struct _sf_node rg[3] = {gr[0], gr[1], rn};
	int rrc = tp_local(rg, 2, 2, (bool[]){true}, in_local, &out_local, &np, &split[2]);
	bool rsplit = split[2];
	rc8.rotated = 12; /* 3 heads: not divisible by 2 */
	int rrc2 = tp_local(rg, 2, 2, (bool[]){true}, in_local, &out_local, &np, &split[2]);
	ok_true(rrc == SF_OK && rsplit && rrc2 < 0 && strstr(sf_last_error(), "3 rotated heads"),
	        "rope keeps a split of whole heads; 3 rotated heads on K 2 are refused");
	/* gather_output: a whole output, the kernel's width still O / K */
	struct sf_linear_tp_config gcol = {.out_dim = 24, .bias = 1, .gather_output = 1};
	struct _sf_node gn[2] = {g[0],
	                         node("fc", &ecol, 0, -1, 24, 24 * 8 + 24, &gcol, sizeof gcol)};
	int grc = tp_local(gn, 1, 2, (bool[]){false}, in_local, &out_local, &np, &split[1]);
	ok_true(grc == SF_OK && !split[1] && out_local == 24 && np == 12 * 8 + 12,
	        "linear_col with gather_output, K 2: whole output (24), (12, 8) + 12 parameters");
	/* K 5: col of 3 blocks of 8 rows refused; attention of 6 heads on K 4 */
	rc[1] = tp_local(g, 1, 5, (bool[]){false}, in_local, &out_local, &np, &split[1]);
	ok_true(rc[1] < 0 && strstr(sf_last_error(), "does not split over SHARDFLOW_TP=5"),
	        "linear_col whose blocks do not divide by K is refused");
	heads = 6;
	rc[2] = tp_local(g, 2, 4, (bool[]){true}, in_local, &out_local, &np, &split[2]);
	ok_true(rc[2] < 0 && strstr(sf_last_error(), "6 heads") &&
	            strstr(sf_last_error(), "divisible by SHARDFLOW_TP=4"),
	        "attention of 6 heads on K 4 is refused, naming the heads");
	rc[4] = tp_local(g, 4, 1, (bool[]){false}, in_local, &out_local, &np, &split[4]);
	ok_true(rc[4] == SF_OK && out_local == 8 && np == 16 && !split[4],
	        "K 1: every node as the graph has it");
	check_vocab_rules();
	sf_log_set_quiet(0);
}

int main(void)
{
	plan(33);
	check_slices();
	check_mlp(2, 1);
	check_mlp(3, 1);
	check_mlp(4, 1);
	check_rules();
	return done_testing();
}
