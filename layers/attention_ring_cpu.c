/*
 * attention_ring_cpu.c — ring attention's parts (context parallelism) on plain pointers
 * (OpenBLAS sgemm): one rank's query rows against one key/value block at a time.
 *
 * With SHARDFLOW_CP=K a sequence is cut into 2K chunks and rank r holds chunks r and
 * 2K-1-r (causal balancing: every rank has as much of the triangle). Its rows are two
 * runs of consecutive positions (struct sf_attn_rows), and so are every block's: the
 * causal mask is by global position, and per pair of runs (query run x key run) it is
 * one of three cases: every key after every query (the pair is skipped, no GEMM),
 * every key at or before every query (no mask), or the pair straddles the diagonal
 * (a prefix of the key run per query row). Masked entries are written as exact zeros,
 * so the GEMMs over a whole key run add nothing for them.
 *
 * The forward is FlashAttention's online softmax across blocks: each query row keeps
 * its running max m, sum l and unnormalised output o, and a block rescales them by
 * e^(m - m') before adding its own; _end divides once and leaves (m, 1/l), the same
 * statistics _sf_attention_fwd saves, so the backward rebuilds each block's P from
 * them as attention_cpu.c does, without the blocks ever meeting again. The backward's
 * row sums (D = rowsum(dY Y)) are taken once from y, not per block, which is what
 * lets each block's gradient be computed alone.
 *
 * Deterministic as attention_cpu.c: the same vector exponential (exp_v4), sums in
 * double in a fixed order, the order of runs and heads fixed, OpenBLAS single-threaded
 * in a worker; the same inputs give bitwise the same outputs. Shape letters: B samples,
 * C features, NH query heads, NKV key/value heads, hs = C / NH.
 */
#include "common/vec4.h" /* exp_v4 */
#include "layers/attention.h"

#include <cblas.h>
#undef I /* OpenBLAS pulls in <complex.h> */
#include <math.h>
#include <string.h>

/* Run k (0 or 1) of a row set: its first local row, its length (0: absent), the
 * position of its first row. */
struct run {
	int off, len, pos;
};

static struct run run_of(struct sf_attn_rows r, int k)
{
	if (k == 0)
		return (struct run){0, r.n0 < r.n ? r.n0 : r.n, r.p0};
	return (struct run){r.n0, r.n > r.n0 ? r.n - r.n0 : 0, r.p1};
}

/* The keys of run kr that query i of run qr sees: a prefix of the run, 0 .. len. */
static int visible(struct run qr, int i, struct run kr)
{
	int c = qr.pos + i - kr.pos + 1;
	return c < 0 ? 0 : c < kr.len ? c : kr.len;
}

/* Whether any query of qr sees any key of kr (else the pair is skipped). */
static int pair_live(struct run qr, struct run kr)
{
	return qr.len > 0 && kr.len > 0 && kr.pos <= qr.pos + qr.len - 1;
}

/* e^x through the same exponential (one lane); e^-inf = 0, which exp_v4 clamps */
static float exp1(float x)
{
	if (x == -INFINITY)
		return 0.0f;
	float r;
	store_tail(&r, exp_v4(v4f_set(x)), 1);
	return r;
}

/* The double sum of s[0..n) in 4 partial sums in a fixed order, added to *acc. */
static void sum4(const float *s, int n, double *acc)
{
	double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
	int j = 0;
	for (; j + 4 <= n; j += 4)
		a0 += s[j], a1 += s[j + 1], a2 += s[j + 2], a3 += s[j + 3];
	for (; j < n; j++)
		a0 += s[j];
	*acc += (a0 + a1) + (a2 + a3);
}

/* The column offsets of query head h and its key and value heads in kv. */
static void head_cols(int h, int hs, int NH, int NKV, size_t *q, size_t *k, size_t *v)
{
	int g = h / (NH / NKV);
	*q = (size_t)h * hs;
	*k = (size_t)g * hs;
	*v = (size_t)NKV * hs + (size_t)g * hs;
}

size_t _sf_attention_part_scratch(int nq, int nk)
{
	/* the backward's P and dP (nq x nk each); the forward uses the first */
	return 2 * (size_t)(nq > 0 ? nq : 1) * (size_t)(nk > 0 ? nk : 1);
}

void _sf_attention_part_begin(int B, int nq, int C, int NH, float *o, float *ml)
{
	memset(o, 0, sizeof(float) * (size_t)B * nq * C);
	for (size_t r = 0; r < (size_t)B * NH * nq; r++)
		ml[2 * r] = -INFINITY, ml[2 * r + 1] = 0.0f;
}

/* S (qr.len, nk: the block's keys, leading dimension nk) = scale Q K^T over the live
 * key runs; the other key runs' columns are left for the row pass to zero. */
static void scores(struct run qr, struct sf_attn_rows kr, int hs, float scale, const float *q,
                   int ldq, const float *k, int ldkv, float *s)
{
	for (int t = 0; t < 2; t++) {
		struct run r = run_of(kr, t);
		if (pair_live(qr, r))
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, qr.len, r.len, hs,
			            scale, q + (size_t)qr.off * ldq, ldq, k + (size_t)r.off * ldkv,
			            ldkv, 0.0f, s + r.off, kr.n);
	}
}

/* One score row of the forward: its block max over the visible keys, their
 * exponentials against the new running max, exact zeros elsewhere; the running
 * statistics ml and the output row o (hs floats) rescaled. */
static void fwd_row(float *s, struct run qr, int i, struct sf_attn_rows kr, float *ml, float *o,
                    int hs)
{
	struct run r0 = run_of(kr, 0), r1 = run_of(kr, 1);
	int c0 = visible(qr, i, r0), c1 = visible(qr, i, r1);
	float mx = ml[0];
	for (int j = 0; j < c0; j++)
		mx = s[r0.off + j] > mx ? s[r0.off + j] : mx;
	for (int j = 0; j < c1; j++)
		mx = s[r1.off + j] > mx ? s[r1.off + j] : mx;
	double sum = 0.0;
	if (c0 + c1 > 0) {
		float alpha = exp1(ml[0] - mx);
		exp_shifted_v4(s + r0.off, c0, mx);
		exp_shifted_v4(s + r1.off, c1, mx);
		sum4(s + r0.off, c0, &sum);
		sum4(s + r1.off, c1, &sum);
		ml[1] = (float)((double)ml[1] * alpha + sum);
		ml[0] = mx;
		if (alpha != 1.0f)
			for (int e = 0; e < hs; e++)
				o[e] *= alpha;
	}
	for (int j = c0; j < r0.len; j++)
		s[r0.off + j] = 0.0f;
	for (int j = c1; j < r1.len; j++)
		s[r1.off + j] = 0.0f;
}

/* One sample's query head against one key/value head of the block. */
static void head_part_fwd(int hs, int C, float scale, struct sf_attn_rows qr, const float *q,
                          int ldq, struct sf_attn_rows kr, const float *k, const float *v, int ldkv,
                          float *o, float *ml, float *s)
{
	for (int u = 0; u < 2; u++) {
		struct run r = run_of(qr, u);
		if (!pair_live(r, run_of(kr, 0)) && !pair_live(r, run_of(kr, 1)))
			continue;
		scores(r, kr, hs, scale, q, ldq, k, ldkv, s);
		for (int i = 0; i < r.len; i++)
			fwd_row(s + (size_t)i * kr.n, r, i, kr, ml + (size_t)(r.off + i) * 2,
			        o + (size_t)(r.off + i) * C, hs);
		/* O[run] += P V over the live key runs (the rows already rescaled) */
		for (int t = 0; t < 2; t++) {
			struct run kt = run_of(kr, t);
			if (pair_live(r, kt))
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r.len, hs,
				            kt.len, 1.0f, s + kt.off, kr.n,
				            v + (size_t)kt.off * ldkv, ldkv, 1.0f,
				            o + (size_t)r.off * C, C);
		}
	}
}

void _sf_attention_part_fwd(int B, int C, int NH, int NKV, struct sf_attn_rows qr, const float *q,
                            int ldq, struct sf_attn_rows kr, const float *kv, int ldkv, float *o,
                            float *ml, float *scratch)
{
	int hs = C / NH;
	float scale = 1.0f / sqrtf((float)hs);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++) {
			size_t oq, ok, ov;
			head_cols(h, hs, NH, NKV, &oq, &ok, &ov);
			const float *kb = kv + (size_t)b * kr.n * ldkv;
			head_part_fwd(hs, C, scale, qr, q + (size_t)b * qr.n * ldq + oq, ldq, kr,
			              kb + ok, kb + ov, ldkv, o + (size_t)b * qr.n * C + oq,
			              ml + ((size_t)b * NH + h) * qr.n * 2, scratch);
		}
}

void _sf_attention_part_end(int B, int nq, int C, int NH, float *o, float *ml)
{
	int hs = C / NH;
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int i = 0; i < nq; i++) {
				float *st = ml + (((size_t)b * NH + h) * nq + i) * 2;
				/* a row that met no key keeps y = 0 and P = 0 in the backward */
				float inv = st[1] > 0.0f ? (float)(1.0 / (double)st[1]) : 0.0f;
				float *y = o + ((size_t)b * nq + i) * C + (size_t)h * hs;
				for (int e = 0; e < hs; e++)
					y[e] *= inv;
				st[1] = inv;
			}
}

void _sf_attention_dsum(int B, int nq, int C, int NH, const float *y, const float *dy, float *dsum)
{
	int hs = C / NH;
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int i = 0; i < nq; i++) {
				size_t at = ((size_t)b * nq + i) * C + (size_t)h * hs;
				double a = 0.0;
				for (int e = 0; e < hs; e++)
					a += (double)dy[at + e] * y[at + e];
				dsum[((size_t)b * NH + h) * nq + i] = (float)a;
			}
}

/* One row of the backward: P from the scores and the forward's (m, 1/l) over the
 * visible keys, exact zeros elsewhere (p); dS = P (dP - D) in place of dP (d). */
static void bwd_row(float *p, float *d, struct run qr, int i, struct sf_attn_rows kr,
                    const float *st, float D)
{
	for (int t = 0; t < 2; t++) {
		struct run r = run_of(kr, t);
		int c = visible(qr, i, r);
		exp_shifted_v4(p + r.off, c, st[0]);
		for (int j = 0; j < c; j++) {
			p[r.off + j] *= st[1];
			d[r.off + j] = p[r.off + j] * (d[r.off + j] - D);
		}
		for (int j = c; j < r.len; j++)
			p[r.off + j] = 0.0f, d[r.off + j] = 0.0f;
	}
}

/* The pointers of one sample's query head: q, dq, dy, its stat and dsum rows; of the
 * block's key/value head: k, v, dk, dv. */
struct head_ptrs {
	const float *q, *stat, *dsum, *dy, *k, *v;
	float *dq, *dk, *dv;
};

static void head_part_bwd(int hs, int C, float scale, struct sf_attn_rows qr, int ldq, int lddq,
                          struct sf_attn_rows kr, int ldkv, int lddkv, struct head_ptrs x, float *p,
                          float *d)
{
	for (int u = 0; u < 2; u++) {
		struct run r = run_of(qr, u);
		if (!pair_live(r, run_of(kr, 0)) && !pair_live(r, run_of(kr, 1)))
			continue;
		const float *qu = x.q + (size_t)r.off * ldq, *dyu = x.dy + (size_t)r.off * C;
		scores(r, kr, hs, scale, x.q, ldq, x.k, ldkv, p);
		/* dP (r.len, nk) = dY V^T over the live key runs */
		for (int t = 0; t < 2; t++) {
			struct run kt = run_of(kr, t);
			if (pair_live(r, kt))
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r.len, kt.len,
				            hs, 1.0f, dyu, C, x.v + (size_t)kt.off * ldkv, ldkv,
				            0.0f, d + kt.off, kr.n);
		}
		for (int i = 0; i < r.len; i++)
			bwd_row(p + (size_t)i * kr.n, d + (size_t)i * kr.n, r, i, kr,
			        x.stat + (size_t)(r.off + i) * 2, x.dsum[r.off + i]);
		for (int t = 0; t < 2; t++) {
			struct run kt = run_of(kr, t);
			if (!pair_live(r, kt))
				continue;
			const float *pt = p + kt.off, *dt = d + kt.off;
			size_t ko = (size_t)kt.off;
			/* dV[kt] += P^T dY, dQ[r] += scale dS K[kt], dK[kt] += scale dS^T Q[r] */
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kt.len, hs, r.len,
			            1.0f, pt, kr.n, dyu, C, 1.0f, x.dv + ko * lddkv, lddkv);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r.len, hs, kt.len,
			            scale, dt, kr.n, x.k + ko * ldkv, ldkv, 1.0f,
			            x.dq + (size_t)r.off * lddq, lddq);
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kt.len, hs, r.len,
			            scale, dt, kr.n, qu, ldq, 1.0f, x.dk + ko * lddkv, lddkv);
		}
	}
}

void _sf_attention_part_bwd(int B, int C, int NH, int NKV, struct sf_attn_rows qr, const float *q,
                            int ldq, const float *stat, const float *dsum, const float *dy,
                            struct sf_attn_rows kr, const float *kv, int ldkv, float *dq, int lddq,
                            float *dkv, int lddkv, float *scratch)
{
	int hs = C / NH;
	float scale = 1.0f / sqrtf((float)hs);
	float *p = scratch, *d = scratch + (size_t)(qr.n > 0 ? qr.n : 1) * (kr.n > 0 ? kr.n : 1);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++) {
			size_t oq, ok, ov, sr = ((size_t)b * NH + h) * qr.n;
			head_cols(h, hs, NH, NKV, &oq, &ok, &ov);
			const float *kb = kv + (size_t)b * kr.n * ldkv;
			float *dkb = dkv + (size_t)b * kr.n * lddkv;
			struct head_ptrs x = {
			    q + (size_t)b * qr.n * ldq + oq,   stat + 2 * sr, dsum + sr,
			    dy + (size_t)b * qr.n * C + oq,    kb + ok,       kb + ov,
			    dq + (size_t)b * qr.n * lddq + oq, dkb + ok,      dkb + ov};
			head_part_bwd(hs, C, scale, qr, ldq, lddq, kr, ldkv, lddkv, x, p, d);
		}
}

double _sf_attention_part_flops(int B, int C, struct sf_attn_rows qr, struct sf_attn_rows kr)
{
	/* per head: 2 hs for an entry's score and 2 hs for its share of P V; the heads
	 * together make hs NH = C */
	double e = 0.0;
	for (int u = 0; u < 2; u++)
		for (int t = 0; t < 2; t++) {
			struct run r = run_of(qr, u), k = run_of(kr, t);
			for (int i = 0; pair_live(r, k) && i < r.len; i++)
				e += visible(r, i, k);
		}
	return 4.0 * e * C * B;
}
