/*
 * attention_cuda.cu — causal multi-head attention's CUDA launchers: the plan of
 * layers/attention_plan.h run with cuBLAS batched GEMMs (the worker's handle) and the
 * softmax rows, a warp per row (common/cuda_reduce.cuh: the row's max and its sum in
 * double spread over the lanes; the CPU's rows, layers/attention_cpu.c, do the same math
 * in another order, with another exponential), all on the worker's stream. No row blocks
 * as on the CPU: the whole T x T scores per head, in chunks of whole samples (or of a
 * sample's key/value groups) that fit a stream-ordered scratch of
 * SF_ATTENTION_GPU_SCRATCH floats; the saved buffer holds the rows' statistics only
 * (layers/attention.h). A chunk of several samples is one cublasSgemmBatched call a
 * product, its pointer arrays written on the stream by batch_ptrs_k: a pass costs a
 * handful of launches whatever the batch, where a loop over samples cost seven a sample
 * in the backward.
 *
 * With SHARDFLOW_GPU_MATH=bf16 and a head size they serve (a multiple of 16 up to 128,
 * aligned buffers), the fused bf16 kernels of layers/attention_flash.cuh run instead:
 * no T x T buffer, the same saved statistics, a scratch of B NH T floats in the
 * backward.
 */
#include "config.h"

#include "common/cublas_rm.h"
#include "common/cuda_reduce.cuh"
#include "layers/attention.h"
#include "layers/attention_flash.cuh"
#include "layers/attention_plan.h"
#include "layers/gpu_math.h"

#include <starpu.h>
#include <starpu_cublas_v2.h>

/* row r of the NH T x T scores is query i = r % T: softmax over s[0..i], zeros after;
 * the row's max and inverse sum to stat + 2 r */
static __global__ void softmax_k(int NH, int T, float *p, float *stat)
{
	SF_CUDA_ROWS(r, lane, (size_t)NH * T)
	{
		float *s = p + r * T;
		int i = (int)(r % T);
		float mx = s[0];
		for (int j = lane; j <= i; j += SF_WARP)
			mx = fmaxf(mx, s[j]);
		mx = sf_warp_max(mx);
		double a = 0.0;
		for (int j = lane; j <= i; j += SF_WARP) {
			float e = expf(s[j] - mx);
			s[j] = e;
			a += e;
		}
		/* sum >= 1 (the max's own term), so the division is safe */
		float inv = (float)(1.0 / sf_warp_sum(a));
		for (int j = lane; j <= i; j += SF_WARP)
			s[j] *= inv;
		for (int j = i + 1 + lane; j < T; j += SF_WARP)
			s[j] = 0.0f;
		if (lane == 0) {
			stat[2 * r] = mx;
			stat[2 * r + 1] = inv;
		}
	}
}

/* the rows of softmax_k again from the same scores and its stat: the same two roundings
 * per entry (expf's, the product's), so the same probabilities */
static __global__ void probs_k(int NH, int T, float *p, const float *stat)
{
	SF_CUDA_ROWS(r, lane, (size_t)NH * T)
	{
		float *s = p + r * T;
		int i = (int)(r % T);
		float mx = stat[2 * r], inv = stat[2 * r + 1];
		for (int j = lane; j <= i; j += SF_WARP) {
			float e = expf(s[j] - mx);
			s[j] = e * inv;
		}
		for (int j = i + 1 + lane; j < T; j += SF_WARP)
			s[j] = 0.0f;
	}
}

/* dS = P (dP - rowsum(dP P)) in place in d, row by row as softmax_k */
static __global__ void softmax_bwd_k(int NH, int T, const float *p, float *d)
{
	SF_CUDA_ROWS(r, lane, (size_t)NH * T)
	{
		const float *pr = p + r * T;
		float *dr = d + r * T;
		int i = (int)(r % T);
		double a = 0.0;
		for (int j = lane; j <= i; j += SF_WARP)
			a += (double)dr[j] * pr[j];
		float sf = (float)sf_warp_sum(a);
		for (int j = lane; j <= i; j += SF_WARP)
			dr[j] = pr[j] * (dr[j] - sf);
		for (int j = i + 1 + lane; j < T; j += SF_WARP)
			dr[j] = 0.0f;
	}
}

/* the pointer arrays of a batch of count x outer GEMMs: item i = o count + c at
 * X + o oX + c sX, into ptr[0..n), ptr[n..2n), ptr[2n..3n) for A, B, C */
static __global__ void batch_ptrs_k(int count, int n, const float *A, long long sA,
                                    long long oA, const float *B, long long sB, long long oB,
                                    float *C, long long sC, long long oC, void **ptr)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	long long o = i / count, c = i % count;
	ptr[i] = (void *)(A + o * oA + c * sA);
	ptr[n + i] = (void *)(B + o * oB + c * sB);
	ptr[2 * n + i] = (void *)(C + o * oC + c * sC);
}

namespace
{
struct cuda_exec {
	cublasHandle_t h;
	cudaStream_t s;
	void **ptr = NULL; /* the batches' pointer arrays, stream-ordered: reused call after call */
	size_t nptr = 0;

	~cuda_exec()
	{
		if (ptr)
			SF_CUDA_CHECK(cudaFreeAsync(ptr, s));
	}
	void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *A, int lda,
	          long long sA, long long oA, const float *B, int ldb, long long sB, long long oB,
	          float beta, float *C, int ldc, long long sC, long long oC, int count, int outer)
	{
		if (outer == 1 || count == 1) { /* one strided batch */
			int nb = outer == 1 ? count : outer;
			sf_gemm_rm_batched(h, ta, tb, m, n, k, alpha, A, lda, outer == 1 ? sA : oA, B, ldb,
			                   outer == 1 ? sB : oB, beta, C, ldc, outer == 1 ? sC : oC, nb);
			return;
		}
		int nb = count * outer;
		if (nptr < (size_t)nb) {
			if (ptr)
				SF_CUDA_CHECK(cudaFreeAsync(ptr, s));
			SF_CUDA_CHECK(cudaMallocAsync((void **)&ptr, sizeof(void *) * 3 * (size_t)nb, s));
			nptr = (size_t)nb;
		}
		SF_CUDA_CHECK_LAUNCH("attention batch_ptrs_k",
		                     batch_ptrs_k<<<(nb + 127) / 128, 128, 0, s>>>(
		                         count, nb, A, sA, oA, B, sB, oB, C, sC, oC, ptr));
		const float al = alpha, be = beta;
		/* row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T */
		SF_CUBLAS_CHECK(cublasSgemmBatched(h, sf_cublas_op(tb), sf_cublas_op(ta), n, m, k, &al,
		                                   (const float *const *)(ptr + nb), ldb,
		                                   (const float *const *)ptr, lda, &be,
		                                   (float *const *)(ptr + 2 * (size_t)nb), ldc, nb));
	}
	void softmax_rows(int NH, int T, float *p, float *stat)
	{
		SF_CUDA_CHECK_LAUNCH(
		    "attention softmax_k",
		    softmax_k<<<sf_cuda_row_blocks((size_t)NH * T), SF_CUDA_BLOCK, 0, s>>>(NH, T, p,
		                                                                           stat));
	}
	void probs_rows(int NH, int T, float *p, const float *stat)
	{
		SF_CUDA_CHECK_LAUNCH(
		    "attention probs_k",
		    probs_k<<<sf_cuda_row_blocks((size_t)NH * T), SF_CUDA_BLOCK, 0, s>>>(NH, T, p,
		                                                                         stat));
	}
	void softmax_bwd_rows(int NH, int T, const float *p, float *d)
	{
		SF_CUDA_CHECK_LAUNCH(
		    "attention softmax_bwd_k",
		    softmax_bwd_k<<<sf_cuda_row_blocks((size_t)NH * T), SF_CUDA_BLOCK, 0, s>>>(
		        NH, T, p, d));
	}
	void zero_cols(float *base, int ld, int width, size_t rows)
	{
		SF_CUDA_CHECK(
		    cudaMemset2DAsync(base, sizeof(float) * ld, 0, sizeof(float) * width, rows, s));
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

/* the fused kernels serve this call */
static bool use_flash(int C, int NH, int NKV, const float *qkv, const float *y, const float *dy,
                      const float *dqkv)
{
	int hs = C / NH;
	return _sf_gpu_math() == SF_GPU_MATH_BF16 &&
	       sf_flash_supported(hs, C + 2 * NKV * hs, qkv, y, dy, dqkv);
}

extern "C" void _sf_attention_fwd_cuda(int B, int T, int C, int NH, int NKV, const float *qkv,
                                       float *y, float *stat)
{
	if (use_flash(C, NH, NKV, qkv, y, NULL, NULL)) {
		SF_CUDA_CHECK(
		    sf_flash_fwd(B, T, C, NH, NKV, qkv, y, stat, starpu_cuda_get_local_stream()));
		return;
	}
	cuda_exec x{starpu_cublas_get_local_handle(), starpu_cuda_get_local_stream()};
	sf_attention_fwd_plan(x, B, T, C, NH, NKV, qkv, y, stat, SF_ATTENTION_GPU_SCRATCH);
}

extern "C" void _sf_attention_bwd_cuda(int B, int T, int C, int NH, int NKV, const float *qkv,
                                       const float *y, const float *stat, const float *dy,
                                       float *dqkv, int acc)
{
	if (use_flash(C, NH, NKV, qkv, y, dy, dqkv)) {
		cudaStream_t s = starpu_cuda_get_local_stream();
		float *Dd = NULL;
		SF_CUDA_CHECK(cudaMallocAsync((void **)&Dd, sizeof(float) * B * NH * T, s));
		SF_CUDA_CHECK(sf_flash_bwd(B, T, C, NH, NKV, qkv, y, stat, dy, dqkv, acc, Dd, s));
		SF_CUDA_CHECK(cudaFreeAsync(Dd, s));
		return;
	}
	cuda_exec x{starpu_cublas_get_local_handle(), starpu_cuda_get_local_stream()};
	sf_attention_bwd_plan(x, B, T, C, NH, NKV, qkv, stat, dy, dqkv, acc,
	                      SF_ATTENTION_GPU_SCRATCH);
}
