/*
 * add_math.h — the residual add's per-element math and the gradient store every
 * element-wise backward shares, for the CPU loops and the CUDA kernels (common/hd.h).
 */
#ifndef SF_LAYERS_ADD_MATH_H
#define SF_LAYERS_ADD_MATH_H

#include "common/hd.h"

SF_HD float sf_add_f(float a, float b)
{
	return a + b;
}

/* a gradient d into *dst: overwrite, or add when acc */
SF_HD void sf_grad_store(float *dst, float d, int acc)
{
	*dst = acc ? *dst + d : d;
}

#endif
