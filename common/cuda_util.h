/*
 * cuda_util.h — what every CUDA launch wrapper (*.cu, compiled by nvcc only when
 * configure found CUDA) shares: the launch shape of element-wise kernels and the
 * error checks, which name the file and the line.
 *
 * A kernel runs inside a StarPU task (STARPU_CUDA_ASYNC, on
 * starpu_cuda_get_local_stream()), which cannot return a status: a failed launch or
 * CUDA call prints "shardflow: CUDA error at FILE:LINE: CALL: MESSAGE" and aborts the
 * process, which mpirun turns into the end of the job (the other ranks' comm timeout
 * ends them at the latest).
 */
#ifndef SF_COMMON_CUDA_UTIL_H
#define SF_COMMON_CUDA_UTIL_H

#ifndef __CUDACC__
#error "common/cuda_util.h is for nvcc-compiled files"
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define SF_CUDA_BLOCK 256
#define SF_CUDA_MAX_BLOCKS 4096

/* blocks for n elements in a grid-stride loop: enough to fill a GPU, at least 1 */
static inline unsigned sf_cuda_blocks(size_t n)
{
	size_t b = (n + SF_CUDA_BLOCK - 1) / SF_CUDA_BLOCK;
	if (b < 1)
		b = 1;
	if (b > SF_CUDA_MAX_BLOCKS)
		b = SF_CUDA_MAX_BLOCKS;
	return (unsigned)b;
}

/* the grid-stride loop over [0, n) */
#define SF_CUDA_FOR(i, n)                                                                  \
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);               \
	     i += (size_t)gridDim.x * blockDim.x)

static inline void sf_cuda_fail(const char *file, int line, const char *what, cudaError_t e)
{
	fprintf(stderr, "shardflow: CUDA error at %s:%d: %s: %s (%s)\n", file, line, what,
	        cudaGetErrorString(e), cudaGetErrorName(e));
	abort();
}

/* a CUDA runtime call */
#define SF_CUDA_CHECK(call)                                                                \
	do {                                                                                   \
		cudaError_t sf_e_ = (call);                                                        \
		if (sf_e_ != cudaSuccess)                                                          \
			sf_cuda_fail(__FILE__, __LINE__, #call, sf_e_);                                \
	} while (0)

/* A kernel launch and its own error: SF_CUDA_CHECK_LAUNCH("name", k<<<g, b, 0, s>>>(...))
 * (the launch is the variadic part: its <<<...>>> holds commas). cudaGetLastError
 * returns any earlier error of the thread not yet read, such as the out-of-memory
 * that StarPU's allocator meets and handles by evicting data, so it is cleared
 * before the launch; a sticky error (a failed kernel) survives the clearing and is
 * still reported. */
#define SF_CUDA_CHECK_LAUNCH(name, ...)                                                    \
	do {                                                                                   \
		static_assert(sizeof(#__VA_ARGS__) > 1, "SF_CUDA_CHECK_LAUNCH(name, launch)");     \
		(void)cudaGetLastError();                                                          \
		__VA_ARGS__;                                                                       \
		cudaError_t sf_e_ = cudaGetLastError();                                            \
		if (sf_e_ != cudaSuccess)                                                          \
			sf_cuda_fail(__FILE__, __LINE__, "launch of " name, sf_e_);                    \
	} while (0)

#endif
