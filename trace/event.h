/*
 * event.h — one executed task of a step, as the trace records it and the report reads
 * it, the task names that carry its kind and layer, and the intervals of task times
 * (trace/event.c has the functions).
 *
 * Two sources produce these: the built-in trace (trace/recorder.c, StarPU's profiling
 * info read in each task's callback) and StarPU's own FxT trace
 * (tools/shardflow-overlap.c reads the tasks.rec that starpu_fxt_tool writes). Both
 * name tasks the same way ("gather L3", "fwd L3 linear", "loss", "bwd L3 linear",
 * "rs L3", "opt L3", "acc L3", "sqnorm L3", "grad norm", ...). No StarPU and no MPI here.
 */
#ifndef SF_TRACE_EVENT_H
#define SF_TRACE_EVENT_H

#include <stdbool.h>
#include <stddef.h>

enum _sf_ev_kind {
	SF_EV_GATHER = 0, /* comm: all-gather of a unit's shards ("gather L3") */
	SF_EV_FWD,        /* compute: "fwd L3 linear" */
	SF_EV_LOSS,       /* compute: "loss" */
	SF_EV_BWD,        /* compute: "bwd L3 linear" */
	SF_EV_RS,         /* comm: reduce-scatter (or all-reduce) of a gradient ("rs L3") */
	SF_EV_OPT,        /* compute: optimizer on the shard ("opt L3") */
	SF_EV_AG,         /* comm: all-gather of updated shards, grad_op ("ag L3") */
	SF_EV_LOSS_SUM,   /* comm: all-reduce of the loss ("loss allreduce") */
	SF_EV_FREE,       /* bookkeeping: a ring slot is released ("free L3") */
	SF_EV_GRAD,       /* compute: a gradient's sum over micro-batches ("acc L3") or its
	                     share of the squared norm ("sqnorm L3") */
	SF_EV_NORM,       /* comm: all-reduce of the gradient's norm, clipping ("grad norm") */
	SF_EV_RECOMPUTE,  /* compute: a dropped activation's forward again before the
	                     backward ("recompute L3 gelu") */
	SF_EV_NKINDS
};

/* One executed task. Times are microseconds on one clock per rank. */
struct _sf_event {
	int rank;
	int worker; /* StarPU worker id on that rank */
	int step;   /* 0-based step of the model */
	int layer;  /* node index in the graph ("L3" -> 3), -1 when none */
	enum _sf_ev_kind kind;
	double start, end;
	char name[64]; /* cut to 63 characters; kind and layer come from the full name */
};

/* "comm", "compute" or "other". */
bool _sf_ev_is_comm(enum _sf_ev_kind k);
bool _sf_ev_is_compute(enum _sf_ev_kind k);
const char *_sf_ev_kind_name(enum _sf_ev_kind k);

/* Parses a task name of shardflow's into kind and layer. Returns 0; -1 when the
 * name is not one of shardflow's (e.g. StarPU's internal "_starpu_data_acquire_pre");
 * -2 when it starts like one but is malformed ("gather Lx", "fwd L3" without type). */
int _sf_ev_parse_name(const char *name, enum _sf_ev_kind *kind, int *layer);

/* A time interval [a, b): a task's, or a union's piece (busy and exposed times). */
struct _sf_ival {
	double a, b;
};
/* Sorts and merges v in place; returns the number of disjoint intervals left. */
size_t _sf_ival_merge(struct _sf_ival *v, size_t n);

#endif
