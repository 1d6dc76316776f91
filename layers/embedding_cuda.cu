/* embedding_cuda.cu — the token embedding's CUDA launchers: a gather of rows forward;
 * backward, a thread per column adding the rows in order (layers/embedding_math.h),
 * deterministic as the CPU's. On the worker's stream. */
#include "config.h"

#include "common/cuda_util.h"
#include "layers/embedding.h"
#include "layers/embedding_math.h"

#include <starpu.h>

static __global__ void fwd_k(int B, int C, const int32_t *ids, const float *w, float *y)
{
	SF_CUDA_FOR(i, (size_t)B * C)
	y[i] = w[(size_t)ids[i / C] * C + i % C];
}

static __global__ void bwd_k(int B, int C, const int32_t *ids, const float *dy, float *dw)
{
	SF_CUDA_FOR(c, (size_t)C)
	sf_embedding_dw_col(B, C, (int)c, ids, dy, dw);
}

extern "C" void _sf_embedding_fwd_cuda(int B, int C, const int32_t *ids, const float *w, float *y)
{
	size_t n = (size_t)B * C;
	SF_CUDA_CHECK_LAUNCH(
	    "embedding fwd_k",
	    fwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	        B, C, ids, w, y));
}

extern "C" void _sf_embedding_bwd_cuda(int B, int V, int C, const int32_t *ids, const float *dy,
                                       float *dw, int pacc)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	if (!pacc)
		SF_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(float) * (size_t)V * C, s));
	SF_CUDA_CHECK_LAUNCH(
	    "embedding bwd_k",
	    bwd_k<<<sf_cuda_blocks((size_t)C), SF_CUDA_BLOCK, 0, s>>>(B, C, ids, dy, dw));
}
