/*
 * unary_type.h — an element-wise op of one input and no parameters as a layer type,
 * in one line: SF_UNARY_TYPE(relu, 1) in layers/relu.c defines _sf_relu_type, whose
 * codelet bodies unpack the buffers and call the op's math, _sf_relu_fwd(n, x, y) and
 * _sf_relu_bwd(n, x, dy, dx, acc) (layers/relu_cpu.c; _cuda variants in
 * layers/relu_cuda.cu for CUDA builds). Its output has its input's width. The second
 * argument is the forward's flops per element (the type's flops(), for StarPU's
 * perfmodels; the backward is counted as twice it, tasks/layer_codelets.c).
 */
#ifndef SF_LAYERS_UNARY_TYPE_H
#define SF_LAYERS_UNARY_TYPE_H

#include "layers/elementwise.h"
#include "layers/kernel_bodies.h"
#include "layers/layer.h"

static inline void _sf_unary_fwd_with(void *buffers[], void *cl_arg,
                                      void (*f)(size_t, const float *, float *))
{
	const struct sf_layer_info *li = cl_arg;
	f(_sf_nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li));
}

static inline void _sf_unary_bwd_with(void *buffers[], void *cl_arg,
                                      void (*f)(size_t, const float *, const float *, float *, int))
{
	const struct sf_layer_info *li = cl_arg;
	f(_sf_nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_doutput(buffers, li),
	  sf_kernel_dinput(buffers, li, 0), li->accumulate[0]);
}

#define SF_UNARY_TYPE(op, flops_per_elem)                                                          \
	SF_BODIES(op##_fwd, _sf_unary_fwd_with, _sf_##op##_fwd, _sf_##op##_fwd_cuda)               \
	SF_BODIES(op##_bwd, _sf_unary_bwd_with, _sf_##op##_bwd, _sf_##op##_bwd_cuda)               \
	static double op##_flops(const struct sf_layer_info *li)                                   \
	{                                                                                          \
		return (flops_per_elem) * (double)_sf_nelem(li);                                   \
	}                                                                                          \
	const struct sf_layer_type _sf_##op##_type = {                                             \
	    .api_version = SF_LAYER_API_VERSION,                                                   \
	    .name = #op,                                                                           \
	    .min_inputs = 1,                                                                       \
	    .max_inputs = 1,                                                                       \
	    .infer = _sf_same_width_infer,                                                         \
	    SF_CONFIG_SIZES(0),                                                                    \
	    .forward_cpu = op##_fwd_cpu,                                                           \
	    .backward_cpu = op##_bwd_cpu,                                                          \
	    .forward_cuda = SF_CUDA_BODY(op##_fwd_cuda),                                           \
	    .backward_cuda = SF_CUDA_BODY(op##_bwd_cuda),                                          \
	    .flops = op##_flops,                                                                   \
	};

#endif
