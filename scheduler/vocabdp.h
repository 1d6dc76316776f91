/*
 * vocabdp.h — FSDP's vocabulary-parallel tied unit (scheduler/vocabdp.c): a tied
 * embedding and head computed on the data-parallel ranks' rows of the vocabulary,
 * never gathered; called by model.c between sf_model_create's passes and by step.c
 * when it stages a batch and makes a prediction's logits whole.
 */
#ifndef SF_SCHEDULER_VOCABDP_H
#define SF_SCHEDULER_VOCABDP_H

#include "scheduler/model.h"

/* After _sf_tp_plan, before the units' sizes: whether the model takes it (m->dpv),
 * the embedding's unit marked (vocab_rows), the three nodes' kernel shapes and
 * flags, the shared buffers' sizes; the refusals. */
int _sf_dpv_plan(struct sf_model *m);
/* Once the buffers exist (_sf_build_buffers, _sf_sp_comm_args): the collectives'
 * arguments of the embedding, the head and the loss, over the shard group. */
void _sf_dpv_comm_args(struct sf_model *m);
/* The vocabulary-parallel loss's group: K ranks, this rank's place, the rows its
 * logits hold (TP: the TP group, this rank's rows; m->dpv: the shard group, all its
 * ranks' rows) */
static inline void _sf_vp_group(const struct sf_model *m, int *K, int *rank, size_t *rows)
{
	if (m->dpv) {
		*K = m->shard_size, *rank = m->shard_rank;
		*rows = (size_t)m->shard_size * m->rows_local;
		return;
	}
	*K = m->tp, *rank = m->tp_rank, *rows = m->rows_local;
}
/* With m->dpv, after the batch's own rows are staged: the shard group's ids (and
 * labels) all-gathered into the embedding's and the loss's buffers. Collective. */
int _sf_dpv_stage(struct sf_model *m, const int32_t *ids, const int32_t *labels, const char *fn);
/* With m->dpv: this rank's rows' whole logits (rows_local x V) from the head's
 * (the group's rows x this rank's classes, `mine`). Collective. */
int _sf_dpv_whole_logits(struct sf_model *m, const float *mine, float *out);

/* sf_model_evaluate's loss of a pass with m->dpv, from the head's logits z (the
 * group's rows x this rank's classes) and the staged group labels, this rank's first
 * `valid` rows real: the group's sum added to mine[0] and its rows counted to mine[1]
 * on the group's first member (every member computes them). Collective. */
int _sf_dpv_eval(struct sf_model *m, const float *z, size_t valid, double *mine);

#endif
