/*
 * attention_plan.h — the order of operations of attention on the GPU, written once
 * for two executors (C++, nvcc only): layers/attention_cuda.cu runs it with cuBLAS
 * and CUDA kernels; tests/test_hd_nvcc.cu runs the same plan on the host with a
 * reference GEMM and loops, against the CPU kernel, which checks every leading
 * dimension, stride and transpose of the GPU path without a GPU.
 *
 * An executor X provides:
 *   X::gemm(ta, tb, m, n, k, alpha, A, lda, sA, oA, B, ldb, sB, oB, beta, C, ldc, sC, oC,
 *           count, outer):
 *     count x outer row-major GEMMs C_oi (m x n) = alpha op(A_oi) op(B_oi) + beta C_oi, the
 *     (o, i)-th at A + o oA + i sA, B + o oB + i sB, C + o oC + i sC (as
 *     cblas_sgemm(CblasRowMajor, ...)): a strided batch over heads, repeated over samples;
 *   X::softmax_rows(NH, T, p, stat): _sf_attention_softmax_row on the NH T rows of p
 *     (NH, T, T), row r's statistics to stat + 2 r;
 *   X::probs_rows(NH, T, p, stat): _sf_attention_probs_row on those rows;
 *   X::softmax_bwd_rows(NH, T, p, d): sf_softmax_bwd_row on those rows of d;
 *   X::zero_cols(base, ld, width, rows): zero `width` floats of `rows` rows;
 *   X::scratch(n), X::release(ptr): a float buffer on the executor's device.
 *
 * The heads of a sample are one strided batch: head h of Q, K, V starts at column h hs of
 * the qkv rows (leading dimension C + 2 NKV hs), of Y at column h hs of the output rows (C),
 * of P at h T^2 (grouped heads: a batch per position in the group, below); the samples of
 * a chunk repeat that batch at their rows (the executor's outer count), so each product is
 * one call for the whole chunk. The whole T x T scores are computed; the softmax rows
 * write exact zeros after the query, so P V and dS K add nothing past it. The forward
 * keeps the rows' statistics (B, NH, T, 2), and the backward computes the scores again and
 * rebuilds P from them (layers/attention.h).
 *
 * P (and in the backward dS) lives in a scratch of at most `budget` floats. A chunk is as
 * many whole samples as fit (NH T^2 floats each; the small models: the whole batch, a
 * handful of calls a pass); where not even one sample fits, the heads of a sample go in
 * chunks of whole key/value groups (jn key/value heads and their jn g query heads, which
 * are consecutive heads, so their scores and statistics are too), as many as fit, at least
 * one. Either way a chunk's scores and statistics are contiguous. The CUDA launcher's
 * budget is SF_ATTENTION_GPU_SCRATCH; tests give small ones to exercise the chunks.
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

/* Whole samples a chunk holds: as many of NH T^2 floats as `budget` allows, at most B; 0
 * when not even one fits (then chunks of key/value groups of one sample) */
static inline int sf_attention_samples(int B, int T, int NH, size_t budget)
{
	size_t sample = (size_t)NH * (size_t)T * (size_t)T;
	size_t nb = budget / sample;
	return nb > (size_t)B ? B : (int)nb;
}

/* Key/value heads a chunk of one sample holds: as many groups of g T^2 floats as `budget`
 * allows, at least one, at most NKV. */
static inline int sf_attention_chunk(int T, int NH, int NKV, size_t budget)
{
	size_t group = (size_t)(NH / NKV) * (size_t)T * (size_t)T;
	size_t jn = budget / group;
	return jn < 1 ? 1 : jn > (size_t)NKV ? NKV : (int)jn;
}

/* A chunk: samples [b0, b0 + bn), key/value heads [j0, j0 + jn) of each (jn = NKV when
 * bn > 1); its P is (bn, jn g, T, T), and its statistics start at stat + (b0 NH + j0 g) T 2 */
struct sf_attention_chunk_it {
	int B, NKV, nb, cj; /* whole samples a chunk (0: groups of one sample), groups a chunk */
	int b0, bn, j0, jn;
};

static inline void sf_attention_chunks_begin(struct sf_attention_chunk_it *c, int B, int T,
                                             int NH, int NKV, size_t budget)
{
	c->B = B, c->NKV = NKV;
	c->nb = sf_attention_samples(B, T, NH, budget);
	c->cj = c->nb > 0 ? NKV : sf_attention_chunk(T, NH, NKV, budget);
	c->b0 = 0, c->j0 = 0;
	c->bn = c->nb > 0 ? c->nb : 1;
	c->jn = c->cj;
}

static inline int sf_attention_chunks_more(const struct sf_attention_chunk_it *c)
{
	return c->b0 < c->B;
}

static inline void sf_attention_chunks_next(struct sf_attention_chunk_it *c)
{
	if (c->nb == 0 && c->j0 + c->jn < c->NKV) {
		c->j0 += c->jn;
	} else {
		c->b0 += c->bn;
		c->j0 = 0;
	}
	int step = c->nb > 0 ? c->nb : 1;
	c->bn = c->B - c->b0 < step ? c->B - c->b0 : step;
	c->jn = c->NKV - c->j0 < c->cj ? c->NKV - c->j0 : c->cj;
}

/* Floats of P a chunk needs at most */
static inline size_t sf_attention_chunk_floats(const struct sf_attention_chunk_it *c, int T,
                                               int NH)
{
	size_t g = (size_t)(NH / c->NKV);
	return (size_t)(c->nb > 0 ? c->nb : 1) * (size_t)c->cj * g * (size_t)T * (size_t)T;
}

/* S (T, T) = scale Q K^T for the chunk's bn samples and jn key/value groups into p
 * (bn, jn g, T, T); q and k point at the chunk's first query and key head of its first
 * sample's first row */
template <class X>
void sf_attention_scores(X &x, int T, int C, int NH, int NKV, int jn, int bn, const float *q,
                         const float *k, float *p)
{
	int hs = C / NH, g = NH / NKV, ld = C + 2 * NKV * hs;
	float scale = 1.0f / sqrtf((float)hs);
	long long tt = (long long)T * T, sq = (long long)g * hs, sp = (long long)g * tt;
	long long orow = (long long)T * ld, op = (long long)jn * sp;
	for (int r = 0; r < g; r++)
		x.gemm(false, true, T, T, hs, scale, q + (size_t)r * hs, ld, sq, orow, k, ld, hs, orow,
		       0.0f, p + (size_t)r * tt, T, sp, op, jn, bn);
}

template <class X>
void sf_attention_fwd_plan(X &x, int B, int T, int C, int NH, int NKV, const float *qkv, float *y,
                           float *stat, size_t budget)
{
	int hs = C / NH, g = NH / NKV, ld = C + 2 * NKV * hs;
	long long tt = (long long)T * T, sq = (long long)g * hs, sp = (long long)g * tt;
	long long orow = (long long)T * ld, oy = (long long)T * C;
	struct sf_attention_chunk_it c;
	sf_attention_chunks_begin(&c, B, T, NH, NKV, budget);
	float *p = x.scratch(sf_attention_chunk_floats(&c, T, NH)); /* a chunk's probabilities */
	for (; sf_attention_chunks_more(&c); sf_attention_chunks_next(&c)) {
		int jn = c.jn, bn = c.bn, h0 = c.j0 * g;
		long long op = (long long)jn * sp;
		const float *row = qkv + (size_t)c.b0 * T * ld;
		const float *q = row + (size_t)h0 * hs, *k = row + C + (size_t)c.j0 * hs;
		const float *v = row + C + (size_t)(NKV + c.j0) * hs;
		float *yb = y + (size_t)c.b0 * T * C + (size_t)h0 * hs;
		sf_attention_scores(x, T, C, NH, NKV, jn, bn, q, k, p);
		x.softmax_rows(bn * jn * g, T, p, stat + ((size_t)c.b0 * NH + h0) * T * 2);
		/* Y (T, hs) = P V */
		for (int r = 0; r < g; r++)
			x.gemm(false, false, T, hs, T, 1.0f, p + (size_t)r * tt, T, sp, op, v, ld, hs,
			       orow, 0.0f, yb + (size_t)r * hs, C, sq, oy, jn, bn);
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
	long long tt = (long long)T * T, sq = (long long)g * hs, sp = (long long)g * tt;
	long long orow = (long long)T * ld, oy = (long long)T * C;
	/* dK and dV are sums over the queries (and a group's heads, in r order): from 0
	 * unless added to */
	if (!acc)
		x.zero_cols(dqkv + C, ld, ld - C, (size_t)B * T);
	/* a chunk's P, then its dP and dS: two scratches within the budget */
	struct sf_attention_chunk_it c;
	sf_attention_chunks_begin(&c, B, T, NH, NKV, budget / 2);
	size_t n = sf_attention_chunk_floats(&c, T, NH);
	float *p = x.scratch(n), *ds = x.scratch(n);
	for (; sf_attention_chunks_more(&c); sf_attention_chunks_next(&c)) {
		int jn = c.jn, bn = c.bn, h0 = c.j0 * g;
		long long op = (long long)jn * sp;
		size_t off = (size_t)c.b0 * T * ld;
		const float *q = qkv + off + (size_t)h0 * hs;
		const float *k = qkv + off + C + (size_t)c.j0 * hs;
		const float *v = qkv + off + C + (size_t)(NKV + c.j0) * hs;
		const float *dyb = dy + (size_t)c.b0 * T * C + (size_t)h0 * hs;
		float *dq = dqkv + off + (size_t)h0 * hs;
		float *dk = dqkv + off + C + (size_t)c.j0 * hs;
		float *dv = dqkv + off + C + (size_t)(NKV + c.j0) * hs;
		sf_attention_scores(x, T, C, NH, NKV, jn, bn, q, k, p);
		x.probs_rows(bn * jn * g, T, p, stat + ((size_t)c.b0 * NH + h0) * T * 2);
		for (int r = 0; r < g; r++) {
			const float *pr = p + (size_t)r * tt, *dyr = dyb + (size_t)r * hs;
			float *dsr = ds + (size_t)r * tt;
			/* dV (T, hs) += P^T dY */
			x.gemm(true, false, T, hs, T, 1.0f, pr, T, sp, op, dyr, C, sq, oy, 1.0f, dv, ld,
			       hs, orow, jn, bn);
			/* dP (T, T) = dY V^T */
			x.gemm(false, true, T, T, hs, 1.0f, dyr, C, sq, oy, v, ld, hs, orow, 0.0f, dsr, T,
			       sp, op, jn, bn);
		}
		x.softmax_bwd_rows(bn * jn * g, T, p, ds);
		for (int r = 0; r < g; r++) {
			const float *dsr = ds + (size_t)r * tt;
			/* dQ (=|+=) scale dS K */
			x.gemm(false, false, T, hs, T, scale, dsr, T, sp, op, k, ld, hs, orow,
			       acc ? 1.0f : 0.0f, dq + (size_t)r * hs, ld, sq, orow, jn, bn);
			/* dK += scale dS^T Q */
			x.gemm(true, false, T, hs, T, scale, dsr, T, sp, op, q + (size_t)r * hs, ld, sq,
			       orow, 1.0f, dk, ld, hs, orow, jn, bn);
		}
	}
	x.release(ds);
	x.release(p);
}

#endif
