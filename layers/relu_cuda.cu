/* relu_cuda.cu — relu's CUDA launchers: layers/relu_math.h on each element, on the
 * worker's stream (layers/unary_cuda.h; the codelet bodies are in layers/relu.c). */
#include "config.h"

#include "layers/relu.h"
#include "layers/relu_math.h"
#include "layers/unary_cuda.h"

SF_UNARY_CUDA(relu)
