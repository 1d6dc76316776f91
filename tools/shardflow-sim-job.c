/*
 * shardflow-sim-job — the training job that tools/shardflow-sim runs in simulated
 * time (docs/scale.md); it runs for real under mpirun too, which is how the
 * simulation is validated against measured step times.
 *
 *   shardflow-sim-job [--model NAME | --arch gpt|llama --layers L --dim C --heads H
 *                     [--kv-heads K] [--ffn F] [--vocab V]] [--context T]
 *                     [--batch B] [--micro-batches M] [--steps N] [--warmup W]
 *                     [--optimizer sgd|adamw|lion]
 *
 * NAME: gpt2 (124M), gpt2-xl (1.56B), llama-100m, llama-8b (Llama 3 8B), llama-70b
 * (Llama 3 70B). B is the global batch in sequences of T tokens per micro-batch
 * (default: 2 per data-parallel rank, the world over SHARDFLOW_TP, SHARDFLOW_CP and
 * SHARDFLOW_PP, as torchtitan's Llama 3 runs on H100s); M micro-batches make a step.
 * With SHARDFLOW_CP=K the K ranks of a CP group get the same whole sequences of T
 * tokens (sf_model_local_rows) and the library takes each rank's 2 of 2K chunks. With
 * SHARDFLOW_TP the blocks are split Megatron's way and, where SHARDFLOW_VOCAB_PARALLEL
 * allows (auto: a vocabulary the TP ranks divide), the embedding and the head
 * vocabulary-parallel.
 * The tokens are synthetic (a simulation computes no values; a real run learns nothing
 * from them). The knobs are the library's variables (SHARDFLOW_*).
 *
 * Rank 0 prints a line per step and, at the end, one line of key=value fields that
 * tools/shardflow-sim reads:
 *   result ranks= params= nonembed_params= tokens_per_step= flops_per_step=
 *          step_s= step_s_min= step_s_max= param_bytes= grad_bytes= optimizer_bytes=
 *          activation_bytes= buffer_bytes= comm_bytes_per_step=
 * step_s is the median of the N timed steps (after W warm-up steps) on the runtime's
 * clock (sf_clock: simulated time in a simulation build); flops_per_step counts
 * 6 (non-embedding parameters) + 12 layers T C per token, the formula PaLM's and
 * torchtitan's MFU use. Exit status: 0 success, 1 a library error, 2 a bad command
 * line.
 */
#include "shardflow.h"
#include "examples/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "shardflow-sim-job"

struct job {
	int arch; /* 0 gpt, 1 llama */
	int layers, dim, heads, kv_heads, ffn, vocab, context;
	int batch, micro, steps, warmup;
	enum sf_optimizer optimizer;
};

/* name, arch, layers, dim, heads, kv heads, ffn, vocab, context */
static const struct preset {
	const char *name;
	int arch, layers, dim, heads, kv_heads, ffn, vocab, context;
} presets[] = {
    {"gpt2", 0, 12, 768, 12, 0, 0, 50257, 1024},
    {"gpt2-xl", 0, 48, 1600, 25, 0, 0, 50257, 1024},
    {"llama-100m", 1, 10, 768, 12, 4, 2048, 50257, 1024},
    {"llama-8b", 1, 32, 4096, 32, 8, 14336, 128256, 8192},
    {"llama-70b", 1, 80, 8192, 64, 8, 28672, 128256, 8192},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--model gpt2|gpt2-xl|llama-100m|llama-8b|llama-70b | --arch "
	           "gpt|llama --layers L --dim C --heads H [--kv-heads K] [--ffn F] [--vocab V]]\n"
	           "       [--context T] [--batch B] [--micro-batches M] [--steps N] [--warmup W] "
	           "[--optimizer sgd|adamw|lion]\n");
}

/* the options after the first three, sizes each an int in [lo, hi] */
enum { OPT_MODEL, OPT_ARCH, OPT_OPTIMIZER };
static const char *const option_names[] = {
    "--model", "--arch",  "--optimizer", "--layers", "--dim",           "--heads", "--kv-heads",
    "--ffn",   "--vocab", "--context",   "--batch",  "--micro-batches", "--steps", "--warmup"};
static const int size_lo[] = {1, 1, 1, 1, 0, 2, 1, 1, 1, 1, 0};
static const int size_hi[] = {1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, INT_MAX,
                              1 << 20, 1 << 20, 4096,    100000,  1000};

static int on_value(int k, char *v, void *ctx)
{
	struct job *j = ctx;
	if (k == OPT_MODEL) {
		for (size_t p = 0; p < sizeof presets / sizeof presets[0]; p++)
			if (!strcmp(presets[p].name, v)) {
				const struct preset *q = &presets[p];
				j->arch = q->arch, j->layers = q->layers, j->dim = q->dim;
				j->heads = q->heads, j->kv_heads = q->kv_heads, j->ffn = q->ffn;
				j->vocab = q->vocab, j->context = q->context;
				return 0;
			}
		return cli_bad_usage(
		    "--model \"%s\" is invalid: accepted values are gpt2, gpt2-xl, "
		    "llama-100m, llama-8b, llama-70b",
		    v);
	}
	if (k == OPT_ARCH) {
		if (strcmp(v, "gpt") && strcmp(v, "llama"))
			return cli_bad_usage(
			    "--arch \"%s\" is invalid: accepted values are gpt, llama", v);
		j->arch = !strcmp(v, "llama");
		return 0;
	}
	if (k == OPT_OPTIMIZER) {
		if (sf_optimizer_from_name(v, &j->optimizer) == SF_OK)
			return 0;
		return cli_bad_usage("--optimizer %s", sf_last_error());
	}
	int *sizes[] = {&j->layers,  &j->dim,   &j->heads, &j->kv_heads, &j->ffn,   &j->vocab,
	                &j->context, &j->batch, &j->micro, &j->steps,    &j->warmup};
	k -= OPT_OPTIMIZER + 1;
	return cli_int(option_names[k + OPT_OPTIMIZER + 1], v, size_lo[k], size_hi[k], sizes[k]);
}

static int parse(int argc, char **argv, struct job *j)
{
	memset(j, 0, sizeof *j);
	j->arch = -1, j->micro = 1, j->steps = 3, j->warmup = 1, j->optimizer = SF_OPT_ADAMW;
	const struct cli_spec sp = {option_names, (int)(sizeof option_names / sizeof *option_names),
	                            NULL,         0,
	                            on_value,     NULL};
	cli_prog = PROG;
	cli_usage = usage;
	int rc = cli_parse(argc, argv, &sp, j);
	if (rc)
		return rc;
	if (j->arch < 0)
		return cli_bad_usage("give --model, or --arch with the sizes");
	if (!j->layers || !j->dim || !j->heads)
		return cli_bad_usage("--arch needs --layers, --dim and --heads");
	if (!j->vocab)
		j->vocab = 50257;
	if (!j->context)
		j->context = 1024;
	if (j->arch == 1 && !j->kv_heads)
		j->kv_heads = j->heads;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct job j;
	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	int32_t *x = NULL, *y = NULL;
	double *times = NULL;
	int status = 1, rank = 0, size = 1;
	int rc = parse(argc, argv, &j);
	if (rc)
		return rc == 1 ? 0 : rc;
	CLI_CHECK_GOTO(sf_init(&argc, &argv, &ctx), done);
	CLI_CHECK_GOTO(sf_context_world(ctx, &rank, &size), done);
	struct sf_config cfg;
	CLI_CHECK_GOTO(sf_context_config(ctx, &cfg), done);
	/* the data-parallel ranks: the world over SHARDFLOW_TP, SHARDFLOW_CP and SHARDFLOW_PP
	 * (a CP group's ranks share each sequence) */
	int tp = cfg.tp > 1 ? cfg.tp : 1;
	int dp = size / tp / (cfg.cp > 1 ? cfg.cp : 1) / (cfg.pp > 1 ? cfg.pp : 1);
	if (!j.batch)
		j.batch = 2 * (dp > 0 ? dp : 1);
	/* Megatron's split of each block under SHARDFLOW_TP, and the embedding and head
	 * vocabulary-parallel as examples/gpt makes them (auto: a vocabulary K divides;
	 * without TP, the GPT's tied matrix vocabulary-parallel over the dp ranks: on, or
	 * auto where it sends fewer bytes, sf_vocab_parallel_pays) */
	int on = cfg.vocab_parallel == SF_VOCAB_PARALLEL_ON;
	size_t prows = (size_t)(j.batch / (dp > 0 ? dp : 1)) * (size_t)j.context;
	int sharded = cfg.sharding == SF_SHARD_FULL || cfg.sharding == SF_SHARD_GRAD_OP;
	int vp = cfg.vocab_parallel != SF_VOCAB_PARALLEL_OFF &&
	         (tp > 1 ? on || j.vocab % tp == 0
	                 : j.arch == 0 && (on || (sharded && sf_vocab_parallel_pays(
	                                                      j.vocab, j.dim, dp, prows))));
	if (j.arch == 0) {
		struct sf_gpt_config c;
		CLI_CHECK_GOTO(sf_gpt_config_init(&c), done);
		c.vocab = j.vocab, c.context = j.context, c.layers = j.layers;
		c.heads = j.heads, c.embd = j.dim;
		c.tensor_parallel = tp > 1, c.vocab_parallel = vp;
		CLI_CHECK_GOTO(sf_gpt_graph(&c, &g), done);
	} else {
		struct sf_llama_config c;
		CLI_CHECK_GOTO(sf_llama_config_init(&c), done);
		c.vocab = j.vocab, c.context = j.context, c.dim = j.dim, c.layers = j.layers;
		c.heads = j.heads, c.kv_heads = j.kv_heads, c.ffn_dim = j.ffn;
		c.rope_theta = 500000.0f;
		c.tensor_parallel = tp > 1, c.vocab_parallel = vp;
		CLI_CHECK_GOTO(sf_llama_graph(&c, &g), done);
		j.ffn = sf_llama_ffn_dim(&c);
	}
	struct sf_model_options mo;
	CLI_CHECK_GOTO(sf_model_options_init(&mo), done);
	mo.batch = j.batch;
	mo.optimizer = j.optimizer;
	mo.lr = 1e-4f;
	CLI_CHECK_GOTO(sf_model_create(ctx, g, &mo, &m), done);
	int first = 0, rows = 0;
	CLI_CHECK_GOTO(sf_model_local_rows(m, &first, &rows), done);
	size_t n = (size_t)rows * (size_t)j.context;
	x = malloc((n ? n : 1) * sizeof *x);
	y = malloc((n ? n : 1) * sizeof *y);
	times = calloc((size_t)j.steps, sizeof *times);
	if (!x || !y || !times) {
		fprintf(stderr, PROG ": out of memory\n");
		goto done;
	}
	for (size_t i = 0; i < n; i++) { /* any ids: nothing is learnt from them */
		x[i] = (int32_t)((i * 7919u + (size_t)first) % (size_t)j.vocab);
		y[i] = (int32_t)((i * 104729u + 1u) % (size_t)j.vocab);
	}
	struct sf_model_stats st;
	CLI_CHECK_GOTO(sf_model_stats(m, &st), done);
	size_t nparams = 0;
	CLI_CHECK_GOTO(sf_model_param_count(m, &nparams), done);
	double params = (double)nparams;
	double embed = (double)j.vocab * j.dim * (j.arch == 0 ? 1.0 : 2.0) +
	               (j.arch == 0 ? (double)j.context * j.dim : 0.0);
	double nonembed = params - embed;
	double tokens = (double)j.batch * j.micro * j.context;
	double flops = tokens * (6.0 * nonembed + 12.0 * j.layers * j.context * j.dim);
	if (rank == 0)
		printf(PROG ": %d rank(s), %.0f parameters (%s: %d layers, dim %d, %d heads, %d kv "
		       "heads, ffn %d, vocab %d), batch %d x %d tokens x %d micro-batch(es), %d "
		       "warm-up + %d timed steps\n",
		       size, params, j.arch ? "llama" : "gpt", j.layers, j.dim, j.heads,
		       j.arch ? j.kv_heads : j.heads, j.arch ? j.ffn : 4 * j.dim, j.vocab, j.batch,
		       j.context, j.micro, j.warmup, j.steps);
	const int32_t *ids[1] = {x};
	struct sf_batch b = {.nint_inputs = 1, .int_inputs = ids, .labels = y};
	double bytes0 = 0;
	for (int s = 0; s < j.warmup + j.steps; s++) {
		double t0, t1, loss;
		int64_t ticket;
		if (s == j.warmup) {
			CLI_CHECK_GOTO(sf_model_stats(m, &st), done);
			bytes0 = st.comm_bytes;
		}
		CLI_CHECK_GOTO(sf_clock(&t0), done);
		for (int k = 0; k + 1 < j.micro; k++)
			CLI_CHECK_GOTO(sf_model_accumulate(m, &b, &ticket), done);
		CLI_CHECK_GOTO(sf_model_step(m, &b, &ticket), done);
		CLI_CHECK_GOTO(sf_model_loss(m, ticket, &loss), done);
		CLI_CHECK_GOTO(sf_clock(&t1), done);
		if (s >= j.warmup)
			times[s - j.warmup] = t1 - t0;
		if (rank == 0)
			printf("step %d/%d %s %.6f s\n", s + 1, j.warmup + j.steps,
			       s < j.warmup ? "warm-up" : "time", t1 - t0);
	}
	CLI_CHECK_GOTO(sf_model_stats(m, &st), done);
	qsort(times, (size_t)j.steps, sizeof *times, cmp_double);
	if (rank == 0)
		printf("result ranks=%d params=%.0f nonembed_params=%.0f tokens_per_step=%.0f "
		       "flops_per_step=%.6e step_s=%.6f step_s_min=%.6f step_s_max=%.6f "
		       "param_bytes=%zu grad_bytes=%zu optimizer_bytes=%zu activation_bytes=%zu "
		       "buffer_bytes=%zu comm_bytes_per_step=%.0f\n",
		       size, params, nonembed, tokens, flops, times[j.steps / 2], times[0],
		       times[j.steps - 1], st.param_bytes, st.grad_bytes, st.optimizer_bytes,
		       st.activation_bytes, st.buffer_bytes, (st.comm_bytes - bytes0) / j.steps);
	fflush(stdout);
	status = 0;
done:
	free(x);
	free(y);
	free(times);
	if (m)
		sf_model_destroy(m);
	if (g)
		sf_graph_destroy(g);
	if (ctx && sf_finalize(ctx) != SF_OK && status == 0)
		status = 1;
	return status;
}
