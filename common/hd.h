/*
 * hd.h — one spelling for functions compiled both as host C and as CUDA device code.
 *
 * The per-element and per-row math of the ops and the optimizers lives in headers
 * (layers/<op>_math.h, tasks/optim_math.h) whose functions are SF_HD: static inline
 * in C (the CPU codelets call them), __host__ __device__ under nvcc (the CUDA kernels
 * call the same functions). So the finite-difference and equivalence tests, which run
 * the CPU codelets, cover the formulas a GPU runs; only the launch wrappers
 * (*.cu) are GPU-only. tests/test_hd_nvcc.cu compiles these headers with nvcc's host
 * compiler too and checks them against the C build's results.
 *
 * Only plain C that both compilers accept goes in SF_HD functions: float and double
 * arithmetic, sqrtf/expf/logf/fmaxf (the CUDA math library has the same names), no
 * libc calls with side effects, no VLAs, no designated initialisers.
 */
#ifndef SF_COMMON_HD_H
#define SF_COMMON_HD_H

#if defined(__CUDACC__)
#define SF_HD static __host__ __device__ __forceinline__
#else
#define SF_HD static inline
#endif

#endif
