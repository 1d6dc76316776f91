/* optim_cpu.c — the optimizer updates on plain pointers (tasks/optim.h). */
#include "tasks/optim.h"

#include <math.h>

void _sf_sgd(size_t n, float *p, const float *g, float *buf, float lr, float mu, float wd)
{
	for (size_t i = 0; i < n; i++) {
		float d = g[i] + wd * p[i];
		buf[i] = mu * buf[i] + d;
		p[i] -= lr * buf[i];
	}
}

void _sf_adamw(size_t n, float *p, const float *g, float *m, float *v, float lr, float b1, float b2,
               float eps, float wd, int64_t t)
{
	/* 1 - b^t in double: in float, 1 - 0.999^2 keeps only ~4 significant digits */
	float c1 = (float)(1.0 - pow((double)b1, (double)t));
	float c2 = (float)(1.0 - pow((double)b2, (double)t));
	for (size_t i = 0; i < n; i++) {
		p[i] -= lr * wd * p[i];
		m[i] = b1 * m[i] + (1.0f - b1) * g[i];
		v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
		p[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
	}
}
