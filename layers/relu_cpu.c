/* relu_cpu.c — y = max(x, 0) and its derivative on plain pointers. */
#include "layers/relu.h"

void _sf_relu_fwd(size_t n, const float *x, float *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void _sf_relu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	for (size_t i = 0; i < n; i++) {
		float d = x[i] > 0.0f ? dy[i] : 0.0f;
		dx[i] = acc ? dx[i] + d : d;
	}
}
