/*
 * pos_embedding.c — the "pos_embedding" layer type: one float input of width C, config
 * the number of positions NP (an int), NP*C parameters named "weight" (NP, C); the
 * codelet bodies call layers/pos_embedding_cpu.c. Every row's position is below the
 * graph's T, which sf_graph_layer and sf_graph_pos_embedding refuse above NP.
 */
#include "config.h"

#include "layers/pos_embedding.h"
#include "layers/kernel_bodies.h"
#include "layers/layer.h"

#include <starpu.h>

static int pos_embedding_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                               size_t *nparams)
{
	(void)nin;
	int NP = config ? *(const int *)config : 0;
	if (NP <= 0)
		return SF_ERR(SF_ERR_INVALID,
		              "pos_embedding: the number of positions must be > 0 (got %d)", NP);
	*out_dim = in_dims[0];
	*nparams = (size_t)NP * (size_t)in_dims[0];
	return SF_OK;
}

static void pos_embedding_init(const struct sf_layer_info *li, struct sf_rng *rng, float *p)
{
	for (size_t i = 0; i < li->nparams; i++)
		p[i] = 0.02f * sf_rng_normal(rng);
}

static int positions_of(const struct sf_layer_info *li)
{
	return *(const int *)li->config;
}

static int pos_embedding_tensors(const struct sf_layer_info *li, struct sf_param_tensor *t)
{
	t[0] = (struct sf_param_tensor){
	    "weight", 0, 2, {(size_t)positions_of(li), (size_t)li->out_dim}};
	return 1;
}

static double pos_embedding_flops(const struct sf_layer_info *li)
{
	return (double)li->rows * li->out_dim;
}

typedef void (*fwd_fn)(int, int, int, const float *, const float *, float *);
typedef void (*bwd_fn)(int, int, int, int, const float *, float *, int, float *, int);

/* A sample's rows at positions other than 0 .. T - 1 (context parallelism's two runs,
 * struct sf_layer_info::pos_n0) */
static bool two_runs(const struct sf_layer_info *li)
{
	return li->pos_n0 != li->seq_len || li->pos_p0 != 0;
}

/* params (NP*C) x (B*T, C) y(W); with two runs of positions, each run of each sample
 * on its rows of the table */
static void fwd_with(void *buffers[], void *cl_arg, fwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	const float *x = sf_kernel_input(buffers, li, 0), *w = sf_kernel_params(buffers, li);
	float *y = sf_kernel_output(buffers, li);
	if (!two_runs(li)) {
		f(li->samples, li->seq_len, li->out_dim, x, w, y);
		return;
	}
	size_t C = (size_t)li->out_dim, T = (size_t)li->seq_len, n0 = (size_t)li->pos_n0;
	for (size_t b = 0; b < (size_t)li->samples; b++) {
		size_t r = b * T * C;
		f(1, (int)n0, (int)C, x + r, w + (size_t)li->pos_p0 * C, y + r);
		f(1, (int)(T - n0), (int)C, x + r + n0 * C, w + (size_t)li->pos_p1 * C,
		  y + r + n0 * C);
	}
}

/* [params] x y dy [dx] dparams; with two runs, dparams started once and every run
 * added to its rows, samples and runs in order */
static void bwd_with(void *buffers[], void *cl_arg, bwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	const float *dy = sf_kernel_doutput(buffers, li);
	float *dx = sf_kernel_dinput(buffers, li, 0), *dw = sf_kernel_dparams(buffers, li);
	int NP = positions_of(li), C = li->out_dim;
	if (!two_runs(li)) {
		f(li->samples, li->seq_len, NP, C, dy, dx, li->accumulate[0], dw,
		  li->accumulate_dparams);
		return;
	}
	size_t T = (size_t)li->seq_len, n0 = (size_t)li->pos_n0;
	int pacc = li->accumulate_dparams;
	for (size_t b = 0; b < (size_t)li->samples; b++)
		for (int run = 0; run < 2; run++) {
			size_t r = (b * T + (run ? n0 : 0)) * (size_t)C, n = run ? T - n0 : n0;
			int p = run ? li->pos_p1 : li->pos_p0;
			/* the run's positions [p, p + n) of dparams: a table of NP - p rows */
			if (!pacc) /* the first call zeroes the whole table */
				f(0, 0, NP, C, dy, NULL, 0, dw, 0);
			pacc = 1;
			f(1, (int)n, NP - p, C, dy + r, dx ? dx + r : NULL, li->accumulate[0],
			  dw + (size_t)p * (size_t)C, 1);
		}
}

SF_BODIES(pos_embedding_fwd, fwd_with, _sf_pos_embedding_fwd, _sf_pos_embedding_fwd_cuda)
SF_BODIES(pos_embedding_bwd, bwd_with, _sf_pos_embedding_bwd, _sf_pos_embedding_bwd_cuda)

const struct sf_layer_type _sf_pos_embedding_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "pos_embedding",
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = pos_embedding_infer,
    SF_CONFIG_SIZES(sizeof(int)), /* the number of positions */
    .init = pos_embedding_init,
    .forward_cpu = pos_embedding_fwd_cpu,
    .backward_cpu = pos_embedding_bwd_cpu,
    .forward_cuda = SF_CUDA_BODY(pos_embedding_fwd_cuda),
    .backward_cuda = SF_CUDA_BODY(pos_embedding_bwd_cuda),
    .flops = pos_embedding_flops,
    .param_tensors = pos_embedding_tensors,
    /* dx = dy and dW = sums of dy: the backward never reads W */
    .backward_params_for_dinput_only = 1,
};
