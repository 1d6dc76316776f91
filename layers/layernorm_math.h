/*
 * layernorm_math.h — layer normalisation's per-row and per-element math, for the CPU
 * loops (layers/layernorm_cpu.c) and the CUDA kernels (layers/layernorm_cuda.cu)
 * alike (common/hd.h). Formulas in layers/layernorm_cpu.c's header; row statistics
 * in double.
 */
#ifndef SF_LAYERS_LAYERNORM_MATH_H
#define SF_LAYERS_LAYERNORM_MATH_H

#include "common/hd.h"
#include "layers/add_math.h"

#include <math.h>
#include <stddef.h>

/* one row of C: y, and the row's mean and rstd */
SF_HD void sf_layernorm_row_fwd(int C, const float *xr, const float *w, const float *b, float eps,
                                float *yr, float *mean, float *rstd)
{
	double s = 0.0, v = 0.0;
	for (int c = 0; c < C; c++)
		s += xr[c];
	double m = s / C;
	for (int c = 0; c < C; c++)
		v += ((double)xr[c] - m) * ((double)xr[c] - m);
	float rs = (float)(1.0 / sqrt(v / C + (double)eps));
	float mf = (float)m;
	for (int c = 0; c < C; c++)
		yr[c] = (xr[c] - mf) * rs * w[c] + b[c];
	*mean = mf;
	*rstd = rs;
}

/* one row's dx (= or += as acc says) from the saved mean m and rstd rs */
SF_HD void sf_layernorm_row_dx(int C, const float *xr, const float *w, float m, float rs,
                               const float *dyr, float *dxr, int acc)
{
	double sg = 0.0, sgx = 0.0;
	for (int c = 0; c < C; c++) {
		float xhat = (xr[c] - m) * rs, g = dyr[c] * w[c];
		sg += g;
		sgx += (double)g * xhat;
	}
	float mg = (float)(sg / C), mgx = (float)(sgx / C);
	for (int c = 0; c < C; c++) {
		float xhat = (xr[c] - m) * rs;
		sf_grad_store(&dxr[c], rs * (dyr[c] * w[c] - mg - xhat * mgx), acc);
	}
}

/* one row's share of dw[c] and db[c] (added: the rows go in order) */
SF_HD void sf_layernorm_dparam_add(float x, float dy, float m, float rs, float *dw, float *db)
{
	*dw += dy * ((x - m) * rs);
	*db += dy;
}

#endif
