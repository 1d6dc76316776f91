/*
 * pipeline_order.h — a pipeline's schedules (scheduler/pipeline_order.c): each stage's
 * passes in order, the activation sets they hold, and under the interleaved schedule
 * the one order of passes and transfers every stage agrees on, which a backend whose
 * transfers have no tags (NCCL, SHARDFLOW_COMM=mpi-sync) runs without a hang. No
 * StarPU, no model: scheduler/pipeline.c submits what these return, and
 * tests/test_pp_order.c checks them alone.
 */
#ifndef SF_SCHEDULER_PIPELINE_ORDER_H
#define SF_SCHEDULER_PIPELINE_ORDER_H

#include "shardflow.h"

#include <stdbool.h>

/* One pass of the schedule: the forward or the backward of micro-batch mb (of the
 * rank's chunk `chunk` under the interleaved schedule, else 0) */
struct _sf_pp_op {
	bool bwd;
	int mb, chunk;
};

/* Stage s's passes (of S, M micro-batches, V chunks a stage under the interleaved
 * schedule, else 1) in schedule order into ops (room for 2 M V); returns their count */
int _sf_pp_schedule(enum sf_pp_schedule sched, int S, int s, int M, int V, struct _sf_pp_op *ops);

/* The most micro-batches the passes ops[0 .. n) hold at once in one of the V chunks
 * (forwards whose backward has not come yet): a layer's buffer sets */
int _sf_pp_sets(const struct _sf_pp_op *ops, int n, int V);

/* One entry of a stage's program under the agreed order (_sf_pp_order): its pass
 * `pass` (an index into its _sf_pp_schedule), or (pass < 0) a transfer of micro-batch
 * mb, its activations or (grad) their gradient, leaving (send) or entering the stage's
 * chunk `chunk` */
struct _sf_pp_item {
	int pass;
	int mb, chunk;
	bool grad, send;
};

/* Stage s's passes under the interleaved schedule (S stages, M micro-batches, V
 * chunks a stage) and the transfers it takes part in, in one order that every stage's
 * program is a part of: the programs of all stages, each run in its own order with
 * every transfer waiting for its other end (NCCL's send and receive on the comm
 * worker's stream), cannot wait on each other in a ring. items: room for 6 M V;
 * returns their count, or a negative status where the schedules cannot be ordered
 * (a schedule waiting on itself; a bug to report). The buffers it assumes are
 * pipeline.c's: a layer's (what a stage sends) _sf_pp_sets of them, reused in turn;
 * what a stage receives from the stage before, a micro-batch's own. */
int _sf_pp_order(int S, int s, int M, int V, struct _sf_pp_item *items);

#endif
