/*
 * gelu.c — the gelu layer type: GELU in its tanh form (GPT-2's), element-wise, no
 * parameters (layers/unary_type.h); the math in layers/gelu_cpu.c (and
 * layers/gelu_cuda.cu).
 */
#include "config.h"

#include "layers/gelu.h"
#include "layers/unary_type.h"

/* 10 flops an element, the tanh form as layers/gelu_math.h writes it (its exp counted as
 * one, the clamp's comparisons not): u's argument -2 K (v + C v^3) 6, its exp 1,
 * v / (1 + e) 3. The backward (counted twice that) makes the same 7 up to e, then
 * s 2, du/dv 4 and the product with dy 7: 20. */
SF_UNARY_TYPE(gelu, 10)
