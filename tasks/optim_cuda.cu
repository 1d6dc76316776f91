/* optim_cuda.cu — the optimizers' CUDA launchers: tasks/optim_math.h on each element
 * of the shard, on the worker's stream (the codelet bodies are in tasks/optim.c). */
#include "config.h"

#include "common/cuda_util.h"
#include "tasks/optim.h"
#include "tasks/optim_math.h"

#include <starpu.h>

static __global__ void sgd_k(size_t n, float *p, const float *g, float *buf, float lr, float mu,
                             float wd, float scale, const double *clip)
{
	float s = sf_grad_mult(scale, clip);
	SF_CUDA_FOR(i, n)
	sf_sgd_elem(&p[i], g[i] * s, &buf[i], lr, mu, wd);
}

static __global__ void adamw_k(size_t n, float *p, const float *g, float *m, float *v, float lr,
                               float b1, float b2, float eps, float wd, float c1, float c2,
                               float scale, const double *clip)
{
	float s = sf_grad_mult(scale, clip);
	SF_CUDA_FOR(i, n)
	sf_adamw_elem(&p[i], g[i] * s, &m[i], &v[i], lr, b1, b2, eps, wd, c1, c2);
}

static __global__ void lion_k(size_t n, float *p, const float *g, float *m, float lr, float b1,
                              float b2, float wd, float scale, const double *clip)
{
	float s = sf_grad_mult(scale, clip);
	SF_CUDA_FOR(i, n)
	sf_lion_elem(&p[i], g[i] * s, &m[i], lr, b1, b2, wd);
}

extern "C" void _sf_sgd_cuda(size_t n, float *p, const float *g, float *buf, float lr, float mu,
                             float wd, float scale, const double *clip)
{
	SF_CUDA_CHECK_LAUNCH(
	    "sgd_k", sgd_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	                 n, p, g, buf, lr, mu, wd, scale, clip));
}

extern "C" void _sf_adamw_cuda(size_t n, float *p, const float *g, float *m, float *v, float lr,
                               float b1, float b2, float eps, float wd, int64_t t, float scale,
                               const double *clip)
{
	float c1, c2; /* in double on the host, as the CPU's */
	_sf_adamw_corrections(b1, b2, t, &c1, &c2);
	SF_CUDA_CHECK_LAUNCH(
	    "adamw_k",
	    adamw_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	        n, p, g, m, v, lr, b1, b2, eps, wd, c1, c2, scale, clip));
}

extern "C" void _sf_lion_cuda(size_t n, float *p, const float *g, float *m, float lr, float b1,
                              float b2, float wd, float scale, const double *clip)
{
	SF_CUDA_CHECK_LAUNCH(
	    "lion_k", lion_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	                  n, p, g, m, lr, b1, b2, wd, scale, clip));
}
