/*
 * attention_math.h — the row math of causal attention's softmax, for the CPU
 * (layers/attention_cpu.c, between its GEMMs) and the CUDA kernels
 * (layers/attention_cuda.cu, a thread per row between cuBLAS GEMMs) alike
 * (common/hd.h).
 */
#ifndef SF_LAYERS_ATTENTION_MATH_H
#define SF_LAYERS_ATTENTION_MATH_H

#include "common/hd.h"

#include <math.h>

/* Row i of the scaled scores s[0..n) (n > i): softmax over s[0..i], exact zeros for
 * s[i+1..n). stat receives the row's two numbers, its max and the inverse of its sum of
 * exponentials: all the forward keeps (attention saves (B, NH, T, 2) floats, not the
 * T x T probabilities), from which sf_causal_probs_row rebuilds the row bitwise.
 * Written for the CPU's speed, which the GPU's thread per row does not mind: the max
 * in 4 lanes, the exponentials before their sum (a sum carried across expf calls is
 * spilled at every element), the sum in double in 4 partial sums in a fixed order
 * (what each of these gained: docs/performance.md, "Choices in the code"). */
SF_HD void sf_causal_softmax_row(float *s, int i, int n, float *stat)
{
	float m0 = s[0], m1 = s[0], m2 = s[0], m3 = s[0];
	int j = 1;
	for (; j + 3 <= i; j += 4) {
		m0 = s[j] > m0 ? s[j] : m0;
		m1 = s[j + 1] > m1 ? s[j + 1] : m1;
		m2 = s[j + 2] > m2 ? s[j + 2] : m2;
		m3 = s[j + 3] > m3 ? s[j + 3] : m3;
	}
	for (; j <= i; j++)
		m0 = s[j] > m0 ? s[j] : m0;
	float mx = fmaxf(fmaxf(m0, m1), fmaxf(m2, m3));
	for (j = 0; j <= i; j++)
		s[j] = expf(s[j] - mx);
	double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
	for (j = 0; j + 3 <= i; j += 4) {
		a0 += s[j];
		a1 += s[j + 1];
		a2 += s[j + 2];
		a3 += s[j + 3];
	}
	for (; j <= i; j++)
		a0 += s[j];
	double sum = (a0 + a1) + (a2 + a3);
	/* sum >= 1 (the max's own term), so the division is safe */
	float inv = (float)(1.0 / sum);
	for (j = 0; j <= i; j++)
		s[j] *= inv;
	for (j = i + 1; j < n; j++)
		s[j] = 0.0f;
	stat[0] = mx;
	stat[1] = inv;
}

/* The backward's copy of a row of probabilities: the same scores s[0..n) and the
 * forward's stat give the forward's row bitwise (the same two roundings per entry,
 * expf's and the product's), exact zeros after i. */
SF_HD void sf_causal_probs_row(float *s, int i, int n, const float *stat)
{
	float mx = stat[0], inv = stat[1];
	int j = 0;
	for (; j <= i; j++) {
		float e = expf(s[j] - mx);
		s[j] = e * inv;
	}
	for (; j < n; j++)
		s[j] = 0.0f;
}

/* Row i of dS = P (dP - rowsum(dP P)), in place in dr (dP's row, n entries), pr the
 * probabilities' row: entries after i, where P is 0, become 0. */
SF_HD void sf_softmax_bwd_row(const float *pr, float *dr, int i, int n)
{
	double s = 0.0;
	for (int j = 0; j <= i; j++)
		s += (double)dr[j] * pr[j];
	float sf = (float)s;
	for (int j = 0; j <= i; j++)
		dr[j] = pr[j] * (dr[j] - sf);
	for (int j = i + 1; j < n; j++)
		dr[j] = 0.0f;
}

#endif
