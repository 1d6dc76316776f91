/*
 * gelu.h — the gelu op: y = GELU(x), tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 *
 * Element-wise over n = rows * width floats, no parameters. The backward overwrites or
 * adds to dx as `acc` says.
 */
#ifndef SF_LAYERS_GELU_H
#define SF_LAYERS_GELU_H

#include "shardflow.h"

extern const struct sf_layer_type _sf_gelu_type;

void _sf_gelu_fwd(size_t n, const float *x, float *y);
void _sf_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc);

#endif
