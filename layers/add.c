/*
 * add.c — the add layer type (residual connections): two inputs of the same width,
 * no parameters; the codelet bodies call layers/add_cpu.c (or layers/add_cuda.cu).
 */
#include "config.h"

#include "layers/add.h"
#include "layers/elementwise.h"
#include "layers/kernel_bodies.h"
#include "layers/layer.h"

static void fwd_with(void *buffers[], void *cl_arg,
                     void (*f)(size_t, const float *, const float *, float *))
{
	const struct sf_layer_info *li = cl_arg;
	f(_sf_nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_input(buffers, li, 1),
	  sf_kernel_output(buffers, li));
}

static void bwd_with(void *buffers[], void *cl_arg, void (*f)(size_t, const float *, float *, int))
{
	const struct sf_layer_info *li = cl_arg;
	const float *dy = sf_kernel_doutput(buffers, li);
	for (int i = 0; i < 2; i++) {
		float *dx = sf_kernel_dinput(buffers, li, i);
		if (dx)
			f(_sf_nelem(li), dy, dx, li->accumulate[i]);
	}
}

SF_BODIES(add_fwd, fwd_with, _sf_add_fwd, _sf_add_fwd_cuda)
SF_BODIES(add_bwd, bwd_with, _sf_pass_bwd, _sf_pass_bwd_cuda)

/* 1 flop an element, the add. The backward, counted twice that, passes dy to both
 * inputs: 2 adds an element where both gradients accumulate (a residual stream's),
 * copies where they are overwritten. */
static double add_flops(const struct sf_layer_info *li)
{
	return (double)_sf_nelem(li);
}

const struct sf_layer_type _sf_add_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "add",
    .min_inputs = 2,
    .max_inputs = 2,
    .infer = _sf_same_width_infer,
    SF_CONFIG_SIZES(0),
    .forward_cpu = add_fwd_cpu,
    .backward_cpu = add_bwd_cpu,
    .forward_cuda = SF_CUDA_BODY(add_fwd_cuda),
    .backward_cuda = SF_CUDA_BODY(add_bwd_cuda),
    .flops = add_flops,
};
