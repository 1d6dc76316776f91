/* rmsnorm_cuda.cu — RMSNorm's CUDA launchers on the worker's stream: a warp per row for
 * the forward and dx (the row's sums in double over the lanes), a block of 32 columns
 * x 32 row groups for dw (common/cuda_reduce.cuh); the formulas are
 * layers/rmsnorm_math.h's, summed in another order. */
#include "config.h"

#include "common/cuda_reduce.cuh"
#include "layers/rmsnorm.h"
#include "layers/rmsnorm_math.h"

#include <starpu.h>

static __global__ void fwd_k(int B, int C, const float *x, const float *w, float eps, float *y,
                             float *rstd)
{
	SF_CUDA_ROWS(r, lane, (size_t)B)
	{
		const float *xr = x + r * C;
		float *yr = y + r * C;
		double ss = 0.0;
		for (int c = lane; c < C; c += SF_WARP)
			ss += (double)xr[c] * xr[c];
		float rs = sf_rmsnorm_rstd(sf_warp_sum(ss), C, eps);
		for (int c = lane; c < C; c += SF_WARP)
			yr[c] = xr[c] * rs * w[c];
		if (lane == 0)
			rstd[r] = rs;
	}
}

static __global__ void dx_k(int B, int C, const float *x, const float *w, const float *rstd,
                            const float *dy, float *dx, int acc)
{
	SF_CUDA_ROWS(r, lane, (size_t)B)
	{
		const float *xr = x + r * C, *dyr = dy + r * C;
		float *dxr = dx + r * C;
		float rs = rstd[r];
		double sgx = 0.0;
		for (int c = lane; c < C; c += SF_WARP)
			sgx += (double)(dyr[c] * w[c]) * (xr[c] * rs);
		float mgx = (float)(sf_warp_sum(sgx) / C);
		for (int c = lane; c < C; c += SF_WARP)
			sf_grad_store(&dxr[c], rs * (dyr[c] * w[c] - xr[c] * rs * mgx), acc);
	}
}

/* dw: thread (tx, ty) of block k sums rows ty, ty + 32, ... of column 32 k + tx in
 * order, then row 0 of the block adds the 32 groups' sums in order */
static __global__ void dw_k(int B, int C, const float *x, const float *rstd, const float *dy,
                            float *dw, int pacc)
{
	__shared__ float part[SF_COL_GROUPS][SF_COLS];
	int c = blockIdx.x * SF_COLS + threadIdx.x, g = threadIdx.y;
	float w = 0.0f;
	if (c < C)
		for (int r = g; r < B; r += SF_COL_GROUPS)
			sf_rmsnorm_dw_add(x[(size_t)r * C + c], dy[(size_t)r * C + c], rstd[r], &w);
	part[g][threadIdx.x] = w;
	__syncthreads();
	if (g == 0 && c < C) {
		w = pacc ? dw[c] : 0.0f;
		for (int k = 0; k < SF_COL_GROUPS; k++)
			w += part[k][threadIdx.x];
		dw[c] = w;
	}
}

extern "C" void _sf_rmsnorm_fwd_cuda(int B, int C, const float *x, const float *w, float eps,
                                     float *y, float *rstd)
{
	SF_CUDA_CHECK_LAUNCH("rmsnorm fwd_k",
	                     fwd_k<<<sf_cuda_row_blocks((size_t)B), SF_CUDA_BLOCK, 0,
	                             starpu_cuda_get_local_stream()>>>(B, C, x, w, eps, y, rstd));
}

extern "C" void _sf_rmsnorm_bwd_cuda(int B, int C, const float *x, const float *w,
                                     const float *rstd, const float *dy, float *dx, int acc,
                                     float *dw, int pacc)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	SF_CUDA_CHECK_LAUNCH(
	    "rmsnorm dw_k",
	    dw_k<<<sf_cuda_col_grid(C), sf_cuda_col_block(), 0, s>>>(B, C, x, rstd, dy, dw, pacc));
	if (dx)
		SF_CUDA_CHECK_LAUNCH("rmsnorm dx_k",
		                     dx_k<<<sf_cuda_row_blocks((size_t)B), SF_CUDA_BLOCK, 0, s>>>(
		                         B, C, x, w, rstd, dy, dx, acc));
}
