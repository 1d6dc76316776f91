/*
 * seqpar.h — sequence parallelism's plan (scheduler/seqpar.c): which nodes run on a
 * TP rank's slice of the rows (struct _sf_node_state::sp and its neighbours' flags),
 * called by model.c between sf_model_create's passes.
 */
#ifndef SF_SCHEDULER_SEQPAR_H
#define SF_SCHEDULER_SEQPAR_H

#include "scheduler/model.h"

/* After the nodes' shapes (_sf_build_nodes), before the gradients' plan: every node's
 * act_rows; with SHARDFLOW_SEQUENCE_PARALLEL=on its state, the row-split nodes'
 * infos given their rows, and the refusals (no TP, rows K does not divide, a node
 * reading across the boundary other than a linear_col does). */
int _sf_sp_plan(struct sf_model *m);
/* After _sf_tp_plan: the TP scratch and the shared gather buffers' sizes, and the
 * nodes' runs of rows (allocated; _sf_layout_release frees them). */
int _sf_sp_plan_comm(struct sf_model *m);
/* Once m->tp_scratch exists: the nodes' SP collectives' arguments. */
void _sf_sp_comm_args(struct sf_model *m);

#endif
