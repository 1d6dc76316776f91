/*
 * add.h — the residual add: y = a + b, both of the output's width, no parameters.
 * Its backward passes dy through to each input that wants it (= or +=).
 */
#ifndef SF_LAYERS_ADD_H
#define SF_LAYERS_ADD_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_add_type;

void _sf_add_fwd(size_t n, const float *a, const float *b, float *y);
/* d (=|+=) dy */
void _sf_pass_bwd(size_t n, const float *dy, float *d, int acc);

#ifdef SF_HAVE_CUDA
/* layers/add_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_add_fwd_cuda(size_t n, const float *a, const float *b, float *y);
void _sf_pass_bwd_cuda(size_t n, const float *dy, float *d, int acc);
#endif

#ifdef __cplusplus
}
#endif

#endif
