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
 * nothing past it. The forward keeps the rows' statistics (B, NH, T, 2), and the backward
 * computes the scores again and rebuilds P from them (layers/attention.h).
 *
 * P (and in the backward dS) lives in a scratch of at most `budget` floats: the heads of a
 * sample go in chunks of whole key/value groups (jn key/value heads and their jn g query
 * heads, which are consecutive heads, so their scores and statistics are too), as many as
 * fit, at least one. The CUDA launcher's budget is SF_ATTENTION_GPU_SCRATCH; tests give a
 * small one to exercise the chunks.
 */
#ifndef SF_LAYERS_ATTENTION_PLAN_H
#define SF_LAYERS_ATTENTION_PLAN_H

#ifndef __cplusplus
#error "layers/attention_plan.h is C++ (nvcc-compiled files)"
#endif

#include <math.h>
#include <stddef.h>

/* With grouped heads (g = NH / NKV query heads per key/value head), query head
 * h = j g + r reads key/value head j: for each r, the key/value heads j of a chunk are one
 * strided batch (q, y, p strided by g heads, k and v by one). g = 1: the chunk's heads are
 * one batch. */

/* Key/value heads a chunk holds: as many groups of g T^2 floats as `budget` allows, at
 * least one, at most NKV. */
static inline int sf_attention_chunk(int T, int NH, int NKV, size_t budget)
{
	size_t group = (size_t)(NH / NKV) * (size_t)T * (size_t)T;
	size_t jn = budget / group;
	return jn < 1 ? 1 : jn > (size_t)NKV ? NKV : (int)jn;
}

/* S (T, T) = scale Q K^T for the jn key/value groups of a chunk into p (jn g, T, T); q and
 * k point at the chunk's first query and key head of the sample's first row */
template <class X>
void sf_attention_scores(X &x, int T, int C, int NH, int NKV, int jn, const float *q,
                         const float *k, float *p)
{
	int hs = C / NH, g = NH / NKV, ld = C + 2 * NKV * hs;
	float scale = 1.0f / sqrtf((float)hs);
	long long tt = (long long)T * T, sq = (long long)g * hs, sp = (long long)g * tt;
	for (int r = 0; r < g; r++)
		x.gemm(false, true, T, T, hs, scale, q + (size_t)r * hs, ld, sq, k, ld, hs, 0.0f,
		       p + (size_t)r * tt, T, sp, jn);
}

template <class X>
void sf_attention_fwd_plan(X &x, int B, int T, int C, int NH, int NKV, const float *qkv, float *y,
                           float *stat, size_t budget)
{
	int hs = C / NH, g = NH / NKV, ld = C + 2 * NKV * hs;
	int cj = sf_attention_chunk(T, NH, NKV, budget);
	long long tt = (long long)T * T, sq = (long long)g * hs, sp = (long long)g * tt;
	float *p = x.scratch((size_t)cj * g * tt); /* a chunk's probabilities */
	for (int b = 0; b < B; b++)
		for (int j0 = 0; j0 < NKV; j0 += cj) {
			int jn = NKV - j0 < cj ? NKV - j0 : cj, h0 = j0 * g;
			const float *row = qkv + (size_t)b * T * ld;
			const float *q = row + (size_t)h0 * hs, *k = row + C + (size_t)j0 * hs;
			const float *v = row + C + (size_t)(NKV + j0) * hs;
			float *yb = y + (size_t)b * T * C + (size_t)h0 * hs;
			sf_attention_scores(x, T, C, NH, NKV, jn, q, k, p);
			x.softmax_rows(jn * g, T, p, stat + ((size_t)b * NH + h0) * T * 2);
			/* Y (T, hs) = P V */
			for (int r = 0; r < g; r++)
				x.gemm(false, false, T, hs, T, 1.0f, p + (size_t)r * tt, T, sp, v, ld,
				       hs, 0.0f, yb + (size_t)r * hs, C, sq, jn);
		}
	x.release(p);
}

template <class X>
void sf_attention_bwd_plan(X &x, int B, int T, int C, int NH, int NKV, const float *qkv,
                           const float *stat, const float *dy, float *dqkv, int acc,
                           size_t budget)
{
	int hs = C / NH, g = NH / NKV, ld = C + 2 * NKV * hs;
	float scale = 1.0f / sqrtf((float)hs);
	/* P and dS: two scratches within the budget */
	int cj = sf_attention_chunk(T, NH, NKV, budget / 2);
	long long tt = (long long)T * T, sq = (long long)g * hs, sp = (long long)g * tt;
	/* dK and dV are sums over the queries (and a group's heads, in r order): from 0
	 * unless added to */
	if (!acc)
		x.zero_cols(dqkv + C, ld, ld - C, (size_t)B * T);
	/* a chunk's P, then its dP and dS */
	float *p = x.scratch((size_t)cj * g * tt), *ds = x.scratch((size_t)cj * g * tt);
	for (int b = 0; b < B; b++)
		for (int j0 = 0; j0 < NKV; j0 += cj) {
			int jn = NKV - j0 < cj ? NKV - j0 : cj, h0 = j0 * g;
			size_t off = (size_t)b * T * ld;
			const float *q = qkv + off + (size_t)h0 * hs;
			const float *k = qkv + off + C + (size_t)j0 * hs;
			const float *v = qkv + off + C + (size_t)(NKV + j0) * hs;
			const float *dyb = dy + (size_t)b * T * C + (size_t)h0 * hs;
			float *dq = dqkv + off + (size_t)h0 * hs;
			float *dk = dqkv + off + C + (size_t)j0 * hs;
			float *dv = dqkv + off + C + (size_t)(NKV + j0) * hs;
			sf_attention_scores(x, T, C, NH, NKV, jn, q, k, p);
			x.probs_rows(jn * g, T, p, stat + ((size_t)b * NH + h0) * T * 2);
			for (int r = 0; r < g; r++) {
				const float *pr = p + (size_t)r * tt, *dyr = dyb + (size_t)r * hs;
				float *dsr = ds + (size_t)r * tt;
				/* dV (T, hs) += P^T dY */
				x.gemm(true, false, T, hs, T, 1.0f, pr, T, sp, dyr, C, sq, 1.0f, dv, ld,
				       hs, jn);
				/* dP (T, T) = dY V^T */
				x.gemm(false, true, T, T, hs, 1.0f, dyr, C, sq, v, ld, hs, 0.0f, dsr, T,
				       sp, jn);
			}
			x.softmax_bwd_rows(jn * g, T, p, ds);
			for (int r = 0; r < g; r++) {
				const float *dsr = ds + (size_t)r * tt;
				/* dQ (=|+=) scale dS K */
				x.gemm(false, false, T, hs, T, scale, dsr, T, sp, k, ld, hs,
				       acc ? 1.0f : 0.0f, dq + (size_t)r * hs, ld, sq, jn);
				/* dK += scale dS^T Q */
				x.gemm(true, false, T, hs, T, scale, dsr, T, sp, q + (size_t)r * hs, ld,
				       sq, 1.0f, dk, ld, hs, jn);
			}
		}
	x.release(ds);
	x.release(p);
}

#endif
