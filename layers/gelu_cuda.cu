/* gelu_cuda.cu — gelu's CUDA launchers: layers/gelu_math.h on each element, on the
 * worker's stream (layers/unary_cuda.h; the codelet bodies are in layers/gelu.c). */
#include "config.h"

#include "layers/gelu.h"
#include "layers/gelu_math.h"
#include "layers/unary_cuda.h"

SF_UNARY_CUDA(gelu)
