/*
 * gelu_math.h — GELU's per-element math (tanh approximation), for the CUDA kernels
 * and the CPU's scalar reference (common/hd.h).
 *
 * GELU_tanh(v) = 0.5 v (1 + tanh(u)), u = K (v + C v^3), is v s with s = 1 / (1 + e),
 * e = exp(-2u): one exponential, no cancellation in 1 + tanh(u) for negative v. The
 * derivative is s + 2 v s (1 - s) du/dv with 1 - s = e s and du/dv = K (1 + 3 C v^2).
 * The exponent -2u is clamped to [-87, 88], where exp is a normal float (beyond, s is
 * 0 or 1 to float precision and e s stays finite, so the derivative is not NaN).
 *
 * layers/gelu_cpu.c computes the same expressions four floats at a time with its own
 * vector exponential; tests/test_kernels_fd.c checks both against double precision.
 */
#ifndef SF_LAYERS_GELU_MATH_H
#define SF_LAYERS_GELU_MATH_H

#include "common/hd.h"

#include <math.h>

#define SF_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define SF_GELU_C 0.044715f

/* -2u, clamped where exp stays a normal float; NaN stays NaN */
SF_HD float sf_gelu_exp_arg(float v)
{
	float a = -2.0f * (SF_GELU_K * (v + SF_GELU_C * v * v * v));
	if (a > 88.0f)
		a = 88.0f;
	if (a < -87.0f)
		a = -87.0f;
	return a;
}

/* GELU(v) given e = exp(sf_gelu_exp_arg(v)) */
SF_HD float sf_gelu_from_e(float v, float e)
{
	return v * (1.0f / (1.0f + e));
}

/* dy GELU'(v) given e = exp(sf_gelu_exp_arg(v)) */
SF_HD float sf_gelu_grad_from_e(float v, float e, float dy)
{
	float s = 1.0f / (1.0f + e);
	float du = SF_GELU_K * (1.0f + 3.0f * SF_GELU_C * v * v);
	return dy * (s + 2.0f * v * ((e * s) * s) * du);
}

SF_HD float sf_gelu_f(float v)
{
	return sf_gelu_from_e(v, expf(sf_gelu_exp_arg(v)));
}

SF_HD float sf_gelu_d(float v, float dy)
{
	return sf_gelu_grad_from_e(v, expf(sf_gelu_exp_arg(v)), dy);
}

#endif
