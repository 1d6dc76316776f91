/*
 * pipeline.h — pipeline parallelism (SHARDFLOW_PP; scheduler/pipeline.c): the graph's
 * units cut into stages (or under the interleaved schedule S V chunks, V a stage),
 * one stage a group of dp ranks, and a step of M micro-batches unrolled as the
 * stage's forward and backward passes (step.c's, on the stage's spans of the graph,
 * m->spans) with the transfers of the activations and their gradients between
 * stages, in the order a schedule (gpipe, 1f1b, zero-bubble, interleaved) gives. sf_model_create runs the three
 * passes in this order; without a pipeline they only set the span to the whole graph.
 */
#ifndef SF_SCHEDULER_PIPELINE_H
#define SF_SCHEDULER_PIPELINE_H

#include "scheduler/model.h"

/* After the batch's split over the dp ranks (B_local): the micro-batches, each
 * B_local / M samples from then on; the refusals of what a pipeline does not take. */
int _sf_pipeline_layout(struct sf_model *m);
/* After the planner's units and gradients: the stages (units balanced by SHARDFLOW_PP_BALANCE),
 * this rank's spans (m->spans: its stage, or its chunks) and their unit orders, what it keeps (units' elsewhere, nodes'
 * hold) and its activation sets (m->act_sets); before the slots' replay (plan.c),
 * which walks the span, and the memory plan. `name`: the graph's, for messages. */
int _sf_pipeline_plan(struct sf_model *m, const char *name);
/* After the model's buffers: every micro-batch's inputs, labels and loss, the other
 * activation sets (set 0 is the nodes' own) and the transfers' arguments; sets
 * m->pp_step and m->pp_predict. */
int _sf_pipeline_build(struct sf_model *m);
/* Inference (sf_model_forward, evaluate, predict): the forward of the pass staged in
 * micro-batch 0's buffers through the stages: this stage's span, after receiving the
 * stage before's activations, then sent on to the next stage; no loss task (the last
 * stage holds the loss's input, which the caller reads). Every rank calls it, in the
 * same order: the transfers pair up as a step's. */
int _sf_pipeline_forward(struct sf_model *m);
/* sf_model_predict with a pipeline: the rank's batch (its dp place's B_local x M
 * samples) in its M micro-batches, each through the stages; the last stage's logits
 * of each all-gathered, so every rank of a dp place returns that place's, as without
 * a pipeline (logits: sf_model_local_rows() rows x classes). m->pp_predict, which
 * sf_model_predict calls (step.c does not call the pipeline). */
int _sf_pipeline_predict(struct sf_model *m, const struct sf_batch *b, float *logits);
/* Puts micro-batch 0's buffers back into the nodes and frees the others (after every
 * task is done, before the model's storage goes). NULL m->pp: nothing. */
void _sf_pipeline_release(struct sf_model *m);

#endif
