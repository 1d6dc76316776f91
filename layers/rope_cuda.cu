/* rope_cuda.cu — the rotary embedding's CUDA launchers: the table a thread per entry,
 * then a thread per output column (layers/rope_math.h's sf_rope_col), on the worker's
 * stream. */
#include "config.h"

#include "common/cuda_util.h"
#include "layers/rope.h"
#include "layers/rope_math.h"

#include <starpu.h>

static __global__ void table_k(int T, int d, float theta, float *cs)
{
	int h = d / 2;
	SF_CUDA_FOR(k, (size_t)T * h)
	{
		int t = (int)(k / h), i = (int)(k % h);
		sf_rope_cs(t, i, d, theta, &cs[(size_t)t * d + i], &cs[(size_t)t * d + h + i]);
	}
}

static __global__ void rows_k(size_t rows, int T, int W, int rot, int d, const float *cs,
                              float sign, const float *x, float *y, int acc)
{
	SF_CUDA_FOR(e, rows * W)
	{
		size_t r = e / W;
		sf_rope_col(rot, d, cs + (r % T) * d, sign, x + r * W, y + r * W, acc,
		            (int)(e % W));
	}
}

extern "C" void _sf_rope_fwd_cuda(int B, int T, int W, int rot, int d, float theta, const float *x,
                                  float *y, float *cs)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	size_t rows = (size_t)B * T;
	SF_CUDA_CHECK_LAUNCH(
	    "rope table_k",
	    table_k<<<sf_cuda_blocks((size_t)T * (d / 2)), SF_CUDA_BLOCK, 0, s>>>(T, d, theta, cs));
	SF_CUDA_CHECK_LAUNCH("rope rows_k",
	                     rows_k<<<sf_cuda_blocks(rows * W), SF_CUDA_BLOCK, 0, s>>>(
	                         rows, T, W, rot, d, cs, 1.0f, x, y, 0));
}

extern "C" void _sf_rope_bwd_cuda(int B, int T, int W, int rot, int d, const float *cs,
                                  const float *dy, float *dx, int acc)
{
	size_t rows = (size_t)B * T;
	SF_CUDA_CHECK_LAUNCH(
	    "rope rows_k",
	    rows_k<<<sf_cuda_blocks(rows * W), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	        rows, T, W, rot, d, cs, -1.0f, dy, dx, acc));
}
