/*
 * cuda_reduce.cuh — the deterministic reductions of the CUDA kernels: a warp per row
 * (the lanes take the row's elements lane, lane + 32, ..., each sums its own in
 * order, then a fixed butterfly of shuffles), and a block of SF_COLS x SF_COL_GROUPS
 * threads per 32 columns (each group sums every SF_COL_GROUPS-th row in order, then
 * the groups' sums are added in group order). Every run gives the same bits; the
 * order differs from the CPU's loops, so GPU and CPU agree to rounding
 * (tests/gpu_step.sh, rtol 1e-4), not bitwise. docs/gpu.md has what this gained.
 */
#ifndef SF_COMMON_CUDA_REDUCE_CUH
#define SF_COMMON_CUDA_REDUCE_CUH

#include "common/cuda_util.h"

#define SF_WARP 32
/* rows per block of the warp-per-row kernels: SF_CUDA_BLOCK / SF_WARP */
#define SF_ROWS_PER_BLOCK (SF_CUDA_BLOCK / SF_WARP)
/* the column kernels' block: 32 columns x 32 row groups */
#define SF_COLS 32
#define SF_COL_GROUPS 32

/* the sum of every lane's v, the same on every lane (a fixed butterfly) */
static __device__ __forceinline__ double sf_warp_sum(double v)
{
	for (int o = SF_WARP / 2; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

static __device__ __forceinline__ float sf_warp_max(float v)
{
	for (int o = SF_WARP / 2; o > 0; o /= 2)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* grid and block of a warp-per-row kernel over n rows */
static inline unsigned sf_cuda_row_blocks(size_t n)
{
	size_t b = (n + SF_ROWS_PER_BLOCK - 1) / SF_ROWS_PER_BLOCK;
	if (b < 1)
		b = 1;
	if (b > 65535u * 16u)
		b = 65535u * 16u;
	return (unsigned)b;
}

/* the warp-per-row loop: row r of n for this warp, lane its lane */
#define SF_CUDA_ROWS(r, lane, n)                                                           \
	const int lane = threadIdx.x % SF_WARP;                                                \
	for (size_t r = blockIdx.x * (size_t)SF_ROWS_PER_BLOCK + threadIdx.x / SF_WARP; r < (n); \
	     r += (size_t)gridDim.x * SF_ROWS_PER_BLOCK)

/* the column kernels' launch shape for C columns */
static inline dim3 sf_cuda_col_grid(int C)
{
	return dim3((unsigned)((C + SF_COLS - 1) / SF_COLS));
}
static inline dim3 sf_cuda_col_block(void)
{
	return dim3(SF_COLS, SF_COL_GROUPS);
}

#endif
