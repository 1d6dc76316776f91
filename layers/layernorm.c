/*
 * layernorm.c — the layernorm layer type: same width as its input, 2C parameters
 * (w, b), a saved buffer of 2B floats (mean and rstd of each row); the codelet bodies
 * call layers/layernorm_cpu.c.
 */
#include "config.h"

#include "layers/layernorm.h"
#include "layers/kernel_bodies.h"
#include "layers/layer.h"

#include <math.h>
#include <starpu.h>

#define SF_LAYERNORM_EPS 1e-5f

static float eps_of(const void *config)
{
	return config ? ((const struct sf_layernorm_config *)config)->eps : SF_LAYERNORM_EPS;
}

static int layernorm_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                           size_t *nparams)
{
	(void)nin;
	float eps = eps_of(config);
	if (!(eps > 0.0f) || !isfinite(eps))
		return SF_ERR(SF_ERR_INVALID, "layernorm: eps must be a finite number > 0 (got %g)",
		              (double)eps);
	*out_dim = in_dims[0];
	*nparams = 2 * (size_t)in_dims[0];
	return SF_OK;
}

static void layernorm_init(const struct sf_layer_info *li, struct sf_rng *rng, float *p)
{
	(void)rng;
	for (int c = 0; c < li->out_dim; c++) {
		p[c] = 1.0f;
		p[li->out_dim + c] = 0.0f;
	}
}

static size_t layernorm_saved(const struct sf_layer_info *li)
{
	return 2 * (size_t)li->rows;
}

static int layernorm_tensors(const struct sf_layer_info *li, struct sf_param_tensor *t)
{
	size_t C = (size_t)li->out_dim;
	t[0] = (struct sf_param_tensor){"weight", 0, 1, {C, 0}};
	t[1] = (struct sf_param_tensor){"bias", C, 1, {C, 0}};
	return 2;
}

typedef void (*fwd_fn)(int, int, const float *, const float *, const float *, float, float *,
                       float *, float *);
typedef void (*bwd_fn)(int, int, const float *, const float *, const float *, const float *,
                       const float *, float *, int, float *, float *, int);

/* params (2C) x (B,C) y(W) saved(W) (2B) */
static void fwd_with(void *buffers[], void *cl_arg, fwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	int B = li->rows, C = li->out_dim;
	const float *p = sf_kernel_params(buffers, li);
	float *saved = sf_kernel_saved(buffers, li);
	f(B, C, sf_kernel_input(buffers, li, 0), p, p + C, eps_of(li->config),
	  sf_kernel_output(buffers, li), saved, saved + B);
}

/* params x y dy saved(R) [dx] dparams */
static void bwd_with(void *buffers[], void *cl_arg, bwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	int B = li->rows, C = li->out_dim;
	const float *p = sf_kernel_params(buffers, li);
	const float *saved = sf_kernel_saved(buffers, li);
	float *dp = sf_kernel_dparams(buffers, li);
	f(B, C, sf_kernel_input(buffers, li, 0), p, saved, saved + B,
	                  sf_kernel_doutput(buffers, li), sf_kernel_dinput(buffers, li, 0),
	                  li->accumulate[0], dp, dp + C, li->accumulate_dparams);
}

SF_BODIES(layernorm_fwd, fwd_with, _sf_layernorm_fwd, _sf_layernorm_fwd_cuda)
SF_BODIES(layernorm_bwd, bwd_with, _sf_layernorm_bwd, _sf_layernorm_bwd_cuda)

static double layernorm_flops(const struct sf_layer_info *li)
{
	return 8.0 * li->rows * li->out_dim;
}

const struct sf_layer_type _sf_layernorm_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "layernorm",
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = layernorm_infer,
    SF_CONFIG_SIZES(0, sizeof(struct sf_layernorm_config)), /* eps 1e-5, or the config's */
    .init = layernorm_init,
    .forward_cpu = layernorm_fwd_cpu,
    .backward_cpu = layernorm_bwd_cpu,
    .forward_cuda = SF_CUDA_BODY(layernorm_fwd_cuda),
    .backward_cuda = SF_CUDA_BODY(layernorm_bwd_cuda),
    .flops = layernorm_flops,
    .saved_floats = layernorm_saved,
    .param_tensors = layernorm_tensors,
};
