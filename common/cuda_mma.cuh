/*
 * cuda_mma.cuh — CUDA's headers for tensor-core device code (nvcc only): bf16 types and
 * conversions, WMMA fragments. Kernels that multiply on the tensor cores include this,
 * as launch wrappers include common/cuda_util.h, so that CUDA's headers are named in
 * common/ alone (tests/layout.sh).
 */
#ifndef SF_COMMON_CUDA_MMA_CUH
#define SF_COMMON_CUDA_MMA_CUH

#ifndef __CUDACC__
#error "common/cuda_mma.cuh is for nvcc-compiled files"
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#endif
