/*
 * softmax_xent_math.h — softmax cross-entropy of one row (common/hd.h): float
 * exponentials summed in double, the log-sum-exp in double; the loss is the sum of the
 * rows' returns, in row order, times scale. The CPU loop (layers/softmax_xent_cpu.c)
 * computes this row four logits at a time; the CUDA kernel (layers/softmax_xent_cuda.cu)
 * takes a row a warp, with sf_exp_poly's exponentials and the warp's order of sums.
 */
#ifndef SF_LAYERS_SOFTMAX_XENT_MATH_H
#define SF_LAYERS_SOFTMAX_XENT_MATH_H

#include "common/hd.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* exp(x) for x <= 0 as common/vec4.h's exp_v4 computes each lane: 2^k p(r), k = round(x /
 * ln 2), r = x - k ln 2 in two parts, p the degree-7 Taylor polynomial, the argument
 * clamped to [-87, 88]; the same float operations in the same order (no fused
 * multiply-adds: nvcc's --fmad=false), so the CPU's four lanes and this give the same
 * bits (tests/test_hd_nvcc.cu). */
SF_HD float sf_exp_poly(float x)
{
	x = x > 88.0f ? 88.0f : x;
	x = x < -87.0f ? -87.0f : x;
	float t = x * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23: rounds to an integer */
	float k = t - 12582912.0f;
	k = k != k ? 0.0f : k;
	float r = x - k * 0.693145751953125f;
	r = r - k * 1.4286068203094173e-06f;
	float p = 1.0f / 5040.0f;
	p = p * r + 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	int32_t bits = ((int32_t)k + 127) * (1 << 23);
	float scale;
	memcpy(&scale, &bits, sizeof scale);
	return p * scale;
}

/* dr = scale (softmax(zr) - onehot(label)); returns logsumexp(zr) - zr[label]. One
 * exponential a logit (sf_exp_poly, kept in dr), summed in double in four lanes (logit c
 * in lane c % 4, the last C % 4 in lane 0), then dr scaled by scale / sum: the order in
 * which layers/softmax_xent_cpu.c walks a row four logits at a time. */
SF_HD double sf_softmax_xent_row(int C, const float *zr, int32_t label, float scale, float *dr)
{
	float mx = zr[0];
	for (int c = 1; c < C; c++)
		mx = zr[c] > mx ? zr[c] : mx;
	double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
	int C4 = C - C % 4;
	for (int c = 0; c < C; c++) {
		float e = sf_exp_poly(zr[c] - mx);
		dr[c] = e;
		if (c >= C4 || c % 4 == 0)
			s0 += e;
		else if (c % 4 == 1)
			s1 += e;
		else if (c % 4 == 2)
			s2 += e;
		else
			s3 += e;
	}
	double sum = (s0 + s1) + (s2 + s3);
	float inv = (float)(scale / sum);
	for (int c = 0; c < C; c++)
		dr[c] *= inv;
	dr[label] -= scale;
	return log(sum) + mx - zr[label];
}

/* The same, but a row labelled `ignore` counts for nothing: dr = 0, returns 0 */
SF_HD double sf_softmax_xent_row_or_ignore(int C, const float *zr, int32_t label, int32_t ignore,
                                           float scale, float *dr)
{
	if (label == ignore) {
		for (int c = 0; c < C; c++)
			dr[c] = 0.0f;
		return 0.0;
	}
	return sf_softmax_xent_row(C, zr, label, scale, dr);
}

#endif
