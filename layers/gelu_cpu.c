/* gelu_cpu.c — GELU (tanh approximation) and its derivative on plain pointers.
 *
 * GELU_tanh(v) = 0.5 v (1 + tanh(u)), u = K (v + C v^3), computed as v s with
 * s = 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)), the logistic function of 2u: the same
 * function, but expf is about five times faster than tanhf in glibc (measured: 7 ms
 * against 38 ms for 2.1 M values, the GELUs of one GPT step on a rank), and 1 + tanh(u)
 * is never formed, so no cancellation for negative v. Its derivative:
 *   d/dv = s + v s (1 - s) 2 du/dv,  du/dv = K (1 + 3 C v^2).
 * For v -> -inf, exp(-2u) -> inf, s -> 0 and both are 0; for v -> +inf, s -> 1. */
#include "layers/gelu.h"

#include <math.h>

#define SF_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define SF_GELU_C 0.044715f

static inline float logistic_2u(float v)
{
	float u = SF_GELU_K * (v + SF_GELU_C * v * v * v);
	return 1.0f / (1.0f + expf(-2.0f * u));
}

void _sf_gelu_fwd(size_t n, const float *x, float *y)
{
	for (size_t i = 0; i < n; i++) {
		float v = x[i];
		y[i] = v * logistic_2u(v);
	}
}

void _sf_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	for (size_t i = 0; i < n; i++) {
		float v = x[i];
		float s = logistic_2u(v);
		float du = SF_GELU_K * (1.0f + 3.0f * SF_GELU_C * v * v);
		float d = dy[i] * (s + 2.0f * v * s * (1.0f - s) * du);
		dx[i] = acc ? dx[i] + d : d;
	}
}
