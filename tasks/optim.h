/*
 * optim.h — the optimizers: each is one file of tasks/optimizers/ (its per-element
 * update, its CPU lanes and its SF_OPTIMIZER line), which this folder turns into its
 * CPU loop (optim_cpu.c), its CUDA kernel (optim_cuda.cu), its codelet and its row of
 * _sf_optim_families (optim.c), each updating one unit's local shard, or the whole
 * unit when the parameters are replicated, in place.
 *
 *   param[RW] grad[R] s0[RW] (s1[RW]) clip[R]      packed struct _sf_opt_args
 *
 * s0, s1: the 1 or 2 state vectors, as long as the parameters ("m" and "v" in
 * checkpoints). clip: the step's two doubles {gradient norm, clip factor} (factor 1
 * when the model does not clip), written on device by the norm's all-reduce: the
 * factor reaches the update without a host round trip.
 *
 * An optimizer file tasks/optimizers/<name>.h holds, in this order:
 *   SF_HD void sf_<name>_elem(float *p, float g, float *s0, float *s1,
 *                             const struct _sf_opt_hyper *h)   one element (optim_math.h)
 *   #ifdef SF_OPTIM_CPU: static size_t <name>_lanes(n, p, g, s0, s1, s, h)
 *       the same operations four elements at a time (common/vec4.h), returning how
 *       many it did (0 is allowed: the element then does them all)
 *   SF_OPTIMIZER(<name>, <state vectors: 1 or 2>, <flops a parameter>)
 * and its value SF_OPT_<NAME> in enum sf_optimizer (include/shardflow.h). Its name is
 * the file's; scripts/families.sh (autogen.sh) lists the files (tasks/optimizers/list.h).
 * docs/architecture.md, "An optimizer".
 */
#ifndef SF_TASKS_OPTIM_H
#define SF_TASKS_OPTIM_H

#include "tasks/optim_math.h"
#include "tasks/optimizers/list.h"
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

/* The uniform signature of an optimizer's loop on n elements (its CPU loop
 * _sf_opt_cpu_<name>; its CUDA launcher _sf_opt_cuda_<name>, on device pointers and
 * the worker's stream): the gradient it applies is g * scale * clip[1]
 * (sf_grad_mult); s1 is NULL for a family of one state vector. */
#define SF_OPT_LOOP_PARAMS                                                                         \
	size_t n, float *p, const float *g, float *s0, float *s1, const struct _sf_opt_hyper *h,   \
	    float scale, const double *clip
typedef void (*_sf_opt_loop)(SF_OPT_LOOP_PARAMS);

#define SF_OPT_DECLARE_CPU(name, NAME) void _sf_opt_cpu_##name(SF_OPT_LOOP_PARAMS);
SF_OPTIMIZER_LIST(SF_OPT_DECLARE_CPU)
#undef SF_OPT_DECLARE_CPU
#ifdef SF_HAVE_CUDA
#define SF_OPT_DECLARE_CUDA(name, NAME) void _sf_opt_cuda_##name(SF_OPT_LOOP_PARAMS);
SF_OPTIMIZER_LIST(SF_OPT_DECLARE_CUDA)
#undef SF_OPT_DECLARE_CUDA
#endif

/* One optimizer family (indexed by enum sf_optimizer): its name (its file's), its
 * codelet (param[RW] grad[R] state[RW] x nstate clip[R], arguments struct
 * _sf_opt_args), its number of state vectors, 1 or 2, and its CPU loop. The model
 * allocates, the step submits, checkpoints save and reshard what the row says. */
struct _sf_optim_family {
	const char *name;
	struct starpu_codelet *cl;
	int nstate;
	int flops; /* per parameter, as its file writes the update (the task's
	              starpu_task::flop is this times the shard's length) */
	_sf_opt_loop cpu;
};
extern const struct _sf_optim_family _sf_optim_families[];

/* Bodies that return at once when skip is set (SHARDFLOW_SKIP=compute). */
void _sf_optim_codelets_configure(bool skip);

/* Submits optimizer `opt`'s update (tasks/submit.h): param[RW] grad[R], its state
 * vectors m[RW] (and v[RW] when the family has two), clip[R]; a copied into the task. */
int _sf_submit_opt(int opt, const struct _sf_opt_args *a, starpu_data_handle_t param,
                   starpu_data_handle_t grad, starpu_data_handle_t m, starpu_data_handle_t v,
                   starpu_data_handle_t clip, const char *name, struct _sf_task_done done);

/* The hyper-parameters of run `run` of a's runs: its learning rate and decay, and
 * AdamW's bias corrections for step a->t (1 - b^t in double, rounded to float). */
struct _sf_opt_hyper _sf_opt_hyper_of(const struct _sf_opt_args *a, int run);
/* AdamW's bias corrections c1 = 1 - b1^t, c2 = 1 - b2^t, in double, rounded to float */
void _sf_adamw_corrections(float b1, float b2, int64_t t, float *c1, float *c2);

#ifdef __cplusplus
}
#endif

#endif
