/*
 * mem_report.c — per-rank memory of a shardflow MLP as sf_model_stats() reports it,
 * for bench.sh's memory table. Builds input(D) -> [linear -> relu]* -> linear(C) ->
 * softmax cross-entropy (the model of examples/mlp_synthetic), creates the model
 * (no step is run: the storage is all allocated by sf_model_create) and prints on
 * rank 0 one line:
 *   ranks N depth d units U largest_unit P params NP param_bytes X grad_bytes Y optimizer_bytes Z
 * The prefetch depth and the sharding come from SHARDFLOW_* as usual.
 *
 *   SHARDFLOW_PREFETCH_DEPTH=2 mpirun -np 2 bench/mem_report --widths 784,1024,10 --batch 64
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardflow.h"
#include "examples/cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: mem_report [--widths D,H...,C] [--batch B]\n"
	           "defaults: --widths 784,1024,1024,1024,10 --batch 64\n");
}

struct options {
	int w[64], nw, batch;
};

static const char *const option_names[] = {"--widths", "--batch"};

static int on_value(int k, char *val, void *ctx)
{
	struct options *o = ctx;
	if (k == 0)
		return cli_int_list("--widths", val, 1, 1 << 20, 2, 64, o->w, &o->nw);
	return cli_int("--batch", val, 1, 1 << 20, &o->batch);
}

int main(int argc, char **argv)
{
	struct options o = {{784, 1024, 1024, 1024, 10}, 5, 64};
	const struct cli_spec sp = {option_names, 2, NULL, 0, on_value, NULL};
	int status = 1;
	cli_prog = "mem_report";
	cli_usage = usage;
	int prc = cli_parse(argc, argv, &sp, &o);
	if (prc)
		return prc == 1 ? 0 : prc;
	const int *w = o.w, nw = o.nw, batch = o.batch;

	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	int h, labels, loss, rank = 0, size = 1;
	CLI_CHECK_GOTO(sf_init(&argc, &argv, &ctx), out);
	CLI_CHECK_GOTO(sf_context_world(ctx, &rank, &size), out);
	CLI_CHECK_GOTO(sf_graph_create("mlp", &g), out);
	CLI_CHECK_GOTO(sf_graph_input(g, "x", w[0], &h), out);
	CLI_CHECK_GOTO(sf_graph_label_input(g, "label", w[nw - 1], &labels), out);
	for (int i = 1; i < nw; i++) {
		char name[32];
		snprintf(name, sizeof(name), "fc%d", i);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, w[i], name, &h), out);
		if (i < nw - 1)
			CLI_CHECK_GOTO(sf_graph_relu(g, h, &h), out);
	}
	CLI_CHECK_GOTO(sf_graph_softmax_cross_entropy(g, h, labels, &loss), out);
	struct sf_model_options mo;
	CLI_CHECK_GOTO(sf_model_options_init(&mo), out);
	mo.batch = batch;
	CLI_CHECK_GOTO(sf_model_create(ctx, g, &mo, &m), out);
	struct sf_model_stats st;
	struct sf_config cfg;
	size_t np;
	CLI_CHECK_GOTO(sf_model_stats(m, &st), out);
	CLI_CHECK_GOTO(sf_context_config(ctx, &cfg), out);
	CLI_CHECK_GOTO(sf_model_param_count(m, &np), out);
	if (rank == 0)
		printf("ranks %d depth %d units %d largest_unit %zu params %zu param_bytes %zu "
		       "grad_bytes %zu optimizer_bytes %zu\n",
		       size, cfg.prefetch_depth, st.nunits, st.largest_unit, np, st.param_bytes,
		       st.grad_bytes, st.optimizer_bytes);
	status = 0;
out:
	sf_graph_destroy(g);
	if (sf_model_destroy(m) != SF_OK)
		status = 1;
	if (ctx && sf_finalize(ctx) != SF_OK)
		status = 1;
	return status;
}
