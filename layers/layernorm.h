/*
 * layernorm.h — layer normalisation over the features of each row:
 *   y = (x - mean) * rstd * w + b,   rstd = 1 / sqrt(var + eps),
 * mean and var (biased) over the C features of the row. Flat parameters: w (C), then
 * b (C); initialised w = 1, b = 0. The forward saves mean and rstd of every row (the
 * saved buffer: mean (B) then rstd (B)) and the backward reads them.
 *
 * Shape letters: B rows, C features. Kernels overwrite y; dx and (dw, db) are
 * overwritten or added to as `acc` and `pacc` say.
 */
#ifndef SF_LAYERS_LAYERNORM_H
#define SF_LAYERS_LAYERNORM_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_layernorm_type;

void _sf_layernorm_fwd(int B, int C, const float *x, const float *w, const float *b, float eps,
                       float *y, float *mean, float *rstd);
/* dx (B,C) (=|+=), dw (C) and db (C) (=|+=); dx may be NULL */
void _sf_layernorm_bwd(int B, int C, const float *x, const float *w, const float *mean,
                       const float *rstd, const float *dy, float *dx, int acc, float *dw,
                       float *db, int pacc);

#ifdef SF_HAVE_CUDA
/* layers/layernorm_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_layernorm_fwd_cuda(int B, int C, const float *x, const float *w, const float *b,
                            float eps, float *y, float *mean, float *rstd);
void _sf_layernorm_bwd_cuda(int B, int C, const float *x, const float *w, const float *mean,
                            const float *rstd, const float *dy, float *dx, int acc, float *dw,
                            float *db, int pacc);
#endif

#ifdef __cplusplus
}
#endif

#endif
