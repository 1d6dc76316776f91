/*
 * optim.c — optimizer codelets: each updates one unit's local shard (or the whole
 * unit when parameters are replicated) in place. Per-step values (learning rate,
 * AdamW's step t) travel packed in the task (STARPU_VALUE), so steps in flight
 * never share mutable arguments.
 */
#include "scheduler/internal.h"
#include "tasks/kernels.h"

static struct _sf_opt_args unpack(void *cl_arg)
{
	struct _sf_opt_args a;
	starpu_codelet_unpack_args(cl_arg, &a);
	return a;
}

/* param[RW] grad[R] buf[RW] */
static void sgd_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	struct _sf_opt_args a = unpack(cl_arg);
	_sf_sgd(a.n, (float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	        (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
	        (float *)STARPU_VECTOR_GET_PTR(buffers[2]), a.lr, a.momentum, a.weight_decay);
}

/* param[RW] grad[R] m[RW] v[RW] */
static void adamw_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	struct _sf_opt_args a = unpack(cl_arg);
	_sf_adamw(a.n, (float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	          (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
	          (float *)STARPU_VECTOR_GET_PTR(buffers[2]),
	          (float *)STARPU_VECTOR_GET_PTR(buffers[3]), a.lr, a.beta1, a.beta2, a.eps,
	          a.weight_decay, a.t);
}

struct starpu_codelet _sf_cl_sgd = {
    .where = STARPU_CPU,
    .cpu_funcs = {sgd_cpu},
    .cpu_funcs_name = {"sgd_cpu"},
    .nbuffers = 3,
    .modes = {STARPU_RW, STARPU_R, STARPU_RW},
    .can_execute = _sf_compute_can_execute,
    .name = "sgd",
};

struct starpu_codelet _sf_cl_adamw = {
    .where = STARPU_CPU,
    .cpu_funcs = {adamw_cpu},
    .cpu_funcs_name = {"adamw_cpu"},
    .nbuffers = 4,
    .modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW},
    .can_execute = _sf_compute_can_execute,
    .name = "adamw",
};
