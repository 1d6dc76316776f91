/*
 * optim.h — the optimizer: its math (optim_cpu.c, plain C) and its codelets
 * (optim.c), each updating one unit's local shard, or the whole unit when the
 * parameters are replicated, in place.
 *
 *   sgd  : param[RW] grad[R] buf[RW] clip[R]          packed struct _sf_opt_args
 *   adamw: param[RW] grad[R] m[RW] v[RW] clip[R]      packed struct _sf_opt_args
 *   lion : param[RW] grad[R] m[RW] clip[R]            packed struct _sf_opt_args
 *
 * clip: the step's two doubles {gradient norm, clip factor} (factor 1 when the model
 * does not clip), written on device by the norm's all-reduce: the factor reaches the
 * update without a host round trip.
 *
 * Every optimizer is one family, the same buffer order with 1 or 2 state vectors,
 * described by one entry of _sf_optim_families (optim.c): the model allocates, the
 * step submits, checkpoints save and reshard what the entry says. Adding one = its
 * enum value (include/shardflow.h) and name (scheduler/config.c), its per-element
 * math (optim_math.h), CPU and CUDA loops (optim_cpu.c, optim_cuda.cu), its codelet
 * and its entry (optim.c). docs/architecture.md, "Add an optimizer".
 */
#ifndef SF_TASKS_OPTIM_H
#define SF_TASKS_OPTIM_H

#include "tasks/submit.h"

#include <starpu.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* tasks/optim_cuda.cu */
#endif

/* Per-step values travel packed in the task (STARPU_VALUE), so steps in flight never
 * share mutable arguments. The gradient the update uses is g * grad_scale * clip[1]:
 * grad_scale = 1 / the micro-batches summed, clip the step's clip buffer. */
/* A run of the optimizer's vector that one parameter group covers: elements up to
 * `end` (from the previous run's end), its learning rate lr x lr_scale, and whether
 * weight decay applies (parameter groups: sf_model_options::no_decay,
 * sf_model_tensor_lr_scale) */
struct _sf_opt_run {
	size_t end;
	float lr_scale;
	int decay;
};

struct _sf_opt_args {
	size_t n;
	float lr, momentum, weight_decay, beta1, beta2, eps;
	int64_t t; /* AdamW step, from 1 */
	float grad_scale;
	/* nruns runs tiling [0, n) in order (the unit's: fixed between steps) */
	const struct _sf_opt_run *runs;
	int nruns;
};

/* One optimizer family: its codelet (param[RW] grad[R] state[RW] x nstate clip[R],
 * arguments struct _sf_opt_args) and its number of state vectors, each as long as
 * the parameters it updates: 1 (m: SGD's momentum buffer, Lion's momentum) or 2
 * (m, v: AdamW's moments). Checkpoints hold them as the vectors "m" and "v". */
struct _sf_optim_family {
	struct starpu_codelet *cl;
	int nstate;
	int flops; /* per parameter, as tasks/optim_math.h writes the update (the task's
	              starpu_task::flop is this times the shard's length) */
};
/* indexed by enum sf_optimizer */
extern const struct _sf_optim_family _sf_optim_families[];

extern struct starpu_codelet _sf_cl_sgd;
extern struct starpu_codelet _sf_cl_adamw;
extern struct starpu_codelet _sf_cl_lion;

/* Bodies that return at once when skip is set (SHARDFLOW_SKIP=compute). */
void _sf_optim_codelets_configure(bool skip);

/* Submits optimizer `opt`'s update (tasks/submit.h): param[RW] grad[R], its state
 * vectors m[RW] (and v[RW] when the family has two), clip[R]; a copied into the task. */
int _sf_submit_opt(int opt, const struct _sf_opt_args *a, starpu_data_handle_t param,
                   starpu_data_handle_t grad, starpu_data_handle_t m, starpu_data_handle_t v,
                   starpu_data_handle_t clip, const char *name, struct _sf_task_done done);

/* SGD with momentum and L2 weight decay (PyTorch's formulation), on the gradient
 * g s, s = scale * (float)clip[1] (clip: a pointer to the clip buffer's two doubles):
 *   g' = g s + wd p;  buf = mu buf + g';  p -= lr buf
 * buf starts at zero, so the first step gives buf = g' exactly. */
void _sf_sgd(size_t n, float *p, const float *g, float *buf, float lr, float mu, float wd,
             float scale, const double *clip);

/* AdamW (decoupled weight decay), step t >= 1, on the gradient g s as above:
 *   p -= lr wd p;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   p -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) */
void _sf_adamw(size_t n, float *p, const float *g, float *m, float *v, float lr, float b1, float b2,
               float eps, float wd, int64_t t, float scale, const double *clip);
/* Lion (decoupled weight decay), on the gradient g s as above:
 *   c = b1 m + (1-b1) g;  p -= lr (sign(c) + wd p);  m = b2 m + (1-b2) g */
void _sf_lion(size_t n, float *p, const float *g, float *m, float lr, float b1, float b2, float wd,
              float scale, const double *clip);
/* AdamW's bias corrections c1 = 1 - b1^t, c2 = 1 - b2^t, in double, rounded to float */
void _sf_adamw_corrections(float b1, float b2, int64_t t, float *c1, float *c2);

#ifdef SF_HAVE_CUDA
/* tasks/optim_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_sgd_cuda(size_t n, float *p, const float *g, float *buf, float lr, float mu, float wd,
                  float scale, const double *clip);
void _sf_adamw_cuda(size_t n, float *p, const float *g, float *m, float *v, float lr, float b1,
                    float b2, float eps, float wd, int64_t t, float scale, const double *clip);
void _sf_lion_cuda(size_t n, float *p, const float *g, float *m, float lr, float b1, float b2,
                   float wd, float scale, const double *clip);
#endif

#ifdef __cplusplus
}
#endif

#endif
