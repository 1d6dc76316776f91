/*
 * grad.h — the tasks a unit's gradient meets between its backward and its optimizer
 * step: accumulation over micro-batches and the squared norm of a shard for global-norm
 * clipping (the norm's all-reduce is a comm codelet, comm/comm_codelets.h). The math
 * is in grad_cpu.c (and grad_cuda.cu), the codelets in grad.c.
 *
 *   grad_add   : dst[RW] src[R]    dst += src        packed struct _sf_grad_args
 *   grad_copy  : dst[W]  src[R]    dst  = src        idem
 *   grad_sqnorm: g[R]    sq[W]     sq (one double) = sum of g[off, off + n)^2, in double
 *                                  (or sq[k] = that of run segs[k], k < nsegs)
 *
 * And the conversions the bf16 collectives make (called by the backends).
 */
#ifndef SF_TASKS_GRAD_H
#define SF_TASKS_GRAD_H

#include "tasks/submit.h"

#include <starpu.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* tasks/grad_cuda.cu */
#endif

/* A run of elements [off, off + n) of a buffer */
struct _sf_seg {
	size_t off, n;
};

struct _sf_grad_args {
	size_t off, n; /* elements [off, off + n) of the buffers */
	/* grad_sqnorm only: nsegs > 0 sums each run segs[k] into sq[k] instead (sq holds
	 * nsegs doubles; the model keeps segs): tensor parallelism's norm, where a TP rank
	 * counts only the parameters it alone holds */
	const struct _sf_seg *segs;
	int nsegs;
};

extern struct starpu_codelet _sf_cl_grad_add;
extern struct starpu_codelet _sf_cl_grad_copy;
extern struct starpu_codelet _sf_cl_grad_sqnorm;

/* Bodies that return at once when skip is set (SHARDFLOW_SKIP=compute). */
void _sf_grad_codelets_configure(bool skip);

/* Submitting them (tasks/submit.h); a copied into the task.
 * copy: dst[W] = src[R]; else dst[RW] += src[R] (elements [a.off, a.off + a.n)) */
int _sf_submit_grad_acc(bool copy, starpu_data_handle_t dst, starpu_data_handle_t src,
                        struct _sf_grad_args a, const char *name, struct _sf_task_done done);
/* sq[W] = the squared norm of g[R]'s elements [a.off, a.off + a.n) */
int _sf_submit_grad_sqnorm(starpu_data_handle_t g, starpu_data_handle_t sq,
                           struct _sf_grad_args a, const char *name, struct _sf_task_done done);

void _sf_grad_add(size_t n, float *dst, const float *src);
void _sf_grad_copy(size_t n, float *dst, const float *src);
/* *out = sum of g[i]^2 in double, i in order (the same sum on every run) */
void _sf_grad_sqnorm(size_t n, const float *g, double *out);
/* bf16 on the wire (common/bf16.h): dst = src rounded to bf16 (to nearest, or in the
 * calling worker's direction under SHARDFLOW_ROUNDING); dst = src widened */
void _sf_bf16_round_n(size_t n, const float *src, uint16_t *dst);
void _sf_bf16_widen_n(size_t n, const uint16_t *src, float *dst);

#ifdef SF_HAVE_CUDA
/* tasks/grad_cuda.cu: the same on device pointers, on the worker's CUDA stream (the
 * squared norm: one block, a fixed tree, so as deterministic as the CPU's) */
void _sf_grad_add_cuda(size_t n, float *dst, const float *src);
void _sf_grad_copy_cuda(size_t n, float *dst, const float *src);
void _sf_grad_sqnorm_cuda(size_t n, const float *g, double *out);
void _sf_bf16_round_n_cuda(size_t n, const float *src, uint16_t *dst);
void _sf_bf16_widen_n_cuda(size_t n, const uint16_t *src, float *dst);
#endif

#ifdef __cplusplus
}
#endif

#endif
