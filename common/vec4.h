/*
 * vec4.h — four floats at a time on the CPU with GCC/Clang vector extensions (SSE2 or
 * better, no intrinsics), for the element-wise kernels whose scalar libm calls would
 * dominate: GELU's exponential (layers/gelu_cpu.c) and attention's softmax rows
 * (layers/attention_cpu.c).
 *
 * exp_v4 is 2^k p(r) with k = round(x / ln 2), r = x - k ln 2 in two parts, and p the
 * degree-7 Taylor polynomial (relative error < 1e-8 on |r| <= ln 2 / 2, below float's
 * rounding). Arguments are clamped to [-87, 88], where exp is a normal float. NaN stays
 * NaN. About half the cost of libm's scalar expf, a tenth of tanhf's
 * (docs/performance.md, "Choices in the code").
 */
#ifndef SF_COMMON_VEC4_H
#define SF_COMMON_VEC4_H

#include <stddef.h>
#include <string.h>

typedef float v4f __attribute__((vector_size(16)));
typedef int v4i __attribute__((vector_size(16)));

static inline v4f v4f_set(float a)
{
	return (v4f){a, a, a, a};
}

/* where mask (all ones or zero per lane): a, else b */
static inline v4f v4f_select(v4i mask, v4f a, v4f b)
{
	v4i ia, ib, r;
	memcpy(&ia, &a, sizeof ia);
	memcpy(&ib, &b, sizeof ib);
	r = (mask & ia) | (~mask & ib);
	v4f out;
	memcpy(&out, &r, sizeof out);
	return out;
}

static inline v4f exp_v4(v4f x)
{
	const v4f hi = v4f_set(88.0f), lo = v4f_set(-87.0f);
	x = v4f_select(x > hi, hi, x);
	x = v4f_select(x < lo, lo, x);
	/* k = round(x / ln 2): adding 1.5 * 2^23 rounds to an integer in the low bits */
	const v4f shift = v4f_set(12582912.0f);
	v4f t = x * v4f_set(1.44269504088896341f) + shift;
	v4f k = t - shift;
	k = v4f_select(k != k, v4f_set(0.0f), k); /* NaN: any k (r, p stay NaN), a defined one */
	v4f r = x - k * v4f_set(0.693145751953125f);  /* ln 2, its first 16 bits */
	r = r - k * v4f_set(1.4286068203094173e-06f); /* and the rest */
	v4f p = v4f_set(1.0f / 5040.0f);
	p = p * r + v4f_set(1.0f / 720.0f);
	p = p * r + v4f_set(1.0f / 120.0f);
	p = p * r + v4f_set(1.0f / 24.0f);
	p = p * r + v4f_set(1.0f / 6.0f);
	p = p * r + v4f_set(0.5f);
	p = p * r + v4f_set(1.0f);
	p = p * r + v4f_set(1.0f);
	/* 2^k: k + 127 in the exponent bits (k in [-126, 127] after the clamp) */
	v4i ki = __builtin_convertvector(k, v4i);
	v4i bits = (ki + 127) << 23;
	v4f scale;
	memcpy(&scale, &bits, sizeof scale);
	return p * scale;
}

static inline v4f load4(const float *p)
{
	v4f v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline void store4(float *p, v4f v)
{
	memcpy(p, &v, sizeof v);
}

/* the tail (n % 4 values) through the same vector code, padded with zeros */
static inline v4f load_tail(const float *p, size_t m)
{
	float b[4] = {0, 0, 0, 0};
	memcpy(b, p, m * sizeof *b);
	return load4(b);
}

static inline void store_tail(float *p, v4f v, size_t m)
{
	float b[4];
	store4(b, v);
	memcpy(p, b, m * sizeof *b);
}

/* s[j] = exp(s[j] - mx) for j < n, four at a time (the tail padded): a softmax row's
 * exponentials (attention's rows, layers/attention_cpu.c and attention_ring_cpu.c) */
static inline void exp_shifted_v4(float *s, int n, float mx)
{
	v4f m = v4f_set(mx);
	int j = 0;
	for (; j + 4 <= n; j += 4)
		store4(s + j, exp_v4(load4(s + j) - m));
	if (j < n)
		store_tail(s + j, exp_v4(load_tail(s + j, (size_t)(n - j)) - m), (size_t)(n - j));
}

#endif
