/* add_cuda.cu — the residual add's CUDA codelet bodies: layers/add_math.h on each
 * element; the backward passes dy to each input that wants it (= or +=). */
#include "common/cuda_util.h"
#include "layers/add_math.h"
#include "layers/elementwise.h"
#include "layers/elementwise_cuda.h"

#include <starpu.h>

static __global__ void add_fwd_k(size_t n, const float *a, const float *b, float *y)
{
	SF_CUDA_FOR(i, n)
	y[i] = sf_add_f(a[i], b[i]);
}

static __global__ void pass_bwd_k(size_t n, const float *dy, float *d, int acc)
{
	SF_CUDA_FOR(i, n)
	sf_grad_store(&d[i], dy[i], acc);
}

extern "C" void _sf_add_fwd_cuda(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = (const struct sf_layer_info *)cl_arg;
	size_t n = _sf_nelem(li);
	add_fwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	    n, sf_kernel_input(buffers, li, 0), sf_kernel_input(buffers, li, 1),
	    sf_kernel_output(buffers, li));
	SF_CUDA_CHECK_LAUNCH("add_fwd_k");
}

extern "C" void _sf_add_bwd_cuda(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = (const struct sf_layer_info *)cl_arg;
	size_t n = _sf_nelem(li);
	const float *dy = sf_kernel_doutput(buffers, li);
	for (int i = 0; i < 2; i++) {
		float *dx = sf_kernel_dinput(buffers, li, i);
		if (!dx)
			continue;
		pass_bwd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
		    n, dy, dx, li->accumulate[i]);
		SF_CUDA_CHECK_LAUNCH("pass_bwd_k");
	}
}
