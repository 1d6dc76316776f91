/* linear_cuda.cu — the linear op's CUDA launchers: cuBLAS GEMMs on the worker's handle
 * (row-major, as layers/linear_cpu.c's cblas calls), the bias broadcast and db's column
 * sums (a block per 32 columns, common/cuda_reduce.cuh) as kernels. With
 * SHARDFLOW_GPU_MATH=bf16 each GEMM's two operands are rounded to bf16 copies (a
 * stream-ordered scratch) and multiplied by cublasGemmEx with fp32 accumulation into the
 * fp32 output: cuBLAS's CUBLAS_COMPUTE_32F_FAST_16BF on fp32 operands ran no faster than
 * TF32 on an H200 (docs/gpu.md, 2026-11-28), bf16 operands twice as fast. */
#include "config.h"

#include "common/cublas_rm.h"
#include "common/cuda_reduce.cuh"
#include "layers/gpu_math.h"
#include "layers/linear.h"
#include "layers/linear_math.h"

#include <starpu.h>
#include <starpu_cublas_v2.h>
#include <stdint.h>

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

/* dst[0..n) = src rounded to bf16 (round to nearest even), four at a time where both
 * are aligned, as they are from cudaMalloc and StarPU */
static __global__ void to_bf16_k(size_t n, const float *src, __nv_bfloat16 *dst)
{
	size_t n4 = ((uintptr_t)src % 16 || (uintptr_t)dst % 8) ? 0 : n / 4;
	SF_CUDA_FOR(i, n4)
	{
		float4 v = ((const float4 *)src)[i];
		__nv_bfloat162 *d = (__nv_bfloat162 *)(dst + 4 * i);
		d[0] = __floats2bfloat162_rn(v.x, v.y);
		d[1] = __floats2bfloat162_rn(v.z, v.w);
	}
	SF_CUDA_FOR(i, n - 4 * n4)
	dst[4 * n4 + i] = __float2bfloat16(src[4 * n4 + i]);
}

/* C (m x n, fp32, leading dimension ldc) = op(A) op(B) + beta C as sf_gemm_rm, A and B
 * (fp32, contiguous: lda and ldb their rows' lengths) rounded to bf16 first */
static void gemm_bf16(cublasHandle_t h, cudaStream_t s, bool ta, bool tb, int m, int n, int k,
                      const float *A, int lda, const float *B, int ldb, float beta, float *C,
                      int ldc)
{
	size_t na = (size_t)m * k, nb = (size_t)n * k;
	__nv_bfloat16 *a = NULL;
	/* B's copy starts 16-byte aligned after A's */
	size_t off = (na + 7) / 8 * 8;
	SF_CUDA_CHECK(cudaMallocAsync((void **)&a, sizeof(__nv_bfloat16) * (off + nb), s));
	__nv_bfloat16 *b = a + off;
	SF_CUDA_CHECK_LAUNCH("to_bf16_k",
	                     to_bf16_k<<<sf_cuda_blocks(na / 4 + 1), SF_CUDA_BLOCK, 0, s>>>(na, A, a));
	SF_CUDA_CHECK_LAUNCH("to_bf16_k",
	                     to_bf16_k<<<sf_cuda_blocks(nb / 4 + 1), SF_CUDA_BLOCK, 0, s>>>(nb, B, b));
	const float al = 1.0f;
	/* row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T */
	SF_CUBLAS_CHECK(cublasGemmEx(h, sf_cublas_op(tb), sf_cublas_op(ta), n, m, k, &al, b,
	                             CUDA_R_16BF, ldb, a, CUDA_R_16BF, lda, &beta, C, CUDA_R_32F,
	                             ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	SF_CUDA_CHECK(cudaFreeAsync(a, s));
}

/* one row-major GEMM in the rank's math (SHARDFLOW_GPU_MATH; tf32 is the handle's mode) */
static void gemm(bool ta, bool tb, int m, int n, int k, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc)
{
	cublasHandle_t h = starpu_cublas_get_local_handle();
	if (_sf_gpu_math() == SF_GPU_MATH_BF16)
		gemm_bf16(h, starpu_cuda_get_local_stream(), ta, tb, m, n, k, A, lda, B, ldb, beta, C,
		          ldc);
	else
		sf_gemm_rm(h, ta, tb, m, n, k, 1.0f, A, lda, B, ldb, beta, C, ldc);
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
	gemm(false, true, B, O, I, x, I, w, I, b ? 1.0f : 0.0f, y, O);
}

extern "C" void _sf_linear_bwd_cuda(int B, int I, int O, const float *x, const float *w,
                                    const float *dy, float *dx, int acc, float *dw, float *db,
                                    int pacc)
{
	/* dx (B, I) (=|+=) dy (B, O) w (O, I) */
	if (dx)
		gemm(false, false, B, I, O, dy, O, w, I, acc ? 1.0f : 0.0f, dx, I);
	if (!dw) /* a split backward's input-gradient half */
		return;
	/* dw (O, I) (=|+=) dy^T x */
	gemm(true, false, O, I, B, dy, O, x, I, pacc ? 1.0f : 0.0f, dw, I);
	if (db) {
		SF_CUDA_CHECK_LAUNCH("db_k",
		                     db_k<<<sf_cuda_col_grid(O), sf_cuda_col_block(), 0,
		                            starpu_cuda_get_local_stream()>>>(B, O, dy, db, pacc));
	}
}
