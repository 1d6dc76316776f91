/* pos_embedding_cuda.cu — the position embedding's CUDA launchers: y = x + W[t]
 * (layers/add_math.h); backward, dx is dy passed through and dW a thread per (t, c)
 * adding the samples in order (layers/embedding_math.h). On the worker's stream. */
#include "config.h"

#include "common/cuda_util.h"
#include "layers/add_math.h"
#include "layers/embedding_math.h"
#include "layers/pos_embedding.h"

#include <starpu.h>

static __global__ void fwd_k(int B, int T, int C, const float *x, const float *w, float *y)
{
	SF_CUDA_FOR(i, (size_t)B * T * C)
	y[i] = sf_add_f(x[i], w[(i / C) % T * C + i % C]);
}

static __global__ void pass_k(size_t n, const float *dy, float *dx, int acc)
{
	SF_CUDA_FOR(i, n)
	sf_grad_store(&dx[i], dy[i], acc);
}

static __global__ void dw_k(int B, int T, int C, const float *dy, float *dw)
{
	SF_CUDA_FOR(i, (size_t)T * C)
	sf_pos_embedding_dw_elem(B, T, C, (int)(i / C), (int)(i % C), dy, dw);
}

extern "C" void _sf_pos_embedding_fwd_cuda(int B, int T, int C, const float *x, const float *w,
                                           float *y)
{
	size_t n = (size_t)B * T * C;
	SF_CUDA_CHECK_LAUNCH(
	    "pos_embedding fwd_k",
	    fwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	        B, T, C, x, w, y));
}

extern "C" void _sf_pos_embedding_bwd_cuda(int B, int T, int NP, int C, const float *dy, float *dx,
                                           int acc, float *dw, int pacc)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	size_t n = (size_t)B * T * C;
	if (dx) {
		SF_CUDA_CHECK_LAUNCH(
		    "pos_embedding pass_k",
		    pass_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, s>>>(n, dy, dx, acc));
	}
	if (!pacc)
		SF_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(float) * (size_t)NP * C, s));
	SF_CUDA_CHECK_LAUNCH(
	    "pos_embedding dw_k",
	    dw_k<<<sf_cuda_blocks((size_t)T * C), SF_CUDA_BLOCK, 0, s>>>(B, T, C, dy, dw));
}
