/* optim_cpu.c — the optimizers' CPU loops on plain pointers (tasks/optim.h): for each
 * file of tasks/optimizers/, _sf_opt_cpu_<name> runs its lanes (four elements at a
 * time, common/vec4.h), then its element on the last n % 4: the same float operations
 * in the same order as the element the GPU runs, so the same bits
 * (tests/test_kernels_fd.c, tests/test_hd_nvcc.cu). */
#include "tasks/optim.h"

#include "common/vec4.h"

#include <math.h>
#include <string.h>

#define SF_OPTIM_CPU 1
#define SF_OPTIMIZER(name, nstate, flops)                                                          \
	void _sf_opt_cpu_##name(SF_OPT_LOOP_PARAMS)                                                \
	{                                                                                          \
		float s = sf_grad_mult(scale, clip);                                               \
		size_t i = name##_lanes(n, p, g, s0, s1, s, h);                                    \
		for (; i < n; i++)                                                                 \
			sf_##name##_elem(&p[i], g[i] * s, &s0[i], (nstate) > 1 ? &s1[i] : NULL, h); \
	}
#include "tasks/optimizers/list.h"

void _sf_adamw_corrections(float b1, float b2, int64_t t, float *c1, float *c2)
{
	/* 1 - b^t in double: in float, 1 - 0.999^2 keeps only ~4 significant digits */
	*c1 = (float)(1.0 - pow((double)b1, (double)t));
	*c2 = (float)(1.0 - pow((double)b2, (double)t));
}
