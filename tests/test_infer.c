/*
 * test_infer.c — sf_model_forward and sf_model_evaluate on any world size
 * (tests/infer.sh runs it on 1, 2 and 3 ranks and compares the worlds' figures):
 *
 *  - forward of the loss's input for one batch of the model's geometry = this rank's
 *    sf_model_predict rows, bitwise, and whole on every rank;
 *  - any number of samples: 29 (three passes of 12, the last padded) give, for the
 *    first 12 and for samples 12..23, what a forward of just those samples gives,
 *    bitwise; a float input node returns its input;
 *  - evaluate on the batch a step then trains on = that step's loss (within eps32 of
 *    it: the same rows' losses from the same logits, the step's scale 1 / B in float);
 *    evaluate of 29 samples = the mean cross-entropy of the forward's logits (within
 *    the float32 rounding of the loss's rows, tests/fp32_bounds.h), the same on every
 *    rank (bitwise), and evaluate/forward change no parameter;
 *  - refusals: an unknown node, 0 samples, a wrong output size, no labels, and a label
 *    out of range in the third pass (every rank fails, with the label's message);
 *  - cross-entropy's ignore index: with 4 of 12 labels ignored (on the initial
 *    parameters again), evaluate and a step's loss are the mean over the 8 others (the
 *    test's own double computation from the forward's logits, within the same bound:
 *    the count is agreed across ranks); a batch whose every label is ignored has loss 0
 *    and changes nothing; evaluating one is refused.
 * The bitwise checks compare one computation with itself: the same rows through the
 * same kernels at the same shapes in the same binary (a forward and a prediction of
 * one batch, a pass and a forward of its 12 samples alone), a copy, and one sum that
 * every rank adds up in rank order. Everything computed two ways is compared within a
 * bound derived from float32 rounding (tests/fp32_bounds.h), never a measured one.
 *
 * It prints "eval <loss> <bound>" and "fwd <sum> <bound>" of 29 samples and "ign
 * <loss> <bound>" of the step with ignored labels for the worlds' comparison
 * (tests/infer.sh): each bound is how far the float32 value may lie from the same
 * quantity in exact arithmetic (on the same float parameters and inputs), so two world
 * sizes, whose BLAS may sum the logits' dot products in other orders (OpenBLAS picks
 * kernels by the rows a rank holds), agree within the sum of their bounds.
 */
#include "examples/synthetic.h"
#include "shardflow.h"
#include "tests/fp32_bounds.h"
#include "tests/mpi_check.h"
#include "tests/test_models.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define NS 29 /* samples: passes of 12, the last one padded */

/* The mean cross-entropy of n rows of logits z (n, C) against y, over the rows whose
 * label is not the ignore index, in the test's own double arithmetic */
static double mean_xent(const float *out, const int32_t *y, int n, int C)
{
	double sum = 0.0;
	int counted = 0;
	for (int i = 0; i < n; i++) {
		if (y[i] == SF_LOSS_IGNORE_INDEX)
			continue;
		const float *z = out + (size_t)i * C;
		double mx = z[0], se = 0.0;
		for (int c = 1; c < C; c++)
			mx = z[c] > mx ? z[c] : mx;
		for (int c = 0; c < C; c++)
			se += exp((double)z[c] - mx);
		sum += log(se) + mx - z[y[i]];
		counted++;
	}
	return sum / counted;
}

/* A copy of tensor `name` in double, its size in *numel; NULL on failure */
static double *tensor_abs(sf_model *m, const char *name, size_t *numel)
{
	int nt = 0;
	struct sf_tensor_info ti = {0};
	bool found = false;
	if (sf_model_tensor_count(m, &nt) != SF_OK)
		return NULL;
	for (int t = 0; t < nt && !found; t++)
		found = sf_model_tensor_info(m, t, &ti) == SF_OK && !strcmp(ti.name, name);
	if (!found)
		return NULL;
	float *f = malloc(ti.numel * sizeof(float));
	double *d = malloc(ti.numel * sizeof(double));
	if (!f || !d || sf_model_tensor_get(m, name, f, ti.numel) != SF_OK) {
		free(f), free(d);
		return NULL;
	}
	for (size_t i = 0; i < ti.numel; i++)
		d[i] = fabs((double)f[i]);
	free(f);
	*numel = ti.numel;
	return d;
}

/* The float32 forward's rounding (tests/fp32_bounds.h) for n samples x (n, D) through
 * MODEL_MLP (fc1, gelu, fc2, gelu, fc3: tests/test_models.h): mag (n, C) gets each
 * logit's magnitude m = |W3| (|W2| (|W1| |x| + |b1|) + |b2|) + |b3| (|gelu(v)| <= |v|),
 * and the return value k: every logit the forward computes lies within k eps32 m of
 * its exact value on the same float parameters and inputs, whatever order its dot
 * products are summed in (33, then 1.13 x 33 + 12 = 49.3, 114.3, 141.2 and 206.2 for
 * the three layers of 32, 64 and 64 inputs). Negative on failure. */
static double fwd_rounding(sf_model *m, const float *x, int n, int D, int C, double *mag)
{
	static const char *const layer[] = {"fc1", "fc2", "fc3"};
	double k = 0.0, *a = malloc((size_t)n * (size_t)D * sizeof(double));
	int I = D;
	if (!a)
		return -1.0;
	for (size_t i = 0; i < (size_t)n * (size_t)D; i++)
		a[i] = fabs((double)x[i]);
	for (int l = 0; l < 3; l++) {
		char wn[32], bn[32];
		size_t nw = 0, nb = 0;
		snprintf(wn, sizeof wn, "%s.weight", layer[l]);
		snprintf(bn, sizeof bn, "%s.bias", layer[l]);
		double *w = tensor_abs(m, wn, &nw), *b = tensor_abs(m, bn, &nb);
		double *y = b ? malloc((size_t)n * nb * sizeof(double)) : NULL;
		if (!w || !b || !y || nw != nb * (size_t)I || (l == 2 && nb != (size_t)C)) {
			free(w), free(b), free(y), free(a);
			return -1.0;
		}
		for (int r = 0; r < n; r++)
			for (size_t o = 0; o < nb; o++) {
				double s = b[o];
				for (int i = 0; i < I; i++)
					s += w[o * (size_t)I + (size_t)i] *
					     a[(size_t)r * (size_t)I + (size_t)i];
				y[(size_t)r * nb + o] = s;
			}
		k = sf_fp32_linear(k, I);
		if (l < 2)
			k = sf_fp32_gelu(k);
		free(w), free(b), free(a);
		a = y, I = (int)nb;
	}
	memcpy(mag, a, (size_t)n * (size_t)C * sizeof(double));
	free(a);
	return k;
}

int main(int argc, char **argv)
{
	int size = 1, D, C, T;
	sf_context *ctx = NULL;
	cli_prog = "test_infer"; /* the name in CLI_CHECK_GOTO's messages */
	sf_graph *g = NULL;
	sf_model *m = NULL;
	if (sf_init(&argc, &argv, &ctx) != SF_OK)
		return 1;
	sf_context_world(ctx, &check_rank, &size);
	check_prog = "test_infer";
	if (build_model(MODEL_MLP, &g, &D, &C, &T))
		return 1;
	struct sf_model_options o;
	sf_model_options_init(&o);
	o.batch = 12, o.lr = 0.05f;
	if (sf_model_create(ctx, g, &o, &m) != SF_OK)
		return 1;
	size_t P;
	sf_model_param_count(m, &P);
	int first, rows;
	sf_model_local_rows(m, &first, &rows);
	float *x = calloc((size_t)NS * (size_t)D, sizeof(float));
	int32_t *ids = calloc(NS, sizeof(int32_t)), *y = calloc(NS, sizeof(int32_t));
	float *out = calloc((size_t)NS * (size_t)C, sizeof(float));
	float *part = calloc((size_t)NS * (size_t)C, sizeof(float));
	float *logits = calloc((size_t)rows * (size_t)C + 1, sizeof(float));
	float *p0 = calloc(P, sizeof(float)), *p1 = calloc(P, sizeof(float));
	float *xin = calloc((size_t)NS * (size_t)D, sizeof(float));
	double *mag = calloc((size_t)NS * (size_t)C, sizeof(double));
	if (!x || !ids || !y || !out || !part || !logits || !p0 || !p1 || !xin || !mag)
		return 1;
	struct sf_batch b;
	const float *bx;
	const int32_t *bid;
	/* samples 0..28: batch 1's 12 rows, batch 2's 12, 5 of batch 3's */
	for (int k = 0; k < 3; k++) {
		int n = k < 2 ? 12 : NS - 24;
		fill_batch(MODEL_MLP, 1, k + 1, 0, n, D, C, x + (size_t)k * 12 * D, ids,
		           y + k * 12, &b, &bx, &bid);
	}
	const float *in[1] = {x};
	struct sf_batch all = {.ninputs = 1, .inputs = in, .labels = y};

	sf_model_params_get(m, p0, P);
	/* the initial parameters' forward: each logit within kf eps32 mag of exact */
	double kf = fwd_rounding(m, x, NS, D, C, mag);
	if (kf < 0.0)
		return 1;
	/* a row loss's float32 rounding, in eps32, from its logits' (xent_fwd below) and
	 * its own (fp32_bounds.h): the loss moves by at most 2 max_c |dz_c| (its gradient
	 * in the logits, softmax - onehot, has an L1 norm <= 2) */
	const double xrow = sf_fp32_xent_row(C);
	bool ok = sf_model_forward(m, "fc3", &all, 12, out, 12 * (size_t)C) == SF_OK;
	struct sf_batch mine = {.ninputs = 1, .labels = y + first};
	const float *min[1] = {x + (size_t)first * D};
	mine.inputs = min;
	ok = ok && sf_model_predict(m, &mine, logits) == SF_OK;
	check(ok && memcmp(out + (size_t)first * C, logits, (size_t)rows * C * sizeof(float)) == 0,
	      "forward of one batch = this rank's sf_model_predict rows, bitwise");

	ok = sf_model_forward(m, "fc3", &all, NS, out, (size_t)NS * C) == SF_OK;
	const float *in12[1] = {x + 12 * (size_t)D};
	struct sf_batch second = {.ninputs = 1, .inputs = in12};
	ok = ok && sf_model_forward(m, "fc3", &second, 12, part, 12 * (size_t)C) == SF_OK;
	check(ok && memcmp(out + 12 * (size_t)C, part, 12 * (size_t)C * sizeof(float)) == 0,
	      "29 samples in 3 passes: samples 12..23 = a forward of those 12 alone, bitwise");
	double sum = 0.0, sum_mag = 0.0;
	for (size_t i = 0; i < (size_t)NS * C; i++) {
		sum += out[i] * (double)((i % 7) + 1);
		sum_mag += mag[i] * (double)((i % 7) + 1);
	}
	/* sum's products are exact in double and its sum rounds at 2^-53: its float32
	 * rounding is its logits' */
	double sum_tol = kf * SF_EPS32 * sum_mag;
	ok = sf_model_forward(m, "x", &all, NS, xin, (size_t)NS * D) == SF_OK;
	check(ok && memcmp(xin, x, (size_t)NS * D * sizeof(float)) == 0,
	      "a float input node returns its input");

	double ev = 0.0, ev29 = 0.0, l = 0.0;
	ok = sf_model_evaluate(m, &all, 12, &ev) == SF_OK &&
	     sf_model_evaluate(m, &all, NS, &ev29) == SF_OK;
	sf_model_params_get(m, p1, P);
	check(ok && memcmp(p0, p1, P * sizeof(float)) == 0,
	      "forward and evaluate change no parameter");
	int64_t ticket;
	ok = ok && sf_model_step(m, &mine, &ticket) == SF_OK && sf_model_loss(m, ticket, &l) == SF_OK;
	char what[240];
	/* The step's forward is evaluate's pass (the same rows, kernels and shapes), and its
	 * rows' losses are the same bits (the CPU's four-lane row is the header's,
	 * test_kernels_fd): the two differ by the step's scale, 1 / B rounded to float
	 * (eps32 / 2 of the loss), and by their double sums (2^-53 each). */
	double tol = SF_EPS32 * fabs(l);
	snprintf(what, sizeof what,
	         "evaluate on a step's batch = the step's loss (%.9g against %.9g, within "
	         "%.1e)",
	         ev, l, tol);
	check(ok && fabs(ev - l) <= tol, what);
	/* the same mean from the forward's logits (the same bits as evaluate's: the same
	 * passes) in the test's own double arithmetic: they differ by the float32 rounding
	 * of evaluate's rows alone, exponentials in float */
	double ref = mean_xent(out, y, NS, C);
	tol = xrow * SF_EPS32;
	snprintf(what, sizeof what,
	         "evaluate of 29 samples = the mean cross-entropy of their forward logits "
	         "(%.12g against %.12g, within %.1e)",
	         ev29, ref, tol);
	check(fabs(ev29 - ref) <= tol, what);
	/* every rank adds the same all-gathered sums in rank order: one computation */
	double *evs = calloc((size_t)size, sizeof(double));
	bool same = evs != NULL;
	if (evs)
		MPI_Allgather(&ev29, 1, MPI_DOUBLE, evs, 1, MPI_DOUBLE, MPI_COMM_WORLD);
	for (int r = 0; same && r < size; r++)
		same = evs[r] == ev29;
	free(evs);
	check(same, "evaluate gives every rank the same value, bitwise");

	/* refusals */
	check(sf_model_forward(m, "fc9", &all, NS, out, (size_t)NS * C) == SF_ERR_NOT_FOUND,
	      "an unknown node: SF_ERR_NOT_FOUND");
	check(sf_model_forward(m, "fc3", &all, 0, out, 0) == SF_ERR_INVALID &&
	          sf_model_forward(m, "fc3", &all, NS, out, (size_t)NS * C - 1) == SF_ERR_INVALID,
	      "0 samples and a wrong output size are refused");
	struct sf_batch nolab = {.ninputs = 1, .inputs = in};
	check(sf_model_evaluate(m, &nolab, NS, &ev) == SF_ERR_INVALID,
	      "evaluate without labels is refused");
	y[26] = C + 2; /* in the third pass, rank 0's slice on 2 and 3 ranks */
	int rc = sf_model_evaluate(m, &all, NS, &ev);
	check(rc == SF_ERR_INVALID && strstr(sf_last_error(), "label 12 of local row") != NULL &&
	          strstr(sf_last_error(), "(sample 26 of the global batch)") != NULL,
	      "a label out of range in the third pass fails every rank, naming it and its sample");

	/* cross-entropy's ignore index (-100, the default): samples 1, 4, 7, 10 of the next
	 * batch count for nothing (one or two on each rank of 2 and 3); on the initial
	 * parameters again, so that every world's step starts from the same ones */
	y[26] = 0;
	check(sf_model_params_set(m, p0, P) == SF_OK, "the initial parameters set back");
	int32_t yi[12];
	memcpy(yi, y, sizeof yi);
	for (int i = 1; i < 12; i += 3)
		yi[i] = SF_LOSS_IGNORE_INDEX;
	struct sf_batch ign = {.ninputs = 1, .inputs = in, .labels = yi};
	ok = sf_model_forward(m, "fc3", &all, 12, out, 12 * (size_t)C) == SF_OK;
	double iref = mean_xent(out, yi, 12, C); /* over the 8 counted samples */
	double iev = 0.0, il = 0.0;
	ok = ok && sf_model_evaluate(m, &ign, 12, &iev) == SF_OK;
	tol = xrow * SF_EPS32; /* as for the 29 samples above */
	snprintf(what, sizeof what,
	         "ignore index: evaluate = the mean over the 8 counted samples (%.12g against "
	         "%.12g, within %.1e)",
	         iev, iref, tol);
	check(ok && fabs(iev - iref) <= tol, what);
	struct sf_batch imine = {.ninputs = 1, .inputs = min, .labels = yi + first};
	ok = sf_model_step(m, &imine, &ticket) == SF_OK && sf_model_loss(m, ticket, &il) == SF_OK;
	/* the same rows' float32 rounding, and the step's scale 1 / 8 in float */
	tol = xrow * SF_EPS32 + SF_EPS32 * fabs(iref);
	snprintf(what, sizeof what,
	         "ignore index: a step's loss = that mean, the count agreed across ranks (%.9g "
	         "against %.9g, within %.1e)",
	         il, iref, tol);
	check(ok && fabs(il - iref) <= tol, what);
	/* every label ignored: loss 0 and a zero gradient (momentum still moves SGD's
	 * parameters) */
	int32_t none[12];
	for (int i = 0; i < 12; i++)
		none[i] = SF_LOSS_IGNORE_INDEX;
	struct sf_batch inone = {.ninputs = 1, .inputs = min, .labels = none + first};
	double l0 = -1.0;
	ok = sf_model_step(m, &inone, &ticket) == SF_OK && sf_model_loss(m, ticket, &l0) == SF_OK;
	int ntens = 0;
	size_t nonzero = 0, seen = 0;
	ok = ok && sf_model_tensor_count(m, &ntens) == SF_OK;
	for (int t = 0; ok && t < ntens; t++) {
		struct sf_tensor_info ti;
		ok = sf_model_tensor_info(m, t, &ti) == SF_OK &&
		     sf_model_grad_get(m, ti.name, p1, ti.numel) == SF_OK;
		for (size_t i = 0; ok && i < ti.numel; i++)
			nonzero += p1[i] != 0.0f;
		seen += ti.numel;
	}
	snprintf(what, sizeof what,
	         "ignore index: a batch whose every label is ignored has loss 0 (%g) and a zero "
	         "gradient (%zu of %zu nonzero)",
	         l0, nonzero, seen);
	check(ok && l0 == 0.0 && nonzero == 0 && seen == P, what);
	struct sf_batch anone = {.ninputs = 1, .inputs = in, .labels = none};
	check(sf_model_evaluate(m, &anone, 12, &ev) == SF_ERR_INVALID &&
	          strstr(sf_last_error(), "ignore index") != NULL,
	      "ignore index: evaluate of samples whose every label is ignored is refused");

	/* Each world's figure and its float32 rounding (the file's header): a row's loss
	 * within (xrow + 2 kf max_c mag) eps32 of exact, a mean within the mean of its rows',
	 * the step's loss also within its scale's eps32 */
	double ev_tol = 0.0, ign_tol = 0.0;
	int ign_n = 0;
	for (int r = 0; r < NS; r++) {
		double mx = 0.0;
		for (int c = 0; c < C; c++)
			mx = fmax(mx, mag[(size_t)r * C + c]);
		double row = (xrow + 2.0 * kf * mx) * SF_EPS32;
		ev_tol += row / NS;
		if (r < 12 && yi[r] != SF_LOSS_IGNORE_INDEX)
			ign_tol += row, ign_n++;
	}
	ign_tol = ign_tol / ign_n + SF_EPS32 * fabs(il);
	if (check_rank == 0)
		printf("eval %.17g %.3e\nfwd %.17g %.3e\nign %.17g %.3e\n1..%d\n", ev29, ev_tol,
		       sum, sum_tol, il, ign_tol, check_count);
	sf_model_destroy(m);
	sf_graph_destroy(g);
	sf_finalize(ctx);
	free(x), free(ids), free(y), free(out), free(part), free(logits), free(p0), free(p1),
	    free(xin), free(mag);
	return check_failed ? 1 : 0;
}
