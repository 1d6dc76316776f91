/*
 * test_flash_gpu.cu — the fused bf16 attention (layers/attention_flash.cuh) on a GPU
 * against a float64 reference computed on the host from the same inputs: the forward's
 * output and statistics, and every gradient of the backward (dQ, dK, dV, summed over the
 * query heads of a group), at sizes that are not multiples of the 64-row tiles, with
 * grouped and multi-query heads and head sizes 16 to 128; the backward's accumulate mode;
 * two backward runs bitwise equal (no atomics); each of the three kernel sets (3,
 * mma.sync with ldmatrix, the layer's; 2, mma.sync with transposed tiles; 1, WMMA). TAP on stdout; needs a GPU (skips all
 * without one). `--bench` then times the kernels at GPT-2 124M's and Llama-100m's
 * attention shapes (medians of 7 runs with CUDA events).
 *
 * Tolerances, from bf16's unit roundoff u = 2^-8 (inputs and probabilities rounded to 8
 * significant bits; products accumulated in fp32, whose error is below 2^-24 a term and
 * left out):
 *   a score s = scale q.k from rounded q, k: |ds| <= 2u scale sum_d |q_d k_d| =: e_s;
 *   y = sum_j p_j v_j with p_j from that score (relative error <= 2 max e_s: the max and
 *   the sum shift with it), rounded to bf16 (u), v rounded (u):
 *     |dy| <= sum_j p_j |v_j| (2u + 2 max_j e_s) + 2u |y|  (the last: the fp32 sum l);
 *   the gradients are sums of such terms through dS = P (dP - D), where dP = dY.V from
 *   rounded dY, V (2u) and D from fp32 Y: the test bounds each gradient by the same
 *   linearisation on absolute values, evaluated in float64 from the reference's own
 *   quantities (the bound's coefficients below), times a safety factor of 2 for the
 *   second-order terms.
 */
#include "layers/attention_flash.cuh"

#include <algorithm>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

static int npass, nfail, ntest;

static void ok(bool c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s %d - ", c ? "ok" : "not ok", ++ntest);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	c ? npass++ : nfail++;
}

#define CK(call)                                                                           \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			printf("Bail out! %s: %s\n", #call, cudaGetErrorString(e_));                   \
			exit(1);                                                                       \
		}                                                                                  \
	} while (0)

/* a reproducible normal variate */
static unsigned long long rng = 88172645463325252ULL;
static double unif(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return ((rng >> 11) + 0.5) / 9007199254740992.0;
}
static double normal(void)
{
	return sqrt(-2.0 * log(unif())) * cos(6.283185307179586 * unif());
}

struct problem {
	int B, T, NH, NKV, hs;
	int C() const
	{
		return NH * hs;
	}
	int W() const
	{
		return (NH + 2 * NKV) * hs;
	}
};

/* float64 reference: y, stat (m, inv), dqkv, and each output's error bound */
struct reference {
	std::vector<double> y, ybound, m, inv, dqkv, gbound;
};

static void host_reference(const problem &p, const std::vector<float> &qkv,
                           const std::vector<float> &dy, reference &r)
{
	const double u = 1.0 / 256.0;
	int B = p.B, T = p.T, NH = p.NH, hs = p.hs, C = p.C(), W = p.W(), gsz = NH / p.NKV;
	double scale = 1.0 / sqrt((double)hs);
	r.y.assign((size_t)B * T * C, 0.0);
	r.ybound.assign(r.y.size(), 0.0);
	r.m.assign((size_t)B * NH * T, 0.0);
	r.inv.assign(r.m.size(), 0.0);
	r.dqkv.assign((size_t)B * T * W, 0.0);
	r.gbound.assign(r.dqkv.size(), 0.0);
	std::vector<double> P(T), S(T), ES(T), dP(T), dS(T), dSb(T);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++) {
			int g = h / gsz;
			int qc = h * hs, kc = C + g * hs, vc = C + p.NKV * hs + g * hs;
			for (int i = 0; i < T; i++) {
				const float *q = &qkv[((size_t)b * T + i) * W + qc];
				double mx = -INFINITY, emax = 0.0;
				for (int j = 0; j <= i; j++) {
					const float *k = &qkv[((size_t)b * T + j) * W + kc];
					double a = 0.0, ab = 0.0;
					for (int d = 0; d < hs; d++)
						a += (double)q[d] * k[d], ab += fabs((double)q[d] * k[d]);
					S[j] = a * scale;
					ES[j] = 2 * u * ab * scale;
					mx = std::max(mx, S[j]);
					emax = std::max(emax, ES[j]);
				}
				double l = 0.0;
				for (int j = 0; j <= i; j++)
					l += (P[j] = exp(S[j] - mx));
				for (int j = 0; j <= i; j++)
					P[j] /= l;
				size_t st = ((size_t)b * NH + h) * T + i;
				r.m[st] = mx, r.inv[st] = 1.0 / l;
				double *yr = &r.y[((size_t)b * T + i) * C + qc];
				double *yb = &r.ybound[((size_t)b * T + i) * C + qc];
				for (int d = 0; d < hs; d++) {
					double a = 0.0, ab = 0.0;
					for (int j = 0; j <= i; j++) {
						double v = qkv[((size_t)b * T + j) * W + vc + d];
						a += P[j] * v, ab += P[j] * fabs(v);
					}
					yr[d] = a;
					yb[d] = 2.0 * (ab * (2 * u + 2 * emax) + 2 * u * fabs(a));
				}
				/* backward of this row */
				const float *g_ = &dy[((size_t)b * T + i) * C + qc];
				double D = 0.0, Db = 0.0;
				for (int j = 0; j <= i; j++) {
					const float *v = &qkv[((size_t)b * T + j) * W + vc];
					double a = 0.0;
					for (int d = 0; d < hs; d++)
						a += (double)g_[d] * v[d];
					dP[j] = a;
					D += P[j] * a;
				}
				for (int d = 0; d < hs; d++)
					Db += fabs(yr[d] * g_[d]);
				for (int j = 0; j <= i; j++) {
					const float *v = &qkv[((size_t)b * T + j) * W + vc];
					double ab = 0.0;
					for (int d = 0; d < hs; d++)
						ab += fabs((double)g_[d] * v[d]);
					dS[j] = P[j] * (dP[j] - D);
					/* |d dS|: P's relative error times |dP - D|, plus P times the
					 * errors of dP (2u |dY||V|, then rounded: u) and of D (from
					 * y's bound: 2u each term, generously 4u) and dS's own rounding */
					dSb[j] = P[j] * ((2 * u + 2 * emax) * fabs(dP[j] - D) + 3 * u * ab +
					                 4 * u * Db) +
					         u * fabs(dS[j]);
				}
				double *dq = &r.dqkv[((size_t)b * T + i) * W + qc];
				double *dqb = &r.gbound[((size_t)b * T + i) * W + qc];
				for (int j = 0; j <= i; j++) {
					const float *k = &qkv[((size_t)b * T + j) * W + kc];
					double *dk = &r.dqkv[((size_t)b * T + j) * W + kc];
					double *dkb = &r.gbound[((size_t)b * T + j) * W + kc];
					double *dv = &r.dqkv[((size_t)b * T + j) * W + vc];
					double *dvb = &r.gbound[((size_t)b * T + j) * W + vc];
					for (int d = 0; d < hs; d++) {
						dq[d] += scale * dS[j] * k[d];
						dqb[d] += 2.0 * scale * (dSb[j] + u * fabs(dS[j])) * fabs(k[d]);
						dk[d] += scale * dS[j] * q[d];
						dkb[d] += 2.0 * scale * (dSb[j] + u * fabs(dS[j])) * fabs(q[d]);
						dv[d] += P[j] * g_[d];
						dvb[d] += 2.0 * P[j] * (2 * u + 2 * emax + 2 * u) * fabs(g_[d]);
					}
				}
			}
		}
}

/* the worst ratio |got - want| / (bound + floor) and the normwise error */
struct cmp {
	double worst = 0.0, norm = 0.0;
	size_t at = 0;
};
static cmp compare(const float *got, const std::vector<double> &want,
                   const std::vector<double> &bound, double add)
{
	cmp c;
	double mx = 0.0, emx = 0.0;
	for (size_t i = 0; i < want.size(); i++)
		mx = std::max(mx, fabs(want[i] + add));
	for (size_t i = 0; i < want.size(); i++) {
		double e = fabs((double)got[i] - (want[i] + add));
		/* a floor of fp32's rounding of the largest value: exact zeros have no bound */
		double r = e / (bound[i] + 1e-6 * mx);
		if (!(r <= c.worst)) /* NaN counts */
			c.worst = r, c.at = i;
		emx = std::max(emx, e);
	}
	c.norm = emx / (mx > 0 ? mx : 1.0);
	return c;
}

static const char *impl_name(int impl)
{
	return impl == 1 ? "wmma" : impl == 2 ? "mma" : "mma+ldmatrix";
}

static void run_case(const problem &p, bool accumulate, int impl)
{
	int B = p.B, T = p.T, C = p.C(), W = p.W();
	size_t nq = (size_t)B * T * W, ny = (size_t)B * T * C, ns = (size_t)B * p.NH * T;
	std::vector<float> qkv(nq), dy(ny);
	for (auto &x : qkv)
		x = (float)normal();
	for (auto &x : dy)
		x = (float)normal();
	reference r;
	host_reference(p, qkv, dy, r);

	float *dq, *dy_d, *dy2, *y_d, *st_d, *Dd, *dqkv, *dqkv2;
	CK(cudaMalloc(&dq, nq * 4));
	CK(cudaMalloc(&dy_d, ny * 4));
	CK(cudaMalloc(&dy2, ny * 4));
	CK(cudaMalloc(&y_d, ny * 4));
	CK(cudaMalloc(&st_d, ns * 8));
	CK(cudaMalloc(&Dd, ns * 4));
	CK(cudaMalloc(&dqkv, nq * 4));
	CK(cudaMalloc(&dqkv2, nq * 4));
	CK(cudaMemcpy(dq, qkv.data(), nq * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dy_d, dy.data(), ny * 4, cudaMemcpyHostToDevice));
	std::vector<float> ones(nq, 1.0f);
	double add = accumulate ? 1.0 : 0.0;
	if (accumulate) {
		CK(cudaMemcpy(dqkv, ones.data(), nq * 4, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(dqkv2, ones.data(), nq * 4, cudaMemcpyHostToDevice));
	} else { /* garbage: every value must be written */
		CK(cudaMemset(dqkv, 0x7f, nq * 4));
		CK(cudaMemset(dqkv2, 0x7f, nq * 4));
	}
	CK(sf_flash_fwd(B, T, C, p.NH, p.NKV, dq, y_d, st_d, 0, impl));
	CK(sf_flash_bwd(B, T, C, p.NH, p.NKV, dq, y_d, st_d, dy_d, dqkv, accumulate, Dd, 0, impl));
	CK(sf_flash_bwd(B, T, C, p.NH, p.NKV, dq, y_d, st_d, dy_d, dqkv2, accumulate, Dd, 0, impl));
	CK(cudaDeviceSynchronize());
	std::vector<float> y(ny), st(2 * ns), g(nq), g2(nq);
	CK(cudaMemcpy(y.data(), y_d, ny * 4, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(st.data(), st_d, ns * 8, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(g.data(), dqkv, nq * 4, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(g2.data(), dqkv2, nq * 4, cudaMemcpyDeviceToHost));

	char name[160];
	snprintf(name, sizeof name, "%s: B %d T %d heads %d kv %d hs %d%s", impl_name(impl), B, T,
	         p.NH, p.NKV, p.hs, accumulate ? " (+=)" : "");
	cmp cy = compare(y.data(), r.y, r.ybound, 0.0);
	ok(cy.worst <= 1.0, "%s: forward y within its bf16 bound (worst %.3g of it; normwise %.3g)",
	   name, cy.worst, cy.norm);
	/* the statistics: m within the scores' bound, inv relative */
	double wm = 0.0, wi = 0.0;
	for (size_t i = 0; i < ns; i++) {
		wm = std::max(wm, fabs(st[2 * i] - r.m[i]));
		wi = std::max(wi, fabs(st[2 * i + 1] - r.inv[i]) / r.inv[i]);
	}
	/* |dm| <= e_s <= 2u scale sum|q||k|: with unit normals about 2u sqrt(hs) 3^2 / sqrt(hs);
	 * 0.25 is 32 u, above it for |q|,|k| to 3 sigma */
	ok(wm <= 0.25 && wi <= 0.25, "%s: statistics (max abs m error %.3g, inv rel %.3g)", name,
	   wm, wi);
	size_t parts[3][2] = {{0, (size_t)C}, {(size_t)C, (size_t)(C + p.NKV * p.hs)},
	                      {(size_t)(C + p.NKV * p.hs), (size_t)W}};
	const char *pn[3] = {"dQ", "dK", "dV"};
	for (int k = 0; k < 3; k++) {
		std::vector<float> got;
		std::vector<double> want, bound;
		for (size_t row = 0; row < (size_t)B * T; row++)
			for (size_t c = parts[k][0]; c < parts[k][1]; c++) {
				got.push_back(g[row * W + c]);
				want.push_back(r.dqkv[row * W + c]);
				bound.push_back(r.gbound[row * W + c]);
			}
		cmp cg = compare(got.data(), want, bound, add);
		ok(cg.worst <= 1.0, "%s: %s within its bf16 bound (worst %.3g of it; normwise %.3g)",
		   name, pn[k], cg.worst, cg.norm);
	}
	ok(memcmp(g.data(), g2.data(), nq * 4) == 0, "%s: two backward runs bitwise equal", name);
	for (float *x : {dq, dy_d, dy2, y_d, st_d, Dd, dqkv, dqkv2})
		CK(cudaFree(x));
}

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

static void bench(const char *name, int B, int T, int NH, int NKV, int hs, int impl)
{
	int C = NH * hs, W = (NH + 2 * NKV) * hs;
	size_t nq = (size_t)B * T * W, ny = (size_t)B * T * C, ns = (size_t)B * NH * T;
	float *qkv, *y, *dy, *st, *Dd, *dqkv;
	CK(cudaMalloc(&qkv, nq * 4));
	CK(cudaMalloc(&dqkv, nq * 4));
	CK(cudaMalloc(&y, ny * 4));
	CK(cudaMalloc(&dy, ny * 4));
	CK(cudaMalloc(&st, ns * 8));
	CK(cudaMalloc(&Dd, ns * 4));
	std::vector<float> h(nq);
	for (auto &x : h)
		x = (float)normal();
	CK(cudaMemcpy(qkv, h.data(), nq * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dy, h.data(), ny * 4, cudaMemcpyHostToDevice));
	cudaEvent_t e0, e1, e2;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaEventCreate(&e2));
	std::vector<double> tf, tb;
	for (int it = 0; it < 9; it++) {
		CK(cudaEventRecord(e0));
		CK(sf_flash_fwd(B, T, C, NH, NKV, qkv, y, st, 0, impl));
		CK(cudaEventRecord(e1));
		CK(sf_flash_bwd(B, T, C, NH, NKV, qkv, y, st, dy, dqkv, 0, Dd, 0, impl));
		CK(cudaEventRecord(e2));
		CK(cudaEventSynchronize(e2));
		float a, b;
		CK(cudaEventElapsedTime(&a, e0, e1));
		CK(cudaEventElapsedTime(&b, e1, e2));
		if (it >= 2)
			tf.push_back(a), tb.push_back(b);
	}
	/* the causal half of the products: 2 in the forward, 5 in FlashAttention-2's backward */
	double f = 2.0 * B * NH * (double)T * T * hs;
	double mf = median(tf), mb = median(tb);
	printf("# bench %s %s (B %d T %d heads %d kv %d hs %d): forward %.3f ms (%.1f TFLOP/s), "
	       "backward %.3f ms (%.1f TFLOP/s of 2.5x the forward's products)\n",
	       name, impl_name(impl), B, T, NH, NKV, hs, mf, f / mf / 1e9, mb, 2.5 * f / mb / 1e9);
	for (float *x : {qkv, y, dy, st, Dd, dqkv})
		CK(cudaFree(x));
}

int main(int argc, char **argv)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("1..0 # SKIP no CUDA device\n");
		return 0;
	}
	cudaDeviceProp pr;
	CK(cudaGetDeviceProperties(&pr, 0));
	printf("# %s, sm_%d%d\n", pr.name, pr.major, pr.minor);
	problem cases[] = {
	    {2, 77, 4, 4, 64},  {1, 200, 8, 2, 64}, {2, 130, 4, 1, 128}, {1, 64, 2, 2, 16},
	    {1, 333, 6, 3, 48}, {1, 1024, 4, 4, 64}, {1, 100, 2, 1, 112},
	};
	for (int impl = 3; impl >= 1; impl--) {
		for (const problem &p : cases)
			run_case(p, false, impl);
		run_case(cases[1], true, impl);
	}
	printf("1..%d\n", ntest);
	if (argc > 1 && !strcmp(argv[1], "--bench")) {
		for (int impl = 3; impl >= 1; impl--) {
			bench("gpt2-124M", 8, 1024, 12, 12, 64, impl);
			bench("llama-100m", 8, 1024, 12, 4, 64, impl);
			bench("hs128", 4, 2048, 16, 8, 128, impl);
		}
	}
	printf("# %d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}
