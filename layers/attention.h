/*
 * attention.h — the core of causal multi-head self-attention (no parameters).
 *
 * Its input is the output of the QKV projection, (B*T, 3C), laid out as nanoGPT's
 * `q, k, v = c_attn(x).split(C, dim=2)`: columns [0, C) are q, [C, 2C) k, [2C, 3C) v,
 * and head h of NH uses columns h*hs .. (h+1)*hs - 1 of each, hs = C / NH. Per sample b
 * and head h:
 *   S = Q K^T / sqrt(hs),  S[i][j] = -inf for j > i (a query sees no later key),
 *   P = softmax(S) row-wise (max subtracted),  Y = P V,
 * and the output (B*T, C) holds the heads side by side (nanoGPT's
 * `y.transpose(1, 2).contiguous().view(B, T, C)`). The forward saves two floats per
 * query row, (B, NH, T, 2): the row's max m and the inverse of its sum of exponentials,
 * so that P = exp(S - m) * inv; the backward computes S again, rebuilds P from them
 * (bitwise the forward's P) and then:
 *   dP = dY V^T,  dV = P^T dY,  dS = P (dP - rowsum(dP P)),
 *   dQ = dS K / sqrt(hs),  dK = dS^T Q / sqrt(hs).
 *
 * Every product is a cblas_sgemm reading q, k, v, dy in place (lda 3C or C) and writing
 * y and dqkv in place. Queries are taken in blocks of `rb` rows: block [i0, i1) only
 * meets keys [0, i1), so the GEMMs skip most of the masked triangle (rb = T: one block,
 * full T x T products). Shape letters: B samples, T rows per sample, C features, NH
 * heads, hs = C / NH.
 *
 * Grouped-query attention (type "attention_gqa", Llama 2 70B, Llama 3): NKV key/value
 * heads (NKV divides NH), the input (B*T, C + 2 NKV hs) holding q (C), then the key
 * heads, then the value heads; query head h reads key/value head h / (NH / NKV), and
 * the gradients of a key/value head sum its query heads' in head order. NKV = NH is
 * the plain layout above.
 */
#ifndef SF_LAYERS_ATTENTION_H
#define SF_LAYERS_ATTENTION_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Query rows per block in the codelets (see attention_cpu.c for the measurements). */
#define SF_ATTENTION_ROW_BLOCK 64

/* The GPU plan's scratch, in floats (1 GiB): the batch goes in chunks of whole samples
 * whose T x T probabilities (and in the backward their dS too) fit it, or where one sample
 * does not fit, a sample's heads in chunks of whole key/value groups, at least one group
 * (layers/attention_plan.h). Llama 3 8B at context 8192: one group of 4 heads, 1 GiB, a
 * chunk; GPT-2 at 1024: 21 samples of 12 heads (48 MiB each) a chunk, 10 in the backward. */
#define SF_ATTENTION_GPU_SCRATCH ((size_t)1 << 28)

extern const struct sf_layer_type _sf_attention_type;
extern const struct sf_layer_type _sf_attention_gqa_type;

/* y (B*T, C) = attention of qkv (B*T, C + 2 NKV hs: q, then NKV key heads, then NKV
 * value heads; NKV = NH: 3C); stat (B, NH, T, 2) receives each query row's max and
 * inverse sum. rb >= 1: query rows per block (any value gives the same math); scratch
 * holds min(rb, T) * T floats (one block's probabilities). */
void _sf_attention_fwd(int B, int T, int C, int NH, int NKV, int rb, const float *qkv, float *y,
                       float *stat, float *scratch);
/* dqkv (as qkv) (= | += as acc) from dy (B*T, C), qkv and the forward's stat; scratch
 * holds 2 min(rb, T) * T floats. */
void _sf_attention_bwd(int B, int T, int C, int NH, int NKV, int rb, const float *qkv,
                       const float *stat, const float *dy, float *dqkv, int acc, float *scratch);
/* Row i of the scaled scores s[0..n) (n > i): softmax over s[0..i], exact zeros for
 * s[i+1..n); stat receives the row's max and the inverse of its sum of exponentials,
 * all the forward keeps. */
void _sf_attention_softmax_row(float *s, int i, int n, float *stat);
/* The backward's copy of that row: the same scores and stat give the forward's row
 * bitwise (the same exponential and product per entry), exact zeros after i. */
void _sf_attention_probs_row(float *s, int i, int n, const float *stat);
/* The multiply-adds x 2 of the forward's GEMMs with this blocking (the softmax aside). */
double _sf_attention_fwd_flops(int B, int T, int C, int rb);

/* Ring attention's parts (context parallelism, layers/attention_ring_cpu.c): one rank's
 * query rows against one key/value block at a time, merged by log-sum-exp.
 *
 * A sample's rows as up to two runs of consecutive positions: local row t < n0 is at
 * position p0 + t, row t >= n0 at position p1 + (t - n0); n rows in all. One run:
 * n0 = n (p1 unused). Context parallelism's rank r of K holds chunks r and 2K-1-r of
 * c rows: {2c, c, r c, (2K-1-r) c}. */
struct sf_attn_rows {
	int n, n0, p0, p1;
};

/* Floats of scratch the part kernels need for nq query rows against nk key rows. */
size_t _sf_attention_part_scratch(int nq, int nk);

/* Starts the running accumulators: o (B*qr.n, C) = 0, ml (B, NH, qr.n, 2) = (-inf, 0). */
void _sf_attention_part_begin(int B, int nq, int C, int NH, float *o, float *ml);

/* One key/value block into the running accumulators. q: the query rows (B*qr.n rows,
 * leading dimension ldq, q columns at 0..C); kv: the block's rows (B*kr.n rows, leading
 * dimension ldkv: NKV key heads at columns [0, NKV hs), NKV value heads at
 * [NKV hs, 2 NKV hs)). For each sample b, head h, query row i: the scores
 * s_j = q_i . k_j / sqrt(hs) over the block's keys j with pos(j) <= pos(i) (causal by
 * global position; keys after the query are skipped, a row that meets none is left as
 * it was); then with the row's running max m and sum l and output o:
 *   m' = max(m, max_j s_j), o = o e^(m - m') + sum_j e^(s_j - m') v_j,
 *   l = l e^(m - m') + sum_j e^(s_j - m'), m = m'.  (o unnormalised until _end) */
void _sf_attention_part_fwd(int B, int C, int NH, int NKV, struct sf_attn_rows qr,
                            const float *q, int ldq, struct sf_attn_rows kr,
                            const float *kv, int ldkv, float *o, float *ml, float *scratch);

/* After the last block: y = o / l in place (o becomes y) and ml becomes the forward's
 * statistics (m, 1/l) in place — the same meaning as _sf_attention_fwd's stat. A row
 * that met no key (l = 0) gets y = 0 and 1/l = 0. */
void _sf_attention_part_end(int B, int nq, int C, int NH, float *o, float *ml);

/* The backward's row sums: dsum (B, NH, nq)[b,h,i] = sum over the head's hs columns of
 * dy * y for row i (FlashAttention's D = rowsum(dO o O), which equals rowsum(dP o P)). */
void _sf_attention_dsum(int B, int nq, int C, int NH, const float *y, const float *dy,
                        float *dsum);

/* One key/value block's share of the gradient, added (+=) to dq (B*qr.n rows, leading
 * dimension lddq, q columns at 0..C) and dkv (B*kr.n rows, leading dimension lddkv,
 * dk then dv columns as kv's): with P = exp(s - m) * inv rebuilt from stat for the
 * block's unmasked entries, dV += P^T dY, dP = dY V^T, dS = P (dP - dsum),
 * dQ += dS K / sqrt(hs), dK += dS^T Q / sqrt(hs). Grouped heads add their query heads'
 * shares to their key/value head in head order. */
void _sf_attention_part_bwd(int B, int C, int NH, int NKV, struct sf_attn_rows qr,
                            const float *q, int ldq, const float *stat, const float *dsum,
                            const float *dy, struct sf_attn_rows kr, const float *kv,
                            int ldkv, float *dq, int lddq, float *dkv, int lddkv,
                            float *scratch);

/* Multiply-adds x 2 of one part's forward (for the perfmodel): the unmasked score
 * entries' QK^T and PV products over all heads. */
double _sf_attention_part_flops(int B, int C, struct sf_attn_rows qr, struct sf_attn_rows kr);

#ifdef SF_HAVE_CUDA
/* layers/attention_cuda.cu: the same on device pointers, on the worker's CUDA stream;
 * the scratch allocated on the stream (cudaMallocAsync). The backward reads y (the
 * forward's output) only with SHARDFLOW_GPU_MATH=bf16's fused kernels. */
void _sf_attention_fwd_cuda(int B, int T, int C, int NH, int NKV, const float *qkv, float *y,
                            float *stat);
void _sf_attention_bwd_cuda(int B, int T, int C, int NH, int NKV, const float *qkv,
                            const float *y, const float *stat, const float *dy, float *dqkv,
                            int acc);
#endif

#ifdef __cplusplus
}
#endif

#endif
