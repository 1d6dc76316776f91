/*
 * rope_math.h — the rotary embedding's math (layers/rope.h), for the CPU loops
 * (layers/rope_cpu.c) and the CUDA kernels (layers/rope_cuda.cu) alike (common/hd.h).
 */
#ifndef SF_LAYERS_ROPE_MATH_H
#define SF_LAYERS_ROPE_MATH_H

#include "common/hd.h"
#include "layers/add_math.h"

#include <math.h>

/* entry (t, i) of the table: cos and sin of t theta^(-2i/d), computed in double */
SF_HD void sf_rope_cs(int t, int i, int d, float theta, float *c, float *s)
{
	double a = (double)t * pow((double)theta, -2.0 * (double)i / (double)d);
	*c = (float)cos(a);
	*s = (float)sin(a);
}

/* Row of position t: its first rot columns rotated pair by pair with the table's row
 * (cs: d/2 cos, then d/2 sin), by the angle (sign 1) or its opposite (sign -1, the
 * backward), the rest copied; y =, or += when acc (the CPU's loop). */
SF_HD void sf_rope_row(int W, int rot, int d, const float *cs, float sign, const float *x, float *y,
                       int acc)
{
	int h = d / 2;
	for (int b = 0; b < rot; b += d)
		for (int i = 0; i < h; i++) {
			float c = cs[i], s = sign * cs[h + i];
			float x1 = x[b + i], x2 = x[b + h + i];
			sf_grad_store(&y[b + i], x1 * c - x2 * s, acc);
			sf_grad_store(&y[b + h + i], x2 * c + x1 * s, acc);
		}
	for (int j = rot; j < W; j++)
		sf_grad_store(&y[j], x[j], acc);
}

/* Column j of the same row, alone (y and x distinct): the GPU's thread per column,
 * neighbours on neighbouring columns; the terms of sf_rope_row, so the same bits
 * (tests/test_hd_nvcc checks it against the CPU kernel). */
SF_HD void sf_rope_col(int rot, int d, const float *cs, float sign, const float *x, float *y,
                       int acc, int j)
{
	if (j >= rot) {
		sf_grad_store(&y[j], x[j], acc);
		return;
	}
	int h = d / 2, k = j % d, i = k % h, b = j - k;
	float c = cs[i], s = sign * cs[h + i];
	float x1 = x[b + i], x2 = x[b + h + i];
	sf_grad_store(&y[j], k < h ? x1 * c - x2 * s : x2 * c + x1 * s, acc);
}

#endif
