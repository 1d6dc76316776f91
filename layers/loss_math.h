/*
 * loss_math.h — the regression losses of one element (include/shardflow.h's
 * enum sf_loss_kind), for the CPU loop (layers/loss_cpu.c), the CUDA kernel
 * (layers/loss_cuda.cu) and the checks that compare it with PyTorch's formulas
 * (tests/test_kernels_fd.c); SF_HD (common/hd.h), and tests/test_hd_nvcc checks that
 * nvcc's build of it equals gcc's, bitwise.
 */
#ifndef SF_LAYERS_LOSS_MATH_H
#define SF_LAYERS_LOSS_MATH_H

#include "common/hd.h"

#include <math.h>

#define SF_LOSS_MEAN_KIND 4 /* enum sf_loss_kind's SF_LOSS_MEAN: no target read */

/* kind's loss of d = pred - target (in double, as the sum it joins), and *g its
 * derivative with respect to pred. kind: 1 MSE, 2 L1, 3 Huber, 4 mean (a loss layer's
 * output: d = pred, no target, is its own loss) (enum sf_loss_kind). */
SF_HD double sf_loss_elem(int kind, float d, float delta, float *g)
{
	switch (kind) {
	case 4: /* mean: the element is a loss */
		*g = 1.0f;
		return (double)d;
	case 1: /* MSE */
		*g = 2.0f * d;
		return (double)d * (double)d;
	case 2: /* L1: the gradient of |d| at 0 is 0, as torch.sign */
		*g = d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : 0.0f;
		return fabs((double)d);
	default: /* Huber */
		if (fabsf(d) < delta) {
			*g = d;
			return 0.5 * (double)d * (double)d;
		}
		*g = d > 0.0f ? delta : -delta;
		return (double)delta * (fabs((double)d) - 0.5 * (double)delta);
	}
}

#endif
