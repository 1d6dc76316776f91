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
 * means nothing), NaN for NaN. Layernorm's and RMSNorm's rows and columns, the loss's
 * rows and their sum, the embeddings' and the bias's gradient columns, through nvcc,
 * must equal the CPU kernels bitwise (the same sums in the same order). The GPU's
 * normalisation and column kernels sum the same terms in another order (a warp per
 * row, 32 row groups per column: common/cuda_reduce.cuh), which tests/gpu_step.sh
 * checks on a GPU (rtol 1e-4). SiLU and the element-wise product agree bitwise. The
 * regression losses (MSE, L1, Huber: layers/loss_math.h) as layers/loss_cuda.cu runs
 * them, a term and a derivative per element then the terms summed in order, equal the
 * CPU kernel bitwise: the gradient and the loss.
 * Attention's GPU plan (layers/attention_plan.h: the whole T x T, heads in strided
 * batches repeated over a chunk's samples) runs here with a reference GEMM and must equal
 * the CPU kernel (row blocks, OpenBLAS) to 1e-5 of the largest value, forward and
 * backward, = and +=, with the whole batch in one chunk, with chunks of two samples and a
 * shorter last one, and with a key/value group a chunk.
 * Built and run only when configure found CUDA; no GPU is needed.
 */
#include "layers/add_math.h"
#include "layers/attention_math.h"
#include "layers/attention_plan.h"
#include "layers/embedding_math.h"
#include "layers/gelu_math.h"
#include "layers/layernorm_math.h"
#include "layers/linear_math.h"
#include "layers/loss_math.h"
#include "layers/relu_math.h"
#include "layers/rmsnorm_math.h"
#include "layers/rope_math.h"
#include "layers/silu_math.h"
#include "layers/softmax_xent_math.h"
#include "tasks/optim_math.h"
/* the optimizers' elements as nvcc builds them (tasks/optimizers/), and each one's
 * number of state vectors */
#define SF_OPTIMIZER(name, nstate, flops) enum { name##_nstate = (nstate) };
#include "tasks/optimizers/list.h"
#include "common/bf16.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

extern "C" {
#include "layers/add.h"
#include "layers/attention.h"
#include "layers/embedding.h"
#include "layers/gelu.h"
#include "layers/layernorm.h"
#include "layers/linear.h"
#include "layers/loss.h"
#include "layers/pos_embedding.h"
#include "layers/relu.h"
#include "layers/rmsnorm.h"
#include "layers/rope.h"
#include "layers/silu.h"
#include "layers/softmax_xent.h"
#include "tests/tap.h"
/* the optimizers' CPU loops, gcc's build (tasks/optim_cpu.c) */
#define OPT_LOOP(name, NAME)                                                                       \
	void _sf_opt_cpu_##name(size_t n, float *p, const float *g, float *s0, float *s1,          \
	                        const struct _sf_opt_hyper *h, float scale, const double *clip);
SF_OPTIMIZER_LIST(OPT_LOOP)
#undef OPT_LOOP
void _sf_adamw_corrections(float b1, float b2, int64_t t, float *c1, float *c2);
void _sf_bf16_round_n(size_t n, const float *src, uint16_t *dst);
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
static double max_err(const float *a, const float *b, const float *s, size_t n, int *nan_mismatch)
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

/* The attention plan's executor on the host: a reference GEMM (double sums) and loops. */
struct host_exec {
	void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *A, int lda,
	          long long sA, long long oA, const float *B, int ldb, long long sB, long long oB,
	          float beta, float *C, int ldc, long long sC, long long oC, int count, int outer)
	{
		for (int i = 0; i < count * outer; i++) {
			int o = i / count, ci = i % count;
			const float *a = A + o * oA + ci * sA, *b = B + o * oB + ci * sB;
			float *c = C + o * oC + ci * sC;
			for (int r = 0; r < m; r++)
				for (int j = 0; j < n; j++) {
					double acc = 0.0;
					for (int t = 0; t < k; t++)
						acc += (double)(ta ? a[(size_t)t * lda + r]
						                   : a[(size_t)r * lda + t]) *
						       (tb ? b[(size_t)j * ldb + t]
						           : b[(size_t)t * ldb + j]);
					float *o = &c[(size_t)r * ldc + j];
					*o = (float)(alpha * acc +
					             (beta != 0.0f ? (double)beta * *o : 0.0));
				}
		}
	}
	void softmax_rows(int NH, int T, float *p, float *stat)
	{
		for (size_t r = 0; r < (size_t)NH * T; r++)
			_sf_attention_softmax_row(p + r * T, (int)(r % T), T, stat + 2 * r);
	}
	void probs_rows(int NH, int T, float *p, const float *stat)
	{
		for (size_t r = 0; r < (size_t)NH * T; r++)
			_sf_attention_probs_row(p + r * T, (int)(r % T), T, stat + 2 * r);
	}
	void softmax_bwd_rows(int NH, int T, const float *p, float *d)
	{
		for (size_t r = 0; r < (size_t)NH * T; r++)
			sf_softmax_bwd_row(p + r * T, d + r * T, (int)(r % T), T);
	}
	void zero_cols(float *base, int ld, int width, size_t rows)
	{
		for (size_t r = 0; r < rows; r++)
			memset(base + r * ld, 0, sizeof(float) * (size_t)width);
	}
	float *scratch(size_t n)
	{
		return (float *)malloc(sizeof(float) * n);
	}
	void release(float *p)
	{
		free(p);
	}
};

static float *vec(size_t n, float lo, float hi)
{
	float *v = (float *)malloc(sizeof(float) * n);
	for (size_t i = 0; i < n; i++)
		v[i] = uniform(lo, hi);
	return v;
}

static float *copy(const float *a, size_t n)
{
	float *v = (float *)malloc(sizeof(float) * n);
	memcpy(v, a, sizeof(float) * n);
	return v;
}

static double max_diff(const float *a, const float *b, size_t n, double *scale)
{
	double m = 0.0;
	*scale = 0.0;
	for (size_t i = 0; i < n; i++) {
		m = fmax(m, fabs((double)a[i] - b[i]));
		*scale = fmax(*scale, fabs((double)b[i]));
	}
	return m;
}

static void test_rows(void)
{
	/* layernorm: rows forward and dx, columns dw/db (from 0, then added to) */
	enum { R = 37, C = 19 };
	float *x = vec(R * C, -2, 2), *w = vec(C, 0.5f, 1.5f), *b = vec(C, -1, 1),
	      *dy = vec(R * C, -1, 1);
	float y1[R * C], y2[R * C], m1[R], m2[R], s1[R], s2[R];
	_sf_layernorm_fwd(R, C, x, w, b, 1e-5f, y1, m1, s1);
	for (int r = 0; r < R; r++)
		sf_layernorm_row_fwd(C, x + r * C, w, b, 1e-5f, y2 + r * C, &m2[r], &s2[r]);
	int same = same_bits(y1, y2, R * C) && same_bits(m1, m2, R) && same_bits(s1, s2, R);
	float *dx1 = vec(R * C, -1, 1), *dx2 = copy(dx1, R * C), dw1[C], db1[C], dw2[C], db2[C];
	for (int pacc = 0; pacc <= 1; pacc++) {
		for (int c = 0; c < C; c++)
			dw1[c] = dw2[c] = 0.25f * c, db1[c] = db2[c] = -0.5f * c;
		_sf_layernorm_bwd(R, C, x, w, m1, s1, dy, dx1, pacc, dw1, db1, pacc);
		for (int c = 0; c < C; c++) { /* the header's terms, each column's rows in order */
			float ww = pacc ? dw2[c] : 0.0f, bb = pacc ? db2[c] : 0.0f;
			for (int r = 0; r < R; r++)
				sf_layernorm_dparam_add(x[r * C + c], dy[r * C + c], m1[r], s1[r],
				                        &ww, &bb);
			dw2[c] = ww, db2[c] = bb;
		}
		for (int r = 0; r < R; r++)
			sf_layernorm_row_dx(C, x + r * C, w, m1[r], s1[r], dy + r * C, dx2 + r * C,
			                    pacc);
		same &=
		    same_bits(dx1, dx2, R * C) && same_bits(dw1, dw2, C) && same_bits(db1, db2, C);
	}
	ok(same, "layernorm: the GPU's rows (forward, dx) and columns (dw, db, = and +=) = the CPU "
	         "kernel, bitwise");

	/* rmsnorm: the same */
	float z1[R * C], z2[R * C], r1[R], r2[R];
	_sf_rmsnorm_fwd(R, C, x, w, 1e-6f, z1, r1);
	for (int r = 0; r < R; r++)
		sf_rmsnorm_row_fwd(C, x + r * C, w, 1e-6f, z2 + r * C, &r2[r]);
	same = same_bits(z1, z2, R * C) && same_bits(r1, r2, R);
	for (int pacc = 0; pacc <= 1; pacc++) {
		for (int c = 0; c < C; c++)
			dw1[c] = dw2[c] = 0.25f * c;
		_sf_rmsnorm_bwd(R, C, x, w, r1, dy, dx1, pacc, dw1, pacc);
		for (int c = 0; c < C; c++) {
			float ww = pacc ? dw2[c] : 0.0f;
			for (int r = 0; r < R; r++)
				sf_rmsnorm_dw_add(x[r * C + c], dy[r * C + c], r1[r], &ww);
			dw2[c] = ww;
		}
		for (int r = 0; r < R; r++)
			sf_rmsnorm_row_dx(C, x + r * C, w, r1[r], dy + r * C, dx2 + r * C, pacc);
		same &= same_bits(dx1, dx2, R * C) && same_bits(dw1, dw2, C);
	}
	ok(same, "rmsnorm: the header's rows (forward, dx) and columns (dw, = and +=) = the CPU "
	         "kernel, bitwise");

	/* rope: the table and the rows, forward and inverse (+=), as the GPU's kernels run
	 * them; 3 heads of 6 rotated (q 2, k 1) of a row of R = 37 > 18 */
	{
		enum { TT = 5, BB = 2, D = 6, ROT = 18 };
		float cs1[TT * D], cs2[TT * D], o1[BB * TT * R], o2[BB * TT * R];
		float *in = vec(BB * TT * R, -2, 2);
		_sf_rope_fwd(BB, TT, R, ROT, D, 500000.0f, in, o1, cs1);
		for (int t = 0; t < TT; t++)
			for (int i = 0; i < D / 2; i++)
				sf_rope_cs(t, i, D, 500000.0f, &cs2[t * D + i],
				           &cs2[t * D + D / 2 + i]);
		for (int r = 0; r < BB * TT; r++)
			sf_rope_row(R, ROT, D, cs2 + (r % TT) * D, 1.0f, in + r * R, o2 + r * R, 0);
		same = same_bits(cs1, cs2, TT * D) && same_bits(o1, o2, BB * TT * R);
		_sf_rope_bwd(BB, TT, R, ROT, D, cs1, in, o1, 1);
		for (int r = 0; r < BB * TT; r++)
			sf_rope_row(R, ROT, D, cs2 + (r % TT) * D, -1.0f, in + r * R, o2 + r * R,
			            1);
		same &= same_bits(o1, o2, BB * TT * R);
		/* the GPU's column form, a column at a time in reverse order */
		float g1[BB * TT * R], g2[BB * TT * R];
		_sf_rope_fwd(BB, TT, R, ROT, D, 500000.0f, in, o1, cs1);
		memcpy(g2, o1, sizeof g2); /* the base the inverse adds to */
		for (int r = 0; r < BB * TT; r++)
			for (int j = R - 1; j >= 0; j--)
				sf_rope_col(ROT, D, cs2 + (r % TT) * D, 1.0f, in + r * R,
				            g1 + r * R, 0, j);
		same &= same_bits(o1, g1, BB * TT * R);
		_sf_rope_bwd(BB, TT, R, ROT, D, cs1, in, o1, 1);
		for (int r = 0; r < BB * TT; r++)
			for (int j = R - 1; j >= 0; j--)
				sf_rope_col(ROT, D, cs2 + (r % TT) * D, -1.0f, in + r * R,
				            g2 + r * R, 1, j);
		same &= same_bits(o1, g2, BB * TT * R);
		ok(same, "rope: the header's table, rows and GPU columns (forward, inverse +=) = "
		         "the CPU kernel, bitwise");
		free(in);
	}

	/* the loss: rows, then their terms summed in order */
	int32_t lab[R];
	for (int r = 0; r < R; r++)
		lab[r] = (r * 7) % C;
	float dz1[R * C], dz2[R * C];
	double l1 = _sf_softmax_xent(R, C, x, lab, -100 /* no label ignored */, 1.0f / R, dz1), terms[R], l2 = 0.0;
	for (int r = 0; r < R; r++)
		terms[r] = sf_softmax_xent_row(C, x + r * C, lab[r], 1.0f / R, dz2 + r * C);
	for (int r = 0; r < R; r++)
		l2 += terms[r];
	l2 *= 1.0f / R;
	ok(same_bits(dz1, dz2, R * C) && memcmp(&l1, &l2, sizeof l1) == 0,
	   "softmax cross-entropy: the header's rows (sf_exp_poly: the GPU's exponentials) and "
	   "in-order sum = the CPU kernel, bitwise (loss "
	   "%.17g, %.17g)",
	   l1, l2);

	/* embedding dW by columns (ids repeat), pos_embedding dW by (t, c), linear db by columns */
	enum { V = 7, T = 5, NB = 4 };
	int32_t ids[R];
	for (int r = 0; r < R; r++)
		ids[r] = (r * 3) % V;
	float *e1 = vec(V * C, -1, 1), *e2 = copy(e1, V * C), *e3 = copy(e1, V * C);
	_sf_embedding_bwd(R, V, C, ids, dy, e1, 1);
	for (int c = 0; c < C; c++)
		sf_embedding_dw_col(R, C, c, ids, dy, e2);
	same = same_bits(e1, e2, V * C);
	/* the CUDA kernel's order: the ids sorted stably (here by counting, as CUB's radix
	 * sort orders them), then each id's segment a column at a time */
	{
		int32_t keys[R], rows[R];
		int at = 0;
		for (int v = 0; v < V; v++)
			for (int r = 0; r < R; r++)
				if (ids[r] == v)
					keys[at] = v, rows[at++] = r;
		for (int j = 0; j < R;) {
			int end = j;
			for (int c = 0; c < C; c++)
				end = sf_embedding_dw_segment(R, C, c, j, keys, rows, dy, e3);
			j = end;
		}
		same &= same_bits(e1, e3, V * C);
	}
	float *pw1 = vec(T * C, -1, 1), *pw2 = copy(pw1, T * C), pdx[NB * T * C];
	_sf_pos_embedding_bwd(NB, T, T, C, dy, pdx, 0, pw1, 1);
	for (int t = 0; t < T; t++)
		for (int c = 0; c < C; c++)
			sf_pos_embedding_dw_elem(NB, T, C, t, c, dy, pw2);
	same &= same_bits(pw1, pw2, T * C);
	enum { I = 3 };
	float lw[C * I], ldw[C * I], lx[R * I];
	for (int i = 0; i < C * I; i++)
		lw[i] = uniform(-1, 1);
	for (int i = 0; i < R * I; i++)
		lx[i] = uniform(-1, 1);
	for (int pacc = 0; pacc <= 1; pacc++) {
		float db3[C], db4[C];
		for (int c = 0; c < C; c++)
			db3[c] = db4[c] = 0.125f * c;
		_sf_linear_bwd(R, I, C, lx, lw, dy, NULL, 0, ldw, db3, pacc);
		for (int c = 0; c < C; c++)
			sf_linear_db_col(R, C, c, dy, db4, pacc);
		same &= same_bits(db3, db4, C);
	}
	ok(same, "embedding dW (by columns, and by sorted segments: the GPU kernel's order), "
	         "position embedding dW and linear db as the GPU's columns = the CPU kernels, bitwise");
	free(x), free(w), free(b), free(dy), free(dx1), free(dx2), free(e1), free(e2), free(e3);
	free(pw1), free(pw2);
}

/* what a chunk of the plan holds, for the test's description */
static const char *chunk_desc(char *buf, size_t n, int B, int T, int NH, int NKV, size_t budget)
{
	int nb = sf_attention_samples(B, T, NH, budget);
	if (nb > 0)
		snprintf(buf, n, "%d sample(s) a chunk", nb);
	else
		snprintf(buf, n, "%d key/value head(s) of a sample a chunk",
		         sf_attention_chunk(T, NH, NKV, budget));
	return buf;
}

/* NKV = NH: multi-head; NKV < NH: grouped heads (one batch per position in a group);
 * budget: the plan's scratch in floats (the library's: the whole batch a chunk; 1: one
 * key/value group a chunk, the heads in NKV chunks; between: whole samples a chunk, the
 * last chunk shorter) */
static void test_attention_plan(int NH, int NKV, size_t budget)
{
	/* T = 70: two of the CPU's row blocks of 64, one partial; B = 3: a chunk of two
	 * samples leaves one */
	const int B = 3, T = 70, C = 12, hs = C / NH;
	size_t nq = (size_t)B * T * (C + 2 * NKV * hs), ny = (size_t)B * T * C,
	       ns = (size_t)B * NH * T * 2;
	char cf[64], cb[64];
	float *qkv = vec(nq, -1, 1), *dy = vec(ny, -1, 1);
	float *y1 = vec(ny, 0, 0), *y2 = vec(ny, 0, 0), *s1 = vec(ns, 0, 0), *s2 = vec(ns, 0, 0);
	int rb = SF_ATTENTION_ROW_BLOCK;
	float *scr = vec(2 * (size_t)rb * T, 0, 0);
	_sf_attention_fwd(B, T, C, NH, NKV, rb, qkv, y1, s1, scr);
	host_exec hx;
	sf_attention_fwd_plan(hx, B, T, C, NH, NKV, qkv, y2, s2, budget);
	double sy, ss, ey = max_diff(y2, y1, ny, &sy), es = max_diff(s2, s1, ns, &ss);
	ok(ey <= 1e-5 * sy && es <= 1e-5 * ss,
	   "attention forward, %d heads on %d key/value heads, %s: the GPU plan (host "
	   "GEMM) = the CPU kernel (max diff %.2e of %.2e in y, %.2e of %.2e in the rows' max "
	   "and inverse sum)",
	   NH, NKV, chunk_desc(cf, sizeof cf, B, T, NH, NKV, budget), ey, sy, es, ss);
	for (int acc = 0; acc <= 1; acc++) {
		float *d1 = vec(nq, -1, 1), *d2 = copy(d1, nq);
		_sf_attention_bwd(B, T, C, NH, NKV, rb, qkv, s1, dy, d1, acc, scr);
		sf_attention_bwd_plan(hx, B, T, C, NH, NKV, qkv, s1, dy, d2, acc, budget);
		double sd, ed = max_diff(d2, d1, nq, &sd);
		ok(ed <= 1e-5 * sd,
		   "attention backward (%s), %d heads on %d, %s: the GPU plan = the CPU "
		   "kernel (max diff %.2e of %.2e in dqkv)",
		   acc ? "+=" : "=", NH, NKV, chunk_desc(cb, sizeof cb, B, T, NH, NKV, budget / 2), ed,
		   sd);
		free(d1), free(d2);
	}
	free(qkv), free(dy), free(y1), free(y2), free(s1), free(s2), free(scr);
}

/* The regression losses: layers/loss_cuda.cu's steps on the host (a term and a derivative
 * per element, then the terms summed in element order) against layers/loss_cpu.c, on
 * differences of every sign, zero (L1's sign(0), Huber's quadratic side) and exactly
 * +-delta (Huber's linear side), for each kind. */
static void test_reg_loss(void)
{
	enum { R = 103, W = 10 };
	const size_t n = (size_t)R * W;
	float *pred = vec(n, -12, 12), *target = vec(n, -3, 3);
	for (size_t i = 0; i < n; i += 17)
		target[i] = pred[i];
	for (size_t i = 5; i < n; i += 23) {
		target[i] = (float)(int)target[i];
		pred[i] = target[i] + (i % 2 ? 1.0f : -1.0f); /* |d| = delta exactly */
	}
	float *d1 = (float *)malloc(sizeof(float) * n), *d2 = (float *)malloc(sizeof(float) * n);
	double *terms = (double *)malloc(sizeof(double) * n);
	int same = 1;
	for (int kind = 1; kind <= SF_LOSS_MEAN_KIND; kind++) {
		struct _sf_reg_loss_args a = {R, W, kind, 1.0f, 1.0f / (float)n};
		double l1 = _sf_reg_loss(&a, pred, target, d1), l2 = 0.0;
		for (size_t i = 0; i < n; i++) { /* as layers/loss_cuda.cu's elements */
			float g, t = kind == SF_LOSS_MEAN_KIND ? 0.0f : target[i];
			terms[i] = sf_loss_elem(a.kind, pred[i] - t, a.delta, &g);
			d2[i] = a.scale * g;
		}
		for (size_t i = 0; i < n; i++)
			l2 += terms[i];
		l2 *= a.scale;
		if (!same_bits(d2, d1, n) || memcmp(&l1, &l2, sizeof l1) != 0) {
			diag("kind %d: loss %.17g (gcc) vs %.17g (nvcc)", kind, l1, l2);
			same = 0;
		}
	}
	ok(same, "regression losses (MSE, L1, Huber, a loss layer's mean): the GPU's elements and in-order sum = the "
	         "CPU kernel, bitwise (dpred and the loss)");
	free(pred), free(target), free(d1), free(d2), free(terms);
}

int main(void)
{
	plan(35);
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
	ok(same_bits(got, ref, N),
	   "relu forward: nvcc's sf_relu_f = the C kernel, bitwise over %d values", N);
	_sf_relu_bwd(N, x, dy, ref, 0);
	for (int i = 0; i < N; i++)
		sf_grad_store(&got[i], sf_relu_d(x[i], dy[i]), 0);
	ok(same_bits(got, ref, N), "relu backward: bitwise over %d values", N);
	_sf_silu_fwd(N, x, ref);
	for (int i = 0; i < N; i++)
		got[i] = sf_silu_f(x[i]);
	int silu_same = same_bits(got, ref, N);
	_sf_silu_bwd(N, x, dy, ref, 0);
	for (int i = 0; i < N; i++)
		sf_grad_store(&got[i], sf_silu_d(x[i], dy[i]), 0);
	ok(silu_same && same_bits(got, ref, N),
	   "silu forward and backward: nvcc's sf_silu_f/d = the C kernel, bitwise over %d values",
	   N);

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
	ok(e <= 1e-6 && nanbad == 0,
	   "gelu forward: nvcc's scalar form vs the CPU's vector form, max rel %.2e (<= 1e-6), NaN "
	   "mismatches %d",
	   e, nanbad);
	_sf_gelu_bwd(N, x, dy, ref, 0);
	for (int i = 0; i < N; i++)
		got[i] = sf_gelu_d(x[i], dy[i]);
	e = max_err(got, ref, dy, N, &nanbad);
	ok(e <= 1e-6 && nanbad == 0,
	   "gelu backward: max |diff| / |dy| %.2e (<= 1e-6), NaN mismatches %d", e, nanbad);

	/* three steps of each optimizer, element by element vs the C loops: every file of
	 * tasks/optimizers/, with momentum, weight decay and AdamW's corrections */
	static float p1[N], p2[N], b1[N], b2[N], v1[N], v2[N];
	/* a step of 2 micro-batches, clipped by 0.75: the gradient times 0.5 x 0.75 */
	const double clip[2] = {1.0, 0.75};
	const float gm = sf_grad_mult(0.5f, clip);
#define OPT_SAME(name, NAME)                                                                       \
	{                                                                                          \
		for (int i = 0; i < N; i++)                                                        \
			p1[i] = p2[i] = y[i], b1[i] = b2[i] = v1[i] = v2[i] = 0.0f;                \
		int same = 1;                                                                      \
		for (int s = 1; s <= 3; s++) {                                                     \
			struct _sf_opt_hyper h = {1e-3f, 0.1f, 0.9f, 0.9f, 0.95f, 1e-8f, 0.0f, 0.0f}; \
			_sf_adamw_corrections(h.b1, h.b2, s, &h.c1, &h.c2);                         \
			_sf_opt_cpu_##name(N, p1, dy, b1, name##_nstate > 1 ? v1 : NULL, &h, 0.5f, clip); \
			for (int i = 0; i < N; i++)                                                \
				sf_##name##_elem(&p2[i], dy[i] * gm, &b2[i],                      \
				                 name##_nstate > 1 ? &v2[i] : NULL, &h);           \
			same &= same_bits(p1, p2, N) && same_bits(b1, b2, N) &&                    \
			        same_bits(v1, v2, N);                                              \
		}                                                                                  \
		ok(same, "%s, 3 steps: bitwise (parameters and state)", #name);                    \
	}
	SF_OPTIMIZER_LIST(OPT_SAME)
#undef OPT_SAME
	/* bf16 rounding (the bf16 collectives' kernels): nvcc's build of common/bf16.h
	 * against gcc's, on random bit patterns (NaNs, infinities and ties included) */
	{
		enum { NB = 1 << 16 };
		static float f[NB];
		static uint16_t h[NB];
		uint64_t st = 12345;
		for (int i = 0; i < NB; i++) {
			st = st * 6364136223846793005ull + 1442695040888963407ull;
			uint32_t u = (uint32_t)(st >> 32);
			if (i % 7 == 0)
				u = (u & 0xffff0000u) | 0x8000u; /* a tie */
			memcpy(&f[i], &u, sizeof u);
		}
		_sf_bf16_round_n(NB, f, h);
		int same16 = 1;
		for (int i = 0; i < NB; i++)
			same16 &= sf_bf16_from_float(f[i]) == h[i];
		ok(same16, "bf16 rounding of %d bit patterns: nvcc's = gcc's", NB);
	}
	test_rows();
	test_reg_loss();
	test_attention_plan(3, 3, SF_ATTENTION_GPU_SCRATCH);
	test_attention_plan(6, 2, SF_ATTENTION_GPU_SCRATCH);
	test_attention_plan(3, 3, 1);
	test_attention_plan(6, 2, 1);
	test_attention_plan(6, 2, 2 * (size_t)6 * 70 * 70 + 1); /* forward 2 + 1 samples, backward 1 */
	test_attention_plan(3, 3, 4 * (size_t)3 * 70 * 70);     /* forward 3, backward 2 + 1 */
	return done_testing();
}
