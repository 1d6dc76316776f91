/*
 * relu.h — the relu op: y = max(x, 0).
 *
 * Element-wise over n = rows * width floats, no parameters. The backward overwrites or
 * adds to dx as `acc` says.
 */
#ifndef SF_LAYERS_RELU_H
#define SF_LAYERS_RELU_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_relu_type;

void _sf_relu_fwd(size_t n, const float *x, float *y);
void _sf_relu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc);

#ifdef SF_HAVE_CUDA
/* layers/relu_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_relu_fwd_cuda(size_t n, const float *x, float *y);
void _sf_relu_bwd_cuda(size_t n, const float *x, const float *dy, float *dx, int acc);
#endif

#ifdef __cplusplus
}
#endif

#endif
