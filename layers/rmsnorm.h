/*
 * rmsnorm.h — root-mean-square normalisation over the features of each row (Llama's
 * RMSNorm, Zhang and Sennrich 2019):
 *   y = x * rstd * w,   rstd = 1 / sqrt(mean(x^2) + eps),
 * the mean over the C features of the row. Parameters: w (C), initialised to 1; no
 * bias. The forward saves rstd of every row (the saved buffer, B floats) and the
 * backward reads it:
 *   xhat = x rstd,  g = dy w,  dx = rstd (g - xhat mean(g xhat)),  dw = sum_rows dy xhat.
 *
 * Shape letters: B rows, C features. Kernels overwrite y; dx and dw are overwritten
 * or added to as `acc` and `pacc` say.
 */
#ifndef SF_LAYERS_RMSNORM_H
#define SF_LAYERS_RMSNORM_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_rmsnorm_type;

void _sf_rmsnorm_fwd(int B, int C, const float *x, const float *w, float eps, float *y,
                     float *rstd);
/* dx (B,C) (=|+=) and dw (C) (=|+=); dx may be NULL */
void _sf_rmsnorm_bwd(int B, int C, const float *x, const float *w, const float *rstd,
                     const float *dy, float *dx, int acc, float *dw, int pacc);

#ifdef SF_HAVE_CUDA
/* layers/rmsnorm_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_rmsnorm_fwd_cuda(int B, int C, const float *x, const float *w, float eps, float *y,
                          float *rstd);
void _sf_rmsnorm_bwd_cuda(int B, int C, const float *x, const float *w, const float *rstd,
                          const float *dy, float *dx, int acc, float *dw, int pacc);
#endif

#ifdef __cplusplus
}
#endif

#endif
