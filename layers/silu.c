/*
 * silu.c — the silu layer type: y = x sigmoid(x), element-wise, no parameters
 * (layers/unary_type.h); the math in layers/silu_cpu.c (and layers/silu_cuda.cu).
 */
#include "config.h"

#include "layers/silu.h"
#include "layers/unary_type.h"

/* 4 flops an element: x / (1 + exp(-x)), the exp counted as one. The backward (counted
 * twice that) makes 9: the sigmoid 4, then dy s (1 + x (1 - s)) 5. */
SF_UNARY_TYPE(silu, 4)
