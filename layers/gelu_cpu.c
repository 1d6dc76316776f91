/* gelu_cpu.c — GELU (tanh approximation) and its derivative on plain pointers. */
#include "layers/gelu.h"

#include <math.h>

#define SF_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define SF_GELU_C 0.044715f

void _sf_gelu_fwd(size_t n, const float *x, float *y)
{
	for (size_t i = 0; i < n; i++) {
		float v = x[i];
		y[i] = 0.5f * v * (1.0f + tanhf(SF_GELU_K * (v + SF_GELU_C * v * v * v)));
	}
}

void _sf_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	for (size_t i = 0; i < n; i++) {
		float v = x[i];
		float u = SF_GELU_K * (v + SF_GELU_C * v * v * v);
		float t = tanhf(u);
		float du = SF_GELU_K * (1.0f + 3.0f * SF_GELU_C * v * v);
		float d = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
		dx[i] = acc ? dx[i] + d : d;
	}
}
