/*
 * embedding.h — the token embedding: row r of the output is row ids[r] of W.
 *
 * Its input is an integer node (sf_graph_int_input): ids in [0, V). Flat parameters:
 * W (V, C), initialised normal(0, 0.02) as GPT-2's. The backward adds dy of every row
 * into the row of W its id names (dW is overwritten first unless `pacc`: a tied head
 * wrote it), and there is no input gradient, so the backward never needs W.
 * Shape letters: B rows, V ids (the vocabulary), C features.
 */
#ifndef SF_LAYERS_EMBEDDING_H
#define SF_LAYERS_EMBEDDING_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_embedding_type;

/* y (B,C) = W[ids] */
void _sf_embedding_fwd(int B, int C, const int32_t *ids, const float *w, float *y);
/* dW (V,C) (=|+=) scatter-add of dy (B,C) by ids */
void _sf_embedding_bwd(int B, int V, int C, const int32_t *ids, const float *dy, float *dw,
                       int pacc);

#ifdef SF_HAVE_CUDA
/* layers/embedding_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_embedding_fwd_cuda(int B, int C, const int32_t *ids, const float *w, float *y);
void _sf_embedding_bwd_cuda(int B, int V, int C, const int32_t *ids, const float *dy, float *dw,
                            int pacc);
#endif

#ifdef __cplusplus
}
#endif

#endif
