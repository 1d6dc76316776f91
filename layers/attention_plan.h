/*
 * attention_plan.h — the order of operations of attention on the GPU, written once
 * for two executors (C++, nvcc only): layers/attention_cuda.cu runs it with cuBLAS
 * and CUDA kernels; tests/test_hd_nvcc.cu runs the same plan on the host with a
 * reference GEMM and loops, against the CPU kernel, which checks every leading
 * dimension, stride and transpose of the GPU path without a GPU.
 *
 * An executor X provides:
 *   X::gemm(ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, count):
 *     count row-major GEMMs C_i (m x n) = alpha op(A_i) op(B_i) + beta C_i, the i-th
 *     at A + i sA, B + i sB, C + i sC (as cblas_sgemm(CblasRowMajor, ...));
 *   X::softmax_rows(NH, T, p, stat): _sf_attention_softmax_row on the NH T rows of p
 *     (NH, T, T), row r's statistics to stat + 2 r;
 *   X::probs_rows(NH, T, p, stat): _sf_attention_probs_row on those rows;
 *   X::softmax_bwd_rows(NH, T, p, d): sf_softmax_bwd_row on those rows of d;
 *   X::zero_cols(base, ld, width, rows): zero `width` floats of `rows` rows;
 *   X::scratch(n), X::release(ptr): a float buffer on the executor's device.
 *
 * Per sample, the NH heads are one strided batch: head h of Q, K, V starts at column
 * h hs of the qkv rows (leading dimension 3C), of Y at column h hs of the output rows
 * (C), of P at h T^2 (grouped heads: a batch per position in the group, below). The whole T x T
 * scores are computed; the softmax rows write exact zeros after the query, so P V and dS K add
 * nothing past it. P lives in a scratch of one sample's NH T^2 floats; the forward keeps the
 * rows' statistics (B, NH, T, 2), and the backward computes the scores again and rebuilds P
 * from them (layers/attention.h).
 */
#ifndef SF_LAYERS_ATTENTION_PLAN_H
#define SF_LAYERS_ATTENTION_PLAN_H

#ifndef __cplusplus
#error "layers/attention_plan.h is C++ (nvcc-compiled files)"
#endif

#include <math.h>
#include <stddef.h>

/* With grouped heads (g = NH / NKV query heads per key/value head), query head
 * h = j g + r reads key/value head j: for each r, the NKV heads j are one strided batch
 * (q, y, p strided by g heads, k and v by one). g = 1 is one batch of all NH heads. */
/* S (T, T) = scale Q K^T for every head of one sample into p (NH, T, T) */
template <class X>
void sf_attention_scores(X &x, int T, int C, int NH, int NKV, const float *q, float *p)
{
	int hs = C / NH, g = NH / NKV, ld = C + 2 * NKV * hs;
	float scale = 1.0f / sqrtf((float)hs);
	long long tt = (long long)T * T, sq = (long long)g * hs, sp = (long long)g * tt;
	const float *k = q + C;
	for (int r = 0; r < g; r++)
		x.gemm(false, true, T, T, hs, scale, q + (size_t)r * hs, ld, sq, k, ld, hs, 0.0f,
		       p + (size_t)r * tt, T, sp, NKV);
}

template <class X>
void sf_attention_fwd_plan(X &x, int B, int T, int C, int NH, int NKV, const float *qkv, float *y,
                           float *stat)
{
	int hs = C / NH, g = NH / NKV, ld = C + 2 * NKV * hs;
	long long tt = (long long)T * T, sq = (long long)g * hs, sp = (long long)g * tt;
	float *p = x.scratch((size_t)NH * tt); /* one sample's probabilities */
	for (int b = 0; b < B; b++) {
		const float *q = qkv + (size_t)b * T * ld, *v = q + C + (size_t)NKV * hs;
		float *yb = y + (size_t)b * T * C;
		sf_attention_scores(x, T, C, NH, NKV, q, p);
		x.softmax_rows(NH, T, p, stat + (size_t)b * NH * T * 2);
		/* Y (T, hs) = P V */
		for (int r = 0; r < g; r++)
			x.gemm(false, false, T, hs, T, 1.0f, p + (size_t)r * tt, T, sp, v, ld, hs,
			       0.0f, yb + (size_t)r * hs, C, sq, NKV);
	}
	x.release(p);
}

template <class X>
void sf_attention_bwd_plan(X &x, int B, int T, int C, int NH, int NKV, const float *qkv,
                           const float *stat, const float *dy, float *dqkv, int acc)
{
	int hs = C / NH, g = NH / NKV, ld = C + 2 * NKV * hs;
	float scale = 1.0f / sqrtf((float)hs);
	long long tt = (long long)T * T, sq = (long long)g * hs, sp = (long long)g * tt;
	/* dK and dV are sums over the queries (and a group's heads, in r order): from 0
	 * unless added to */
	if (!acc)
		x.zero_cols(dqkv + C, ld, ld - C, (size_t)B * T);
	/* one sample's P, then its dP and dS */
	float *p = x.scratch((size_t)NH * tt), *ds = x.scratch((size_t)NH * tt);
	for (int b = 0; b < B; b++) {
		size_t off = (size_t)b * T * ld;
		const float *q = qkv + off, *k = q + C, *v = k + (size_t)NKV * hs;
		const float *dyb = dy + (size_t)b * T * C;
		float *dq = dqkv + off, *dk = dq + C, *dv = dk + (size_t)NKV * hs;
		sf_attention_scores(x, T, C, NH, NKV, q, p);
		x.probs_rows(NH, T, p, stat + (size_t)b * NH * T * 2);
		for (int r = 0; r < g; r++) {
			const float *pr = p + (size_t)r * tt, *dyr = dyb + (size_t)r * hs;
			float *dsr = ds + (size_t)r * tt;
			/* dV (T, hs) += P^T dY */
			x.gemm(true, false, T, hs, T, 1.0f, pr, T, sp, dyr, C, sq, 1.0f, dv, ld, hs,
			       NKV);
			/* dP (T, T) = dY V^T */
			x.gemm(false, true, T, T, hs, 1.0f, dyr, C, sq, v, ld, hs, 0.0f, dsr, T, sp,
			       NKV);
		}
		x.softmax_bwd_rows(NH, T, p, ds);
		for (int r = 0; r < g; r++) {
			const float *dsr = ds + (size_t)r * tt;
			/* dQ (=|+=) scale dS K */
			x.gemm(false, false, T, hs, T, scale, dsr, T, sp, k, ld, hs,
			       acc ? 1.0f : 0.0f, dq + (size_t)r * hs, ld, sq, NKV);
			/* dK += scale dS^T Q */
			x.gemm(true, false, T, hs, T, scale, dsr, T, sp, q + (size_t)r * hs, ld, sq,
			       1.0f, dk, ld, hs, NKV);
		}
	}
	x.release(ds);
	x.release(p);
}

#endif
