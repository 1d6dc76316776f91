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

struct _sf_task {
	struct starpu_codelet *cl;
	const struct starpu_data_descr *buf; /* nbuf buffers, in the codelet's order */
	int nbuf;
	/* the argument block: copied into the task (arg_copy: STARPU_VALUE, read with
	 * starpu_codelet_unpack_args), or passed by pointer and never freed by StarPU
	 * (it must outlive the task: the model's own structures) */
	const void *arg;
	size_t arg_size;
	bool arg_copy;
	int worker; /* the worker that must run it, or -1 for any the codelet allows */
	const char *name;
	struct _sf_task_done done;
};

/* Submits t; a status (SF_ERR_STARPU with StarPU's code when it refuses). */
int _sf_task_submit(const struct _sf_task *t);

/* The two common cases, on any worker the codelet allows: the argument block copied
 * into the task, or passed by pointer (the model keeps it). */
static inline int _sf_task_submit_any(struct starpu_codelet *cl,
                                      const struct starpu_data_descr *buf, int nbuf,
                                      const void *arg, size_t arg_size, bool arg_copy,
                                      const char *name, struct _sf_task_done done)
{
	struct _sf_task t = {.cl = cl,
	                     .buf = buf,
	                     .nbuf = nbuf,
	                     .arg = arg,
	                     .arg_size = arg_size,
	                     .arg_copy = arg_copy,
	                     .worker = -1,
	                     .name = name,
	                     .done = done};
	return _sf_task_submit(&t);
}

#endif
