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

/* params (NP*C) x (B*T, C) y(W) */
static void fwd_with(void *buffers[], void *cl_arg, fwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	f(li->samples, li->seq_len, li->out_dim,
	                      sf_kernel_input(buffers, li, 0), sf_kernel_params(buffers, li),
	                      sf_kernel_output(buffers, li));
}

/* [params] x y dy [dx] dparams */
static void bwd_with(void *buffers[], void *cl_arg, bwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	f(li->samples, li->seq_len, positions_of(li), li->out_dim,
	                      sf_kernel_doutput(buffers, li), sf_kernel_dinput(buffers, li, 0),
	                      li->accumulate[0], sf_kernel_dparams(buffers, li),
	                      li->accumulate_dparams);
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
