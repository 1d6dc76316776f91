/*
 * gelu.h — the gelu op: y = GELU(x), tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 *
 * Element-wise over n = rows * width floats, no parameters. The backward overwrites or
 * adds to dx as `acc` says.
 */
#ifndef SF_LAYERS_GELU_H
#define SF_LAYERS_GELU_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_gelu_type;

void _sf_gelu_fwd(size_t n, const float *x, float *y);
void _sf_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc);

#ifdef SF_HAVE_CUDA
/* layers/gelu_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_gelu_fwd_cuda(size_t n, const float *x, float *y);
void _sf_gelu_bwd_cuda(size_t n, const float *x, const float *dy, float *dx, int acc);
#endif

#ifdef __cplusplus
}
#endif

#endif
