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

/* Before sf_init() we do not know our rank; under mpirun the launcher tells us, so
 * that a bad command line prints one usage message, not one per rank. */
static int launcher_rank(void)
{
	static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return atoi(v);
	}
	return 0;
}

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

/* Reports a bad command line, naming the option and the value, and where the usage is
 * (one line, as GNU tools: the whole usage after it buried the mistake); returns the
 * exit status 2. */
__attribute__((format(printf, 1, 2))) static int bad_usage(const char *fmt, ...)
{
	if (launcher_rank() == 0) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, PROG ": ");
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
		fprintf(stderr, "usage: " PROG " [options]; '" PROG " --help' lists them\n");
	}
	return 2;
}

static int parse_positive_int(const char *s, int max, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno || v <= 0 || v > max)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_widths(const char *s, int *w, int *n)
{
	*n = 0;
	const char *p = s;
	for (;;) {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (end == p || errno || v <= 0 || v > MAX_WIDTH || *n == MAX_WIDTHS)
			return -1;
		w[(*n)++] = (int)v;
		if (*end == '\0')
			break;
		if (*end != ',')
			return -1;
		p = end + 1;
	}
	return *n >= 2 ? 0 : -1;
}

/* Returns -1 to go on, otherwise the exit status (0 after --help, 2 on a bad line). */
static int parse_options(int argc, char **argv, struct options *o)
{
	static const int default_widths[] = {784, 512, 512, 10};
	*o = (struct options){
	    .steps = 20, .batch = 64, .optimizer = SF_OPT_SGD, .lr = 0.0f, .seed = 1};
	o->nwidths = 4;
	memcpy(o->widths, default_widths, sizeof(default_widths));

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			return 0;
		}
		if (strncmp(arg, "--", 2) != 0)
			return bad_usage("unexpected argument \"%s\"", arg);
		/* --name value or --name=value */
		char name[32];
		const char *val;
		const char *eq = strchr(arg, '=');
		size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
		if (len >= sizeof(name))
			return bad_usage("unknown option \"%s\"", arg);
		memcpy(name, arg, len);
		name[len] = '\0';
		if (strcmp(name, "--steps") && strcmp(name, "--batch") &&
		    strcmp(name, "--widths") && strcmp(name, "--optimizer") &&
		    strcmp(name, "--lr") && strcmp(name, "--seed") && strcmp(name, "--warmup"))
			return bad_usage("unknown option \"%s\"", name);
		if (eq) {
			val = eq + 1;
		} else {
			if (i + 1 >= argc)
				return bad_usage("option %s needs a value", name);
			val = argv[++i];
		}

		if (!strcmp(name, "--steps")) {
			if (parse_positive_int(val, INT_MAX, &o->steps))
				return bad_usage("--steps \"%s\" is invalid: %s", val,
				                 "expected a positive integer");
		} else if (!strcmp(name, "--batch")) {
			if (parse_positive_int(val, INT_MAX, &o->batch))
				return bad_usage("--batch \"%s\" is invalid: %s", val,
				                 "expected a positive integer");
		} else if (!strcmp(name, "--widths")) {
			if (parse_widths(val, o->widths, &o->nwidths))
				return bad_usage("--widths \"%s\" is invalid: %s", val,
				                 "expected at least 2 comma-separated positive "
				                 "integers (input,...,classes)");
		} else if (!strcmp(name, "--optimizer")) {
			if (sf_optimizer_from_name(val, &o->optimizer) != SF_OK)
				return bad_usage("--optimizer %s", sf_last_error());
		} else if (!strcmp(name, "--lr")) {
			char *end;
			errno = 0;
			double v = strtod(val, &end);
			if (end == val || *end || errno || !isfinite(v) || v <= 0.0 || v > 1e6)
				return bad_usage("--lr \"%s\" is invalid: %s", val,
				                 "expected a positive number");
			o->lr = (float)v;
		} else if (!strcmp(name, "--warmup")) {
			o->warmup = 0;
			if (strcmp(val, "0") != 0 && parse_positive_int(val, INT_MAX, &o->warmup))
				return bad_usage("--warmup \"%s\" is invalid: %s", val,
				                 "expected an integer >= 0, below --steps");
		} else { /* --seed */
			char *end;
			errno = 0;
			unsigned long long v = strtoull(val, &end, 10);
			if (end == val || *end || errno || val[0] < '0' || val[0] > '9')
				return bad_usage("--seed \"%s\" is invalid: %s", val,
				                 "expected an unsigned integer");
			o->seed = (uint64_t)v;
		}
	}
	if (o->warmup >= o->steps)
		return bad_usage("--warmup \"%d\" is invalid: expected an integer >= 0, below "
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

/* Library calls: on failure the library has already printed the detailed message;
 * we add which call failed and leave through `fail`. */
#define CHECK(call)                                                                                \
	do {                                                                                       \
		int check_rc_ = (call);                                                            \
		if (check_rc_ != SF_OK) {                                                          \
			cli_call_failed(PROG, #call, sf_strerror(check_rc_));                      \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

/* input(D) -> [linear -> relu]* -> linear(C) -> softmax cross-entropy */
static int build_graph(const struct options *o, sf_graph **out)
{
	sf_graph *g = NULL;
	int h, labels, loss;
	CHECK(sf_graph_create("mlp", &g));
	CHECK(sf_graph_input(g, "x", o->widths[0], &h));
	CHECK(sf_graph_label_input(g, "label", o->widths[o->nwidths - 1], &labels));
	for (int i = 1; i < o->nwidths; i++) {
		char name[32];
		snprintf(name, sizeof(name), "fc%d", i);
		CHECK(sf_graph_linear(g, h, o->widths[i], name, &h));
		if (i < o->nwidths - 1)
			CHECK(sf_graph_relu(g, h, &h));
	}
	CHECK(sf_graph_softmax_cross_entropy(g, h, labels, &loss));
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

	CHECK(sf_init(&argc, &argv, &ctx));
	CHECK(sf_context_world(ctx, &rank, &size));
	if (build_graph(&o, &g))
		goto fail;

	struct sf_model_options mo;
	CHECK(sf_model_options_init(&mo));
	mo.batch = o.batch;
	mo.seed = o.seed;
	mo.optimizer = o.optimizer;
	if (mo.optimizer == SF_OPT_LION)
		mo.beta2 = 0.99f; /* the paper's default */
	mo.lr = o.lr;
	CHECK(sf_model_create(ctx, g, &mo, &m));
	sf_graph_destroy(g);
	g = NULL;

	struct sf_config cfg;
	size_t nparams;
	int first, rows;
	CHECK(sf_context_config(ctx, &cfg));
	CHECK(sf_model_param_count(m, &nparams));
	CHECK(sf_model_local_rows(m, &first, &rows));
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
	CHECK(sf_model_stats(m, &st0));
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
				CHECK(sf_model_accumulate(m, &batch, &ticket));
			else
				CHECK(sf_model_step(m, &batch, &ticket));
			/* the previous micro-batch's loss, one behind: the model keeps 16 */
			if (prev >= 0) {
				CHECK(sf_model_loss(m, prev, &l));
				loss += l / cfg.grad_accum;
			}
			prev = ticket;
		}
		CHECK(sf_model_loss(m, prev, &l));
		loss += l / cfg.grad_accum;
		double ms = now_ms() - t0;
		if (rank == 0) {
			printf("step %d loss %.9g ms %.3f\n", k, loss, ms);
			fflush(stdout);
		}
		if (k == o.warmup) { /* the window of comm_stats starts here */
			CHECK(sf_model_stats(m, &st0));
			t_start = now_ms();
			cpu_start = process_cpu_ms();
			main_start = cli_thread_cpu_ms();
		}
	}
	struct sf_model_stats st;
	CHECK(sf_model_stats(m, &st));
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
