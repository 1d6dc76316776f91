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

#define CHECK(call)                                                                        \
	do {                                                                               \
		if ((call) != SF_OK) {                                                     \
			fprintf(stderr, "mem_report: %s failed: %s\n", #call, sf_last_error()); \
			goto fail;                                                         \
		}                                                                          \
	} while (0)

int main(int argc, char **argv)
{
	int w[64], nw = 0, batch = 64, status = 1;
	const char *ws = "784,1024,1024,1024,10";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--widths") && i + 1 < argc)
			ws = argv[++i];
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: mem_report [--widths D,H...,C] [--batch B]\n");
			return 2;
		}
	}
	for (char *p = (char *)ws; *p && nw < 64;) {
		w[nw++] = (int)strtol(p, &p, 10);
		if (*p == ',')
			p++;
	}
	if (nw < 2 || batch <= 0) {
		fprintf(stderr, "mem_report: bad --widths or --batch\n");
		return 2;
	}

	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	int h, labels, loss, rank = 0, size = 1;
	CHECK(sf_init(&argc, &argv, &ctx));
	CHECK(sf_context_world(ctx, &rank, &size));
	CHECK(sf_graph_create("mlp", &g));
	CHECK(sf_graph_input(g, "x", w[0], &h));
	CHECK(sf_graph_label_input(g, "label", w[nw - 1], &labels));
	for (int i = 1; i < nw; i++) {
		char name[32];
		snprintf(name, sizeof(name), "fc%d", i);
		CHECK(sf_graph_linear(g, h, w[i], name, &h));
		if (i < nw - 1)
			CHECK(sf_graph_relu(g, h, &h));
	}
	CHECK(sf_graph_softmax_cross_entropy(g, h, labels, &loss));
	struct sf_model_options mo;
	CHECK(sf_model_options_init(&mo));
	mo.batch = batch;
	CHECK(sf_model_create(ctx, g, &mo, &m));
	struct sf_model_stats st;
	struct sf_config cfg;
	size_t np;
	CHECK(sf_model_stats(m, &st));
	CHECK(sf_context_config(ctx, &cfg));
	CHECK(sf_model_param_count(m, &np));
	if (rank == 0)
		printf("ranks %d depth %d units %d largest_unit %zu params %zu param_bytes %zu "
		       "grad_bytes %zu optimizer_bytes %zu\n",
		       size, cfg.prefetch_depth, st.nunits, st.largest_unit, np, st.param_bytes,
		       st.grad_bytes, st.optimizer_bytes);
	status = 0;
fail:
	sf_graph_destroy(g);
	if (sf_model_destroy(m) != SF_OK)
		status = 1;
	if (ctx && sf_finalize(ctx) != SF_OK)
		status = 1;
	return status;
}
