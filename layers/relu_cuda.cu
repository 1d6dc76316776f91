/* relu_cuda.cu — relu's CUDA codelet bodies: layers/relu_math.h on each element. */
#include "common/cuda_util.h"
#include "layers/add_math.h"
#include "layers/elementwise.h"
#include "layers/elementwise_cuda.h"
#include "layers/relu_math.h"

#include <starpu.h>

static __global__ void relu_fwd_k(size_t n, const float *x, float *y)
{
	SF_CUDA_FOR(i, n)
	y[i] = sf_relu_f(x[i]);
}

static __global__ void relu_bwd_k(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	SF_CUDA_FOR(i, n)
	sf_grad_store(&dx[i], sf_relu_d(x[i], dy[i]), acc);
}

extern "C" void _sf_relu_fwd_cuda(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = (const struct sf_layer_info *)cl_arg;
	size_t n = _sf_nelem(li);
	relu_fwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	    n, sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li));
	SF_CUDA_CHECK_LAUNCH("relu_fwd_k");
}

extern "C" void _sf_relu_bwd_cuda(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = (const struct sf_layer_info *)cl_arg;
	size_t n = _sf_nelem(li);
	relu_bwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	    n, sf_kernel_input(buffers, li, 0), sf_kernel_doutput(buffers, li),
	    sf_kernel_dinput(buffers, li, 0), li->accumulate[0]);
	SF_CUDA_CHECK_LAUNCH("relu_bwd_k");
}
