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
 * the code"). exp_v4 (common/vec4.h) is an exponential on 4 floats at once; it clamps
 * its arguments to [-87, 88], and beyond them GELU's s is 0 or 1 to float precision
 * anyway. NaN stays NaN. */
#include "common/vec4.h" /* exp_v4 */
#include "layers/gelu.h"
#include "layers/gelu_math.h" /* the constants, and the scalar form the GPU runs */

#include <math.h>
#include <string.h>

/* s = 1 / (1 + e) with e = exp(-2u), of 4 values; *e_out gets e */
static inline v4f logistic_2u_v4(v4f v, v4f *e_out)
{
	v4f u = v4f_set(SF_GELU_K) * (v + v4f_set(SF_GELU_C) * v * v * v);
	v4f e = exp_v4(v4f_set(-2.0f) * u);
	*e_out = e;
	return v4f_set(1.0f) / (v4f_set(1.0f) + e);
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
