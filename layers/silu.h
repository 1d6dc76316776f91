/*
 * silu.h — the SiLU (swish) op: y = x sigmoid(x) = x / (1 + e^-x), the activation of
 * Llama's SwiGLU MLP (SiLU(x W1) * x W3, with layers/mul.h).
 *
 * Element-wise over n = rows * width floats, no parameters. The backward overwrites or
 * adds to dx as `acc` says: dx = dy s (1 + x (1 - s)), s = sigmoid(x).
 */
#ifndef SF_LAYERS_SILU_H
#define SF_LAYERS_SILU_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_silu_type;

void _sf_silu_fwd(size_t n, const float *x, float *y);
void _sf_silu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc);

#ifdef SF_HAVE_CUDA
/* layers/silu_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_silu_fwd_cuda(size_t n, const float *x, float *y);
void _sf_silu_bwd_cuda(size_t n, const float *x, const float *dy, float *dx, int acc);
#endif

#ifdef __cplusplus
}
#endif

#endif
