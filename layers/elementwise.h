/*
 * elementwise.h — what the element-wise op families share: their shape rule (the
 * output has the width of the inputs, which must agree; no parameters) and the
 * element count of an activation.
 */
#ifndef SF_LAYERS_ELEMENTWISE_H
#define SF_LAYERS_ELEMENTWISE_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" { /* the *_cuda.cu launch wrappers */
#endif

int _sf_same_width_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                         size_t *nparams);

static inline size_t _sf_nelem(const struct sf_layer_info *li)
{
	return (size_t)li->rows * (size_t)li->out_dim;
}

#ifdef __cplusplus
}
#endif

#endif
