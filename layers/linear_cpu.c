/*
 * linear_cpu.c — the linear op's math on plain pointers (OpenBLAS sgemm).
 *
 * Deterministic: OpenBLAS runs single-threaded inside a worker (set by sf_init), so
 * the same inputs give bitwise the same outputs whichever worker runs it, which is
 * what lets every prefetch depth give identical parameters.
 */
#include "layers/linear.h"

#include <cblas.h>
#undef I /* OpenBLAS pulls in <complex.h>; I is our input width */
#include <string.h>

void _sf_linear_fwd(int B, int I, int O, const float *x, const float *w, const float *b, float *y)
{
	for (int r = 0; b && r < B; r++)
		memcpy(y + (size_t)r * O, b, sizeof(float) * (size_t)O);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, O, I, 1.0f, x, I, w, I,
	            b ? 1.0f : 0.0f, y, O);
}

void _sf_linear_bwd(int B, int I, int O, const float *x, const float *w, const float *dy, float *dx,
                    int acc, float *dw, float *db, int pacc)
{
	if (dx)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, I, O, 1.0f, dy, O, w, I,
		            acc ? 1.0f : 0.0f, dx, I);
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, I, B, 1.0f, dy, O, x, I,
	            pacc ? 1.0f : 0.0f, dw, I);
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
