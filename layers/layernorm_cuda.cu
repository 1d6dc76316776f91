/* layernorm_cuda.cu — layernorm's CUDA launchers: layers/layernorm_math.h, a thread per
 * row (forward and dx) and a thread per column (dw, db: rows in order), on the
 * worker's stream. */
#include "config.h"

#include "common/cuda_util.h"
#include "layers/layernorm.h"
#include "layers/layernorm_math.h"

#include <starpu.h>

static __global__ void fwd_k(int B, int C, const float *x, const float *w, const float *b,
                             float eps, float *y, float *mean, float *rstd)
{
	SF_CUDA_FOR(r, (size_t)B)
	sf_layernorm_row_fwd(C, x + r * C, w, b, eps, y + r * C, &mean[r], &rstd[r]);
}

static __global__ void dx_k(int B, int C, const float *x, const float *w, const float *mean,
                            const float *rstd, const float *dy, float *dx, int acc)
{
	SF_CUDA_FOR(r, (size_t)B)
	sf_layernorm_row_dx(C, x + r * C, w, mean[r], rstd[r], dy + r * C, dx + r * C, acc);
}

static __global__ void dparams_k(int B, int C, const float *x, const float *mean,
                                 const float *rstd, const float *dy, float *dw, float *db,
                                 int pacc)
{
	SF_CUDA_FOR(c, (size_t)C)
	{
		float w = pacc ? dw[c] : 0.0f, b = pacc ? db[c] : 0.0f;
		for (int r = 0; r < B; r++)
			sf_layernorm_dparam_add(x[(size_t)r * C + c], dy[(size_t)r * C + c], mean[r],
			                        rstd[r], &w, &b);
		dw[c] = w;
		db[c] = b;
	}
}

extern "C" void _sf_layernorm_fwd_cuda(int B, int C, const float *x, const float *w,
                                       const float *b, float eps, float *y, float *mean,
                                       float *rstd)
{
	SF_CUDA_CHECK_LAUNCH(
	    "layernorm fwd_k",
	    fwd_k<<<sf_cuda_blocks((size_t)B), SF_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
	        B, C, x, w, b, eps, y, mean, rstd));
}

extern "C" void _sf_layernorm_bwd_cuda(int B, int C, const float *x, const float *w,
                                       const float *mean, const float *rstd, const float *dy,
                                       float *dx, int acc, float *dw, float *db, int pacc)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	SF_CUDA_CHECK_LAUNCH("layernorm dparams_k",
	                     dparams_k<<<sf_cuda_blocks((size_t)C), SF_CUDA_BLOCK, 0, s>>>(
	                         B, C, x, mean, rstd, dy, dw, db, pacc));
	if (dx) {
		SF_CUDA_CHECK_LAUNCH("layernorm dx_k",
		                     dx_k<<<sf_cuda_blocks((size_t)B), SF_CUDA_BLOCK, 0, s>>>(
		                         B, C, x, w, mean, rstd, dy, dx, acc));
	}
}
