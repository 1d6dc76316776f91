/*
 * event.h — one executed task of a step, as the trace records it and the report reads
 * it, the task names that carry its kind and layer, and the intervals of task times
 * (trace/event.c has the functions).
 *
 * Two sources produce these: the built-in trace (trace/recorder.c, StarPU's profiling
 * info read in each task's callback) and StarPU's own FxT trace
 * (tools/shardflow-overlap.c reads the tasks.rec that starpu_fxt_tool writes). Both
 * name tasks the same way, with the graph's own names (scheduler/model_layout.c
 * builds them):
 *
 *   <kind> <unit> (L<n>)          gather, rs, ar, opt, ag, free, acc, sqnorm:
 *                                 "gather transformer.h.3 (L9)"
 *   <kind> <node> (<type> L<n>)   fwd, bwd, recompute: "fwd fc1 (linear L2)"
 *   loss, loss allreduce, grad norm
 *
 * n is a node's index in the graph: the node itself, or for a unit's tasks the first
 * node that reads the unit, so that the report pairs a unit's gather with the forward
 * that waits for it. Names and types are the user's and may hold anything but a NUL
 * (blanks, parentheses, "L3)"): the index is read from the end, where nothing of the
 * user's follows it, and the kind from the first word. No StarPU and no MPI here.
 */
#ifndef SF_TRACE_EVENT_H
#define SF_TRACE_EVENT_H

#include <stdbool.h>
#include <stddef.h>

/* Room for the longest task name shardflow gives, NUL included: "recompute ", a node's
 * name and its type's (63 bytes each, SF_NAME_MAX - 1), " (", " L", an index and ")"
 * make 152 bytes. */
#define SF_EV_NAME_MAX 160

enum _sf_ev_kind {
	SF_EV_GATHER = 0, /* comm: all-gather of a unit's shards ("gather fc1 (L2)") */
	SF_EV_FWD,        /* compute: "fwd fc1 (linear L2)" */
	SF_EV_LOSS,       /* compute: "loss" */
	SF_EV_BWD,        /* compute: "bwd fc1 (linear L2)" */
	SF_EV_RS,         /* comm: reduce-scatter (or all-reduce) of a gradient ("rs fc1 (L2)"),
	                     and hybrid sharding's sum across nodes ("ar fc1 (L2)") */
	SF_EV_OPT,        /* compute: optimizer on the shard ("opt fc1 (L2)") */
	SF_EV_AG,         /* comm: all-gather of updated shards, grad_op ("ag fc1 (L2)") */
	SF_EV_LOSS_SUM,   /* comm: all-reduce of the loss ("loss allreduce") */
	SF_EV_FREE,       /* bookkeeping: a ring slot is released ("free fc1 (L2)"); a
	                     gather_output's columns of its gradient taken
	                     ("tp_slice fc1 (linear_col L2)") */
	SF_EV_GRAD,       /* compute: a gradient's sum over micro-batches ("acc fc1 (L2)") or
	                     its share of the squared norm ("sqnorm fc1 (L2)") */
	SF_EV_NORM,       /* comm: all-reduce of the gradient's norm, clipping ("grad norm") */
	SF_EV_RECOMPUTE,  /* compute: a dropped activation's forward again before the
	                     backward ("recompute act (gelu L3)") */
	SF_EV_TP_AR,      /* comm: tensor parallelism's all-reduce of a linear_row's output or
	                     a linear_col's input gradient over the TP group
	                     ("tp_ar attn.c_proj (linear_row L7)"), and a gather_output's
	                     all-gather ("tp_ag fc1 (linear_col L2)") */
	SF_EV_CP_RING,    /* comm: context parallelism's ring step, a key/value block or its
	                     gradient to the next CP rank ("cp_ring attn (attention L5)") */
	SF_EV_PP,         /* comm: a pipeline boundary's transfer posted ("pp send fc2",
	                     "pp recv dfc2") or waited for ("pp wait recv fc2") */
	SF_EV_NKINDS
};

/* One executed task. Times are microseconds on one clock per rank. */
struct _sf_event {
	int rank;
	int worker; /* StarPU worker id on that rank */
	int step;   /* 0-based step of the model */
	int layer;  /* node index in the graph ("(linear L3)" -> 3), -1 when none */
	enum _sf_ev_kind kind;
	double start, end;
	char name[SF_EV_NAME_MAX]; /* a longer name (not one of shardflow's) is cut; kind and
	                              layer come from the full name */
	double flops; /* what the task was submitted with (0: not counted or unknown) */
	double bytes; /* the sizes of its buffers, summed (the built-in trace; else 0) */
	char model[40]; /* its codelet's performance model ("sf_linear_fwd"; "" if none) */
};

/* "comm", "compute" or "other". */
bool _sf_ev_is_comm(enum _sf_ev_kind k);
bool _sf_ev_is_compute(enum _sf_ev_kind k);
const char *_sf_ev_kind_name(enum _sf_ev_kind k);

/* What a task name says. label and type point into the name parsed (not
 * NUL-terminated: label_len and type_len bytes). */
struct _sf_ev_name {
	enum _sf_ev_kind kind;
	int layer;         /* -1 for loss, loss allreduce and grad norm */
	const char *label; /* the unit's or the node's name; NULL when none */
	size_t label_len;
	const char *type; /* fwd, bwd, recompute: the layer type; NULL otherwise */
	size_t type_len;
};

/* Parses a task name of shardflow's. Returns 0; -1 when the name is not one of
 * shardflow's (e.g. StarPU's internal "_starpu_data_acquire_pre"); -2 when it starts
 * like one but is malformed ("gather fc1" without its index, "fwd fc1 (L3)" without
 * a type). When a name and a type both hold " (", the type is taken from the last
 * one: types are identifiers more often than nodes' names are. */
int _sf_ev_parse_name(const char *name, struct _sf_ev_name *out);

/* A time interval [a, b): a task's, or a union's piece (busy and exposed times). */
struct _sf_ival {
	double a, b;
};
/* Sorts and merges v in place; returns the number of disjoint intervals left. */
size_t _sf_ival_merge(struct _sf_ival *v, size_t n);

#endif
