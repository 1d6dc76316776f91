/* loss_cuda.cu — the regression losses' CUDA launcher: layers/loss_math.h, a thread per
 * element writing its scaled derivative to dpred and its term to a scratch
 * (cudaMallocAsync on the stream), then one thread summing the terms in element order,
 * as layers/loss_cpu.c does, so the loss is the CPU's bit for bit (the same terms added
 * in the same order) and deterministic. */
#include "config.h"

#include "common/cuda_util.h"
#include "layers/loss.h"
#include "layers/loss_math.h"

#include <starpu.h>

static __global__ void elems_k(size_t n, int kind, const float *pred, const float *target,
                               float delta, float scale, float *dpred, double *terms)
{
	SF_CUDA_FOR(i, n)
	{
		float g;
		float t = kind == SF_LOSS_MEAN_KIND ? 0.0f : target[i];
		terms[i] = sf_loss_elem(kind, pred[i] - t, delta, &g);
		dpred[i] = scale * g;
	}
}

static __global__ void sum_k(size_t n, const double *terms, float scale, double *loss)
{
	double s = 0.0;
	for (size_t i = 0; i < n; i++)
		s += terms[i];
	*loss = s * scale;
}

extern "C" void _sf_reg_loss_dev(const struct _sf_reg_loss_args *a, const float *pred,
                                 const float *target, float *dpred, double *loss)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	size_t n = (size_t)a->rows * (size_t)a->width;
	double *terms = NULL;
	SF_CUDA_CHECK(cudaMallocAsync((void **)&terms, sizeof(double) * (n > 0 ? n : 1), s));
	SF_CUDA_CHECK_LAUNCH("reg_loss elems_k",
	                     elems_k<<<sf_cuda_blocks(n), SF_CUDA_BLOCK, 0, s>>>(
	                         n, a->kind, pred, target, a->delta, a->scale, dpred, terms));
	SF_CUDA_CHECK_LAUNCH("reg_loss sum_k", sum_k<<<1, 1, 0, s>>>(n, terms, a->scale, loss));
	SF_CUDA_CHECK(cudaFreeAsync(terms, s));
}
