/* silu_cuda.cu — silu's CUDA launchers: layers/silu_math.h on each element, on the
 * worker's stream (layers/unary_cuda.h; the codelet bodies are in layers/silu.c). */
#include "config.h"

#include "layers/silu.h"
#include "layers/silu_math.h"
#include "layers/unary_cuda.h"

SF_UNARY_CUDA(silu)
