/*
 * linear.h — the linear op: y = x W^T + b.
 *
 * Shape letters: B rows, I input width, O output width. Flat parameters: W (O, I)
 * row-major, then b (O). Kernels overwrite activations ("="), and overwrite or add to
 * the input gradient as `acc` says ("+=" when another consumer of x wrote first) and
 * the parameter gradients as `pacc` says ("+=" when a tied node wrote first); see
 * layers/layer.h for the family layout.
 */
#ifndef SF_LAYERS_LINEAR_H
#define SF_LAYERS_LINEAR_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_linear_type;
/* The same without a bias (an output head tied to a token embedding): W (O, I) only. */
extern const struct sf_layer_type _sf_linear_nobias_type;
extern const struct sf_layer_type _sf_linear_split_type;
/* Tensor-parallel slices of a linear layer (struct sf_linear_tp_config) */
extern const struct sf_layer_type _sf_linear_col_type;
extern const struct sf_layer_type _sf_linear_row_type;
/* linear_col's block k's rows in li's shapes (whole, or a TP rank's slice) */
int _sf_linear_col_part_rows(const struct sf_layer_info *li, int k);

/* y (B,O) = x (B,I) w^T (O,I) + b (O); b may be NULL (no bias) */
void _sf_linear_fwd(int B, int I, int O, const float *x, const float *w, const float *b, float *y);
/* dx (B,I) (=|+=) dy (B,O) w (O,I); dw (O,I) (=|+=) dy^T x; db (O) (=|+=) sum_rows dy.
 * dx may be NULL (input needs no gradient), db NULL (no bias). acc: dx is added to;
 * pacc: dw and db are added to (tied parameters). dw NULL: dx only (db NULL too). */
void _sf_linear_bwd(int B, int I, int O, const float *x, const float *w, const float *dy, float *dx,
                    int acc, float *dw, float *db, int pacc);

#ifdef SF_HAVE_CUDA
/* layers/linear_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_linear_fwd_cuda(int B, int I, int O, const float *x, const float *w, const float *b,
                         float *y);
void _sf_linear_bwd_cuda(int B, int I, int O, const float *x, const float *w, const float *dy,
                         float *dx, int acc, float *dw, float *db, int pacc);
#endif

#ifdef __cplusplus
}
#endif

#endif
