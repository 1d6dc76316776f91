/*
 * model_access.h — the host's access to a unit's vectors (scheduler/model_access.c),
 * for io/: its parameters and optimizer state as logical vectors of P floats, whatever
 * the sharding, read and written where this rank keeps them. Every call after
 * sf_model_sync(). Shape letters: P parameters of a unit, S = ceil(P / N) its shard,
 * Pw its parameters in the whole model's layout (with SHARDFLOW_TP, every TP rank's
 * slices together; else P).
 */
#ifndef SF_SCHEDULER_MODEL_ACCESS_H
#define SF_SCHEDULER_MODEL_ACCESS_H

#include "scheduler/model.h"

/* The logical vectors of a unit, each P floats whatever the sharding: parameters,
 * first moment (AdamW m, SGD momentum buffer) and second moment (AdamW v). */
enum _sf_vec { SF_VEC_PARAM = 0, SF_VEC_M, SF_VEC_V };

/* true when the model's optimizer keeps vector `which` (V: AdamW only). */
bool _sf_vec_exists(const struct sf_model *m, enum _sf_vec which);
/* Copies this rank's slice [rank*S, rank*S + S) of vector `which` of unit u into
 * dst (S floats; zeros past P). Call after sf_model_sync(). */
int _sf_unit_get_slice(struct sf_model *m, int u, enum _sf_vec which, float *dst);
/* Sets this rank's copy of vector `which` of unit u (its shard, or the whole
 * replica) from src, the unit's whole logical vector (P floats). Call after
 * sf_model_sync(). */
int _sf_unit_set_full(struct sf_model *m, int u, enum _sf_vec which, const float *src);
/* Unit u's vector `which` (grad: its reduced gradient, kept with sharding full,
 * grad_op or hybrid) in the whole model's layout, Pw floats, on every rank: with
 * SHARDFLOW_TP, every TP rank's slices put together (layers/tp.c); else the P floats
 * _sf_unit_get_slice gives over the shard group. Collective over the world. After
 * sf_model_sync(). */
int _sf_unit_get_whole(struct sf_model *m, int u, enum _sf_vec which, bool grad, float *whole);
/* Sets this rank's copy of vector `which` of unit u from its whole layout (Pw floats,
 * the same on every rank): with TP this rank's slices of it. After sf_model_sync(). */
int _sf_unit_set_whole(struct sf_model *m, int u, enum _sf_vec which, const float *whole);
/* Sets parameters [off, off + count) of unit u (of its P) from src (count floats, the
 * same on every rank), where this rank keeps them: its shard's part, or the whole
 * replica (grad_op: both). The optimizer state is left as it is. After sf_model_sync(). */
int _sf_unit_set_params(struct sf_model *m, int u, size_t off, size_t count, const float *src);

#endif
