/*
 * rope.c — the "rope" layer type: one input of width W, config struct sf_rope_config
 * (the rotated columns, the head size, theta), the same width out, no parameters, a
 * saved buffer of T d floats (the cos and sin table); the codelet bodies call
 * layers/rope_cpu.c (or layers/rope_cuda.cu).
 */
#include "config.h"

#include "layers/rope.h"
#include "layers/kernel_bodies.h"
#include "layers/layer.h"

#include <math.h>
#include <starpu.h>

static int rope_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                      size_t *nparams)
{
	(void)nin;
	if (!config)
		return SF_ERR(SF_ERR_INVALID, "rope: a struct sf_rope_config is required");
	const struct sf_rope_config *c = config;
	int W = in_dims[0];
	if (c->head_dim <= 0 || c->head_dim % 2)
		return SF_ERR(SF_ERR_INVALID, "rope: head_dim must be even and > 0 (got %d)",
		              c->head_dim);
	if (c->rotated <= 0 || c->rotated % c->head_dim || c->rotated > W)
		return SF_ERR(SF_ERR_INVALID,
		              "rope: rotated must be a multiple of head_dim %d in (0, %d], the "
		              "input's width (got %d)",
		              c->head_dim, W, c->rotated);
	if (!(c->theta > 0.0f) || !isfinite(c->theta))
		return SF_ERR(SF_ERR_INVALID, "rope: theta must be a finite number > 0 (got %g)",
		              (double)c->theta);
	*out_dim = W;
	*nparams = 0;
	return SF_OK;
}

static const struct sf_rope_config *cfg(const struct sf_layer_info *li)
{
	return li->config;
}

/* the columns rotated in li's shapes: a TP rank's slice holds its heads' share */
static int rotated(const struct sf_layer_info *li)
{
	return li->tp_split ? cfg(li)->rotated / li->tp_size : cfg(li)->rotated;
}

static size_t rope_saved(const struct sf_layer_info *li)
{
	return (size_t)li->seq_len * (size_t)cfg(li)->head_dim;
}

typedef void (*fwd_fn)(int, int, int, int, int, float, const float *, float *, float *);
typedef void (*bwd_fn)(int, int, int, int, int, const float *, const float *, float *, int);

/* x y(W) saved(W); rows at two runs of positions (context parallelism, CPU ranks
 * only: sf_model_create refuses it on GPU ranks) through the CPU's _sf_rope_fwd_at */
static void fwd_with(void *buffers[], void *cl_arg, fwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	const struct sf_rope_config *c = cfg(li);
	if (li->pos_n0 != li->seq_len || li->pos_p0 != 0) {
		STARPU_ASSERT_MSG(f == _sf_rope_fwd, "rope: context parallelism on a GPU");
		_sf_rope_fwd_at(li->samples, li->seq_len, li->out_dim, rotated(li), c->head_dim,
		                c->theta, li->pos_n0, li->pos_p0, li->pos_p1,
		                sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li),
		                sf_kernel_saved(buffers, li));
		return;
	}
	f(li->samples, li->seq_len, li->out_dim, rotated(li), c->head_dim, c->theta,
	  sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li),
	  sf_kernel_saved(buffers, li));
}

/* x y dy saved(R) [dx] */
static void bwd_with(void *buffers[], void *cl_arg, bwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	const struct sf_rope_config *c = cfg(li);
	float *dx = sf_kernel_dinput(buffers, li, 0);
	if (dx)
		f(li->samples, li->seq_len, li->out_dim, rotated(li), c->head_dim,
		  sf_kernel_saved(buffers, li), sf_kernel_doutput(buffers, li), dx,
		  li->accumulate[0]);
}

SF_BODIES(rope_fwd, fwd_with, _sf_rope_fwd, _sf_rope_fwd_cuda)
SF_BODIES(rope_bwd, bwd_with, _sf_rope_bwd, _sf_rope_bwd_cuda)

static double rope_flops(const struct sf_layer_info *li)
{
	return 3.0 * li->rows * (double)rotated(li);
}

const struct sf_layer_type _sf_rope_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "rope",
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = rope_infer,
    SF_CONFIG_SIZES(sizeof(struct sf_rope_config)),
    .forward_cpu = rope_fwd_cpu,
    .backward_cpu = rope_bwd_cpu,
    .forward_cuda = SF_CUDA_BODY(rope_fwd_cuda),
    .backward_cuda = SF_CUDA_BODY(rope_bwd_cuda),
    .flops = rope_flops,
    .saved_floats = rope_saved,
};
