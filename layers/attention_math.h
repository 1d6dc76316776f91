/*
 * attention_math.h — the row math of causal attention's softmax backward, for the CPU
 * (layers/attention_cpu.c, between its GEMMs) and nvcc's host compilation of the GPU
 * plan (tests/test_hd_nvcc.cu) alike (common/hd.h). The forward's rows are the CPU's
 * own (_sf_attention_softmax_row: a vector exponential); the CUDA kernels spread each
 * row over a warp (layers/attention_cuda.cu).
 */
#ifndef SF_LAYERS_ATTENTION_MATH_H
#define SF_LAYERS_ATTENTION_MATH_H

#include "common/hd.h"

#include <math.h>

/* Row i of dS = P (dP - rowsum(dP P)), in place in dr (dP's row, n entries), pr the
 * probabilities' row: entries after i, where P is 0, become 0. */
SF_HD void sf_softmax_bwd_row(const float *pr, float *dr, int i, int n)
{
	/* the sum in double in 4 partial sums in a fixed order, as the forward's */
	double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
	int j = 0;
	for (; j + 3 <= i; j += 4) {
		a0 += (double)dr[j] * pr[j];
		a1 += (double)dr[j + 1] * pr[j + 1];
		a2 += (double)dr[j + 2] * pr[j + 2];
		a3 += (double)dr[j + 3] * pr[j + 3];
	}
	for (; j <= i; j++)
		a0 += (double)dr[j] * pr[j];
	float sf = (float)((a0 + a1) + (a2 + a3));
	for (j = 0; j <= i; j++)
		dr[j] = pr[j] * (dr[j] - sf);
	for (j = i + 1; j < n; j++)
		dr[j] = 0.0f;
}

#endif
