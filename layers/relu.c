/*
 * relu.c — the relu layer type: same width as its input, no parameters; the codelet
 * bodies unpack the buffers and call layers/relu_cpu.c (or layers/relu_cuda.cu).
 */
#include "config.h"

#include "layers/relu.h"
#include "layers/layer.h"
#include "layers/elementwise.h"
#include "layers/kernel_bodies.h"

static void fwd_with(void *buffers[], void *cl_arg, void (*f)(size_t, const float *, float *))
{
	const struct sf_layer_info *li = cl_arg;
	f(_sf_nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li));
}

static void bwd_with(void *buffers[], void *cl_arg,
                     void (*f)(size_t, const float *, const float *, float *, int))
{
	const struct sf_layer_info *li = cl_arg;
	f(_sf_nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_doutput(buffers, li),
	  sf_kernel_dinput(buffers, li, 0), li->accumulate[0]);
}

SF_BODIES(relu_fwd, fwd_with, _sf_relu_fwd, _sf_relu_fwd_cuda)
SF_BODIES(relu_bwd, bwd_with, _sf_relu_bwd, _sf_relu_bwd_cuda)

const struct sf_layer_type _sf_relu_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "relu",
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = _sf_same_width_infer,
    .forward_cpu = relu_fwd_cpu,
    .backward_cpu = relu_bwd_cpu,
    .forward_cuda = SF_CUDA_BODY(relu_fwd_cuda),
    .backward_cuda = SF_CUDA_BODY(relu_bwd_cuda),
};
