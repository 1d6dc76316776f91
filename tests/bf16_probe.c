/*
 * bf16_probe.c — what a gather delivers under SHARDFLOW_PARAM_DTYPE, seen through the
 * forward pass.
 *
 *   bf16_probe [STEPS]
 *
 * A linear layer without bias, 16 -> 23 (368 parameters: padded at 3 and 5 ranks),
 * trained STEPS SGD steps (default 3, so the master weights are no longer bf16
 * values), then sf_model_predict on the 16 rows of the identity: row i of the logits is
 * column i of W exactly as the gather delivered it (one product by 1, the others by 0:
 * no rounding). Each rank checks its rows against the fp32 master weights
 * (sf_model_params_get) rounded to bf16 and unrounded, and prints
 *   rank <r> rows <n> bf16-equal <a> fp32-equal <b> of <m>
 * Exit status 0 when every logit equals the master's bf16 rounding (SHARDFLOW_PARAM_DTYPE
 * =bf16) or the master itself (fp32), 1 otherwise or on an error.
 */
#include "common/bf16.h"
#include "shardflow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D 16
#define C 23

#define CHECK(call)                                                                        \
	do {                                                                               \
		int rc_ = (call);                                                          \
		if (rc_ != SF_OK) {                                                        \
			fprintf(stderr, "bf16_probe: %s failed: %s\n", #call, sf_strerror(rc_)); \
			goto out;                                                          \
		}                                                                          \
	} while (0)

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 3, status = 1, rank = 0, size = 1;
	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	float x[D * D], logits[D * C], W[C * D];
	int32_t y[D];
	CHECK(sf_init(&argc, &argv, &ctx));
	CHECK(sf_context_world(ctx, &rank, &size));
	struct sf_config cfg;
	CHECK(sf_context_config(ctx, &cfg));
	int in, h, labels, loss;
	CHECK(sf_graph_create("probe", &g));
	CHECK(sf_graph_input(g, "x", D, &in));
	CHECK(sf_graph_layer(g, "linear_nobias", &in, 1, &(int){C}, sizeof(int), "w", &h));
	CHECK(sf_graph_label_input(g, "y", C, &labels));
	CHECK(sf_graph_softmax_cross_entropy(g, h, labels, &loss));
	struct sf_model_options o;
	sf_model_options_init(&o);
	o.batch = D;
	o.lr = 0.5f;
	CHECK(sf_model_create(ctx, g, &o, &m));
	int first, rows;
	CHECK(sf_model_local_rows(m, &first, &rows));
	const float *inputs[1] = {x};
	struct sf_batch b = {.ninputs = 1, .inputs = inputs, .labels = y};
	for (int s = 0; s < steps; s++) { /* random rows, labels i mod C */
		for (int i = 0; i < rows * D; i++)
			x[i] = (float)((i * 7919 + s * 104729 + first * 31) % 2001) / 1000.0f - 1.0f;
		for (int i = 0; i < rows; i++)
			y[i] = (first + i + s) % C;
		CHECK(sf_model_step(m, &b, NULL));
	}
	size_t n;
	CHECK(sf_model_param_count(m, &n));
	CHECK(sf_model_params_get(m, W, n)); /* (C, D), row-major */
	memset(x, 0, sizeof x);
	for (int i = 0; i < rows; i++)
		x[i * D + first + i] = 1.0f;
	CHECK(sf_model_predict(m, &b, logits));
	int eq16 = 0, eq32 = 0, total = rows * C;
	for (int i = 0; i < rows; i++)
		for (int c = 0; c < C; c++) {
			float got = logits[i * C + c], w = W[c * D + first + i];
			eq16 += memcmp(&got, &(float){sf_bf16_round(w)}, sizeof got) == 0;
			eq32 += memcmp(&got, &w, sizeof got) == 0;
		}
	printf("rank %d rows %d bf16-equal %d fp32-equal %d of %d\n", rank, rows, eq16, eq32, total);
	fflush(stdout);
	status = (cfg.param_dtype == SF_DTYPE_BF16 ? eq16 : eq32) == total ? 0 : 1;
out:
	sf_model_destroy(m);
	sf_graph_destroy(g);
	if (ctx)
		sf_finalize(ctx);
	return status;
}
