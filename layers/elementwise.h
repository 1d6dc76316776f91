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

/* The CPU loops of an element-wise op of one input, from its layers/<op>_math.h
 * (sf_<op>_f, sf_<op>_d) and layers/add_math.h (sf_grad_store): SF_UNARY_CPU(relu)
 * defines _sf_relu_fwd (y = f(x)) and _sf_relu_bwd (dx =|+= f'(x) dy), as declared in
 * layers/<op>.h; layers/unary_cuda.h's SF_UNARY_CUDA is the GPU's. */
#define SF_UNARY_CPU(op)                                                                   \
	void _sf_##op##_fwd(size_t n, const float *x, float *y)                                \
	{                                                                                      \
		for (size_t i = 0; i < n; i++)                                                     \
			y[i] = sf_##op##_f(x[i]);                                                      \
	}                                                                                      \
	void _sf_##op##_bwd(size_t n, const float *x, const float *dy, float *dx, int acc)     \
	{                                                                                      \
		for (size_t i = 0; i < n; i++)                                                     \
			sf_grad_store(&dx[i], sf_##op##_d(x[i], dy[i]), acc);                          \
	}

#ifdef __cplusplus
}
#endif

#endif
