/*
 * pos_embedding.h — a learned position embedding added to its input:
 *   y[b*T + t] = x[b*T + t] + W[t],   t = the row's position in its sequence.
 *
 * Flat parameters: W (NP, C), NP the number of positions (the block size),
 * initialised normal(0, 0.02) as GPT-2's wpe; the graph's T must be <= NP (the
 * builder checks it, so the kernels index W without a check). The backward passes dy
 * through (dx = dy) and sums it over the samples into the rows of W (dW[t] = sum_b
 * dy[b*T + t]; rows t >= T of an overwritten dW are 0). It never reads W.
 * Shape letters: B samples, T rows per sample, C features, NP positions.
 */
#ifndef SF_LAYERS_POS_EMBEDDING_H
#define SF_LAYERS_POS_EMBEDDING_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_pos_embedding_type;

/* y (B*T, C) = x + W[row % T]; T <= NP */
void _sf_pos_embedding_fwd(int B, int T, int C, const float *x, const float *w, float *y);
/* dx (B*T, C) (=|+= as acc) dy, dx may be NULL; dW (NP, C) (=|+= as pacc) the sums over
 * the samples of dy, rows [T, NP) left as they were when pacc, zeroed otherwise */
void _sf_pos_embedding_bwd(int B, int T, int NP, int C, const float *dy, float *dx, int acc,
                           float *dw, int pacc);

#ifdef SF_HAVE_CUDA
/* layers/pos_embedding_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_pos_embedding_fwd_cuda(int B, int T, int C, const float *x, const float *w, float *y);
void _sf_pos_embedding_bwd_cuda(int B, int T, int NP, int C, const float *dy, float *dx, int acc,
                                float *dw, int pacc);
#endif

#ifdef __cplusplus
}
#endif

#endif
