/*
 * silu.c — the silu layer type: y = x sigmoid(x), element-wise, no parameters
 * (layers/unary_type.h); the math in layers/silu_cpu.c (and layers/silu_cuda.cu).
 */
#include "config.h"

#include "layers/silu.h"
#include "layers/unary_type.h"

SF_UNARY_TYPE(silu)
