/* softmax_xent_cuda.cu — the loss's CUDA launcher: layers/softmax_xent_math.h, a thread
 * per row writing dz and its row's term to a scratch (cudaMallocAsync on the stream),
 * then one thread summing the terms in row order, as the CPU does, so the loss is
 * deterministic. */
#include "config.h"

#include "common/cuda_util.h"
#include "layers/softmax_xent.h"
#include "layers/softmax_xent_math.h"

#include <starpu.h>

static __global__ void rows_k(int B, int C, const float *z, const int32_t *labels, int32_t ignore,
                              float scale, float *dz, double *terms)
{
	SF_CUDA_FOR(r, (size_t)B)
	terms[r] = sf_softmax_xent_row_or_ignore(C, z + r * C, labels[r], ignore, scale, dz + r * C);
}

static __global__ void sum_k(int B, const double *terms, float scale, double *loss)
{
	double s = 0.0;
	for (int r = 0; r < B; r++)
		s += terms[r];
	*loss = s * scale;
}

extern "C" void _sf_softmax_xent_dev(int B, int C, const float *z, const int32_t *labels,
                                     int32_t ignore, float scale, float *dz, double *loss)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	double *terms = NULL;
	SF_CUDA_CHECK(cudaMallocAsync((void **)&terms, sizeof(double) * (size_t)(B > 0 ? B : 1), s));
	SF_CUDA_CHECK_LAUNCH("softmax_xent rows_k",
	                     rows_k<<<sf_cuda_blocks((size_t)B), SF_CUDA_BLOCK, 0, s>>>(
	                         B, C, z, labels, ignore, scale, dz, terms));
	SF_CUDA_CHECK_LAUNCH("softmax_xent sum_k", sum_k<<<1, 1, 0, s>>>(B, terms, scale, loss));
	SF_CUDA_CHECK(cudaFreeAsync(terms, s));
}
