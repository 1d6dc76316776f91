/* grad_cpu.c — accumulation and squared norm of gradients on plain pointers
 * (tasks/grad.h). */
#include "tasks/grad.h"

#include <string.h>

void _sf_grad_add(size_t n, float *dst, const float *src)
{
	for (size_t i = 0; i < n; i++)
		dst[i] += src[i];
}

void _sf_grad_copy(size_t n, float *dst, const float *src)
{
	memcpy(dst, src, n * sizeof(float));
}

void _sf_grad_sqnorm(size_t n, const float *g, double *out)
{
	double s = 0.0;
	for (size_t i = 0; i < n; i++)
		s += (double)g[i] * (double)g[i];
	*out = s;
}
