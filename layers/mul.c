/*
 * mul.c — the mul layer type (SwiGLU's gate): two inputs of the same width, no
 * parameters; the codelet bodies call layers/mul_cpu.c (or layers/mul_cuda.cu).
 */
#include "config.h"

#include "layers/mul.h"
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

/* input i's gradient is dy times input 1 - i */
static void bwd_with(void *buffers[], void *cl_arg,
                     void (*f)(size_t, const float *, const float *, float *, int))
{
	const struct sf_layer_info *li = cl_arg;
	const float *dy = sf_kernel_doutput(buffers, li);
	for (int i = 0; i < 2; i++) {
		float *dx = sf_kernel_dinput(buffers, li, i);
		if (dx)
			f(_sf_nelem(li), sf_kernel_input(buffers, li, 1 - i), dy, dx,
			  li->accumulate[i]);
	}
}

SF_BODIES(mul_fwd, fwd_with, _sf_mul_fwd, _sf_mul_fwd_cuda)
SF_BODIES(mul_bwd, bwd_with, _sf_mul_bwd, _sf_mul_bwd_cuda)

static double mul_flops(const struct sf_layer_info *li)
{
	/* 1 flop an element, the product; the backward, counted twice that, makes one
	 * product for each input's gradient */
	return (double)_sf_nelem(li);
}

const struct sf_layer_type _sf_mul_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "mul",
    .min_inputs = 2,
    .max_inputs = 2,
    .infer = _sf_same_width_infer,
    SF_CONFIG_SIZES(0),
    .forward_cpu = mul_fwd_cpu,
    .backward_cpu = mul_bwd_cpu,
    .forward_cuda = SF_CUDA_BODY(mul_fwd_cuda),
    .backward_cuda = SF_CUDA_BODY(mul_bwd_cuda),
    .flops = mul_flops,
};
