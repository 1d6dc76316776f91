/*
 * attention_cpu.c — causal multi-head self-attention and its gradient on plain pointers
 * (OpenBLAS sgemm).
 *
 * Per sample and head, Q, K, V are strided views of the qkv rows (leading dimension 3C)
 * and Y, dY views of the output rows (C): nothing is copied. The queries go in blocks
 * of rb rows; block [i0, i1) meets keys [0, i1) only, so each GEMM is (i1 - i0) x i1
 * instead of T x T and the masked triangle costs about rb / T of the work instead of
 * half of it. The softmax's rows are layers/attention_math.h's (the GPU runs the same
 * functions). The probabilities' masked entries are written as exact zeros, so a block's
 * P V and dS K, which run over keys up to i1 - 1, add nothing for keys after the query.
 *
 * SF_ATTENTION_ROW_BLOCK (64 rows) balances the two costs of a block: smaller blocks
 * make GEMMs too small to run at speed, larger ones compute more of the masked triangle
 * (the timings behind the choice: docs/performance.md, "Choices in the code").
 *
 * Deterministic: the blocking depends on T alone, every sum is taken in a fixed order,
 * and OpenBLAS runs single-threaded inside a worker (sf_init), so the same inputs give
 * bitwise the same outputs.
 */
#include "layers/attention.h"
#include "layers/attention_math.h" /* the softmax rows, shared with the GPU */

#include <cblas.h>
#undef I /* OpenBLAS pulls in <complex.h> */
#include <math.h>
#include <string.h>

/* One sample's head: q, k, v and y point at its first row (leading dimensions ld = 3C
 * and C), p at its (T, T) probabilities. */
static void head_fwd(int T, int hs, int C, int rb, float scale, const float *q, const float *k,
                     const float *v, float *y, float *p)
{
	int ld = 3 * C;
	for (int i0 = 0; i0 < T; i0 += rb) {
		int i1 = i0 + rb < T ? i0 + rb : T, m = i1 - i0;
		float *pi = p + (size_t)i0 * T;
		/* S (m, i1) = scale Q[i0:i1] K[0:i1]^T */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, i1, hs, scale,
		            q + (size_t)i0 * ld, ld, k, ld, 0.0f, pi, T);
		for (int i = i0; i < i1; i++)
			sf_causal_softmax_row(p + (size_t)i * T, i, T);
		/* Y[i0:i1] (m, hs) = P[i0:i1, 0:i1] V[0:i1] */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hs, i1, 1.0f, pi, T, v,
		            ld, 0.0f, y + (size_t)i0 * C, C);
	}
}

void _sf_attention_fwd(int B, int T, int C, int NH, int rb, const float *qkv, float *y, float *p)
{
	int hs = C / NH;
	float scale = 1.0f / sqrtf((float)hs);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++) {
			const float *q = qkv + (size_t)b * T * 3 * C + (size_t)h * hs;
			head_fwd(T, hs, C, rb, scale, q, q + C, q + 2 * C,
			         y + (size_t)b * T * C + (size_t)h * hs,
			         p + ((size_t)b * NH + h) * T * T);
		}
}

/* dS = P (dP - rowsum(dP P)) for rows [i0, i1), in place in d (leading dimension i1);
 * masked entries, where P is 0, become 0. */
static void softmax_bwd_rows(int T, int i0, int i1, const float *p, float *d)
{
	for (int i = i0; i < i1; i++)
		sf_softmax_bwd_row(p + (size_t)i * T, d + (size_t)(i - i0) * i1, i, i1);
}

/* One sample's head, as head_fwd; dq, dk, dv point into dqkv (leading dimension 3C), dk
 * and dv are added to (the caller zeroed them or keeps what was there). */
static void head_bwd(int T, int hs, int C, int rb, float scale, const float *q, const float *k,
                     const float *v, const float *p, const float *dy, float *dq, float *dk,
                     float *dv, int acc, float *scratch)
{
	int ld = 3 * C;
	for (int i0 = 0; i0 < T; i0 += rb) {
		int i1 = i0 + rb < T ? i0 + rb : T, m = i1 - i0;
		const float *pi = p + (size_t)i0 * T, *dyi = dy + (size_t)i0 * C;
		/* dV[0:i1] += P[i0:i1, 0:i1]^T dY[i0:i1] */
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i1, hs, m, 1.0f, pi, T, dyi, C,
		            1.0f, dv, ld);
		/* dP (m, i1) = dY[i0:i1] V[0:i1]^T, in the scratch (leading dimension i1) */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, i1, hs, 1.0f, dyi, C, v, ld,
		            0.0f, scratch, i1);
		softmax_bwd_rows(T, i0, i1, p, scratch);
		/* dQ[i0:i1] (=|+=) scale dS K[0:i1]: a query row is in one block only */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hs, i1, scale, scratch,
		            i1, k, ld, acc ? 1.0f : 0.0f, dq + (size_t)i0 * ld, ld);
		/* dK[0:i1] += scale dS^T Q[i0:i1] */
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i1, hs, m, scale, scratch, i1,
		            q + (size_t)i0 * ld, ld, 1.0f, dk, ld);
	}
}

void _sf_attention_bwd(int B, int T, int C, int NH, int rb, const float *qkv, const float *p,
                       const float *dy, float *dqkv, int acc, float *scratch)
{
	int hs = C / NH, ld = 3 * C;
	float scale = 1.0f / sqrtf((float)hs);
	/* dK and dV are sums over the query blocks: start them from 0 unless added to */
	if (!acc)
		for (size_t r = 0; r < (size_t)B * T; r++)
			memset(dqkv + r * ld + C, 0, sizeof(float) * 2 * (size_t)C);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++) {
			size_t off = (size_t)b * T * ld + (size_t)h * hs;
			const float *q = qkv + off;
			float *dq = dqkv + off;
			head_bwd(T, hs, C, rb, scale, q, q + C, q + 2 * C,
			         p + ((size_t)b * NH + h) * T * T,
			         dy + (size_t)b * T * C + (size_t)h * hs, dq, dq + C, dq + 2 * C,
			         acc, scratch);
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
