/*
 * relu.c — the relu layer type: y = max(x, 0), element-wise, no parameters
 * (layers/unary_type.h); the math in layers/relu_cpu.c (and layers/relu_cuda.cu).
 */
#include "config.h"

#include "layers/relu.h"
#include "layers/unary_type.h"

/* 1 flop an element: the comparison (its backward, by the rule of twice the forward: the
 * comparison and the select or the accumulating add) */
SF_UNARY_TYPE(relu, 1)
