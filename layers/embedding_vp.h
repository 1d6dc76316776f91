/*
 * embedding_vp.h — the vocabulary-parallel token embedding (Megatron's
 * VocabParallelEmbedding): with SHARDFLOW_TP=K, TP rank r holds rows [first, first +
 * V_l) of W (V_l = ceil(V / K), first = r V_l: layers/layer.h's _sf_tp_vocab_slice; a
 * vocabulary K does not divide is padded on the last ranks with zero rows that no id
 * reaches, so their gradient stays 0); its lookup writes the rows of the ids in its
 * slice and zeros for the others, and the partial outputs are summed over the TP group
 * (a comm task, as a linear_row's: layers/tp.c), so the output is whole. The backward
 * adds dy into the rows of its own ids only: dy is whole on every TP rank, so it needs
 * no communication. With K = 1 an "embedding", bitwise.
 * Shape letters: B rows, V_l this rank's ids, C features.
 */
#ifndef SF_LAYERS_EMBEDDING_VP_H
#define SF_LAYERS_EMBEDDING_VP_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_embedding_vp_type;

/* y (B,C) = W[ids - first] where first <= id < first + V, else 0 (w: V x C) */
void _sf_embedding_vp_fwd(int B, int V, int first, int C, const int32_t *ids, const float *w,
                          float *y);
/* dW (V,C) (=|+=) the scatter-add of dy (B,C) by the ids in [first, first + V) */
void _sf_embedding_vp_bwd(int B, int V, int first, int C, const int32_t *ids, const float *dy,
                          float *dw, int pacc);

#ifdef __cplusplus
}
#endif

#endif
