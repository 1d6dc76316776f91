/*
 * gelu.c — the gelu layer type: GELU in its tanh form (GPT-2's), element-wise, no
 * parameters (layers/unary_type.h); the math in layers/gelu_cpu.c (and
 * layers/gelu_cuda.cu).
 */
#include "config.h"

#include "layers/gelu.h"
#include "layers/unary_type.h"

SF_UNARY_TYPE(gelu)
