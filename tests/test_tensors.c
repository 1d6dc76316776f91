/*
 * test_tensors.c — parameters by name (io/tensors.c), on any world size and sharding
 * (tests/tensors.sh runs it under mpirun with SHARDFLOW_SHARDING set):
 *
 *  - the named tensors tile the parameter vector: their sizes sum to the parameter
 *    count, and each tensor read by name is its slice of sf_model_params_get, bitwise;
 *  - a tensor set by name reads back bitwise, and every other parameter is unchanged;
 *    sf_model_params_set from memory reads back bitwise;
 *  - the gradient read after an SGD step (momentum 0, no weight decay) is the one the
 *    step applied: every parameter moved by -lr * grad (relative 1e-6); with --accum 2,
 *    the mean over the two micro-batches;
 *  - learning-rate scales: 0 freezes a tensor bitwise while the others move, 0.5
 *    moves one by -0.5 lr * grad; a negative scale and an unknown tensor are refused;
 *  - refusals: an unknown name (SF_ERR_NOT_FOUND, naming the tensors), a wrong size,
 *    a gradient before any step, and with sharding none (no clipping, no micro-batches)
 *    a gradient that is not kept (SF_ERR_STATE, saying why).
 *
 * Prints "ok N - ..." / "not ok N - ..." on rank 0 (each check agreed: it fails if it
 * fails on any rank); exits 1 when a check failed.
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


#define DIE(...)                                                                                   \
	do {                                                                                       \
		fprintf(stderr, "test_tensors: " __VA_ARGS__);                                    \
		fprintf(stderr, ": %s\n", sf_last_error());                                       \
		return 1;                                                                          \
	} while (0)

/* one pass: micro-batches j < accum - 1 accumulated, the last a step */
static int train_step(sf_model *m, int accum, int D, int C, int T, int first, int rows, int B,
                      float *x, int32_t *ids, int32_t *labels)
{
	struct sf_batch b;
	const float *xin;
	const int32_t *idin;
	for (int j = 0; j < accum; j++) {
		if (fill_batch(MODEL_MLP, 1, 1, first + j * B * T, rows, D, C, x, ids, labels, &b,
		               &xin, &idin))
			return -1;
		int rc = j + 1 < accum ? sf_model_accumulate(m, &b, NULL) : sf_model_step(m, &b, NULL);
		if (rc != SF_OK)
			return -1;
	}
	return sf_model_sync(m) == SF_OK ? 0 : -1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: test_tensors [ACCUM] (micro-batches a step, 1..64, default 1)\n");
}

int main(int argc, char **argv)
{
	int accum = 1, size = 1, D, C, T;
	cli_prog = "test_tensors";
	cli_usage = usage;
	int prc = cli_parse_int_operand(argc, argv, "ACCUM", 1, 64, &accum);
	if (prc)
		return prc == 1 ? 0 : prc;
	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	struct sf_config cfg;
	if (sf_init(&argc, &argv, &ctx) != SF_OK)
		DIE("sf_init");
	sf_context_world(ctx, &check_rank, &size);
	check_prog = "test_tensors";
	sf_context_config(ctx, &cfg);
	if (build_model(MODEL_MLP, &g, &D, &C, &T))
		return 1;
	struct sf_model_options o;
	sf_model_options_init(&o);
	o.batch = 12, o.lr = 0.05f, o.momentum = 0.0f;
	if (sf_model_create(ctx, g, &o, &m) != SF_OK)
		DIE("sf_model_create");

	size_t P = 0;
	int nt = 0;
	sf_model_param_count(m, &P);
	float *all = malloc(P * sizeof(float)), *after = malloc(P * sizeof(float));
	float *t = malloc(P * sizeof(float)), *gr = malloc(P * sizeof(float));
	float *src = malloc(P * sizeof(float));
	int first, rows, B = o.batch;
	sf_model_local_rows(m, &first, &rows);
	float *x = malloc(sizeof(float) * (size_t)(rows * T * D + 1));
	int32_t *ids = malloc(sizeof(int32_t) * (size_t)(rows * T + 1));
	int32_t *labels = malloc(sizeof(int32_t) * (size_t)(rows * T + 1));
	if (!all || !after || !t || !gr || !src || !x || !ids || !labels)
		DIE("out of memory");

	/* the tensors tile the vector, and read as its slices */
	sf_model_tensor_count(m, &nt);
	sf_model_params_get(m, all, P);
	size_t off = 0;
	bool slices = true, named = true;
	struct sf_tensor_info ti, t0;
	for (int i = 0; i < nt; i++) {
		if (sf_model_tensor_info(m, i, &ti) != SF_OK ||
		    sf_model_tensor_get(m, ti.name, t, ti.numel) != SF_OK) {
			slices = false;
			break;
		}
		slices = slices && memcmp(t, all + off, ti.numel * sizeof(float)) == 0;
		named = named && ti.unit && ti.unit[0] &&
		        ti.numel == ti.shape[0] * (ti.ndim == 2 ? ti.shape[1] : 1);
		off += ti.numel;
	}
	check(nt == 6 && off == P, "the mlp's 6 named tensors sum to its parameter count");
	check(slices, "each tensor read by name is its slice of sf_model_params_get, bitwise");
	check(named, "each names its unit, and its size is its shape's");

	/* refusals */
	sf_model_tensor_info(m, 0, &t0);
	check(sf_model_tensor_get(m, "fc9.weight", t, 4) == SF_ERR_NOT_FOUND &&
	          strstr(sf_last_error(), "no tensor \"fc9.weight\" (its 6 tensors: \"") != NULL,
	      "an unknown name: SF_ERR_NOT_FOUND, naming the tensors");
	check(sf_model_tensor_get(m, t0.name, t, t0.numel + 1) == SF_ERR_INVALID &&
	          sf_model_tensor_set(m, t0.name, t, t0.numel - 1) == SF_ERR_INVALID,
	      "a wrong size is refused, reading and setting");
	check(sf_model_grad_get(m, t0.name, gr, t0.numel) == SF_ERR_STATE,
	      "a gradient before any step: SF_ERR_STATE");

	/* set by name, set all from memory */
	for (size_t i = 0; i < t0.numel; i++)
		src[i] = (float)i * 0.001f - 0.5f;
	sf_model_tensor_set(m, t0.name, src, t0.numel);
	sf_model_tensor_get(m, t0.name, t, t0.numel);
	sf_model_params_get(m, after, P);
	check(memcmp(t, src, t0.numel * sizeof(float)) == 0 &&
	          memcmp(after + t0.numel, all + t0.numel, (P - t0.numel) * sizeof(float)) == 0,
	      "a tensor set by name reads back bitwise, every other parameter unchanged");
	for (size_t i = 0; i < P; i++)
		src[i] = all[i] * 0.5f + 0.001f;
	sf_model_params_set(m, src, P);
	sf_model_params_get(m, after, P);
	check(memcmp(after, src, P * sizeof(float)) == 0,
	      "sf_model_params_set from memory reads back bitwise");

	/* the gradient the step applied */
	if (train_step(m, accum, D, C, T, first * T, rows * T, B, x, ids, labels))
		DIE("training");
	sf_model_params_get(m, after, P);
	bool kept = cfg.sharding != SF_SHARD_NONE || accum > 1;
	off = 0;
	double worst = 0.0;
	bool got = true;
	for (int i = 0; i < nt; i++) {
		sf_model_tensor_info(m, i, &ti);
		int rc = sf_model_grad_get(m, ti.name, gr, ti.numel);
		if (!kept) {
			got = got && rc == SF_ERR_STATE && strstr(sf_last_error(), "sharding none");
			continue;
		}
		got = got && rc == SF_OK;
		for (size_t k = 0; rc == SF_OK && k < ti.numel; k++) {
			double want = (double)src[off + k] - (double)o.lr * gr[k];
			double d = fabs(after[off + k] - want) / fmax(1.0, fabs(want));
			worst = d > worst ? d : worst;
		}
		off += ti.numel;
	}
	char what[160];
	if (kept)
		snprintf(what, sizeof what,
		         "%d micro-batch(es): every parameter moved by -lr * sf_model_grad_get "
		         "(worst relative %.1e)",
		         accum, worst);
	else
		snprintf(what, sizeof what, "sharding none: the gradient is not kept, SF_ERR_STATE "
		                            "saying why");
	check(got && worst <= 1e-6, what);

	/* learning-rate scales: tensor 0 frozen, tensor 1 at half the rate */
	struct sf_tensor_info t1;
	sf_model_tensor_info(m, 1, &t1);
	check(sf_model_tensor_lr_scale(m, t0.name, -1.0f) == SF_ERR_INVALID &&
	          sf_model_tensor_lr_scale(m, "fc9.bias", 1.0f) == SF_ERR_NOT_FOUND,
	      "a negative scale and an unknown tensor are refused");
	bool set = sf_model_tensor_lr_scale(m, t0.name, 0.0f) == SF_OK &&
	           sf_model_tensor_lr_scale(m, t1.name, 0.5f) == SF_OK;
	memcpy(src, after, P * sizeof(float)); /* the parameters before this step */
	if (train_step(m, accum, D, C, T, first * T, rows * T, B, x, ids, labels))
		DIE("training");
	sf_model_params_get(m, after, P);
	check(set && memcmp(after, src, t0.numel * sizeof(float)) == 0 &&
	          memcmp(after + t0.numel, src + t0.numel, t1.numel * sizeof(float)) != 0,
	      "lr scale 0 freezes a tensor bitwise; the others move");
	if (kept) {
		worst = 0.0;
		sf_model_grad_get(m, t1.name, gr, t1.numel);
		for (size_t k = 0; k < t1.numel; k++) {
			double want = (double)src[t0.numel + k] - 0.5 * (double)o.lr * gr[k];
			double d = fabs(after[t0.numel + k] - want) / fmax(1.0, fabs(want));
			worst = d > worst ? d : worst;
		}
		snprintf(what, sizeof what,
		         "lr scale 0.5: the tensor moved by -0.5 lr * grad (worst relative %.1e)",
		         worst);
		check(worst <= 1e-6, what);
	}

	sf_model_destroy(m);
	sf_graph_destroy(g);
	sf_finalize(ctx);
	if (check_rank == 0)
		printf("1..%d\n", check_count);
	free(all), free(after), free(t), free(gr), free(src), free(x), free(ids), free(labels);
	return check_failed ? 1 : 0;
}
