/*
 * attention_cpu.c — causal multi-head self-attention and its gradient on plain pointers
 * (OpenBLAS sgemm).
 *
 * Per sample and head, Q, K, V are strided views of the qkv rows (leading dimension 3C)
 * and Y, dY views of the output rows (C): nothing is copied. The queries go in blocks
 * of rb rows; block [i0, i1) meets keys [0, i1) only, so each GEMM is (i1 - i0) x i1
 * instead of T x T and the masked triangle costs about rb / T of the work instead of
 * half of it. The probabilities' masked entries are written as exact zeros, so a block's
 * P V and dS K, which run over keys up to i1 - 1, add nothing for keys after the query.
 *
 * A block's probabilities live in a scratch of rb x T floats and are dropped after its
 * P V: the forward keeps two floats per query row (the row's max and the inverse of its
 * sum), and the backward computes the block's scores again and rebuilds P from them,
 * bitwise the forward's. This is FlashAttention's trade (Dao et al., 2022): one more
 * GEMM per block in the backward (five products where the forward has two) for memory
 * in T instead of T^2 per head, which is what lets a context of 8192 train (Llama 3 8B
 * held 32 x 8192^2 floats, 8 GiB per sample and layer, of probabilities).
 *
 * SF_ATTENTION_ROW_BLOCK (64 rows) balances the two costs of a block: smaller blocks
 * make GEMMs too small to run at speed, larger ones compute more of the masked triangle
 * (the timings behind the choice: docs/performance.md, "Choices in the code").
 *
 * Deterministic: the blocking depends on T alone, every sum is taken in a fixed order,
 * and OpenBLAS runs single-threaded inside a worker (sf_init), so the same inputs give
 * bitwise the same outputs.
 */
#include "common/vec4.h" /* exp_v4 */
#include "layers/attention.h"
#include "layers/attention_math.h" /* the softmax backward's rows */

#include <cblas.h>
#undef I /* OpenBLAS pulls in <complex.h> */
#include <math.h>
#include <string.h>

/* A probability row's last steps: its exponentials s[0..i] times the inverse sum, exact
 * zeros after the query */
static inline void scale_and_mask(float *s, int i, int n, float inv)
{
	for (int j = 0; j <= i; j++)
		s[j] *= inv;
	for (int j = i + 1; j < n; j++)
		s[j] = 0.0f;
}

/* The max in 4 lanes, the exponentials before their sum (a sum carried across the
 * exponentials is spilled at every element), the sum in double in 4 partial sums in a
 * fixed order (what each of these gained: docs/performance.md, "Choices in the code"). */
void _sf_attention_softmax_row(float *s, int i, int n, float *stat)
{
	float m0 = s[0], m1 = s[0], m2 = s[0], m3 = s[0];
	int j = 1;
	for (; j + 3 <= i; j += 4) {
		m0 = s[j] > m0 ? s[j] : m0;
		m1 = s[j + 1] > m1 ? s[j + 1] : m1;
		m2 = s[j + 2] > m2 ? s[j + 2] : m2;
		m3 = s[j + 3] > m3 ? s[j + 3] : m3;
	}
	for (; j <= i; j++)
		m0 = s[j] > m0 ? s[j] : m0;
	float mx = fmaxf(fmaxf(m0, m1), fmaxf(m2, m3));
	exp_shifted_v4(s, i + 1, mx);
	double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
	for (j = 0; j + 3 <= i; j += 4) {
		a0 += s[j];
		a1 += s[j + 1];
		a2 += s[j + 2];
		a3 += s[j + 3];
	}
	for (; j <= i; j++)
		a0 += s[j];
	double sum = (a0 + a1) + (a2 + a3);
	/* sum >= 1 (the max's own term), so the division is safe */
	float inv = (float)(1.0 / sum);
	scale_and_mask(s, i, n, inv);
	stat[0] = mx;
	stat[1] = inv;
}

/* the forward's operations on each entry again: the same exponential, the same product */
void _sf_attention_probs_row(float *s, int i, int n, const float *stat)
{
	exp_shifted_v4(s, i + 1, stat[0]);
	scale_and_mask(s, i, n, stat[1]);
}

/* One sample's head: q, k, v and y point at its first row (leading dimensions ld, the
 * qkv width, and C), stat at its (T, 2) row statistics; scratch holds a block's
 * probabilities, min(rb, T) x T floats. */
static void head_fwd(int T, int hs, int ld, int C, int rb, float scale, const float *q,
                     const float *k, const float *v, float *y, float *stat, float *scratch)
{
	for (int i0 = 0; i0 < T; i0 += rb) {
		int i1 = i0 + rb < T ? i0 + rb : T, m = i1 - i0;
		/* S (m, i1) = scale Q[i0:i1] K[0:i1]^T, leading dimension i1 */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, i1, hs, scale,
		            q + (size_t)i0 * ld, ld, k, ld, 0.0f, scratch, i1);
		for (int i = i0; i < i1; i++)
			_sf_attention_softmax_row(scratch + (size_t)(i - i0) * i1, i, i1,
			                      stat + (size_t)i * 2);
		/* Y[i0:i1] (m, hs) = P[i0:i1, 0:i1] V[0:i1] */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hs, i1, 1.0f, scratch, i1,
		            v, ld, 0.0f, y + (size_t)i0 * C, C);
	}
}

/* Query head h of a row of qkv reads key and value head h / (NH / NKV) (Hugging Face's
 * repeat_kv: each key/value head serves NH / NKV consecutive query heads): the
 * offsets of its q, k and v columns. */
static void head_cols(int h, int hs, int C, int NH, int NKV, size_t *q, size_t *k, size_t *v)
{
	int kv = h / (NH / NKV);
	*q = (size_t)h * hs;
	*k = (size_t)C + (size_t)kv * hs;
	*v = (size_t)C + (size_t)NKV * hs + (size_t)kv * hs;
}

void _sf_attention_fwd(int B, int T, int C, int NH, int NKV, int rb, const float *qkv, float *y,
                       float *stat, float *scratch)
{
	int hs = C / NH, ld = C + 2 * NKV * hs;
	float scale = 1.0f / sqrtf((float)hs);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++) {
			const float *row = qkv + (size_t)b * T * ld;
			size_t oq, ok, ov;
			head_cols(h, hs, C, NH, NKV, &oq, &ok, &ov);
			head_fwd(T, hs, ld, C, rb, scale, row + oq, row + ok, row + ov,
			         y + (size_t)b * T * C + (size_t)h * hs,
			         stat + ((size_t)b * NH + h) * T * 2, scratch);
		}
}

/* One sample's head, as head_fwd; dq, dk, dv point into dqkv (leading dimension ld), dk
 * and dv are added to (the caller zeroed them or keeps what was there; with grouped
 * heads, the query heads of a group add to their key/value head's in head order).
 * scratch holds two blocks of min(rb, T) x T floats: the probabilities, rebuilt from the
 * scores and the forward's row statistics (bitwise the forward's), and dP, then dS. */
static void head_bwd(int T, int hs, int ld, int C, int rb, float scale, const float *q,
                     const float *k, const float *v, const float *stat, const float *dy,
                     float *dq, float *dk, float *dv, int acc, float *scratch)
{
	int brb = rb < T ? rb : T;
	float *p = scratch, *d = scratch + (size_t)brb * T;
	for (int i0 = 0; i0 < T; i0 += rb) {
		int i1 = i0 + rb < T ? i0 + rb : T, m = i1 - i0;
		const float *dyi = dy + (size_t)i0 * C;
		/* P (m, i1): the forward's scores again, then its rows from their statistics */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, i1, hs, scale,
		            q + (size_t)i0 * ld, ld, k, ld, 0.0f, p, i1);
		for (int i = i0; i < i1; i++)
			_sf_attention_probs_row(p + (size_t)(i - i0) * i1, i, i1, stat + (size_t)i * 2);
		/* dV[0:i1] += P[i0:i1, 0:i1]^T dY[i0:i1] */
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i1, hs, m, 1.0f, p, i1, dyi, C,
		            1.0f, dv, ld);
		/* dP (m, i1) = dY[i0:i1] V[0:i1]^T (leading dimension i1) */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, i1, hs, 1.0f, dyi, C, v, ld,
		            0.0f, d, i1);
		/* dS = P (dP - rowsum(dP P)) in place; masked entries, where P is 0, become 0 */
		for (int i = i0; i < i1; i++)
			sf_softmax_bwd_row(p + (size_t)(i - i0) * i1, d + (size_t)(i - i0) * i1, i,
			                   i1);
		/* dQ[i0:i1] (=|+=) scale dS K[0:i1]: a query row is in one block only */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hs, i1, scale, d, i1, k,
		            ld, acc ? 1.0f : 0.0f, dq + (size_t)i0 * ld, ld);
		/* dK[0:i1] += scale dS^T Q[i0:i1] */
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i1, hs, m, scale, d, i1,
		            q + (size_t)i0 * ld, ld, 1.0f, dk, ld);
	}
}

void _sf_attention_bwd(int B, int T, int C, int NH, int NKV, int rb, const float *qkv,
                       const float *stat, const float *dy, float *dqkv, int acc, float *scratch)
{
	int hs = C / NH, ld = C + 2 * NKV * hs;
	float scale = 1.0f / sqrtf((float)hs);
	/* dK and dV are sums over the query blocks (and a group's heads): start them from 0
	 * unless added to */
	if (!acc)
		for (size_t r = 0; r < (size_t)B * T; r++)
			memset(dqkv + r * ld + C, 0, sizeof(float) * (size_t)(ld - C));
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++) {
			size_t row = (size_t)b * T * ld, oq, ok, ov;
			head_cols(h, hs, C, NH, NKV, &oq, &ok, &ov);
			head_bwd(T, hs, ld, C, rb, scale, qkv + row + oq, qkv + row + ok,
			         qkv + row + ov, stat + ((size_t)b * NH + h) * T * 2,
			         dy + (size_t)b * T * C + (size_t)h * hs, dqkv + row + oq,
			         dqkv + row + ok, dqkv + row + ov, acc, scratch);
		}
}

double _sf_attention_fwd_flops(int B, int T, int C, int rb)
{
	/* per head and block: S is (m, i1) over hs, Y (m, hs) over i1: 2 * 2 m i1 hs; the
	 * heads together make hs * NH = C */
	double f = 0.0;
	for (int i0 = 0; i0 < T; i0 += rb) {
		int i1 = i0 + rb < T ? i0 + rb : T;
		f += 4.0 * (double)(i1 - i0) * i1 * C;
	}
	return f * B;
}
