/*
 * model_access.h — io/'s whole view of a model (scheduler/model_access.c): the
 * numbers it needs about the model, its units and its nodes, the counters a checkpoint
 * keeps, the communicator of its collectives, the hook of its checkpoint locks, and
 * its units' vectors as logical vectors of P floats, whatever the sharding, read and
 * written where this rank keeps them. It does not include scheduler/model.h: to io/,
 * struct sf_model stays the opaque sf_model of shardflow.h, and the compiler keeps it
 * so. Every call after sf_model_sync() but the descriptions and the hook. Shape
 * letters: N ranks of the shard group, P parameters of a unit, S = ceil(P / N) its
 * shard, Pw its parameters in the whole model's layout (with SHARDFLOW_TP, every TP
 * rank's slices together; else P).
 */
#ifndef SF_SCHEDULER_MODEL_ACCESS_H
#define SF_SCHEDULER_MODEL_ACCESS_H

#include "comm/comm.h"
#include "layers/layer.h"
#include "scheduler/runtime.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sf_model;
struct _sf_ckpt_lock;
struct _sf_ckpt_async;

/* ---- the model described -------------------------------------------------------- */

/* What io/ needs to know about a model: fixed from sf_model_create on. */
struct _sf_model_geometry {
	int rank, nranks;           /* the world */
	int tp, tp_rank;            /* SHARDFLOW_TP: K ranks of a TP group, this rank's place */
	int pp, pp_stage;           /* SHARDFLOW_PP: pipeline stages (1: none), this rank's */
	int shard_size, shard_rank; /* the shard group (the world, or a node with hybrid) */
	int nunits, nnodes;
	int T; /* rows per sample */
	enum sf_sharding sharding;
	enum sf_optimizer optimizer;
	size_t nparams_whole; /* the whole model's parameters (sf_model_param_count) */
	size_t largest_P;     /* the largest unit's P */
};
void _sf_model_describe(const struct sf_model *m, struct _sf_model_geometry *g);

/* The step counters a checkpoint keeps and the state a load must find. */
struct _sf_model_counters {
	int64_t nsteps;   /* tickets issued: steps and accumulated micro-batches */
	int64_t nupdates; /* optimizer updates (sf_model_step calls): AdamW's t - 1 */
	int accum_k;      /* micro-batches accumulated since the last update */
	int grad_mean_of; /* micro-batches the last update's gradient summed (0: none yet) */
};
void _sf_model_counters_get(const struct sf_model *m, struct _sf_model_counters *c);
/* Sets the counters a loaded model resumes from (AdamW's bias correction among
 * them); the others are left as they are. */
void _sf_model_counters_set(struct sf_model *m, int64_t nsteps, int64_t nupdates);

/* Unit u (0 <= u < nunits), numbered by first use in forward order. */
struct _sf_unit_desc {
	const char *name; /* the group's name, or its node's: the model's, while it lives */
	int first, last;  /* its nodes, [first, last] in forward order */
	bool frozen;      /* no gradient, no optimizer state, no update */
	bool has_grad;    /* its reduced gradient is kept (sf_model_grad_get reads it) */
	size_t P, S, off; /* off: its first parameter in this rank's flat vector */
	size_t Pw, woff;  /* the same in the whole model's layout */
	size_t lo, n;     /* this rank's block of it: [lo, lo + n) of P (_sf_unit_block) */
	int stage;        /* SHARDFLOW_PP: the stage whose ranks hold and train it (0: none),
	                     whose files hold it */
	bool held;        /* this rank keeps its vectors: its stage's, or a unit shared by
	                     the first and the last stage on either (pp_shared) */
};
void _sf_unit_describe(const struct sf_model *m, int u, struct _sf_unit_desc *d);

/* Node n (0 <= n < nnodes), in forward order. */
struct _sf_node_desc {
	const struct _sf_node *node;      /* the graph's node, the model's */
	int unit;                         /* the unit whose parameters it reads, or -1 */
	const struct sf_layer_info *info; /* this rank's shapes, the model's */
	struct sf_layer_info whole;       /* the whole layer's (with TP; else *info) */
	size_t wpoff; /* where its whole parameters start in its unit's whole vector */
};
void _sf_node_describe(const struct sf_model *m, int n, struct _sf_node_desc *d);

/* The communicator of the model's collectives (comm/comm.h's table), the model's. */
struct _sf_comm *_sf_model_comm(const struct sf_model *m);

/* The checkpoint directories rank 0 holds locked (io/checkpoint_lock.c): the head of
 * io's list, which the model only keeps; and the hook sf_model_destroy calls to
 * release them (scheduler/ calls nothing in io/). */
struct _sf_ckpt_lock **_sf_model_ckpt_locks(struct sf_model *m);
void _sf_model_ckpt_hook_set(struct sf_model *m, void (*unlock)(struct sf_model *m));
/* The asynchronous save's state (io/checkpoint_save.c), which the model only keeps,
 * and the hook sf_model_destroy calls (before the locks' hook) to end it. */
struct _sf_ckpt_async **_sf_model_ckpt_async(struct sf_model *m);
void _sf_model_ckpt_async_hook_set(struct sf_model *m, void (*end)(struct sf_model *m));

/* ---- the units' vectors ----------------------------------------------------------- */

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
/* Unit u's parameters (grad: its reduced gradient) in the whole layout, Pw floats:
 * with TP, _sf_unit_get_whole; sharded, the shard group's shards all-gathered; with
 * sharding none this rank's replica, no communication (so not collective then).
 * After sf_model_sync(). */
int _sf_unit_gather(struct sf_model *m, int u, bool grad, float *whole);
/* Sets this rank's copy of vector `which` of unit u from its whole layout (Pw floats,
 * the same on every rank): with TP this rank's slices of it. After sf_model_sync(). */
int _sf_unit_set_whole(struct sf_model *m, int u, enum _sf_vec which, const float *whole);
/* Sets parameters [off, off + count) of unit u (of its P) from src (count floats, the
 * same on every rank), where this rank keeps them: its shard's part, or the whole
 * replica (grad_op: both). The optimizer state is left as it is. After sf_model_sync(). */
int _sf_unit_set_params(struct sf_model *m, int u, size_t off, size_t count, const float *src);
/* Sets the learning-rate scale of unit u's parameters [off, off + count) of its P (a
 * tensor, this rank's part) and rebuilds its optimizer runs. After sf_model_sync(). */
int _sf_unit_lr_scale(struct sf_model *m, int u, size_t off, size_t count, float scale);

#endif
