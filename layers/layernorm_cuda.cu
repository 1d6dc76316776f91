/* layernorm_cuda.cu — layernorm's CUDA launchers on the worker's stream: a warp per
 * row for the forward and dx (the row's sums in double over the lanes), and a block
 * of 32 columns x 32 row groups for dw and db (common/cuda_reduce.cuh); the formulas
 * are layers/layernorm_math.h's, summed in another order. */
#include "config.h"

#include "common/cuda_reduce.cuh"
#include "layers/layernorm.h"
#include "layers/layernorm_math.h"

#include <starpu.h>

static __global__ void fwd_k(int B, int C, const float *x, const float *w, const float *b,
                             float eps, float *y, float *mean, float *rstd)
{
	SF_CUDA_ROWS(r, lane, (size_t)B)
	{
		const float *xr = x + r * C;
		float *yr = y + r * C;
		double s = 0.0, v = 0.0;
		for (int c = lane; c < C; c += SF_WARP)
			s += xr[c];
		double m = sf_warp_sum(s) / C;
		for (int c = lane; c < C; c += SF_WARP)
			v += ((double)xr[c] - m) * ((double)xr[c] - m);
		float rs = (float)(1.0 / sqrt(sf_warp_sum(v) / C + (double)eps));
		float mf = (float)m;
		for (int c = lane; c < C; c += SF_WARP)
			yr[c] = (xr[c] - mf) * rs * w[c] + b[c];
		if (lane == 0) {
			mean[r] = mf;
			rstd[r] = rs;
		}
	}
}

static __global__ void dx_k(int B, int C, const float *x, const float *w, const float *mean,
                            const float *rstd, const float *dy, float *dx, int acc)
{
	SF_CUDA_ROWS(r, lane, (size_t)B)
	{
		const float *xr = x + r * C, *dyr = dy + r * C;
		float *dxr = dx + r * C;
		float m = mean[r], rs = rstd[r];
		double sg = 0.0, sgx = 0.0;
		for (int c = lane; c < C; c += SF_WARP) {
			float xhat = (xr[c] - m) * rs, g = dyr[c] * w[c];
			sg += g;
			sgx += (double)g * xhat;
		}
		float mg = (float)(sf_warp_sum(sg) / C), mgx = (float)(sf_warp_sum(sgx) / C);
		for (int c = lane; c < C; c += SF_WARP) {
			float xhat = (xr[c] - m) * rs;
			sf_grad_store(&dxr[c], rs * (dyr[c] * w[c] - mg - xhat * mgx), acc);
		}
	}
}

/* dw and db: thread (tx, ty) of block k sums rows ty, ty + 32, ... of column
 * 32 k + tx in order, then row 0 of the block adds the 32 groups' sums in order */
static __global__ void dparams_k(int B, int C, const float *x, const float *mean,
                                 const float *rstd, const float *dy, float *dw, float *db,
                                 int pacc)
{
	__shared__ float pw[SF_COL_GROUPS][SF_COLS], pb[SF_COL_GROUPS][SF_COLS];
	int c = blockIdx.x * SF_COLS + threadIdx.x, g = threadIdx.y;
	float w = 0.0f, b = 0.0f;
	if (c < C)
		for (int r = g; r < B; r += SF_COL_GROUPS)
			sf_layernorm_dparam_add(x[(size_t)r * C + c], dy[(size_t)r * C + c], mean[r],
			                        rstd[r], &w, &b);
	pw[g][threadIdx.x] = w;
	pb[g][threadIdx.x] = b;
	__syncthreads();
	if (g == 0 && c < C) {
		w = pacc ? dw[c] : 0.0f;
		b = pacc ? db[c] : 0.0f;
		for (int k = 0; k < SF_COL_GROUPS; k++) {
			w += pw[k][threadIdx.x];
			b += pb[k][threadIdx.x];
		}
		dw[c] = w;
		db[c] = b;
	}
}

extern "C" void _sf_layernorm_fwd_cuda(int B, int C, const float *x, const float *w,
                                       const float *b, float eps, float *y, float *mean,
                                       float *rstd)
{
	SF_CUDA_CHECK_LAUNCH(
	    "layernorm fwd_k",
	    fwd_k<<<sf_cuda_row_blocks((size_t)B), SF_CUDA_BLOCK, 0,
	          starpu_cuda_get_local_stream()>>>(
	        B, C, x, w, b, eps, y, mean, rstd));
}

extern "C" void _sf_layernorm_bwd_cuda(int B, int C, const float *x, const float *w,
                                       const float *mean, const float *rstd, const float *dy,
                                       float *dx, int acc, float *dw, float *db, int pacc)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	SF_CUDA_CHECK_LAUNCH("layernorm dparams_k",
	                     dparams_k<<<sf_cuda_col_grid(C), sf_cuda_col_block(), 0, s>>>(
	                         B, C, x, mean, rstd, dy, dw, db, pacc));
	if (dx) {
		SF_CUDA_CHECK_LAUNCH("layernorm dx_k",
		                     dx_k<<<sf_cuda_row_blocks((size_t)B), SF_CUDA_BLOCK, 0, s>>>(
		                         B, C, x, w, mean, rstd, dy, dx, acc));
	}
}
