/*
 * layernorm_cpu.c — layer normalisation and its gradient on plain pointers.
 *
 * Row statistics are summed in double (a row of 768 floats loses digits in float);
 * the backward uses the saved mean and rstd:
 *   xhat = (x - mean) rstd,  g = dy w,
 *   dx = rstd (g - mean(g) - xhat mean(g xhat)),  dw = sum_rows dy xhat,  db = sum_rows dy.
 */
#include "layers/layernorm.h"

#include <math.h>
#include <string.h>

void _sf_layernorm_fwd(int B, int C, const float *x, const float *w, const float *b, float eps,
                       float *y, float *mean, float *rstd)
{
	for (int r = 0; r < B; r++) {
		const float *xr = x + (size_t)r * C;
		float *yr = y + (size_t)r * C;
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
		mean[r] = mf;
		rstd[r] = rs;
	}
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
		float m = mean[r], rs = rstd[r];
		double sg = 0.0, sgx = 0.0;
		for (int c = 0; c < C; c++) {
			float xhat = (xr[c] - m) * rs, g = dyr[c] * w[c];
			sg += g;
			sgx += (double)g * xhat;
			dw[c] += dyr[c] * xhat;
			db[c] += dyr[c];
		}
		if (!dx)
			continue;
		float mg = (float)(sg / C), mgx = (float)(sgx / C);
		float *dxr = dx + (size_t)r * C;
		for (int c = 0; c < C; c++) {
			float xhat = (xr[c] - m) * rs;
			float d = rs * (dyr[c] * w[c] - mg - xhat * mgx);
			dxr[c] = acc ? dxr[c] + d : d;
		}
	}
}
