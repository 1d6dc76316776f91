/*
 * rmsnorm_cpu.c — RMSNorm and its gradient on plain pointers (layers/rmsnorm.h); the
 * rows are layers/rmsnorm_math.h's.
 */
#include "layers/rmsnorm.h"
#include "layers/rmsnorm_math.h"

#include <string.h>

void _sf_rmsnorm_fwd(int B, int C, const float *x, const float *w, float eps, float *y, float *rstd)
{
	for (int r = 0; r < B; r++)
		sf_rmsnorm_row_fwd(C, x + (size_t)r * C, w, eps, y + (size_t)r * C, &rstd[r]);
}

void _sf_rmsnorm_bwd(int B, int C, const float *x, const float *w, const float *rstd,
                     const float *dy, float *dx, int acc, float *dw, int pacc)
{
	if (!pacc)
		memset(dw, 0, sizeof(float) * (size_t)C);
	for (int r = 0; r < B; r++) {
		const float *xr = x + (size_t)r * C, *dyr = dy + (size_t)r * C;
		for (int c = 0; c < C; c++)
			sf_rmsnorm_dw_add(xr[c], dyr[c], rstd[r], &dw[c]);
		if (dx)
			sf_rmsnorm_row_dx(C, xr, w, rstd[r], dyr, dx + (size_t)r * C, acc);
	}
}
