/* embedding_cuda.cu — the token embedding's CUDA launchers: a gather of rows forward;
 * backward, the ids sorted stably (CUB's radix sort: equal ids keep their rows' order),
 * then a thread per (segment of one id, column) adding its rows in order
 * (layers/embedding_math.h's sf_embedding_dw_segment): for every entry of dW the
 * additions of the CPU's loop in its order, so the CPU's bits, deterministic. It was a
 * thread per column walking every row, C threads in all (768 for GPT-2: 3.2 ms a step
 * on an H100 for 8 192 rows, docs/gpu.md run 9). On the worker's stream; the sort's
 * buffers from the stream's pool (cudaMallocAsync). */
#include "config.h"

#include "common/cuda_util.h"
#include "layers/embedding.h"
#include "layers/embedding_math.h"

#include <cub/cub.cuh>
#include <starpu.h>

static __global__ void fwd_k(int B, int C, const int32_t *ids, const float *w, float *y)
{
	SF_CUDA_FOR(i, (size_t)B * C)
	y[i] = w[(size_t)ids[i / C] * C + i % C];
}

static __global__ void iota_k(int B, int32_t *rows)
{
	SF_CUDA_FOR(i, (size_t)B)
	rows[i] = (int32_t)i;
}

/* a thread per (sorted position i, column c); the positions that start a segment sum it */
static __global__ void segments_k(int B, int C, const int32_t *keys, const int32_t *rows,
                                  const float *dy, float *dw)
{
	SF_CUDA_FOR(k, (size_t)B * C)
	{
		int i = (int)(k / C), c = (int)(k % C);
		if (i == 0 || keys[i - 1] != keys[i])
			sf_embedding_dw_segment(B, C, c, i, keys, rows, dy, dw);
	}
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
	if (B <= 0)
		return;
	/* rows 0..B-1, the sorted ids and their rows, then CUB's scratch (256-byte aligned) */
	size_t scratch = 0;
	SF_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, scratch, ids, (int32_t *)NULL,
	                                              (const int32_t *)NULL, (int32_t *)NULL, B, 0,
	                                              32, s));
	size_t ints = ((size_t)3 * B * sizeof(int32_t) + 255) & ~(size_t)255;
	char *buf = NULL;
	SF_CUDA_CHECK(cudaMallocAsync((void **)&buf, ints + scratch, s));
	int32_t *rows = (int32_t *)buf, *keys_out = rows + B, *rows_out = keys_out + B;
	SF_CUDA_CHECK_LAUNCH("embedding iota_k",
	                     iota_k<<<sf_cuda_blocks((size_t)B), SF_CUDA_BLOCK, 0, s>>>(B, rows));
	SF_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(buf + ints, scratch, ids, keys_out, rows,
	                                              rows_out, B, 0, 32, s));
	SF_CUDA_CHECK_LAUNCH("embedding segments_k",
	                     segments_k<<<sf_cuda_blocks((size_t)B * C), SF_CUDA_BLOCK, 0, s>>>(
	                         B, C, keys_out, rows_out, dy, dw));
	SF_CUDA_CHECK(cudaFreeAsync(buf, s));
}
