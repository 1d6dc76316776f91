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
 *
 * The bf16 rounding expected here is the probe's own (ref_bf16 below: nearest, ties to
 * even, written from the float's bits case by case), never common/bf16.h's, which is
 * what the gather runs: a bug there would otherwise be on both sides of the
 * comparison. ref_bf16 is itself checked first on hard-coded bit patterns.
 */
#include "shardflow.h"
#include "examples/cli.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D 16
#define C 23

/* f rounded to the nearest bfloat16 (the top 16 bits of a float), ties to the even top
 * half; a NaN becomes a quiet NaN of the same sign; above the largest bf16, infinity */
static float ref_bf16(float f)
{
	uint32_t u, hi, lo;
	memcpy(&u, &f, sizeof u);
	hi = u >> 16, lo = u & 0xffffu;
	if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
		hi |= 0x0040u; /* NaN */
	else if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u)))
		hi += 1; /* up; a carry into the exponent is right (to infinity past the max) */
	u = hi << 16;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* ref_bf16 against known roundings: 0 or a message */
static const char *ref_bf16_check(void)
{
	static const uint32_t cases[][2] = {
	    {0x3f800000u, 0x3f800000u}, /* 1: exact */
	    {0x3f807fffu, 0x3f800000u}, /* below half: down */
	    {0x3f808000u, 0x3f800000u}, /* tie, even: stays */
	    {0x3f818000u, 0x3f820000u}, /* tie, odd: up to even */
	    {0x3f808001u, 0x3f810000u}, /* above half: up */
	    {0xbf80ffffu, 0xbf810000u}, /* negative: magnitude up */
	    {0x3fffffffu, 0x40000000u}, /* carry into the exponent */
	    {0x7f7fffffu, 0x7f800000u}, /* largest float: infinity */
	    {0x00018000u, 0x00020000u}, /* subnormal tie, odd */
	    {0x7f800001u, 0x7fc00000u}, /* signalling NaN: quiet */
	    {0xffc00001u, 0xffc00000u}, /* negative NaN keeps its sign */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		float f, r;
		uint32_t got;
		memcpy(&f, &cases[i][0], sizeof f);
		r = ref_bf16(f);
		memcpy(&got, &r, sizeof got);
		if (got != cases[i][1]) {
			static char msg[96];
			snprintf(msg, sizeof msg, "ref_bf16(0x%08x) = 0x%08x, expected 0x%08x",
			         (unsigned)cases[i][0], (unsigned)got, (unsigned)cases[i][1]);
			return msg;
		}
	}
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bf16_probe [STEPS] (training steps, 1..1000, default 3)\n");
}

int main(int argc, char **argv)
{
	int steps = 3, status = 1, rank = 0, size = 1;
	cli_prog = "bf16_probe";
	cli_usage = usage;
	int prc = cli_parse_int_operand(argc, argv, "STEPS", 1, 1000, &steps);
	if (prc)
		return prc == 1 ? 0 : prc;
	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	float x[D * D], logits[D * C], W[C * D];
	int32_t y[D];
	CLI_CHECK_GOTO(sf_init(&argc, &argv, &ctx), out);
	CLI_CHECK_GOTO(sf_context_world(ctx, &rank, &size), out);
	const char *bad = ref_bf16_check();
	if (bad) {
		fprintf(stderr, "bf16_probe: the probe's own reference is wrong: %s\n", bad);
		goto out;
	}
	struct sf_config cfg;
	CLI_CHECK_GOTO(sf_context_config(ctx, &cfg), out);
	int in, h, labels, loss;
	CLI_CHECK_GOTO(sf_graph_create("probe", &g), out);
	CLI_CHECK_GOTO(sf_graph_input(g, "x", D, &in), out);
	CLI_CHECK_GOTO(sf_graph_layer(g, "linear_nobias", &in, 1, &(int){C}, sizeof(int), "w", &h),
	               out);
	CLI_CHECK_GOTO(sf_graph_label_input(g, "y", C, &labels), out);
	CLI_CHECK_GOTO(sf_graph_softmax_cross_entropy(g, h, labels, &loss), out);
	struct sf_model_options o;
	sf_model_options_init(&o);
	o.batch = D;
	o.lr = 0.5f;
	CLI_CHECK_GOTO(sf_model_create(ctx, g, &o, &m), out);
	int first, rows;
	CLI_CHECK_GOTO(sf_model_local_rows(m, &first, &rows), out);
	const float *inputs[1] = {x};
	struct sf_batch b = {.ninputs = 1, .inputs = inputs, .labels = y};
	for (int s = 0; s < steps; s++) { /* random rows, labels i mod C */
		for (int i = 0; i < rows * D; i++)
			x[i] = (float)((i * 7919 + s * 104729 + first * 31) % 2001) / 1000.0f - 1.0f;
		for (int i = 0; i < rows; i++)
			y[i] = (first + i + s) % C;
		CLI_CHECK_GOTO(sf_model_step(m, &b, NULL), out);
	}
	size_t n;
	CLI_CHECK_GOTO(sf_model_param_count(m, &n), out);
	CLI_CHECK_GOTO(sf_model_params_get(m, W, n), out); /* (C, D), row-major */
	memset(x, 0, sizeof x);
	for (int i = 0; i < rows; i++)
		x[i * D + first + i] = 1.0f;
	CLI_CHECK_GOTO(sf_model_predict(m, &b, logits), out);
	int eq16 = 0, eq32 = 0, total = rows * C;
	for (int i = 0; i < rows; i++)
		for (int c = 0; c < C; c++) {
			float got = logits[i * C + c], w = W[c * D + first + i];
			eq16 += memcmp(&got, &(float){ref_bf16(w)}, sizeof got) == 0;
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
