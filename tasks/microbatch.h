/*
 * microbatch.h — the task a pipeline step (scheduler/pipeline.c) ends its micro-batches
 * with: the step's loss as the mean of its micro-batches' losses (tasks/microbatch.c).
 *
 *   loss_mean: out[W] loss_0 .. loss_{M-1}[R]   out = (sum of loss_k) / M, in
 *                                               micro-batch order; cl_arg: none
 *
 * Each loss_k (one double) is what the loss codelet wrote for micro-batch k: its rows'
 * losses times M / the step's counted rows over the data-parallel ranks (the pipeline's
 * scale), so the mean over k, summed over the ranks, is the mean over the step's
 * counted rows: 1 rank's loss of the whole batch.
 */
#ifndef SF_TASKS_MICROBATCH_H
#define SF_TASKS_MICROBATCH_H

#include "tasks/submit.h"

#include <starpu.h>

extern struct starpu_codelet _sf_cl_loss_mean;

/* out = the mean of the M doubles of loss[0..M-1]; descr: room for M + 1 buffer
 * descriptors (the caller's, kept until the call returns). */
int _sf_submit_loss_mean(starpu_data_handle_t out, const starpu_data_handle_t *loss, int M,
                         struct starpu_data_descr *descr, const char *name,
                         struct _sf_task_done done);

#endif
