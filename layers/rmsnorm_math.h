/*
 * rmsnorm_math.h — RMSNorm's per-row and per-element math, for the CPU loops
 * (layers/rmsnorm_cpu.c) and, as a reference, the CUDA kernels (layers/rmsnorm_cuda.cu
 * sum the same terms a warp per row) (common/hd.h). Formulas in layers/rmsnorm.h; row
 * sums in double.
 */
#ifndef SF_LAYERS_RMSNORM_MATH_H
#define SF_LAYERS_RMSNORM_MATH_H

#include "common/hd.h"
#include "layers/add_math.h"

#include <math.h>

/* rstd from a row's sum of squares (in double) */
SF_HD float sf_rmsnorm_rstd(double ss, int C, float eps)
{
	return (float)(1.0 / sqrt(ss / C + (double)eps));
}

/* one row of C: y, and the row's rstd */
SF_HD void sf_rmsnorm_row_fwd(int C, const float *xr, const float *w, float eps, float *yr,
                              float *rstd)
{
	double ss = 0.0;
	for (int c = 0; c < C; c++)
		ss += (double)xr[c] * xr[c];
	float rs = sf_rmsnorm_rstd(ss, C, eps);
	for (int c = 0; c < C; c++)
		yr[c] = xr[c] * rs * w[c];
	*rstd = rs;
}

/* one row's dx (= or += as acc says) from the saved rstd */
SF_HD void sf_rmsnorm_row_dx(int C, const float *xr, const float *w, float rs, const float *dyr,
                             float *dxr, int acc)
{
	double sgx = 0.0;
	for (int c = 0; c < C; c++)
		sgx += (double)(dyr[c] * w[c]) * (xr[c] * rs);
	float mgx = (float)(sgx / C);
	for (int c = 0; c < C; c++)
		sf_grad_store(&dxr[c], rs * (dyr[c] * w[c] - xr[c] * rs * mgx), acc);
}

/* one row's share of dw[c] (added: the rows go in order) */
SF_HD void sf_rmsnorm_dw_add(float x, float dy, float rs, float *dw)
{
	*dw += dy * (x * rs);
}

#endif
