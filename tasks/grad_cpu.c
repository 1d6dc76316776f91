/* grad_cpu.c — accumulation and squared norm of gradients on plain pointers
 * (tasks/grad.h). */
#include "tasks/grad.h"
#include "common/bf16.h"

#include <fenv.h>

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

void _sf_bf16_round_n(size_t n, const float *src, uint16_t *dst)
{
	int dir = fegetround(); /* SHARDFLOW_ROUNDING: this worker's direction */
	if (dir == FE_UPWARD || dir == FE_DOWNWARD) {
		for (size_t i = 0; i < n; i++)
			dst[i] = sf_bf16_from_float_directed(src[i], dir == FE_UPWARD);
		return;
	}
	for (size_t i = 0; i < n; i++)
		dst[i] = sf_bf16_from_float(src[i]);
}

void _sf_bf16_widen_n(size_t n, const uint16_t *src, float *dst)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = sf_bf16_to_float(src[i]);
}
