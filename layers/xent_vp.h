/*
 * xent_vp.h — the vocabulary-parallel softmax cross-entropy (Megatron's
 * vocab_parallel_cross_entropy): the loss of logits split by columns over a TP group
 * of K ranks, each holding V_l = ceil(V / K) consecutive classes [first, first + V_l)
 * of every row, without ever gathering the B x V logits. Where K does not divide V the
 * last ranks' columns at or past V are padding (layers/layer.h's _sf_tp_vocab_slice):
 * only the first `valid` columns of a slice are classes; the padded ones are left out
 * of the max, the sums and the target, and their dz is 0, as if their logits were
 * -inf (a rank with no class at all sends m_k = -FLT_MAX, s_k = 0).
 *
 * Shape letters: B rows, V_l this rank's columns (valid of them classes), K the TP
 * ranks. Two kernels, with one collective between them (scheduler/step.c submits the
 * three):
 *   partials: each row's max m_k over this rank's classes, s_k = sum exp(z - m_k), and
 *             t_k = the label's logit when this rank holds the label (else 0): 3 floats
 *             a row;
 *   (the TP group all-gathers them: K blocks of 3 B floats, in TP rank order)
 *   finish  : M = max_k m_k, S = sum_k s_k exp(m_k - M) (in double, rank order: the
 *             same bits on every rank), the row's loss log S + M - sum_k t_k, and
 *             dz = scale (exp(z - M) / S - onehot(label - first)) on this rank's
 *             classes. The backward is that dz: no communication.
 * A row whose label is `ignore` adds 0 and gets dz = 0, as _sf_softmax_xent's.
 */
#ifndef SF_LAYERS_XENT_VP_H
#define SF_LAYERS_XENT_VP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The partials of a row */
#define SF_XENT_VP_STATS 3

/* The codelets' cl_arg: the model's, by pointer (scale set each step) */
struct _sf_xent_vp_args {
	int rows;       /* B */
	int classes;    /* V_l, this rank's columns: ceil(V / K) */
	int valid;      /* those below V (the rest padding) */
	int first;      /* its first class in the whole vocabulary: tp_rank x V_l */
	int tp;         /* K */
	int32_t ignore; /* a label that counts for nothing */
	float scale;    /* as struct _sf_loss_args's */
};

/* st (B x 3): each row's m_k, s_k, t_k over the first `valid` of z's V columns (z: B x
 * V_l, this rank's) */
void _sf_xent_vp_partials(int B, int V, int valid, int first, const float *z,
                          const int32_t *labels, int32_t ignore, float *st);
/* all: K blocks of B x 3 partials (TP rank order). Returns scale x the sum of the rows'
 * losses (in double, row order) and writes dz (B x V_l; its columns from `valid` on
 * 0); dz NULL: the loss only. */
double _sf_xent_vp_finish(int B, int V, int valid, int first, int K, const float *z,
                          const int32_t *labels, int32_t ignore, float scale, const float *all,
                          float *dz);

/* The CPU codelet bodies.
 * partials: logits[R] labels[R] stats[W]
 * finish  : logits[R] labels[R] all[R] dlogits[W] loss[W] (one double) */
void _sf_xent_vp_partials_cpu(void *buffers[], void *cl_arg);
void _sf_xent_vp_finish_cpu(void *buffers[], void *cl_arg);

#ifdef __cplusplus
}
#endif

#endif
