/* gelu_cpu.c — GELU (tanh approximation) and its derivative on plain pointers.
 *
 * GELU_tanh(v) = 0.5 v (1 + tanh(u)), u = K (v + C v^3), is computed as v s with
 * s = 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)), the logistic function of 2u: the same
 * function, with one exponential and no cancellation in 1 + tanh(u) for negative v.
 * Its derivative: d/dv = s + 2 v s (1 - s) du/dv,  du/dv = K (1 + 3 C v^2), with
 * 1 - s computed as e s, e = exp(-2u), which keeps its digits when s is near 1.
 *
 * Speed: a rank's GPT step has millions of GELUs, and libm's tanhf costs about ten
 * times what exp_v4 does, its scalar expf about twice (docs/performance.md, "Choices in
 * the code"). exp_v4 is an exponential on 4 floats at once (GCC/Clang vector
 * extensions, SSE2 or better, no intrinsics): 2^k p(r) with k = round(x / ln 2),
 * r = x - k ln 2 in two parts, and p the degree-7 Taylor polynomial (relative error
 * < 1e-8 on |r| <= ln 2 / 2, below float's rounding). Arguments are clamped to
 * [-87, 88], where exp is a normal float; beyond them GELU's s is 0 or 1 to float
 * precision anyway. NaN stays NaN. */
#include "layers/gelu.h"
#include "layers/gelu_math.h" /* the constants, and the scalar form the GPU runs */

#include <math.h>
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

/* s = 1 / (1 + e) with e = exp(-2u), of 4 values; *e_out gets e */
static inline v4f logistic_2u_v4(v4f v, v4f *e_out)
{
	v4f u = v4f_set(SF_GELU_K) * (v + v4f_set(SF_GELU_C) * v * v * v);
	v4f e = exp_v4(v4f_set(-2.0f) * u);
	*e_out = e;
	return v4f_set(1.0f) / (v4f_set(1.0f) + e);
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

static inline v4f gelu_fwd_v4(v4f v)
{
	v4f e;
	return v * logistic_2u_v4(v, &e);
}

/* 1 - s is e s, without the cancellation of 1 - s when s is near 1 (large v) */
static inline v4f gelu_grad_v4(v4f v, v4f dy)
{
	v4f e, s = logistic_2u_v4(v, &e);
	v4f du = v4f_set(SF_GELU_K) * (v4f_set(1.0f) + v4f_set(3.0f * SF_GELU_C) * v * v);
	return dy * (s + v4f_set(2.0f) * v * ((e * s) * s) * du);
}

void _sf_gelu_fwd(size_t n, const float *x, float *y)
{
	size_t i = 0;
	for (; i + 4 <= n; i += 4)
		store4(y + i, gelu_fwd_v4(load4(x + i)));
	if (i < n)
		store_tail(y + i, gelu_fwd_v4(load_tail(x + i, n - i)), n - i);
}

void _sf_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		v4f d = gelu_grad_v4(load4(x + i), load4(dy + i));
		store4(dx + i, acc ? load4(dx + i) + d : d);
	}
	if (i < n) {
		size_t m = n - i;
		v4f d = gelu_grad_v4(load_tail(x + i, m), load_tail(dy + i, m));
		store_tail(dx + i, acc ? load_tail(dx + i, m) + d : d, m);
	}
}
