/*
 * linear_math.h — the linear op's bias gradient, a column at a time, for the CUDA
 * kernel (a thread per column) (common/hd.h). layers/linear_cpu.c takes the same sums
 * in the same order (rows in order, from 0 or from db's content) going row by row,
 * which suits a CPU's caches; tests/test_hd_nvcc checks they agree bitwise. The
 * matrix products are GEMMs (OpenBLAS on the CPU, cuBLAS on the GPU).
 */
#ifndef SF_LAYERS_LINEAR_MATH_H
#define SF_LAYERS_LINEAR_MATH_H

#include "common/hd.h"

#include <stddef.h>

/* db[o] (=|+= as pacc says) sum over rows r in order of dy[r, o] */
SF_HD void sf_linear_db_col(int B, int O, int o, const float *dy, float *db, int pacc)
{
	float s = pacc ? db[o] : 0.0f;
	for (int r = 0; r < B; r++)
		s += dy[(size_t)r * O + o];
	db[o] = s;
}

#endif
