/*
 * attention_cuda.cu — causal multi-head attention's CUDA launchers: the plan of
 * layers/attention_plan.h run with cuBLAS strided batched GEMMs (the worker's handle)
 * and the softmax rows of layers/attention_math.h, a thread per row, all on the
 * worker's stream. No row blocks as on the CPU: the whole T x T scores per head.
 */
#include "config.h"

#include "common/cublas_rm.h"
#include "layers/attention.h"
#include "layers/attention_math.h"
#include "layers/attention_plan.h"

#include <starpu.h>
#include <starpu_cublas_v2.h>

static __global__ void softmax_k(int NH, int T, float *p)
{
	SF_CUDA_FOR(r, (size_t)NH * T)
	sf_causal_softmax_row(p + r * T, (int)(r % T), T);
}

static __global__ void softmax_bwd_k(int NH, int T, const float *p, float *d)
{
	SF_CUDA_FOR(r, (size_t)NH * T)
	sf_softmax_bwd_row(p + r * T, d + r * T, (int)(r % T), T);
}

namespace {
struct cuda_exec {
	cublasHandle_t h;
	cudaStream_t s;

	void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *A, int lda,
	          long long sA, const float *B, int ldb, long long sB, float beta, float *C, int ldc,
	          long long sC, int count)
	{
		sf_gemm_rm_batched(h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC,
		                   count);
	}
	void softmax_rows(int NH, int T, float *p)
	{
		SF_CUDA_CHECK_LAUNCH(
		    "attention softmax_k",
		    softmax_k<<<sf_cuda_blocks((size_t)NH * T), SF_CUDA_BLOCK, 0, s>>>(NH, T, p));
	}
	void softmax_bwd_rows(int NH, int T, const float *p, float *d)
	{
		SF_CUDA_CHECK_LAUNCH(
		    "attention softmax_bwd_k",
		    softmax_bwd_k<<<sf_cuda_blocks((size_t)NH * T), SF_CUDA_BLOCK, 0, s>>>(NH, T, p,
		                                                                           d));
	}
	void zero_cols(float *base, int ld, int width, size_t rows)
	{
		SF_CUDA_CHECK(cudaMemset2DAsync(base, sizeof(float) * ld, 0, sizeof(float) * width, rows,
		                                s));
	}
	float *scratch(size_t n)
	{
		float *p = NULL;
		SF_CUDA_CHECK(cudaMallocAsync((void **)&p, sizeof(float) * n, s));
		return p;
	}
	void release(float *p)
	{
		SF_CUDA_CHECK(cudaFreeAsync(p, s));
	}
};
} // namespace

extern "C" void _sf_attention_fwd_cuda(int B, int T, int C, int NH, const float *qkv, float *y,
                                       float *p)
{
	cuda_exec x{starpu_cublas_get_local_handle(), starpu_cuda_get_local_stream()};
	sf_attention_fwd_plan(x, B, T, C, NH, qkv, y, p);
}

extern "C" void _sf_attention_bwd_cuda(int B, int T, int C, int NH, const float *qkv,
                                       const float *p, const float *dy, float *dqkv, int acc)
{
	cuda_exec x{starpu_cublas_get_local_handle(), starpu_cuda_get_local_stream()};
	sf_attention_bwd_plan(x, B, T, C, NH, qkv, p, dy, dqkv, acc);
}
