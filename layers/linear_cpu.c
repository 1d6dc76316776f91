/*
 * linear_cpu.c — the linear op's math on plain pointers (OpenBLAS sgemm; with
 * SHARDFLOW_PARAM_DTYPE=bf16 in a build with oneDNN, bf16 products with fp32 sums,
 * layers/gemm_bf16.h).
 *
 * Deterministic: OpenBLAS (and oneDNN) run single-threaded inside a worker (set by
 * sf_init), so the same inputs give bitwise the same outputs whichever worker runs it,
 * which is what lets every prefetch depth give identical parameters.
 */
#include "layers/gemm_bf16.h"
#include "layers/linear.h"

#include <cblas.h>
#undef I /* OpenBLAS pulls in <complex.h>; I is our input width */
#include <string.h>

/* C (M x N) = op(A) op(B) + beta C, row-major: bf16 when enabled, else sgemm */
static void gemm(bool ta, bool tb, int M, int N, int K, const float *A, int lda, const float *B,
                 int ldb, float beta, float *C, int ldc)
{
	if (_sf_gemm_bf16_enabled() &&
	    _sf_gemm_bf16(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc) == 0)
		return;
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M,
	            N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

void _sf_linear_fwd(int B, int I, int O, const float *x, const float *w, const float *b, float *y)
{
	for (int r = 0; b && r < B; r++)
		memcpy(y + (size_t)r * O, b, sizeof(float) * (size_t)O);
	gemm(false, true, B, O, I, x, I, w, I, b ? 1.0f : 0.0f, y, O);
}

void _sf_linear_bwd(int B, int I, int O, const float *x, const float *w, const float *dy, float *dx,
                    int acc, float *dw, float *db, int pacc)
{
	if (dx)
		gemm(false, false, B, I, O, dy, O, w, I, acc ? 1.0f : 0.0f, dx, I);
	if (!dw) /* a split backward's input-gradient half */
		return;
	gemm(true, false, O, I, B, dy, O, x, I, pacc ? 1.0f : 0.0f, dw, I);
	if (!db)
		return;
	if (!pacc)
		for (int o = 0; o < O; o++)
			db[o] = 0.0f;
	for (int r = 0; r < B; r++) {
		const float *row = dy + (size_t)r * O;
		for (int o = 0; o < O; o++)
			db[o] += row[o];
	}
}
