/* mul_cuda.cu — the element-wise product's CUDA launchers, on the worker's stream (the
 * codelet bodies are in layers/mul.c). */
#include "config.h"

#include "common/cuda_util.h"
#include "layers/add_math.h"
#include "layers/mul.h"

#include <starpu.h>

static __global__ void mul_k(size_t n, const float *a, const float *b, float *y)
{
	SF_CUDA_FOR(i, n)
	y[i] = a[i] * b[i];
}

static __global__ void mul_bwd_k(size_t n, const float *other, const float *dy, float *d, int acc)
{
	SF_CUDA_FOR(i, n)
	sf_grad_store(&d[i], dy[i] * other[i], acc);
}

extern "C" void _sf_mul_fwd_cuda(size_t n, const float *a, const float *b, float *y)
{
	SF_CUDA_CHECK_LAUNCH(
	    "mul_k", mul_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	                 n, a, b, y));
}

extern "C" void _sf_mul_bwd_cuda(size_t n, const float *other, const float *dy, float *d, int acc)
{
	SF_CUDA_CHECK_LAUNCH(
	    "mul_bwd_k",
	    mul_bwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	        n, other, dy, d, acc));
}
