/*
 * codelets.h — the StarPU codelets shardflow submits, declared once each.
 *
 * Compute codelets run on any compute worker (can_execute keeps them off the comm
 * worker); comm codelets are always submitted with STARPU_EXECUTE_ON_WORKER set to
 * the comm worker and take the comm-order handle (buffer 0) in STARPU_RW mode, so
 * they run one at a time, in submission order, identically on every rank.
 *
 * Buffer layouts (mode in brackets):
 *   gather   : order[RW] shard[R] slot[W] (extra[R])    cl_arg struct _sf_comm_args*
 *   rs       : order[RW] grad[RW] gshard[W]             idem (pads grad with zeros)
 *   allreduce: order[RW] grad[RW]                       idem (sum of P floats, in place)
 *   loss_sum : order[RW] loss[RW]                       idem (sum of one double)
 *   free     : slot[RW]                                 idem (drops the unit's residency)
 *   loss     : logits[R] labels[R] dlogits[W] loss[W]   struct _sf_loss_args*
 *   sgd      : param[RW] grad[R] buf[RW]                packed struct _sf_opt_args
 *   adamw    : param[RW] grad[R] m[RW] v[RW]            packed struct _sf_opt_args
 */
#ifndef SF_TASKS_CODELETS_H
#define SF_TASKS_CODELETS_H

#include <starpu.h>

extern struct starpu_codelet _sf_cl_gather;
extern struct starpu_codelet _sf_cl_gather_after; /* gather with an extra R dependency */
extern struct starpu_codelet _sf_cl_reduce_scatter;
extern struct starpu_codelet _sf_cl_allreduce;
extern struct starpu_codelet _sf_cl_loss_sum;
extern struct starpu_codelet _sf_cl_free;
extern struct starpu_codelet _sf_cl_loss;
extern struct starpu_codelet _sf_cl_sgd;
extern struct starpu_codelet _sf_cl_adamw;

/* Built-in layer kernels (tasks/layers_cpu.c), registered by layers/builtin.c. */
void _sf_linear_fwd_cpu(void *buffers[], void *cl_arg);
void _sf_linear_bwd_cpu(void *buffers[], void *cl_arg);
void _sf_relu_fwd_cpu(void *buffers[], void *cl_arg);
void _sf_relu_bwd_cpu(void *buffers[], void *cl_arg);
void _sf_gelu_fwd_cpu(void *buffers[], void *cl_arg);
void _sf_gelu_bwd_cpu(void *buffers[], void *cl_arg);
void _sf_add_fwd_cpu(void *buffers[], void *cl_arg);
void _sf_add_bwd_cpu(void *buffers[], void *cl_arg);

#endif
