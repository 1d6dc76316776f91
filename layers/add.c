/*
 * add.c — the add layer type (residual connections): two inputs of the same width,
 * no parameters; the codelet bodies call layers/add_cpu.c.
 */
#include "config.h"

#include "layers/add.h"
#include "layers/elementwise_cuda.h"
#include "layers/elementwise.h"
#include "layers/layer.h"

static void add_fwd_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	_sf_add_fwd(_sf_nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_input(buffers, li, 1),
	            sf_kernel_output(buffers, li));
}

static void add_bwd_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	const float *dy = sf_kernel_doutput(buffers, li);
	for (int i = 0; i < 2; i++) {
		float *dx = sf_kernel_dinput(buffers, li, i);
		if (dx)
			_sf_pass_bwd(_sf_nelem(li), dy, dx, li->accumulate[i]);
	}
}

const struct sf_layer_type _sf_add_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "add",
    .min_inputs = 2,
    .max_inputs = 2,
    .infer = _sf_same_width_infer,
    .forward_cpu = add_fwd_cpu,
    .backward_cpu = add_bwd_cpu,
#ifdef SF_HAVE_CUDA
    .forward_cuda = _sf_add_fwd_cuda,
    .backward_cuda = _sf_add_bwd_cuda,
#endif
};
