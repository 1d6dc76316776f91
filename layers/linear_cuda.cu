/* linear_cuda.cu — the linear op's CUDA launchers: cuBLAS GEMMs on the worker's handle
 * (row-major, as layers/linear_cpu.c's cblas calls), the bias broadcast and db's column
 * sums (a block per 32 columns, common/cuda_reduce.cuh) as kernels. */
#include "config.h"

#include "common/cublas_rm.h"
#include "common/cuda_reduce.cuh"
#include "layers/linear.h"
#include "layers/linear_math.h"

#include <starpu.h>
#include <starpu_cublas_v2.h>

static __global__ void bias_k(int B, int O, const float *b, float *y)
{
	SF_CUDA_FOR(i, (size_t)B * O)
	y[i] = b[i % O];
}

/* db: column o's rows in 32 groups (common/cuda_reduce.cuh), the groups added in order
 * (layers/linear_math.h's sf_linear_db_col sums the same rows in one run) */
static __global__ void db_k(int B, int O, const float *dy, float *db, int pacc)
{
	__shared__ float part[SF_COL_GROUPS][SF_COLS];
	int o = blockIdx.x * SF_COLS + threadIdx.x, g = threadIdx.y;
	float s = 0.0f;
	if (o < O)
		for (int r = g; r < B; r += SF_COL_GROUPS)
			s += dy[(size_t)r * O + o];
	part[g][threadIdx.x] = s;
	__syncthreads();
	if (g == 0 && o < O) {
		s = pacc ? db[o] : 0.0f;
		for (int k = 0; k < SF_COL_GROUPS; k++)
			s += part[k][threadIdx.x];
		db[o] = s;
	}
}

extern "C" void _sf_linear_fwd_cuda(int B, int I, int O, const float *x, const float *w,
                                    const float *b, float *y)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	if (b) {
		size_t n = (size_t)B * O;
		SF_CUDA_CHECK_LAUNCH(
		    "bias_k", bias_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, s>>>(B, O, b, y));
	}
	/* y (B, O) (+)= x (B, I) w^T */
	sf_gemm_rm(starpu_cublas_get_local_handle(), false, true, B, O, I, 1.0f, x, I, w, I,
	           b ? 1.0f : 0.0f, y, O);
}

extern "C" void _sf_linear_bwd_cuda(int B, int I, int O, const float *x, const float *w,
                                    const float *dy, float *dx, int acc, float *dw, float *db,
                                    int pacc)
{
	cublasHandle_t h = starpu_cublas_get_local_handle();
	/* dx (B, I) (=|+=) dy (B, O) w (O, I) */
	if (dx)
		sf_gemm_rm(h, false, false, B, I, O, 1.0f, dy, O, w, I, acc ? 1.0f : 0.0f, dx, I);
	if (!dw) /* a split backward's input-gradient half */
		return;
	/* dw (O, I) (=|+=) dy^T x */
	sf_gemm_rm(h, true, false, O, I, B, 1.0f, dy, O, x, I, pacc ? 1.0f : 0.0f, dw, I);
	if (db) {
		SF_CUDA_CHECK_LAUNCH("db_k",
		                     db_k<<<sf_cuda_col_grid(O), sf_cuda_col_block(), 0,
		                            starpu_cuda_get_local_stream()>>>(B, O, dy, db, pacc));
	}
}
