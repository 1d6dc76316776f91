/* optim_cuda.cu — the optimizers' CUDA codelet bodies: tasks/optim_math.h on each
 * element of the shard, on starpu_cuda_get_local_stream(). */
#include "common/cuda_util.h"
#include "tasks/optim.h"
#include "tasks/optim_math.h"

#include <starpu.h>

static __global__ void sgd_k(size_t n, float *p, const float *g, float *buf, float lr, float mu,
                             float wd)
{
	SF_CUDA_FOR(i, n)
	sf_sgd_elem(&p[i], g[i], &buf[i], lr, mu, wd);
}

static __global__ void adamw_k(size_t n, float *p, const float *g, float *m, float *v, float lr,
                               float b1, float b2, float eps, float wd, float c1, float c2)
{
	SF_CUDA_FOR(i, n)
	sf_adamw_elem(&p[i], g[i], &m[i], &v[i], lr, b1, b2, eps, wd, c1, c2);
}

/* param[RW] grad[R] buf[RW] */
extern "C" void _sf_sgd_cuda(void *buffers[], void *cl_arg)
{
	struct _sf_opt_args a;
	starpu_codelet_unpack_args(cl_arg, &a);
	sgd_k<<<sf_cuda_blocks(a.n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	    a.n, (float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	    (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
	    (float *)STARPU_VECTOR_GET_PTR(buffers[2]), a.lr, a.momentum, a.weight_decay);
	SF_CUDA_CHECK_LAUNCH("sgd_k");
}

/* param[RW] grad[R] m[RW] v[RW] */
extern "C" void _sf_adamw_cuda(void *buffers[], void *cl_arg)
{
	struct _sf_opt_args a;
	starpu_codelet_unpack_args(cl_arg, &a);
	float c1, c2;
	_sf_adamw_corrections(a.beta1, a.beta2, a.t, &c1, &c2);
	adamw_k<<<sf_cuda_blocks(a.n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	    a.n, (float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	    (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
	    (float *)STARPU_VECTOR_GET_PTR(buffers[2]), (float *)STARPU_VECTOR_GET_PTR(buffers[3]),
	    a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, c1, c2);
	SF_CUDA_CHECK_LAUNCH("adamw_k");
}
