/* relu_cpu.c — y = max(x, 0) and its derivative on plain pointers (layers/relu_math.h,
 * through layers/elementwise.h's SF_UNARY_CPU). */
#include "layers/relu.h"
#include "layers/add_math.h"
#include "layers/elementwise.h"
#include "layers/relu_math.h"

SF_UNARY_CPU(relu)
