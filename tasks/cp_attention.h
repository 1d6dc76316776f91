/*
 * cp_attention.h — context parallelism's attention as tasks (tasks/cp_attention.c):
 * the compute half of the ring that scheduler/ctxpar.c plans; the ring's steps are
 * comm tasks (comm/comm_codelets.h, cp_shift).
 *
 * On a CP group of K ranks each sample is cut into 2K chunks of c rows, and rank r
 * holds chunks r and 2K - 1 - r (its 2c local rows). An attention node's forward on
 * rank r is K part tasks: part j attends the rank's queries to the key/value block of
 * CP rank (r - j) mod K, merged into the running output by log-sum-exp
 * (layers/attention.h, _sf_attention_part_*); the block travels in a packed buffer
 * (2c rows of the key and value heads only: grouped-query attention sends its key/value
 * heads alone). The backward is K part tasks again: each adds the block's share to the
 * query gradient and computes the block's share of its key/value gradient, which is
 * added to the gradient that travels with the block (arriving home after K ring
 * steps).
 *
 *   cp_pack      : qkv[R] kv[W]                               the key/value columns
 *   cp_fwd_first : qkv[R] kv[R] y[W] stat[W]                  part 0 (the own block)
 *   cp_fwd       : qkv[R] kv[R] y[RW] stat[RW]                part j > 0
 *                  (the last part also ends: y = o / l, stat = (m, 1 / l))
 *   cp_bwd_first : qkv[R] kv[R] stat[R] y[R] dy[R] dsum[W] dqkv[RW] dkv[W]
 *   cp_bwd       : qkv[R] kv[R] stat[R] y[R] dy[R] dsum[R] dqkv[RW] dkv[W]
 *                  (dkv: the block's share alone, which the scheduler adds to the
 *                  gradient the ring brings: the part runs while that arrives)
 *   cp_unpack    : dkv[R] dqkv[RW]                            the block's own gradient
 *                                                             into dqkv's k, v columns
 * cl_arg: struct _sf_cp_attn_args* (the model keeps one per node and part).
 */
#ifndef SF_TASKS_CP_ATTENTION_H
#define SF_TASKS_CP_ATTENTION_H

#include "tasks/submit.h"

#include <starpu.h>
#include <stdbool.h>

/* An attention node's shapes on a CP rank */
struct _sf_cp_attn_geom {
	int B;       /* samples */
	int C, NH, NKV; /* this rank's query width and heads (a TP rank's share) */
	int K, rank; /* the CP group's size and this rank's place */
	int c;       /* rows of a chunk: T / 2K */
	int ld;      /* qkv's width, C + 2 NKV hs */
	int acc;     /* the backward adds to dqkv (1) or writes it (0) */
};

/* One part task's arguments: the node's shapes and the part (the block of CP rank
 * (rank - j) mod K) */
struct _sf_cp_attn_args {
	const struct _sf_cp_attn_geom *g;
	int j;
};

/* Floats of a packed key/value block: B 2c rows of 2 NKV hs */
size_t _sf_cp_attn_kv_floats(const struct _sf_cp_attn_geom *g);

int _sf_submit_cp_pack(const struct _sf_cp_attn_args *a, starpu_data_handle_t qkv,
                       starpu_data_handle_t kv, const char *name, struct _sf_task_done done);
int _sf_submit_cp_fwd(const struct _sf_cp_attn_args *a, starpu_data_handle_t qkv,
                      starpu_data_handle_t kv, starpu_data_handle_t y,
                      starpu_data_handle_t stat, const char *name, struct _sf_task_done done);
/* h: qkv, kv, stat, y, dy, dsum, dqkv, dkv in that order */
int _sf_submit_cp_bwd(const struct _sf_cp_attn_args *a, const starpu_data_handle_t h[8],
                      const char *name, struct _sf_task_done done);
int _sf_submit_cp_unpack(const struct _sf_cp_attn_args *a, starpu_data_handle_t dkv,
                         starpu_data_handle_t dqkv, const char *name,
                         struct _sf_task_done done);

/* Points the codelets at their bodies or, skip, at bodies that return at once
 * (SHARDFLOW_SKIP=compute). */
void _sf_cp_attn_codelets_configure(bool skip);

#endif
