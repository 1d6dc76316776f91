/*
 * silu_math.h — SiLU's per-element math, for the CPU loops and the CUDA kernels alike
 * (common/hd.h). For x below about -88, e^-x overflows to infinity and the sigmoid is
 * 0, as it is to float precision: y = -0, and the derivative 0.
 */
#ifndef SF_LAYERS_SILU_MATH_H
#define SF_LAYERS_SILU_MATH_H

#include "common/hd.h"

#include <math.h>

SF_HD float sf_silu_f(float x)
{
	return x / (1.0f + expf(-x));
}

/* d silu / dx times dy: s (1 + x (1 - s)), s = sigmoid(x) */
SF_HD float sf_silu_d(float x, float dy)
{
	float s = 1.0f / (1.0f + expf(-x));
	return dy * (s * (1.0f + x * (1.0f - s)));
}

#endif
