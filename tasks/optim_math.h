/*
 * optim_math.h — the optimizers' per-element updates, for the CPU loops
 * (tasks/optim_cpu.c) and the CUDA kernels (tasks/optim_cuda.cu) alike (common/hd.h).
 * The formulas are in tasks/optim.h.
 */
#ifndef SF_TASKS_OPTIM_MATH_H
#define SF_TASKS_OPTIM_MATH_H

#include "common/hd.h"

#include <math.h>

/* What the gradient is multiplied by: 1 / micro-batches, times the clip factor
 * (clip[1], in the clip buffer); exactly 1 for a step of one batch without clipping,
 * so the update is then bitwise what it is without this factor. */
SF_HD float sf_grad_mult(float scale, const double *clip)
{
	return scale * (float)clip[1];
}

/* SGD with momentum and L2 weight decay on one element */
SF_HD void sf_sgd_elem(float *p, float g, float *buf, float lr, float mu, float wd)
{
	float d = g + wd * *p;
	*buf = mu * *buf + d;
	*p -= lr * *buf;
}

/* AdamW on one element; c1 = 1 - b1^t, c2 = 1 - b2^t (computed once per step in
 * double by the caller: in float, 1 - 0.999^2 keeps only ~4 significant digits) */
SF_HD void sf_adamw_elem(float *p, float g, float *m, float *v, float lr, float b1, float b2,
                         float eps, float wd, float c1, float c2)
{
	*p -= lr * wd * *p;
	*m = b1 * *m + (1.0f - b1) * g;
	*v = b2 * *v + (1.0f - b2) * g * g;
	*p -= lr * (*m / c1) / (sqrtf(*v / c2) + eps);
}

/* Lion on one element (decoupled weight decay, as the paper's algorithm 2): the sign of
 * the interpolation c = b1 m + (1 - b1) g steps, then m moves with b2. sign(0) = 0. */
SF_HD void sf_lion_elem(float *p, float g, float *m, float lr, float b1, float b2, float wd)
{
	float c = b1 * *m + (1.0f - b1) * g;
	float sgn = c > 0.0f ? 1.0f : c < 0.0f ? -1.0f : 0.0f;
	*p -= lr * (sgn + wd * *p);
	*m = b2 * *m + (1.0f - b2) * g;
}

#endif
