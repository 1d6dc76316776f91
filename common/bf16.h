/*
 * bf16.h — bfloat16 (the top 16 bits of an IEEE float) conversions, for the CPU and
 * the CUDA kernels alike (common/hd.h): round to nearest, ties to even; NaN stays a
 * (quiet) NaN, a float above the largest bf16 rounds to infinity. Mixed precision
 * (SHARDFLOW_PARAM_DTYPE, SHARDFLOW_REDUCE_DTYPE) moves these on the wire.
 */
#ifndef SF_COMMON_BF16_H
#define SF_COMMON_BF16_H

#include "common/hd.h"

#include <stdint.h>
#include <string.h>

SF_HD uint16_t sf_bf16_from_float(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep the sign, force a quiet NaN */
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u); /* ties to even */
	return (uint16_t)(u >> 16);
}

SF_HD float sf_bf16_to_float(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* f rounded to a bf16 toward +infinity (up != 0) or toward -infinity (up == 0): the
 * directed roundings of SHARDFLOW_ROUNDING (docs/testing.md, "The rounding interval").
 * The top 16 bits are f toward zero; any bit below them moves the magnitude up one bf16
 * where the direction points away from zero. NaN as above; past the largest bf16, the
 * direction's infinity or the largest bf16, as IEEE's directed roundings do. */
SF_HD uint16_t sf_bf16_from_float_directed(float f, int up)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	uint16_t h = (uint16_t)(u >> 16);
	int negative = (int)(u >> 31);
	if ((u & 0xffffu) && negative != (up != 0))
		h++;
	return h;
}

/* f rounded to the nearest bf16, as a float */
SF_HD float sf_bf16_round(float f)
{
	return sf_bf16_to_float(sf_bf16_from_float(f));
}

#endif
