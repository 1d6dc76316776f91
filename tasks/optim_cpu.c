/* optim_cpu.c — the optimizer updates on plain pointers (tasks/optim.h). */
#include "tasks/optim.h"
#include "tasks/optim_math.h"

#include <math.h>

void _sf_sgd(size_t n, float *p, const float *g, float *buf, float lr, float mu, float wd,
             float scale, const double *clip)
{
	float s = sf_grad_mult(scale, clip);
	for (size_t i = 0; i < n; i++)
		sf_sgd_elem(&p[i], g[i] * s, &buf[i], lr, mu, wd);
}

void _sf_adamw(size_t n, float *p, const float *g, float *m, float *v, float lr, float b1, float b2,
               float eps, float wd, int64_t t, float scale, const double *clip)
{
	float c1, c2;
	_sf_adamw_corrections(b1, b2, t, &c1, &c2);
	float s = sf_grad_mult(scale, clip);
	for (size_t i = 0; i < n; i++)
		sf_adamw_elem(&p[i], g[i] * s, &m[i], &v[i], lr, b1, b2, eps, wd, c1, c2);
}

void _sf_lion(size_t n, float *p, const float *g, float *m, float lr, float b1, float b2, float wd,
              float scale, const double *clip)
{
	float s = sf_grad_mult(scale, clip);
	for (size_t i = 0; i < n; i++)
		sf_lion_elem(&p[i], g[i] * s, &m[i], lr, b1, b2, wd);
}

void _sf_adamw_corrections(float b1, float b2, int64_t t, float *c1, float *c2)
{
	/* 1 - b^t in double: in float, 1 - 0.999^2 keeps only ~4 significant digits */
	*c1 = (float)(1.0 - pow((double)b1, (double)t));
	*c2 = (float)(1.0 - pow((double)b2, (double)t));
}
