/*
 * unary_cuda.h — the CUDA launchers of an element-wise op of one input (nvcc only):
 * SF_UNARY_CUDA(op) defines _sf_<op>_fwd_cuda (y = sf_<op>_f(x)) and _sf_<op>_bwd_cuda
 * (dx =|+= sf_<op>_d(x, dy)) over n floats on the worker's stream, from the op's
 * layers/<op>_math.h, as declared in layers/<op>.h.
 */
#ifndef SF_LAYERS_UNARY_CUDA_H
#define SF_LAYERS_UNARY_CUDA_H

#include "common/cuda_util.h"
#include "layers/add_math.h"

#include <starpu.h>

#define SF_UNARY_CUDA(op)                                                                  \
	static __global__ void op##_fwd_k(size_t n, const float *x, float *y)                  \
	{                                                                                      \
		SF_CUDA_FOR(i, n)                                                                  \
		y[i] = sf_##op##_f(x[i]);                                                          \
	}                                                                                      \
	static __global__ void op##_bwd_k(size_t n, const float *x, const float *dy, float *dx, \
	                                  int acc)                                             \
	{                                                                                      \
		SF_CUDA_FOR(i, n)                                                                  \
		sf_grad_store(&dx[i], sf_##op##_d(x[i], dy[i]), acc);                              \
	}                                                                                      \
	extern "C" void _sf_##op##_fwd_cuda(size_t n, const float *x, float *y)                \
	{                                                                                      \
		SF_CUDA_CHECK_LAUNCH(#op "_fwd_k",                                                 \
		                     op##_fwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0,             \
		                                  starpu_cuda_get_local_stream()>>>(n, x, y));     \
	}                                                                                      \
	extern "C" void _sf_##op##_bwd_cuda(size_t n, const float *x, const float *dy, float *dx, \
	                                    int acc)                                           \
	{                                                                                      \
		SF_CUDA_CHECK_LAUNCH(#op "_bwd_k",                                                 \
		                     op##_bwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0,             \
		                                  starpu_cuda_get_local_stream()>>>(n, x, dy, dx,  \
		                                                                    acc));         \
	}

#endif
