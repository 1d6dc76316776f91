/* optim_cuda.cu — the optimizers' CUDA launchers: for each file of tasks/optimizers/,
 * a kernel running its element on each element of the shard, and
 * _sf_opt_cuda_<name> launching it on the worker's stream (the codelet bodies are in
 * tasks/optim.c). */
#include "config.h"

#include "common/cuda_util.h"
#include "tasks/optim.h"

#include <starpu.h>

#define SF_OPTIMIZER(name, nstate, flops)                                                          \
	static __global__ void name##_k(size_t n, float *p, const float *g, float *s0, float *s1,  \
	                                struct _sf_opt_hyper h, float scale, const double *clip)   \
	{                                                                                          \
		float s = sf_grad_mult(scale, clip);                                               \
		SF_CUDA_FOR(i, n)                                                                  \
		sf_##name##_elem(&p[i], g[i] * s, &s0[i], (nstate) > 1 ? &s1[i] : NULL, &h);       \
	}                                                                                          \
	extern "C" void _sf_opt_cuda_##name(SF_OPT_LOOP_PARAMS)                                    \
	{                                                                                          \
		SF_CUDA_CHECK_LAUNCH(#name "_k", name##_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0,   \
		                                            starpu_cuda_get_local_stream()>>>(     \
		                                     n, p, g, s0, s1, *h, scale, clip));           \
	}
#include "tasks/optimizers/list.h"
