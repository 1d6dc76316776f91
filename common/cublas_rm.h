/*
 * cublas_rm.h — row-major GEMMs on cuBLAS (column-major), as cblas_sgemm(CblasRowMajor,
 * ...) is called on the CPU: C (m x n) = alpha op(A) op(B) + beta C, every matrix
 * row-major with its leading dimension. Row-major C = op(A) op(B) is column-major
 * C^T = op(B)^T op(A)^T, so cuBLAS gets B before A and n before m. For nvcc-compiled
 * files; the handle is StarPU's per worker (starpu_cublas_get_local_handle(), bound
 * to the worker's stream by starpu_cublas_init()). cuBLAS's default math mode (no
 * TF32) keeps float GEMMs in float, as OpenBLAS's are.
 */
#ifndef SF_COMMON_CUBLAS_RM_H
#define SF_COMMON_CUBLAS_RM_H

#include "common/cuda_util.h"

#include <cublas_v2.h>

static inline void sf_cublas_fail(const char *file, int line, const char *what, cublasStatus_t st)
{
	fprintf(stderr, "shardflow: cuBLAS error at %s:%d: %s: %s (%d)\n", file, line, what,
	        cublasGetStatusString(st), (int)st);
	abort();
}

#define SF_CUBLAS_CHECK(call)                                                              \
	do {                                                                                   \
		cublasStatus_t sf_st_ = (call);                                                    \
		if (sf_st_ != CUBLAS_STATUS_SUCCESS)                                               \
			sf_cublas_fail(__FILE__, __LINE__, #call, sf_st_);                             \
	} while (0)

static inline cublasOperation_t sf_cublas_op(bool trans)
{
	return trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

/* one row-major GEMM: ta/tb transpose A/B as CblasTrans would */
#define sf_gemm_rm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)                 \
	do {                                                                                   \
		const float sf_al_ = (alpha), sf_be_ = (beta);                                     \
		SF_CUBLAS_CHECK(cublasSgemm((h), sf_cublas_op(tb), sf_cublas_op(ta), (n), (m), (k), \
		                            &sf_al_, (B), (ldb), (A), (lda), &sf_be_, (C), (ldc)));  \
	} while (0)

/* count row-major GEMMs, the i-th on A + i sA, B + i sB, C + i sC */
#define sf_gemm_rm_batched(h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, \
                           count)                                                          \
	do {                                                                                   \
		const float sf_al_ = (alpha), sf_be_ = (beta);                                     \
		SF_CUBLAS_CHECK(cublasSgemmStridedBatched(                                         \
		    (h), sf_cublas_op(tb), sf_cublas_op(ta), (n), (m), (k), &sf_al_, (B), (ldb), (sB), \
		    (A), (lda), (sA), &sf_be_, (C), (ldc), (sC), (count)));                          \
	} while (0)

#endif
