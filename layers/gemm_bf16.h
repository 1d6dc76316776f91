/*
 * gemm_bf16.h — matrix products in bf16 with fp32 accumulation, through oneDNN's
 * matmul (AVX512-BF16 where the CPU has it), for the linear layer's GEMMs of a node
 * whose parameters arrive in bf16 (param_dtype bf16, its unit not kept in fp32) (bench/bf16_gemm: 3 to 4 times sgemm's rate on the GPT's
 * shapes on this project's CPUs, conversions included). configure builds it when it
 * finds libdnnl (--with-dnnl); without it the products stay sgemm.
 *
 * Row-major, as cblas_sgemm: C (M x N) = op(A) op(B) + beta C, op(A) M x K (A^T when
 * ta), op(B) K x N (B^T when tb), beta 0 or 1. A and B are rounded to bf16 (nearest,
 * ties to even) on the way in; the products are summed in fp32. One thread per call
 * (a StarPU worker is one core); the same inputs give bitwise the same outputs.
 */
#ifndef SF_LAYERS_GEMM_BF16_H
#define SF_LAYERS_GEMM_BF16_H

#include <stdbool.h>

/* Whether this build can multiply in bf16 (it found oneDNN). */
bool _sf_gemm_bf16_available(void);
/* Whether the products this thread computes next run in bf16: a linear layer's body
 * sets its node's choice (sf_layer_info::param_bf16) around its products; ignored in a
 * build without oneDNN. Returns the previous choice, for the body to restore. */
bool _sf_gemm_bf16_use(bool on);
bool _sf_gemm_bf16_enabled(void);
/* Releases every thread's cached primitives and buffers (at sf_finalize). */
void _sf_gemm_bf16_release(void);

/* The product above; returns 0, or -1 when oneDNN refused (the caller then uses
 * sgemm; the reason is logged once). */
int _sf_gemm_bf16(bool ta, bool tb, int M, int N, int K, const float *A, int lda, const float *B,
                  int ldb, float beta, float *C, int ldc);

#endif
