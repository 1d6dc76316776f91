/*
 * mlp_synthetic.c — train an MLP on synthetic data with shardflow's public API.
 *
 * The smallest complete program: build a graph input(D) -> [linear -> relu]* ->
 * linear(C) -> softmax cross-entropy, make a sharded model of it, and run steps. Each
 * rank generates only its own rows of global batch k (examples/synthetic.h is
 * counter-based), so the run is the same problem for every world size.
 *
 *   mpirun -np 2 examples/mlp_synthetic --steps 20 --widths 784,512,512,10
 *
 * Rank 0 prints one line per step, "step <k> loss <loss> ms <wall ms>", then
 * "final_loss <loss>"; the scripts in tests/ parse exactly these lines. Exit status:
 * 0 success, 1 a library error, 2 a bad command line.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "examples/synthetic.h"
#include "shardflow.h"
#include "examples/cli.h"

#define PROG "mlp_synthetic"
#define MAX_WIDTHS 64
#define MAX_WIDTH (1 << 20)

struct options {
	int steps;
	int batch;
	int nwidths;
	int widths[MAX_WIDTHS]; /* widths[0] = D, widths[nwidths-1] = C */
	enum sf_optimizer optimizer;
	float lr; /* <= 0: the optimizer's default */
	uint64_t seed;
	int warmup; /* steps left out of the comm_stats line */
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: " PROG " [options]\n"
	    "Trains an MLP on synthetic linearly separable data, sharded over the MPI ranks.\n"
	    "  --steps N          training steps (default 20)\n"
	    "  --batch B          global batch rows, split over the ranks (default 64)\n"
	    "  --widths D,H...,C  layer widths: input, hidden..., classes; at least 2\n"
	    "                     (default 784,512,512,10)\n"
	    "  --optimizer NAME   sgd, adamw or lion (default sgd)\n"
	    "  --lr X             learning rate (default 0.1 for sgd, 0.001 for adamw, 0.0001 for\n"
	    "                     lion; lion's beta2 is 0.99)\n"
	    "  --seed S           seed of the data and the initial parameters, an unsigned\n"
	    "                     integer (default 1)\n"
	    "  --warmup K         steps left out of the comm_stats line, 0 <= K < steps\n"
	    "                     (default 0)\n"
	    "  --help             print this message and exit\n"
	    "Prints \"step <k> loss <loss> ms <milliseconds>\" per step, \"final_loss "
	    "<loss>\",\n"
	    "then rank 0's averages over the steps after the warm-up: \"comm_stats steps <n>\n"
	    "wall_ms <step> comm_ms <in collectives> comm_cpu_ms <comm worker CPU in\n"
	    "collectives> comm_worker_cpu_ms <comm worker CPU in all> process_cpu_ms\n"
	    "<process CPU, user + system> main_thread_cpu_ms <this thread's CPU> comm_mb\n"
	    "<MB sent in the collectives>\" (each per step).\n"
	    "The runtime reads SHARDFLOW_PREFETCH_DEPTH, SHARDFLOW_BACKWARD_PREFETCH,\n"
	    "SHARDFLOW_SHARDING and SHARDFLOW_LOG from the environment.\n");
}

enum { OPT_STEPS, OPT_BATCH, OPT_WIDTHS, OPT_OPTIMIZER, OPT_LR, OPT_SEED, OPT_WARMUP };
static const char *const option_names[] = {"--steps", "--batch", "--widths", "--optimizer",
                                           "--lr",    "--seed",  "--warmup"};

static int on_value(int k, char *val, void *ctx)
{
	struct options *o = ctx;
	int64_t v;
	switch (k) {
	case OPT_STEPS:
	case OPT_BATCH:
		if (cli_parse_i64(val, 1, INT_MAX, &v))
			return cli_bad_usage("%s \"%s\" is invalid: expected a positive integer",
			                     option_names[k], val);
		*(k == OPT_STEPS ? &o->steps : &o->batch) = (int)v;
		return 0;
	case OPT_WIDTHS:
		if (cli_int_list("--widths", val, 1, MAX_WIDTH, 2, MAX_WIDTHS, o->widths,
		                 &o->nwidths))
			return 2;
		return 0;
	case OPT_OPTIMIZER:
		if (sf_optimizer_from_name(val, &o->optimizer) != SF_OK)
			return cli_bad_usage("--optimizer %s", sf_last_error());
		return 0;
	case OPT_LR:
		if (cli_parse_float(val, 0.0f, 1e6f, &o->lr) || o->lr <= 0.0f)
			return cli_bad_usage("--lr \"%s\" is invalid: expected a positive number",
			                     val);
		return 0;
	case OPT_SEED:
		if (cli_parse_i64(val, 0, INT64_MAX, &v))
			return cli_bad_usage("--seed \"%s\" is invalid: expected an integer >= 0",
			                     val);
		o->seed = (uint64_t)v;
		return 0;
	default:
		if (cli_parse_i64(val, 0, INT_MAX, &v))
			return cli_bad_usage(
			    "--warmup \"%s\" is invalid: expected an integer >= 0, "
			    "below --steps",
			    val);
		o->warmup = (int)v;
		return 0;
	}
}

/* Returns -1 to go on, otherwise the exit status (0 after --help, 2 on a bad line). */
static int parse_options(int argc, char **argv, struct options *o)
{
	static const int default_widths[] = {784, 512, 512, 10};
	*o = (struct options){
	    .steps = 20, .batch = 64, .optimizer = SF_OPT_SGD, .lr = 0.0f, .seed = 1};
	o->nwidths = 4;
	memcpy(o->widths, default_widths, sizeof(default_widths));
	const struct cli_spec sp = {option_names, 7, NULL, 0, on_value, NULL};
	cli_prog = PROG;
	cli_usage = usage;
	int rc = cli_parse(argc, argv, &sp, o);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (o->warmup >= o->steps)
		return cli_bad_usage("--warmup \"%d\" is invalid: expected an integer >= 0, below "
		                     "--steps (%d)",
		                     o->warmup, o->steps);
	if (o->lr <= 0.0f)
		o->lr = o->optimizer == SF_OPT_LION ? 1e-4f : o->optimizer == SF_OPT_ADAMW ? 1e-3f : 0.1f;
	return -1;
}

/* the runtime's clock: simulated time in a simulation build (docs/scale.md) */
static double now_ms(void)
{
	double t = 0;
	sf_clock(&t);
	return t * 1e3;
}

/* CPU time of the whole process (every thread), user + system, in ms */
static double process_cpu_ms(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
}

/* input(D) -> [linear -> relu]* -> linear(C) -> softmax cross-entropy */
static int build_graph(const struct options *o, sf_graph **out)
{
	sf_graph *g = NULL;
	int h, labels, loss;
	CLI_CHECK_GOTO(sf_graph_create("mlp", &g), fail);
	CLI_CHECK_GOTO(sf_graph_input(g, "x", o->widths[0], &h), fail);
	CLI_CHECK_GOTO(sf_graph_label_input(g, "label", o->widths[o->nwidths - 1], &labels), fail);
	for (int i = 1; i < o->nwidths; i++) {
		char name[32];
		snprintf(name, sizeof(name), "fc%d", i);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, o->widths[i], name, &h), fail);
		if (i < o->nwidths - 1)
			CLI_CHECK_GOTO(sf_graph_relu(g, h, &h), fail);
	}
	CLI_CHECK_GOTO(sf_graph_softmax_cross_entropy(g, h, labels, &loss), fail);
	*out = g;
	return 0;
fail:
	sf_graph_destroy(g);
	return -1;
}

int main(int argc, char **argv)
{
	struct options o;
	int status = parse_options(argc, argv, &o);
	if (status >= 0)
		return status;

	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	float *x = NULL;
	int32_t *labels = NULL;
	int rank = 0, size = 1;
	const int D = o.widths[0], C = o.widths[o.nwidths - 1];
	status = 1;

	CLI_CHECK_GOTO(sf_init(&argc, &argv, &ctx), fail);
	CLI_CHECK_GOTO(sf_context_world(ctx, &rank, &size), fail);
	if (build_graph(&o, &g))
		goto fail;

	struct sf_model_options mo;
	CLI_CHECK_GOTO(sf_model_options_init(&mo), fail);
	mo.batch = o.batch;
	mo.seed = o.seed;
	mo.optimizer = o.optimizer;
	if (mo.optimizer == SF_OPT_LION)
		mo.beta2 = 0.99f; /* the paper's default */
	mo.lr = o.lr;
	CLI_CHECK_GOTO(sf_model_create(ctx, g, &mo, &m), fail);
	sf_graph_destroy(g);
	g = NULL;

	struct sf_config cfg;
	size_t nparams;
	int first, rows;
	CLI_CHECK_GOTO(sf_context_config(ctx, &cfg), fail);
	CLI_CHECK_GOTO(sf_model_param_count(m, &nparams), fail);
	CLI_CHECK_GOTO(sf_model_local_rows(m, &first, &rows), fail);
	if (rank == 0) {
		fprintf(stderr,
		        PROG ": %d rank%s, sharding %s, prefetch depth %d, backward prefetch %s, "
		             "%zu parameters, widths",
		        size, size == 1 ? "" : "s", sf_sharding_name(cfg.sharding),
		        cfg.prefetch_depth, sf_backward_prefetch_name(cfg.bwd_prefetch), nparams);
		for (int i = 0; i < o.nwidths; i++)
			fprintf(stderr, "%c%d", i ? ',' : ' ', o.widths[i]);
		fprintf(stderr, ", batch %d x %d micro-batch(es), %d steps, %s lr %g, seed %llu\n",
		        o.batch, cfg.grad_accum, o.steps, sf_optimizer_name(o.optimizer),
		        (double)o.lr, (unsigned long long)o.seed);
	}

	/* This rank's rows of every batch; at least one element so malloc never sees 0. */
	x = malloc(sizeof(float) * ((size_t)rows * (size_t)D + 1));
	labels = malloc(sizeof(int32_t) * ((size_t)rows + 1));
	if (!x || !labels) {
		fprintf(stderr, PROG ": out of memory for a batch of %d rows of width %d\n", rows,
		        D);
		goto fail;
	}
	const float *inputs[1] = {x};
	struct sf_batch batch = {.ninputs = 1, .inputs = inputs, .labels = labels};

	double loss = 0.0, t_start = now_ms(), cpu_start = process_cpu_ms();
	double main_start = cli_thread_cpu_ms();
	struct sf_model_stats st0;
	CLI_CHECK_GOTO(sf_model_stats(m, &st0), fail);
	for (int k = 1; k <= o.steps; k++) {
		/* SHARDFLOW_GRAD_ACCUM = K: K micro-batches of --batch rows, micro-batch j
		 * being rows [j B, (j + 1) B) of global batch k; the loss is their mean */
		int64_t ticket, prev = -1;
		double t0 = now_ms(), l;
		loss = 0.0;
		for (int j = 0; j < cfg.grad_accum; j++) {
			if (sf_synth_rows(o.seed, k, j * o.batch + first, rows, D, C, x, labels)) {
				fprintf(stderr, PROG ": cannot generate batch %d\n", k);
				goto fail;
			}
			if (j + 1 < cfg.grad_accum)
				CLI_CHECK_GOTO(sf_model_accumulate(m, &batch, &ticket), fail);
			else
				CLI_CHECK_GOTO(sf_model_step(m, &batch, &ticket), fail);
			/* the previous micro-batch's loss, one behind: the model keeps 16 */
			if (prev >= 0) {
				CLI_CHECK_GOTO(sf_model_loss(m, prev, &l), fail);
				loss += l / cfg.grad_accum;
			}
			prev = ticket;
		}
		CLI_CHECK_GOTO(sf_model_loss(m, prev, &l), fail);
		loss += l / cfg.grad_accum;
		double ms = now_ms() - t0;
		if (rank == 0) {
			printf("step %d loss %.9g ms %.3f\n", k, loss, ms);
			fflush(stdout);
		}
		if (k == o.warmup) { /* the window of comm_stats starts here */
			CLI_CHECK_GOTO(sf_model_stats(m, &st0), fail);
			t_start = now_ms();
			cpu_start = process_cpu_ms();
			main_start = cli_thread_cpu_ms();
		}
	}
	struct sf_model_stats st;
	CLI_CHECK_GOTO(sf_model_stats(m, &st), fail);
	double n = o.steps - o.warmup;
	if (rank == 0) {
		printf("final_loss %.9g\n", loss);
		printf("comm_stats steps %d wall_ms %.3f comm_ms %.3f comm_cpu_ms %.3f "
		       "comm_worker_cpu_ms %.3f process_cpu_ms %.3f main_thread_cpu_ms %.3f "
		       "comm_mb %.3f\n",
		       o.steps - o.warmup, (now_ms() - t_start) / n,
		       1e3 * (st.comm_seconds - st0.comm_seconds) / n,
		       1e3 * (st.comm_cpu_seconds - st0.comm_cpu_seconds) / n,
		       1e3 * (st.comm_worker_cpu_seconds - st0.comm_worker_cpu_seconds) / n,
		       (process_cpu_ms() - cpu_start) / n, (cli_thread_cpu_ms() - main_start) / n,
		       1e-6 * (st.comm_bytes - st0.comm_bytes) / n);
		fflush(stdout);
	}
	status = 0;

fail:
	free(x);
	free(labels);
	if (sf_model_destroy(m) != SF_OK)
		status = 1;
	sf_graph_destroy(g);
	if (ctx && sf_finalize(ctx) != SF_OK)
		status = 1;
	return status;
}
