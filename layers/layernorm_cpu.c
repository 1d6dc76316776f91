/*
 * layernorm_cpu.c — layer normalisation and its gradient on plain pointers.
 *
 * Row statistics are summed in double (a row of 768 floats loses digits in float);
 * the backward uses the saved mean and rstd:
 *   xhat = (x - mean) rstd,  g = dy w,
 *   dx = rstd (g - mean(g) - xhat mean(g xhat)),  dw = sum_rows dy xhat,  db = sum_rows dy.
 */
#include "layers/layernorm.h"
#include "layers/layernorm_math.h" /* the rows, shared with the GPU */

#include <math.h>
#include <string.h>

void _sf_layernorm_fwd(int B, int C, const float *x, const float *w, const float *b, float eps,
                       float *y, float *mean, float *rstd)
{
	for (int r = 0; r < B; r++)
		sf_layernorm_row_fwd(C, x + (size_t)r * C, w, b, eps, y + (size_t)r * C, &mean[r],
		                     &rstd[r]);
}

void _sf_layernorm_bwd(int B, int C, const float *x, const float *w, const float *mean,
                       const float *rstd, const float *dy, float *dx, int acc, float *dw,
                       float *db, int pacc)
{
	if (!pacc) {
		memset(dw, 0, sizeof(float) * (size_t)C);
		memset(db, 0, sizeof(float) * (size_t)C);
	}
	for (int r = 0; r < B; r++) {
		const float *xr = x + (size_t)r * C, *dyr = dy + (size_t)r * C;
		for (int c = 0; c < C; c++)
			sf_layernorm_dparam_add(xr[c], dyr[c], mean[r], rstd[r], &dw[c], &db[c]);
		if (dx)
			sf_layernorm_row_dx(C, xr, w, mean[r], rstd[r], dyr, dx + (size_t)r * C, acc);
	}
}
