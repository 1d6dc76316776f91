/*
 * mul.h — the element-wise product y = a * b of two inputs of the output's width, no
 * parameters: the gate of Llama's SwiGLU MLP (SiLU(x W1) * x W3, with layers/silu.h).
 * Its backward gives each input that wants it dy times the other (= or +=):
 * da = dy b, db = dy a.
 */
#ifndef SF_LAYERS_MUL_H
#define SF_LAYERS_MUL_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_mul_type;

void _sf_mul_fwd(size_t n, const float *a, const float *b, float *y);
/* d (=|+=) dy * other */
void _sf_mul_bwd(size_t n, const float *other, const float *dy, float *d, int acc);

#ifdef SF_HAVE_CUDA
/* layers/mul_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_mul_fwd_cuda(size_t n, const float *a, const float *b, float *y);
void _sf_mul_bwd_cuda(size_t n, const float *other, const float *dy, float *d, int acc);
#endif

#ifdef __cplusplus
}
#endif

#endif
