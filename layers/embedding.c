/*
 * embedding.c — the embedding layer type: one integer input (ids in [0, V)), config
 * the width C (an int), V*C parameters named "weight" (V, C); the codelet bodies call
 * layers/embedding_cpu.c. sf_model_step checks every id against V before anything is
 * submitted, so the kernels index W without a check of their own.
 */
#include "config.h"

#include "layers/embedding.h"
#include "layers/kernel_bodies.h"
#include "layers/layer.h"

#include <starpu.h>

static int embedding_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                           size_t *nparams)
{
	(void)nin;
	int C = config ? *(const int *)config : 0;
	if (C <= 0)
		return SF_ERR(SF_ERR_INVALID, "embedding: width must be > 0 (got %d)", C);
	*out_dim = C;
	*nparams = (size_t)in_dims[0] * (size_t)C; /* in_dims[0]: the id range V */
	return SF_OK;
}

static void embedding_init(const struct sf_layer_info *li, struct sf_rng *rng, float *p)
{
	for (size_t i = 0; i < li->nparams; i++)
		p[i] = 0.02f * sf_rng_normal(rng);
}

static int embedding_tensors(const struct sf_layer_info *li, struct sf_param_tensor *t)
{
	t[0] = (struct sf_param_tensor){
	    "weight", 0, 2, {(size_t)li->in_range[0], (size_t)li->out_dim}};
	return 1;
}

typedef void (*fwd_fn)(int, int, const int32_t *, const float *, float *);
typedef void (*bwd_fn)(int, int, int, const int32_t *, const float *, float *, int);

/* params (V*C) ids (B) y(W) (B,C) */
static void fwd_with(void *buffers[], void *cl_arg, fwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	f(li->rows, li->out_dim, sf_kernel_input_int(buffers, li, 0),
	                  sf_kernel_params(buffers, li), sf_kernel_output(buffers, li));
}

/* (no params) ids y dy dparams */
static void bwd_with(void *buffers[], void *cl_arg, bwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	f(li->rows, li->in_range[0], li->out_dim, sf_kernel_input_int(buffers, li, 0),
	                  sf_kernel_doutput(buffers, li), sf_kernel_dparams(buffers, li),
	                  li->accumulate_dparams);
}

SF_BODIES(embedding_fwd, fwd_with, _sf_embedding_fwd, _sf_embedding_fwd_cuda)
SF_BODIES(embedding_bwd, bwd_with, _sf_embedding_bwd, _sf_embedding_bwd_cuda)

/* The forward copies rows of W: no flops (StarPU's "none": its time alone). The
 * backward adds each row of dy into dW's row: B C adds, counted once since an
 * embedding never computes an input gradient (tasks/layer_codelets.c). */
static double embedding_flops(const struct sf_layer_info *li)
{
	return li->backward ? (double)li->rows * li->out_dim : 0.0;
}

const struct sf_layer_type _sf_embedding_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "embedding",
    .min_inputs = 1,
    .max_inputs = 1,
    .int_inputs = 1u,
    .infer = embedding_infer,
    SF_CONFIG_SIZES(sizeof(int)), /* the width C */
    .init = embedding_init,
    .forward_cpu = embedding_fwd_cpu,
    .backward_cpu = embedding_bwd_cpu,
    .forward_cuda = SF_CUDA_BODY(embedding_fwd_cuda),
    .backward_cuda = SF_CUDA_BODY(embedding_bwd_cuda),
    .param_tensors = embedding_tensors,
    .flops = embedding_flops,
    /* no input gradient ever: the backward needs no parameters */
    .backward_params_for_dinput_only = 1,
};
