/* softmax_xent_cuda.cu — the loss's CUDA launcher: a warp per row (common/cuda_reduce.cuh)
 * writing dz and its row's term to a scratch (cudaMallocAsync on the stream), then one
 * thread summing the terms in row order, as the CPU does, so the loss is deterministic.
 * Each logit's exponential is layers/softmax_xent_math.h's sf_exp_poly, the CPU's bits;
 * the max is exact; the row's sum is each lane's logits (c = lane, lane + 32, ...) in
 * order, in double, then the warp's fixed butterfly: another order than the CPU's four
 * lanes, so GPU and CPU agree to rounding (a double sum of floats: ~1e-16). A thread
 * per row read its row alone, 32 rows' addresses apart in a warp: with GPT-2's 50 257
 * logits a row that is 8 192 uncoalesced walks of 200 KB. */
#include "config.h"

#include "common/cuda_reduce.cuh"
#include "common/cuda_util.h"
#include "layers/softmax_xent.h"
#include "layers/softmax_xent_math.h"

#include <starpu.h>

static __global__ void rows_k(int B, int C, const float *z, const int32_t *labels, int32_t ignore,
                              float scale, float *dz, double *terms)
{
	SF_CUDA_ROWS(r, lane, (size_t)B)
	{
		const float *zr = z + r * C;
		float *dr = dz + r * C;
		int32_t label = labels[r];
		if (label == ignore) {
			for (int c = lane; c < C; c += SF_WARP)
				dr[c] = 0.0f;
			if (lane == 0)
				terms[r] = 0.0;
			continue;
		}
		float mx = zr[0];
		for (int c = lane; c < C; c += SF_WARP)
			mx = zr[c] > mx ? zr[c] : mx;
		mx = sf_warp_max(mx);
		double part = 0.0;
		for (int c = lane; c < C; c += SF_WARP) {
			float e = sf_exp_poly(zr[c] - mx);
			dr[c] = e;
			part += e;
		}
		double sum = sf_warp_sum(part);
		float inv = (float)(scale / sum);
		for (int c = lane; c < C; c += SF_WARP)
			dr[c] *= inv;
		__syncwarp();
		if (lane == 0) {
			dr[label] -= scale;
			terms[r] = log(sum) + mx - zr[label];
		}
	}
}

static __global__ void sum_k(int B, const double *terms, float scale, double *loss)
{
	double s = 0.0;
	for (int r = 0; r < B; r++)
		s += terms[r];
	*loss = s * scale;
}

extern "C" void _sf_softmax_xent_dev(int B, int C, const float *z, const int32_t *labels,
                                     int32_t ignore, float scale, float *dz, double *loss)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	double *terms = NULL;
	SF_CUDA_CHECK(
	    cudaMallocAsync((void **)&terms, sizeof(double) * (size_t)(B > 0 ? B : 1), s));
	SF_CUDA_CHECK_LAUNCH("softmax_xent rows_k",
	                     rows_k<<<sf_cuda_row_blocks((size_t)B), SF_CUDA_BLOCK, 0, s>>>(
	                         B, C, z, labels, ignore, scale, dz, terms));
	SF_CUDA_CHECK_LAUNCH("softmax_xent sum_k", sum_k<<<1, 1, 0, s>>>(B, terms, scale, loss));
	SF_CUDA_CHECK(cudaFreeAsync(terms, s));
}
