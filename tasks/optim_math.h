/*
 * optim_math.h — what every optimizer's per-element update shares, for the CPU loops
 * (tasks/optim_cpu.c) and the CUDA kernels (tasks/optim_cuda.cu) alike (common/hd.h):
 * the step's hyper-parameters and the gradient's multiplier. Each optimizer is one
 * file of tasks/optimizers/ (tasks/optim.h says what it holds).
 */
#ifndef SF_TASKS_OPTIM_MATH_H
#define SF_TASKS_OPTIM_MATH_H

#include "common/hd.h"

#include <math.h>
#include <stddef.h>

/* One run's hyper-parameters (a parameter group's: tasks/optim.h), as an update reads
 * them; the CUDA kernels take it by value. */
struct _sf_opt_hyper {
	float lr;       /* the run's learning rate (the group's scale applied) */
	float wd;       /* weight decay, 0 where the group has none */
	float mu;       /* SGD's momentum */
	float b1, b2;   /* AdamW's and Lion's betas */
	float eps;      /* AdamW's epsilon */
	float c1, c2;   /* AdamW's bias corrections 1 - b1^t, 1 - b2^t: computed once per step
	                   in double by the caller (in float, 1 - 0.999^2 keeps only ~4
	                   significant digits), rounded to float */
};

/* What the gradient is multiplied by: 1 / micro-batches, times the clip factor
 * (clip[1], in the clip buffer); exactly 1 for a step of one batch without clipping,
 * so the update is then bitwise what it is without this factor. */
SF_HD float sf_grad_mult(float scale, const double *clip)
{
	return scale * (float)clip[1];
}

#endif
