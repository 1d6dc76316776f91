/* linear_cuda.cu — the linear op's CUDA launchers: cuBLAS GEMMs on the worker's handle
 * (row-major, as layers/linear_cpu.c's cblas calls), the bias broadcast and db's column
 * sums (layers/linear_math.h, a thread per column, rows in order) as kernels. */
#include "config.h"

#include "common/cublas_rm.h"
#include "layers/linear.h"
#include "layers/linear_math.h"

#include <starpu.h>
#include <starpu_cublas_v2.h>

static __global__ void bias_k(int B, int O, const float *b, float *y)
{
	SF_CUDA_FOR(i, (size_t)B * O)
	y[i] = b[i % O];
}

static __global__ void db_k(int B, int O, const float *dy, float *db, int pacc)
{
	SF_CUDA_FOR(o, (size_t)O)
	sf_linear_db_col(B, O, (int)o, dy, db, pacc);
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
	/* dw (O, I) (=|+=) dy^T x */
	sf_gemm_rm(h, true, false, O, I, B, 1.0f, dy, O, x, I, pacc ? 1.0f : 0.0f, dw, I);
	if (db) {
		SF_CUDA_CHECK_LAUNCH("db_k",
		                     db_k<<<sf_cuda_blocks((size_t)O), SF_CUDA_BLOCK, 0,
		                            starpu_cuda_get_local_stream()>>>(B, O, dy, db, pacc));
	}
}
