/*
 * rmsnorm.c — the rmsnorm layer type: same width as its input, C parameters (w), a
 * saved buffer of B floats (rstd of each row); the codelet bodies call
 * layers/rmsnorm_cpu.c (or layers/rmsnorm_cuda.cu).
 */
#include "config.h"

#include "layers/rmsnorm.h"
#include "layers/kernel_bodies.h"
#include "layers/layer.h"

#include <math.h>

#define SF_RMSNORM_EPS 1e-5f

static float eps_of(const void *config)
{
	return config ? ((const struct sf_rmsnorm_config *)config)->eps : SF_RMSNORM_EPS;
}

static int rmsnorm_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                         size_t *nparams)
{
	(void)nin;
	float eps = eps_of(config);
	if (!(eps > 0.0f) || !isfinite(eps))
		return SF_ERR(SF_ERR_INVALID, "rmsnorm: eps must be a finite number > 0 (got %g)",
		              (double)eps);
	*out_dim = in_dims[0];
	*nparams = (size_t)in_dims[0];
	return SF_OK;
}

static void rmsnorm_init(const struct sf_layer_info *li, struct sf_rng *rng, float *p)
{
	(void)rng;
	for (int c = 0; c < li->out_dim; c++)
		p[c] = 1.0f;
}

static size_t rmsnorm_saved(const struct sf_layer_info *li)
{
	return (size_t)li->rows;
}

static int rmsnorm_tensors(const struct sf_layer_info *li, struct sf_param_tensor *t)
{
	t[0] = (struct sf_param_tensor){"weight", 0, 1, {(size_t)li->out_dim, 0}};
	return 1;
}

typedef void (*fwd_fn)(int, int, const float *, const float *, float, float *, float *);
typedef void (*bwd_fn)(int, int, const float *, const float *, const float *, const float *,
                       float *, int, float *, int);

/* params (C) x y(W) saved(W) (B) */
static void fwd_with(void *buffers[], void *cl_arg, fwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	f(li->rows, li->out_dim, sf_kernel_input(buffers, li, 0), sf_kernel_params(buffers, li),
	  eps_of(li->config), sf_kernel_output(buffers, li), sf_kernel_saved(buffers, li));
}

/* params x y dy saved(R) [dx] dparams */
static void bwd_with(void *buffers[], void *cl_arg, bwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	f(li->rows, li->out_dim, sf_kernel_input(buffers, li, 0), sf_kernel_params(buffers, li),
	  sf_kernel_saved(buffers, li), sf_kernel_doutput(buffers, li),
	  sf_kernel_dinput(buffers, li, 0), li->accumulate[0], sf_kernel_dparams(buffers, li),
	  li->accumulate_dparams);
}

SF_BODIES(rmsnorm_fwd, fwd_with, _sf_rmsnorm_fwd, _sf_rmsnorm_fwd_cuda)
SF_BODIES(rmsnorm_bwd, bwd_with, _sf_rmsnorm_bwd, _sf_rmsnorm_bwd_cuda)

static double rmsnorm_flops(const struct sf_layer_info *li)
{
	return 5.0 * li->rows * li->out_dim;
}

const struct sf_layer_type _sf_rmsnorm_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "rmsnorm",
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = rmsnorm_infer,
    SF_CONFIG_SIZES(0, sizeof(struct sf_rmsnorm_config)), /* eps 1e-5, or the config's */
    .init = rmsnorm_init,
    .forward_cpu = rmsnorm_fwd_cpu,
    .backward_cpu = rmsnorm_bwd_cpu,
    .forward_cuda = SF_CUDA_BODY(rmsnorm_fwd_cuda),
    .backward_cuda = SF_CUDA_BODY(rmsnorm_bwd_cuda),
    .flops = rmsnorm_flops,
    .saved_floats = rmsnorm_saved,
    .param_tensors = rmsnorm_tensors,
};
