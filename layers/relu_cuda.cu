/* relu_cuda.cu — relu's CUDA launchers: layers/relu_math.h on each element, on the
 * worker's stream (the codelet bodies are in layers/relu.c). */
#include "config.h"

#include "common/cuda_util.h"
#include "layers/add_math.h"
#include "layers/relu.h"
#include "layers/relu_math.h"

#include <starpu.h>

static __global__ void fwd_k(size_t n, const float *x, float *y)
{
	SF_CUDA_FOR(i, n)
	y[i] = sf_relu_f(x[i]);
}

static __global__ void bwd_k(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	SF_CUDA_FOR(i, n)
	sf_grad_store(&dx[i], sf_relu_d(x[i], dy[i]), acc);
}

extern "C" void _sf_relu_fwd_cuda(size_t n, const float *x, float *y)
{
	fwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(n, x, y);
	SF_CUDA_CHECK_LAUNCH("relu fwd_k");
}

extern "C" void _sf_relu_bwd_cuda(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	bwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(n, x, dy, dx,
	                                                                              acc);
	SF_CUDA_CHECK_LAUNCH("relu bwd_k");
}
