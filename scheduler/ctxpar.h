/*
 * ctxpar.h — context parallelism's plan (scheduler/ctxpar.c, SHARDFLOW_CP): this rank's
 * chunks of each sample, the attention nodes that run as a ring, the ring's buffers'
 * sizes, and a batch's slicing; called by model.c between sf_model_create's passes and
 * by step.c's staging of a batch. The ring's tasks are step.c's (submit_cp_fwd,
 * submit_cp_bwd).
 */
#ifndef SF_SCHEDULER_CTXPAR_H
#define SF_SCHEDULER_CTXPAR_H

#include "scheduler/model.h"

/* Before the batch's split and the nodes' shapes: m->cp, cp_rank, T_ctx and T (this
 * rank's rows of a sample), and the refusals that need no node (a context 2K does not
 * divide, GPU ranks). */
int _sf_cp_layout(struct sf_model *m, const sf_graph *g);
/* After the nodes' shapes: the attention nodes' rings (their shapes, parts' and ring
 * steps' arguments, allocated; _sf_cp_release frees them), the ring buffers' sizes, and
 * the refusal of a layer type of a user's own. */
int _sf_cp_plan(struct sf_model *m);
/* The host buffers of sliced batches, and the nodes' arguments */
void _sf_cp_release(struct sf_model *m);
/* This rank's chunks of a batch of whole samples (B_local samples of T_ctx rows) into
 * *out, whose arrays are the model's (m->cp_in): valid until the next call. */
int _sf_cp_slice(struct sf_model *m, const struct sf_batch *b, struct sf_batch *out);

/* dp rank r's first `real` samples (T_ctx rows of dim floats each, into out) from its
 * CP group's pieces in all, a stage's ranks' `per` floats side by side (its rank
 * (r K + k) tp holds CP rank k's rows: 2c a sample, chunk k then chunk 2K - 1 - k):
 * sf_model_forward's and sf_model_predict's rows put back in their places */
void _sf_cp_unslice(const struct sf_model *m, const float *all, size_t per, size_t r, int real,
                    size_t dim, float *out);

#endif
