/*
 * regression.c — a regression with a known answer, trained with a regression loss and
 * checked with the library's own evaluation and parameters by name (no MPI call here).
 *
 * Data: x uniform in [-1, 1)^IN, y = W* x + b* + noise (normal, sd --noise), W* and b*
 * fixed by --seed; every sample is a hash of (seed, step, row), so a rank makes only
 * its own rows and every world size sees the same global batches. The model is one
 * linear layer "fit" (IN -> OUT) against the target input "y" under --loss mse (default),
 * l1 or huber; AdamW. --loss mse-layer writes MSE as a user's loss layer instead: a
 * layer type "squared_error" (registered here, 30 lines) computes (fit - y)^2 and its
 * gradient, and the graph's loss (SF_LOSS_MEAN) is the mean of its output: the way to
 * write any loss the library lacks. After training it reads "fit.weight" and "fit.bias" by name
 * (sf_model_tensor_get) and prints their largest distance to W* and b*, and the mean
 * loss of --val samples drawn apart (sf_model_evaluate); it exits 0 when the fit
 * reached W* and b* within --tol.
 *
 *   mpirun -np 2 examples/regression [--steps 300] [--batch 64] [--lr 0.05]
 *          [--loss mse|l1|huber|mse-layer] [--noise 0.01] [--tol 0.01] [--val 1000] [--seed 1]
 */
#include <shardflow.h>

#include "examples/cli.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "regression"
enum { IN = 8, OUT = 3 };

struct options {
	int steps, batch, val;
	float lr, noise, tol;
	unsigned seed;
	enum sf_loss_kind loss;
	int loss_layer; /* --loss mse-layer: MSE as the mean of a "squared_error" layer */
};

/* ---- a loss written as a layer type: (pred - target)^2 of each element -------- */

static int sqerr_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                       size_t *nparams)
{
	(void)config;
	if (nin != 2 || in_dims[0] != in_dims[1])
		return sf_error_set(SF_ERR_INVALID,
		                    "squared_error: takes a prediction and a target of one width");
	*out_dim = in_dims[0];
	*nparams = 0;
	return SF_OK;
}

/* y = (p - t)^2 */
static void sqerr_forward_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	const float *p = sf_kernel_input(buffers, li, 0), *t = sf_kernel_input(buffers, li, 1);
	float *y = sf_kernel_output(buffers, li);
	for (size_t i = 0; i < (size_t)li->rows * (size_t)li->out_dim; i++)
		y[i] = (p[i] - t[i]) * (p[i] - t[i]);
}

/* dp = dy 2 (p - t): dy is the library's seed, 1 / (the global batch's elements) */
static void sqerr_backward_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	const float *p = sf_kernel_input(buffers, li, 0), *t = sf_kernel_input(buffers, li, 1);
	const float *dy = sf_kernel_doutput(buffers, li);
	float *dp = sf_kernel_dinput(buffers, li, 0), *dt = sf_kernel_dinput(buffers, li, 1);
	for (size_t i = 0; i < (size_t)li->rows * (size_t)li->out_dim; i++) {
		float g = dy[i] * (2.0f * (p[i] - t[i]));
		if (dp)
			dp[i] = li->accumulate[0] ? dp[i] + g : g;
		if (dt) /* a target that is itself computed (not the case here) */
			dt[i] = li->accumulate[1] ? dt[i] - g : -g;
	}
}

static const struct sf_layer_type sqerr_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "squared_error",
    .min_inputs = 2,
    .max_inputs = 2,
    .infer = sqerr_infer,
    .forward_cpu = sqerr_forward_cpu,
    .backward_cpu = sqerr_backward_cpu,
};

/* A uniform float in [-1, 1) from a hash of (seed, a, b, c) */
static float unit(unsigned seed, uint32_t a, uint32_t b, uint32_t c)
{
	uint64_t h = (uint64_t)seed * 0x9e3779b97f4a7c15ull ^ a * 0xbf58476d1ce4e5b9ull ^
	             b * 0x94d049bb133111ebull ^ c * 0x2545f4914f6cdd1dull;
	h ^= h >> 31, h *= 0xbf58476d1ce4e5b9ull, h ^= h >> 29, h *= 0x94d049bb133111ebull;
	h ^= h >> 32;
	return (float)((h >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

/* The truth: W* (OUT, IN) and b* (OUT) in [-1, 1) */
static float truth_w(const struct options *o, int r, int c)
{
	return unit(o->seed, 1, (uint32_t)r, (uint32_t)c);
}
static float truth_b(const struct options *o, int r)
{
	return unit(o->seed, 2, (uint32_t)r, 0);
}

/* Sample `row` of batch `step` (steps from 1; the validation set is step 0): x, y */
static void sample(const struct options *o, int step, int row, float *x, float *y)
{
	for (int i = 0; i < IN; i++)
		x[i] = unit(o->seed, 3, (uint32_t)step * 1000003u + (uint32_t)row, (uint32_t)i);
	for (int r = 0; r < OUT; r++) {
		double v = truth_b(o, r);
		for (int i = 0; i < IN; i++)
			v += (double)truth_w(o, r, i) * x[i];
		/* a normal deviate from two uniforms (Box-Muller) */
		double u1 = 0.5 * (unit(o->seed, 4, (uint32_t)step * 1000003u + (uint32_t)row,
		                        (uint32_t)r) + 1.0) + 1e-9;
		double u2 = unit(o->seed, 5, (uint32_t)step * 1000003u + (uint32_t)row, (uint32_t)r);
		y[r] = (float)(v + o->noise * sqrt(-2.0 * log(u1)) * cos(3.141592653589793 * u2));
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--steps N] [--batch B] [--lr X] [--loss "
	           "mse|l1|huber|mse-layer] [--noise SD] [--tol X] [--val N] [--seed S]\n");
}

static const char *const opt_names[] = {"--steps", "--batch", "--val", "--seed",
                                        "--lr",    "--tol",   "--noise", "--loss"};
enum { O_STEPS, O_BATCH, O_VAL, O_SEED, O_LR, O_TOL, O_NOISE, O_LOSS };

static int on_value(int k, char *v, void *ctx)
{
	struct options *o = ctx;
	const char *name = opt_names[k];
	int n = 0;
	switch (k) {
	case O_STEPS:
		return cli_int(name, v, 1, 10000000, &o->steps);
	case O_BATCH:
		return cli_int(name, v, 1, 10000000, &o->batch);
	case O_VAL:
		return cli_int(name, v, 1, 10000000, &o->val);
	case O_SEED:
		if (cli_int(name, v, 1, 10000000, &n))
			return 2;
		o->seed = (unsigned)n;
		return 0;
	case O_LR:
	case O_TOL:
		if (cli_parse_float(v, 0.0f, INFINITY, k == O_LR ? &o->lr : &o->tol) ||
		    !((k == O_LR ? o->lr : o->tol) > 0))
			return cli_bad_usage("%s \"%s\" is invalid: expected a positive number", name,
			                     v);
		return 0;
	case O_NOISE:
		if (cli_parse_float(v, 0.0f, INFINITY, &o->noise))
			return cli_bad_usage("%s \"%s\" is invalid: expected a number >= 0", name, v);
		return 0;
	default: /* O_LOSS */
		if (!strcmp(v, "mse"))
			o->loss = SF_LOSS_MSE;
		else if (!strcmp(v, "l1"))
			o->loss = SF_LOSS_L1;
		else if (!strcmp(v, "huber"))
			o->loss = SF_LOSS_HUBER;
		else if (!strcmp(v, "mse-layer"))
			o->loss = SF_LOSS_MEAN, o->loss_layer = 1;
		else
			return cli_bad_usage("--loss \"%s\": accepted values are mse, l1, huber, "
			                     "mse-layer",
			                     v);
		return 0;
	}
}

/* 0, or the exit status: 0 after --help, 2 on bad usage (printed) */
static int parse(int argc, char **argv, struct options *o, int *exit_status)
{
	*o = (struct options){300, 64, 1000, 0.05f, 0.01f, 0.01f, 1, SF_LOSS_MSE, 0};
	cli_prog = PROG;
	cli_usage = usage;
	const struct cli_spec spec = {opt_names, (int)(sizeof opt_names / sizeof opt_names[0]),
	                              NULL,      0,
	                              on_value,  NULL};
	int rc = cli_parse(argc, argv, &spec, o);
	*exit_status = rc == 1 ? 0 : rc;
	return rc;
}

int main(int argc, char **argv)
{
	struct options o;
	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	float *x = NULL, *y = NULL, *vx = NULL, *vy = NULL;
	int status = 1, rank, first, rows, in, target, fit, loss;
	int parse_status;
	if (parse(argc, argv, &o, &parse_status))
		return parse_status;
	CLI_CHECK_GOTO(sf_init(&argc, &argv, &ctx), out);
	CLI_CHECK_GOTO(sf_context_world(ctx, &rank, NULL), out);

	struct sf_loss_config lc;
	CLI_CHECK_GOTO(sf_loss_config_init(&lc), out);
	lc.kind = o.loss;
	lc.delta = 0.1f;
	CLI_CHECK_GOTO(sf_graph_create("regression", &g), out);
	CLI_CHECK_GOTO(sf_graph_input(g, "x", IN, &in), out);
	CLI_CHECK_GOTO(sf_graph_input(g, "y", OUT, &target), out);
	CLI_CHECK_GOTO(sf_graph_linear(g, in, OUT, "fit", &fit), out);
	if (o.loss_layer) { /* the loss is the mean of a layer's output */
		int se, se_in[2] = {fit, target};
		CLI_CHECK_GOTO(sf_layer_type_register(&sqerr_type), out);
		CLI_CHECK_GOTO(sf_graph_layer(g, "squared_error", se_in, 2, NULL, 0, "se", &se),
		               out);
		CLI_CHECK_GOTO(sf_graph_loss(g, &lc, se, -1, &loss), out);
	} else {
		CLI_CHECK_GOTO(sf_graph_loss(g, &lc, fit, target, &loss), out);
	}

	struct sf_model_options mo;
	CLI_CHECK_GOTO(sf_model_options_init(&mo), out);
	mo.batch = o.batch;
	mo.optimizer = SF_OPT_ADAMW;
	mo.lr = o.lr;
	mo.seed = o.seed;
	CLI_CHECK_GOTO(sf_model_create(ctx, g, &mo, &m), out);
	CLI_CHECK_GOTO(sf_model_local_rows(m, &first, &rows), out);

	x = malloc(sizeof(float) * (size_t)rows * IN);
	y = malloc(sizeof(float) * (size_t)rows * OUT);
	vx = malloc(sizeof(float) * (size_t)o.val * IN);
	vy = malloc(sizeof(float) * (size_t)o.val * OUT);
	if (!x || !y || !vx || !vy) {
		fprintf(stderr, PROG ": out of memory\n");
		goto out;
	}
	const float *inputs[2] = {x, y}; /* in creation order: "x", then the target "y" */
	struct sf_batch batch = {.ninputs = 2, .inputs = inputs};
	int64_t ticket = -1;
	double l = 0.0;
	for (int s = 1; s <= o.steps; s++) {
		for (int r = 0; r < rows; r++)
			sample(&o, s, first + r, x + (size_t)r * IN, y + (size_t)r * OUT);
		CLI_CHECK_GOTO(sf_model_step(m, &batch, &ticket), out);
		if (s % 100 == 0 || s == o.steps) {
			CLI_CHECK_GOTO(sf_model_loss(m, ticket, &l), out);
			if (rank == 0)
				printf("step %d/%d loss %.6g\n", s, o.steps, l);
		}
	}

	/* the fit against the truth, read by name; the held-out loss, evaluated whole */
	float w[OUT * IN], b[OUT];
	CLI_CHECK_GOTO(sf_model_tensor_get(m, "fit.weight", w, OUT * IN), out);
	CLI_CHECK_GOTO(sf_model_tensor_get(m, "fit.bias", b, OUT), out);
	double ew = 0.0, eb = 0.0, val = 0.0;
	for (int r = 0; r < OUT; r++) {
		eb = fmax(eb, fabs((double)b[r] - truth_b(&o, r)));
		for (int i = 0; i < IN; i++)
			ew = fmax(ew, fabs((double)w[r * IN + i] - truth_w(&o, r, i)));
	}
	for (int r = 0; r < o.val; r++)
		sample(&o, 0, r, vx + (size_t)r * IN, vy + (size_t)r * OUT);
	const float *vin[2] = {vx, vy};
	struct sf_batch vb = {.ninputs = 2, .inputs = vin};
	CLI_CHECK_GOTO(sf_model_evaluate(m, &vb, o.val, &val), out);
	int reached = ew <= o.tol && eb <= o.tol;
	if (rank == 0)
		printf(PROG ": |W - W*| %.2e, |b - b*| %.2e (tolerance %g, noise sd %g); held-out "
		       "loss %.6g over %d samples: %s\n",
		       ew, eb, (double)o.tol, (double)o.noise, val, o.val,
		       reached ? "reached the known answer" : "NOT reached");
	status = reached ? 0 : 1;
out:
	sf_model_destroy(m);
	sf_graph_destroy(g);
	if (ctx && sf_finalize(ctx) != SF_OK)
		status = 1;
	free(x), free(y), free(vx), free(vy);
	return status;
}
