/*
 * submit.h — the one way a step's tasks enter StarPU (tasks/submit.c).
 *
 * A task is a codelet, its buffers in the codelet's order (handle and access mode
 * each), its argument block, where it runs, its name, and what runs when it is done.
 * Each codelet family has the function that fills one for its codelets and submits
 * it, beside the codelets and their buffer order: the comm tasks (comm_codelets.h),
 * the layers' and the loss's (layer_codelets.h), the gradient's (grad.h), the
 * optimizers' (optim.h). The planner (scheduler/step.c) decides only which tasks a
 * step has and in what order, and reserves their trace records.
 */
#ifndef SF_TASKS_SUBMIT_H
#define SF_TASKS_SUBMIT_H

#include <starpu.h>
#include <stdbool.h>
#include <stddef.h>

/* What runs when a task is done: the built-in trace's record and its callback
 * (trace/recorder.h), or nothing (fn NULL). */
struct _sf_task_done {
	void (*fn)(void *arg);
	void *arg;
};

/* Submits a task of codelet cl on buffers buf (nbuf, in the codelet's order), named
 * `name`, on `worker` (or -1: any worker the codelet allows), calling done when it is
 * done. Its argument block (arg_size bytes) is copied into the task when arg_copy
 * (STARPU_VALUE, read with starpu_codelet_unpack_args), else passed by pointer and
 * never freed by StarPU (it must outlive the task: the model's own structures). A
 * status: SF_ERR_STARPU with StarPU's code when it refuses. */
int _sf_task_submit(struct starpu_codelet *cl, const struct starpu_data_descr *buf, int nbuf,
                    const void *arg, size_t arg_size, bool arg_copy, int worker, const char *name,
                    struct _sf_task_done done);
/* The same, for a task of `flops` floating-point operations (starpu_task::flop): StarPU
 * keeps them in the codelet's history-based perfmodel, beside the task's time, which is
 * how starpu_perfmodel_display and starpu_perfmodel_plot -f get GFlop/s
 * (docs/profiling.md). The computing codelets give them; a collective has none. */
int _sf_task_submit_flops(struct starpu_codelet *cl, const struct starpu_data_descr *buf, int nbuf,
                          const void *arg, size_t arg_size, bool arg_copy, int worker, double flops,
                          const char *name, struct _sf_task_done done);

/* The StarPU priority of the tasks this thread submits from now on (STARPU_DEFAULT_PRIO,
 * 0, until set); returns the one it replaces. A scheduler that honours priorities (lws,
 * StarPU's default and shardflow's, and prio, dmdas) runs the ready task of the highest
 * first; others ignore them. The pipeline's schedules set it (scheduler/pipeline.c). */
int _sf_task_priority_set(int prio);

/* A task's footprint, the key of its history-based performance model: StarPU's own
 * (each buffer's vector length, folded by CRC-32C), except that a buffer whose handle
 * carries a struct _sf_footprint_as as its user data counts as a vector of that
 * length. The model's gather-ring and gradient slots carry one (the largest slot's
 * length, scheduler/model_storage.c): a slot is sized by the largest unit it holds,
 * so a unit's tasks would otherwise key their history by the slot they land in, and
 * models recorded before the slots were sized per unit (tests/sim/, a calibration)
 * would no longer be found. Set as every history-based model's footprint in tasks/. */
struct _sf_footprint_as {
	size_t nx;
};
uint32_t _sf_task_footprint(struct starpu_task *task);

#endif
