/*
 * test_infer.c — sf_model_forward and sf_model_evaluate on any world size
 * (tests/infer.sh runs it on 1, 2 and 3 ranks and compares the worlds' figures):
 *
 *  - forward of the loss's input for one batch of the model's geometry = this rank's
 *    sf_model_predict rows, bitwise, and whole on every rank;
 *  - any number of samples: 29 (three passes of 12, the last padded) give, for the
 *    first 12 and for samples 12..23, what a forward of just those samples gives,
 *    bitwise; a float input node returns its input;
 *  - evaluate on the batch a step then trains on = that step's loss (relative 1e-6);
 *    evaluate of 29 samples = the mean cross-entropy of the forward's logits (1e-9),
 *    the same on every rank, and evaluate/forward change no parameter;
 *  - refusals: an unknown node, 0 samples, a wrong output size, no labels, and a label
 *    out of range in the third pass (every rank fails, with the label's message);
 *  - cross-entropy's ignore index: with 4 of 12 labels ignored, evaluate and a step's
 *    loss are the mean over the 8 others (the test's own double computation from the
 *    forward's logits: the count is agreed across ranks); a batch whose every label is
 *    ignored has loss 0 and changes nothing; evaluating one is refused.
 * It prints "eval <loss>" and "fwd <sum>" of 29 samples and "ign <loss>" of the step
 * with ignored labels for the worlds' comparison.
 */
#include "examples/synthetic.h"
#include "shardflow.h"
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

int main(int argc, char **argv)
{
	int size = 1, D, C, T;
	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	if (sf_init(&argc, &argv, &ctx) != SF_OK)
		return 1;
	sf_context_world(ctx, &check_rank, &size);
	check_prog = "test_infer";
	if (build_model("test_infer", MODEL_MLP, &g, &D, &C, &T))
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
	if (!x || !ids || !y || !out || !part || !logits || !p0 || !p1 || !xin)
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
	double sum = 0.0;
	for (size_t i = 0; i < (size_t)NS * C; i++)
		sum += out[i] * (double)((i % 7) + 1);
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
	char what[200];
	snprintf(what, sizeof what,
	         "evaluate on a step's batch = the step's loss (%.9g against %.9g)", ev, l);
	check(ok && fabs(ev - l) <= 1e-6 * fabs(l), what);
	/* the same mean from the forward's logits, in the test's own double arithmetic */
	double ref = mean_xent(out, y, NS, C);
	snprintf(what, sizeof what,
	         "evaluate of 29 samples = the mean cross-entropy of their forward logits "
	         "(%.12g against %.12g)",
	         ev29, ref);
	check(fabs(ev29 - ref) <= 1e-9 * fabs(ref), what);
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
	 * batch count for nothing (one or two on each rank of 2 and 3) */
	y[26] = 0;
	int32_t yi[12];
	memcpy(yi, y, sizeof yi);
	for (int i = 1; i < 12; i += 3)
		yi[i] = SF_LOSS_IGNORE_INDEX;
	struct sf_batch ign = {.ninputs = 1, .inputs = in, .labels = yi};
	ok = sf_model_forward(m, "fc3", &all, 12, out, 12 * (size_t)C) == SF_OK;
	double iref = mean_xent(out, yi, 12, C); /* over the 8 counted samples */
	double iev = 0.0, il = 0.0;
	ok = ok && sf_model_evaluate(m, &ign, 12, &iev) == SF_OK;
	snprintf(what, sizeof what,
	         "ignore index: evaluate = the mean over the 8 counted samples (%.12g against "
	         "%.12g)",
	         iev, iref);
	check(ok && fabs(iev - iref) <= 1e-9 * fabs(iref), what);
	struct sf_batch imine = {.ninputs = 1, .inputs = min, .labels = yi + first};
	ok = sf_model_step(m, &imine, &ticket) == SF_OK && sf_model_loss(m, ticket, &il) == SF_OK;
	snprintf(what, sizeof what,
	         "ignore index: a step's loss = that mean, the count agreed across ranks (%.9g "
	         "against %.9g)",
	         il, iref);
	check(ok && fabs(il - iref) <= 1e-6 * fabs(iref), what);
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

	if (check_rank == 0)
		printf("eval %.17g\nfwd %.17g\nign %.17g\n1..%d\n", ev29, sum, il, check_count);
	sf_model_destroy(m);
	sf_graph_destroy(g);
	sf_finalize(ctx);
	free(x), free(ids), free(y), free(out), free(part), free(logits), free(p0), free(p1),
	    free(xin);
	return check_failed ? 1 : 0;
}
