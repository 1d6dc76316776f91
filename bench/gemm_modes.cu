/*
 * gemm_modes.cu — the training step's GEMM shapes (GPT-2 124M at batch 8 x 1024 tokens)
 * in each way cuBLAS can compute them for shardflow: fp32 (cublasSgemm, default math),
 * TF32 (the handle's CUBLAS_TF32_TENSOR_OP_MATH, SHARDFLOW_GPU_MATH=tf32), bf16 products
 * on fp32 buffers (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_16BF: inputs rounded to bf16
 * inside cuBLAS, fp32 accumulation and output), and bf16 buffers (A, B and C in bf16,
 * fp32 compute: what bf16 activations would give). Medians of 7 runs with CUDA events,
 * TFLOP/s. Needs a GPU; prints the table on stdout.
 */
#include <algorithm>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CK(x)                                                                              \
	do {                                                                                   \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                       \
			exit(1);                                                                       \
		}                                                                                  \
	} while (0)
#define CB(x)                                                                              \
	do {                                                                                   \
		cublasStatus_t s_ = (x);                                                           \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
			fprintf(stderr, "%s: %s\n", #x, cublasGetStatusString(s_));                    \
			exit(1);                                                                       \
		}                                                                                  \
	} while (0)

enum mode { FP32, TF32, FAST16BF, BF16IO, NMODES };
static const char *names[] = {"fp32", "tf32", "fp32 buffers, bf16 products",
                              "bf16 buffers"};

int main()
{
	cublasHandle_t h;
	CB(cublasCreate(&h));
	/* M x N = M x K times K x N (row-major y = x W^T as the linear layers do, and the
	 * backward's two shapes) */
	struct shp {
		const char *what;
		int m, n, k;
	} shapes[] = {
	    {"qkv fwd", 8192, 2304, 768},  {"fc fwd", 8192, 3072, 768},
	    {"proj2 fwd", 8192, 768, 3072}, {"fc dW", 3072, 768, 8192},
	    {"square 8192", 8192, 8192, 8192},
	};
	size_t most = (size_t)8192 * 8192;
	float *A, *B, *C;
	__nv_bfloat16 *Ab, *Bb, *Cb;
	CK(cudaMalloc(&A, most * 4));
	CK(cudaMalloc(&B, most * 4));
	CK(cudaMalloc(&C, most * 4));
	CK(cudaMalloc(&Ab, most * 2));
	CK(cudaMalloc(&Bb, most * 2));
	CK(cudaMalloc(&Cb, most * 2));
	CK(cudaMemset(A, 0, most * 4));
	CK(cudaMemset(B, 0, most * 4));
	CK(cudaMemset(Ab, 0, most * 2));
	CK(cudaMemset(Bb, 0, most * 2));
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	printf("| shape (m n k) | %s | %s | %s | %s |\n| --- | --- | --- | --- | --- |\n",
	       names[0], names[1], names[2], names[3]);
	for (const shp &s : shapes) {
		printf("| %s (%d %d %d) |", s.what, s.m, s.n, s.k);
		for (int md = 0; md < NMODES; md++) {
			const float al = 1.0f, be = 0.0f;
			std::vector<double> t;
			for (int it = 0; it < 9; it++) {
				CB(cublasSetMathMode(h, md == TF32 ? CUBLAS_TF32_TENSOR_OP_MATH
				                                   : CUBLAS_DEFAULT_MATH));
				CK(cudaEventRecord(e0));
				if (md == FP32 || md == TF32)
					CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &al, B, s.n, A,
					               s.k, &be, C, s.n));
				else if (md == FAST16BF)
					CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &al, B,
					                CUDA_R_32F, s.n, A, CUDA_R_32F, s.k, &be, C, CUDA_R_32F,
					                s.n, CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_GEMM_DEFAULT));
				else
					CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &al, Bb,
					                CUDA_R_16BF, s.n, Ab, CUDA_R_16BF, s.k, &be, Cb,
					                CUDA_R_16BF, s.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
				CK(cudaEventRecord(e1));
				CK(cudaEventSynchronize(e1));
				float ms;
				CK(cudaEventElapsedTime(&ms, e0, e1));
				if (it >= 2)
					t.push_back(ms);
			}
			std::sort(t.begin(), t.end());
			double ms = t[t.size() / 2];
			printf(" %.1f |", 2.0 * s.m * s.n * (double)s.k / ms / 1e9);
		}
		printf("\n");
	}
	return 0;
}
