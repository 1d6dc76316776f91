/* grad_cuda.cu — the gradient tasks' CUDA launchers (tasks/grad.h), on the worker's
 * stream. */
#include "config.h"

#include "common/cuda_util.h"
#include "tasks/grad.h"
#include "common/bf16.h"

#include <starpu.h>

static __global__ void add_k(size_t n, float *dst, const float *src)
{
	SF_CUDA_FOR(i, n)
	dst[i] += src[i];
}

/* one block of SF_CUDA_BLOCK threads: thread t sums elements t, t + B, ... in order,
 * then a fixed halving tree: the same result on every run */
static __global__ void sqnorm_k(size_t n, const float *g, double *out)
{
	__shared__ double part[SF_CUDA_BLOCK];
	double s = 0.0;
	for (size_t i = threadIdx.x; i < n; i += SF_CUDA_BLOCK)
		s += (double)g[i] * (double)g[i];
	part[threadIdx.x] = s;
	__syncthreads();
	for (unsigned w = SF_CUDA_BLOCK / 2; w > 0; w /= 2) {
		if (threadIdx.x < w)
			part[threadIdx.x] += part[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*out = part[0];
}

static __global__ void round_k(size_t n, const float *src, uint16_t *dst)
{
	SF_CUDA_FOR(i, n)
	dst[i] = sf_bf16_from_float(src[i]);
}

static __global__ void widen_k(size_t n, const uint16_t *src, float *dst)
{
	SF_CUDA_FOR(i, n)
	dst[i] = sf_bf16_to_float(src[i]);
}

extern "C" void _sf_bf16_round_n_cuda(size_t n, const float *src, uint16_t *dst)
{
	SF_CUDA_CHECK_LAUNCH(
	    "round_k",
	    round_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(n, src,
	                                                                                     dst));
}

extern "C" void _sf_bf16_widen_n_cuda(size_t n, const uint16_t *src, float *dst)
{
	SF_CUDA_CHECK_LAUNCH(
	    "widen_k",
	    widen_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(n, src,
	                                                                                     dst));
}

extern "C" void _sf_grad_add_cuda(size_t n, float *dst, const float *src)
{
	SF_CUDA_CHECK_LAUNCH(
	    "add_k", add_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	                 n, dst, src));
}

extern "C" void _sf_grad_copy_cuda(size_t n, float *dst, const float *src)
{
	SF_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice,
	                              starpu_cuda_get_local_stream()));
}

extern "C" void _sf_grad_sqnorm_cuda(size_t n, const float *g, double *out)
{
	SF_CUDA_CHECK_LAUNCH(
	    "sqnorm_k",
	    sqnorm_k<<<1, SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(n, g, out));
}
