/*
 * gelu.c — the gelu layer type: same width as its input, no parameters; the codelet
 * bodies unpack the buffers and call layers/gelu_cpu.c.
 */
#include "config.h"

#include "layers/gelu.h"
#include "layers/elementwise_cuda.h"
#include "layers/layer.h"
#include "layers/elementwise.h"

static void gelu_fwd_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	_sf_gelu_fwd(_sf_nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li));
}

static void gelu_bwd_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	_sf_gelu_bwd(_sf_nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_doutput(buffers, li),
	             sf_kernel_dinput(buffers, li, 0), li->accumulate[0]);
}

const struct sf_layer_type _sf_gelu_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "gelu",
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = _sf_same_width_infer,
    .forward_cpu = gelu_fwd_cpu,
    .backward_cpu = gelu_bwd_cpu,
#ifdef SF_HAVE_CUDA
    .forward_cuda = _sf_gelu_fwd_cuda,
    .backward_cuda = _sf_gelu_bwd_cuda,
#endif
};
