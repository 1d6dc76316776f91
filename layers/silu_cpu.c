/* silu_cpu.c — y = x sigmoid(x) and its derivative on plain pointers (layers/silu_math.h,
 * through layers/elementwise.h's SF_UNARY_CPU). */
#include "layers/silu.h"
#include "layers/add_math.h"
#include "layers/elementwise.h"
#include "layers/silu_math.h"

SF_UNARY_CPU(silu)
