/* add_cuda.cu — the residual add's CUDA launchers: layers/add_math.h on each element,
 * on the worker's stream (the codelet bodies are in layers/add.c). */
#include "config.h"

#include "common/cuda_util.h"
#include "layers/add.h"
#include "layers/add_math.h"

#include <starpu.h>

static __global__ void add_k(size_t n, const float *a, const float *b, float *y)
{
	SF_CUDA_FOR(i, n)
	y[i] = sf_add_f(a[i], b[i]);
}

static __global__ void pass_k(size_t n, const float *dy, float *d, int acc)
{
	SF_CUDA_FOR(i, n)
	sf_grad_store(&d[i], dy[i], acc);
}

extern "C" void _sf_add_fwd_cuda(size_t n, const float *a, const float *b, float *y)
{
	SF_CUDA_CHECK_LAUNCH(
	    "add_k", add_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	                 n, a, b, y));
}

extern "C" void _sf_pass_bwd_cuda(size_t n, const float *dy, float *d, int acc)
{
	SF_CUDA_CHECK_LAUNCH(
	    "pass_k",
	    pass_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	        n, dy, d, acc));
}
