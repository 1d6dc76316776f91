/*
 * loss.h — the regression losses' codelet (tasks/loss.c) and its submission; the
 * cross-entropy's is tasks/layer_codelets.h's _sf_cl_loss.
 */
#ifndef SF_TASKS_LOSS_H
#define SF_TASKS_LOSS_H

#include "layers/loss.h"
#include "tasks/submit.h"

#include <starpu.h>
#include <stdbool.h>

/* pred[R] target[R] dpred[W] loss[W]; cl_arg struct _sf_reg_loss_args, by pointer (the
 * model keeps it). CPU workers, and GPU workers in a CUDA build (layers/loss_cuda.cu). */
extern struct starpu_codelet _sf_cl_reg_loss;

/* Its body, or the no-op of SHARDFLOW_SKIP=compute */
void _sf_loss_codelets_configure(bool skip);

int _sf_submit_reg_loss(const struct _sf_reg_loss_args *a, starpu_data_handle_t pred,
                        starpu_data_handle_t target, starpu_data_handle_t dpred,
                        starpu_data_handle_t loss, const char *name, struct _sf_task_done done);

#endif
