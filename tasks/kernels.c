/*
 * kernels.c — CPU implementations of the kernels declared in kernels.h.
 *
 * Every kernel is deterministic: the same inputs give bitwise the same outputs
 * whatever worker runs it (OpenBLAS runs single-threaded inside a worker, see
 * scheduler/runtime.c), which is what lets every prefetch depth give identical
 * parameters.
 */
#include "tasks/kernels.h"

#include <cblas.h>
#undef I /* OpenBLAS pulls in <complex.h>; I is our input width */
#include <math.h>
#include <string.h>

void _sf_linear_fwd(int B, int I, int O, const float *x, const float *w, const float *b, float *y)
{
	for (int r = 0; r < B; r++)
		memcpy(y + (size_t)r * O, b, sizeof(float) * (size_t)O);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, O, I, 1.0f, x, I, w, I, 1.0f, y, O);
}

void _sf_linear_bwd(int B, int I, int O, const float *x, const float *w, const float *dy, float *dx,
                    int acc, float *dw, float *db)
{
	if (dx)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, I, O, 1.0f, dy, O, w, I,
		            acc ? 1.0f : 0.0f, dx, I);
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, I, B, 1.0f, dy, O, x, I, 0.0f, dw,
	            I);
	for (int o = 0; o < O; o++)
		db[o] = 0.0f;
	for (int r = 0; r < B; r++) {
		const float *row = dy + (size_t)r * O;
		for (int o = 0; o < O; o++)
			db[o] += row[o];
	}
}

void _sf_relu_fwd(size_t n, const float *x, float *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void _sf_relu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	for (size_t i = 0; i < n; i++) {
		float d = x[i] > 0.0f ? dy[i] : 0.0f;
		dx[i] = acc ? dx[i] + d : d;
	}
}

#define SF_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define SF_GELU_C 0.044715f

void _sf_gelu_fwd(size_t n, const float *x, float *y)
{
	for (size_t i = 0; i < n; i++) {
		float v = x[i];
		y[i] = 0.5f * v * (1.0f + tanhf(SF_GELU_K * (v + SF_GELU_C * v * v * v)));
	}
}

void _sf_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	for (size_t i = 0; i < n; i++) {
		float v = x[i];
		float u = SF_GELU_K * (v + SF_GELU_C * v * v * v);
		float t = tanhf(u);
		float du = SF_GELU_K * (1.0f + 3.0f * SF_GELU_C * v * v);
		float d = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
		dx[i] = acc ? dx[i] + d : d;
	}
}

void _sf_add_fwd(size_t n, const float *a, const float *b, float *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = a[i] + b[i];
}

void _sf_pass_bwd(size_t n, const float *dy, float *d, int acc)
{
	if (!acc) {
		memcpy(d, dy, sizeof(float) * n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		d[i] += dy[i];
}

double _sf_softmax_xent(int B, int C, const float *z, const int32_t *labels, float scale, float *dz)
{
	double loss = 0.0;
	for (int r = 0; r < B; r++) {
		const float *zr = z + (size_t)r * C;
		float *dr = dz + (size_t)r * C;
		float mx = zr[0];
		for (int c = 1; c < C; c++)
			mx = zr[c] > mx ? zr[c] : mx;
		double sum = 0.0;
		for (int c = 0; c < C; c++)
			sum += exp((double)(zr[c] - mx));
		double logz = log(sum) + mx;
		loss += logz - zr[labels[r]];
		for (int c = 0; c < C; c++)
			dr[c] = scale * (float)exp((double)zr[c] - logz);
		dr[labels[r]] -= scale;
	}
	return loss * scale;
}

void _sf_sgd(size_t n, float *p, const float *g, float *buf, float lr, float mu, float wd)
{
	for (size_t i = 0; i < n; i++) {
		float d = g[i] + wd * p[i];
		buf[i] = mu * buf[i] + d;
		p[i] -= lr * buf[i];
	}
}

void _sf_adamw(size_t n, float *p, const float *g, float *m, float *v, float lr, float b1, float b2,
               float eps, float wd, int64_t t)
{
	float c1 = 1.0f - powf(b1, (float)t);
	float c2 = 1.0f - powf(b2, (float)t);
	for (size_t i = 0; i < n; i++) {
		p[i] -= lr * wd * p[i];
		m[i] = b1 * m[i] + (1.0f - b1) * g[i];
		v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
		p[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
	}
}
