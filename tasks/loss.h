/*
 * loss.h — the regression losses' codelet (tasks/loss.c) and its submission, and the
 * vocabulary-parallel cross-entropy's two (layers/xent_vp.h); the cross-entropy's is
 * tasks/layer_codelets.h's _sf_cl_loss.
 */
#ifndef SF_TASKS_LOSS_H
#define SF_TASKS_LOSS_H

#include "layers/loss.h"
#include "layers/xent_vp.h"
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

/* The vocabulary-parallel cross-entropy (cl_arg struct _sf_xent_vp_args, by pointer:
 * the model keeps it). partials: logits[R] labels[R] stats[W] (rows x 3); finish:
 * logits[R] labels[R] all[R] (the TP group's partials, all-gathered) dlogits[W]
 * loss[W]. CPU workers only. */
extern struct starpu_codelet _sf_cl_xent_vp_partials;
extern struct starpu_codelet _sf_cl_xent_vp_finish;

int _sf_submit_xent_vp_partials(const struct _sf_xent_vp_args *a, starpu_data_handle_t logits,
                                starpu_data_handle_t labels, starpu_data_handle_t stats,
                                const char *name, struct _sf_task_done done);
int _sf_submit_xent_vp_finish(const struct _sf_xent_vp_args *a, starpu_data_handle_t logits,
                              starpu_data_handle_t labels, starpu_data_handle_t all,
                              starpu_data_handle_t dlogits, starpu_data_handle_t loss,
                              const char *name, struct _sf_task_done done);

#endif
