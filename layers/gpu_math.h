/*
 * gpu_math.h — the math of the CUDA launchers (SHARDFLOW_GPU_MATH), read by the layers'
 * .cu files. sf_init sets it once, before any task runs (tasks/worker.c,
 * _sf_cuda_start); fp32 until then. tf32 is the cuBLAS handles' math mode and needs
 * nothing here; bf16 switches linear's products to bf16 operands (cublasGemmEx) and
 * attention to the fused bf16 kernels (layers/attention_flash.cuh).
 */
#ifndef SF_LAYERS_GPU_MATH_H
#define SF_LAYERS_GPU_MATH_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

void _sf_gpu_math_set(enum sf_gpu_math math);
enum sf_gpu_math _sf_gpu_math(void);

#ifdef __cplusplus
}
#endif

#endif
