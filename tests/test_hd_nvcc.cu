/*
 * test_hd_nvcc.cu — the math the GPU runs, through nvcc's host compiler.
 *
 * The CUDA kernels call the SF_HD functions of layers/<op>_math.h and
 * tasks/optim_math.h (common/hd.h). This program is compiled by nvcc (so those headers
 * go through nvcc's front end as __host__ __device__ code, exactly as the kernels see
 * them) and runs them on the host, against the C build of the CPU kernels (gcc,
 * linked in): relu, add and the optimizers must agree bitwise (the same functions);
 * GELU's scalar form, which the GPU runs, must agree with the CPU's four-wide
 * vector form (another exponential): the forward to 1e-6 relative, the backward to
 * 1e-6 |dy| (GELU' is O(1) and crosses zero near -0.75, where a relative measure
 * means nothing), NaN for NaN. Built and run only when configure found CUDA; no GPU
 * is needed.
 */
#include "layers/add_math.h"
#include "layers/gelu_math.h"
#include "layers/relu_math.h"
#include "tasks/optim_math.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern "C" {
#include "layers/add.h"
#include "layers/gelu.h"
#include "layers/relu.h"
#include "tests/tap.h"
void _sf_sgd(size_t n, float *p, const float *g, float *buf, float lr, float mu, float wd);
void _sf_adamw(size_t n, float *p, const float *g, float *m, float *v, float lr, float b1,
               float b2, float eps, float wd, int64_t t);
void _sf_adamw_corrections(float b1, float b2, int64_t t, float *c1, float *c2);
}

enum { N = 4099 }; /* not a multiple of 4: the CPU's vector tail too */

static float x[N], y[N], dy[N], ref[N], got[N];

static uint64_t rng = 88172645463325252ull;
static float uniform(float lo, float hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + (hi - lo) * (float)((rng >> 11) * (1.0 / 9007199254740992.0));
}

/* bitwise equal; else a diagnostic with the first difference */
static int same_bits(const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
			diag("first difference at %zu: %.9g (nvcc) vs %.9g (gcc)", i, a[i], b[i]);
			return 0;
		}
	return 1;
}

/* max |a - b| / scale, scale = |b| (relative) or |s[i]| when s is given; inf = inf */
static double max_err(const float *a, const float *b, const float *s, size_t n,
                      int *nan_mismatch)
{
	double m = 0.0;
	*nan_mismatch = 0;
	for (size_t i = 0; i < n; i++) {
		if (isnan(a[i]) || isnan(b[i])) {
			*nan_mismatch += isnan(a[i]) != isnan(b[i]);
			continue;
		}
		if (a[i] == b[i])
			continue;
		double d = fabs((double)a[i] - b[i]) / fabs(s ? (double)s[i] : (double)b[i]);
		if (d > m)
			m = d;
	}
	return m;
}

int main(void)
{
	plan(8);
	for (int i = 0; i < N; i++) {
		x[i] = uniform(-12.0f, 12.0f);
		y[i] = uniform(-3.0f, 3.0f);
		dy[i] = uniform(-2.0f, 2.0f);
	}
	x[0] = 0.0f, x[1] = -0.0f, x[2] = NAN, x[3] = INFINITY, x[4] = -INFINITY, x[5] = 100.0f;
	x[6] = -100.0f, x[7] = 1e-30f;

	_sf_relu_fwd(N, x, ref);
	for (int i = 0; i < N; i++)
		got[i] = sf_relu_f(x[i]);
	ok(same_bits(got, ref, N), "relu forward: nvcc's sf_relu_f = the C kernel, bitwise over %d values", N);
	_sf_relu_bwd(N, x, dy, ref, 0);
	for (int i = 0; i < N; i++)
		sf_grad_store(&got[i], sf_relu_d(x[i], dy[i]), 0);
	ok(same_bits(got, ref, N), "relu backward: bitwise over %d values", N);

	_sf_add_fwd(N, x, y, ref);
	for (int i = 0; i < N; i++)
		got[i] = sf_add_f(x[i], y[i]);
	ok(same_bits(got, ref, N), "add forward: bitwise over %d values", N);
	memcpy(ref, y, sizeof ref);
	memcpy(got, y, sizeof got);
	_sf_pass_bwd(N, dy, ref, 1);
	for (int i = 0; i < N; i++)
		sf_grad_store(&got[i], dy[i], 1);
	ok(same_bits(got, ref, N), "add backward, accumulating: bitwise over %d values", N);

	int nanbad;
	_sf_gelu_fwd(N, x, ref);
	for (int i = 0; i < N; i++)
		got[i] = sf_gelu_f(x[i]);
	double e = max_err(got, ref, NULL, N, &nanbad);
	ok(e <= 1e-6 && nanbad == 0, "gelu forward: nvcc's scalar form vs the CPU's vector form, max rel %.2e (<= 1e-6), NaN mismatches %d", e, nanbad);
	_sf_gelu_bwd(N, x, dy, ref, 0);
	for (int i = 0; i < N; i++)
		got[i] = sf_gelu_d(x[i], dy[i]);
	e = max_err(got, ref, dy, N, &nanbad);
	ok(e <= 1e-6 && nanbad == 0, "gelu backward: max |diff| / |dy| %.2e (<= 1e-6), NaN mismatches %d", e, nanbad);

	/* three steps of each optimizer, element by element vs the C loops */
	static float p1[N], p2[N], b1[N], b2[N], v1[N], v2[N];
	for (int i = 0; i < N; i++)
		p1[i] = p2[i] = y[i], b1[i] = b2[i] = 0.0f;
	int same = 1;
	for (int s = 0; s < 3; s++) {
		_sf_sgd(N, p1, dy, b1, 0.1f, 0.9f, 0.01f);
		for (int i = 0; i < N; i++)
			sf_sgd_elem(&p2[i], dy[i], &b2[i], 0.1f, 0.9f, 0.01f);
		same &= same_bits(p1, p2, N) && same_bits(b1, b2, N);
	}
	ok(same, "sgd with momentum and weight decay, 3 steps: bitwise");
	for (int i = 0; i < N; i++)
		p1[i] = p2[i] = y[i], b1[i] = b2[i] = v1[i] = v2[i] = 0.0f;
	same = 1;
	for (int s = 1; s <= 3; s++) {
		_sf_adamw(N, p1, dy, b1, v1, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, s);
		float c1, c2;
		_sf_adamw_corrections(0.9f, 0.95f, s, &c1, &c2);
		for (int i = 0; i < N; i++)
			sf_adamw_elem(&p2[i], dy[i], &b2[i], &v2[i], 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, c1, c2);
		same &= same_bits(p1, p2, N) && same_bits(b1, b2, N) && same_bits(v1, v2, N);
	}
	ok(same, "adamw, 3 steps: bitwise (parameters, m and v)");
	return done_testing();
}
