/*
 * relu_math.h — relu's per-element math, for the CPU loops and the CUDA kernels alike
 * (common/hd.h).
 */
#ifndef SF_LAYERS_RELU_MATH_H
#define SF_LAYERS_RELU_MATH_H

#include "common/hd.h"

SF_HD float sf_relu_f(float x)
{
	return x > 0.0f ? x : 0.0f;
}

/* d relu / dx times dy (0 at x = 0, as PyTorch) */
SF_HD float sf_relu_d(float x, float dy)
{
	return x > 0.0f ? dy : 0.0f;
}

#endif
