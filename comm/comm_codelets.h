/*
 * comm_codelets.h — the codelets that run a step's collectives (comm/comm_codelets.c),
 * over whichever backend (comm/comm.h) the model's communicator has, and the
 * arguments the scheduler hands them.
 *
 * Comm codelets take the comm-order handle as buffer 0 in STARPU_RW, so StarPU runs
 * them one at a time in submission order — the same program on every rank — and are
 * always submitted with STARPU_EXECUTE_ON_WORKER = the comm worker:
 *   gather   : order[RW] shard[R] slot[W] (extra[R])    cl_arg struct _sf_comm_args*
 *   rep_ar   : order[RW] gshard[RW]                     idem (hybrid: the shard summed
 *                                                        over the replicas)
 *   rs       : order[RW] grad[RW] gshard[W]             idem (pads grad with zeros)
 *   allreduce: order[RW] grad[RW]                       idem (sum of P floats, in place)
 *   loss_sum : order[RW] loss[RW]                       idem (sum of one double)
 *   tp_ar    : order[RW] v[RW] (dst[W|RW])              idem (TP: an activation or its
 *                                                        gradient summed over the TP group)
 *   tp_ag    : order[RW] local[R] whole[W]              idem (TP: gather_output)
 *   tp_rs    : order[RW] v[R] dst[W|RW]                idem (SP: v's K blocks of rows
 *                                                        summed, this rank's into dst)
 *   tp_slice : whole[R] local[W]                        idem (its backward's columns)
 *   grad_norm: order[RW] clip[W] sq_0 .. sq_{U-1}[R]     packed struct _sf_norm_args
 *              (clip = {norm, factor}: the units' squared norms summed, then over
 *              the ranks)
 *   pp_send  : order[RW] v[R]                          struct _sf_p2p_args* (a pipeline
 *   pp_recv  : order[RW] v[W]                          stage's activation or its gradient,
 *                                                        to or from the peer stage's rank:
 *                                                        posted, returning at once where the
 *                                                        backend has p2p_post)
 *   pp_wait_send: order[RW] v[R]                       idem (the posted transfer done: v
 *   pp_wait_recv: order[RW] v[RW]                      may be rewritten, or read)
 *   cp_shift : order[RW] src[R] dst[W]                 idem (CP: a ring step, P floats
 *                                                        to the next CP rank, dst from
 *                                                        the previous)
 *   free     : slot[RW]                                 idem (drops the unit's residency;
 *                                                        a compute codelet)
 * A collective that fails (an MPI error, or no progress for SHARDFLOW_COMM_TIMEOUT
 * seconds: a peer stopped, stuck or cut off) prints which collective of which unit,
 * and ends the whole job through the backend's abort: no rank waits forever.
 * Shape letters: N ranks, P parameters of a unit, S = ceil(P / N) its shard.
 */
#ifndef SF_COMM_CODELETS_H
#define SF_COMM_CODELETS_H

#include "layers/layer.h"
#include "tasks/submit.h"

#include <starpu.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct _sf_comm;

/* Time the comm worker spent in a model's collective tasks (written by the comm
 * worker only, read by the host after a sync). */
struct _sf_comm_acct {
	double wall, cpu; /* seconds: CLOCK_MONOTONIC, the thread's CPU clock */
	double bytes;     /* bytes this rank sent in the collectives (rings: (N-1) blocks;
	                     all-reduces: what a ring all-reduce sends, 2 (N-1)/N of them) */
	double bytes_inter; /* of which to a rank of another node (struct _sf_comm::node_k) */
	double bytes_tp;    /* of which in TP all-reduces (tp_allreduce) */
};

/* Static arguments of a unit's collectives (pointer handed as cl_arg). */
struct _sf_comm_args {
	struct _sf_comm *comm;
	const char *unit; /* the unit's name, for messages ("" for the loss) */
	struct _sf_comm_acct *acct;
	size_t P; /* unpadded parameters of the unit */
	size_t S; /* shard size: ceil(P / N) */
	atomic_int *resident, *max_resident; /* gathered-unit counter (gather, free) */
	float *scratch; /* S_max floats: the reduce-scatter's receive buffer (one per
	                   model; the comm worker runs one collective at a time) */
	/* mixed precision: gathers move bf16 (stage16: N S_max bf16, one per model),
	 * reduce-scatters move bf16 */
	bool param16, reduce16;
	uint16_t *stage16;
	float *rep_scratch; /* hybrid: see rep_all_reduce */
	/* tensor parallelism: a node's activation all-reduce over the TP group (P: its
	 * floats; unit: the node's name): the ring's scratch (one per model), and for a
	 * linear_col's input gradient whether it is added to the destination */
	float *tp_scratch;
	bool tp_acc;
	size_t tp_off; /* tp_allreduce: where its P floats start in v (SP: a norm's
	                  parameters' gradient in its unit's gradient slot) */
	/* a linear_col's gather_output: its output's rows (tp_rows), whole and local widths
	 * (tp_cols, tp_lcols), and each TP rank's runs of columns (tp_nruns a rank, rank t's
	 * from tp_runs + t * SF_MAX_PARAM_TENSORS; layers/layer.h) */
	const struct _sf_tp_run *tp_runs;
	int tp_nruns;
	size_t tp_rows, tp_cols, tp_lcols;
	/* tp_gather, tp_rs and loss_sum over the shard group instead of the TP group
	 * (FSDP's vocabulary-parallel tied unit, scheduler/vocabdp.c): tp_gather's blocks
	 * (tp_lcols floats, tp_rows 1) all-gathered in place in rank order, tp_rs's input
	 * copied into tp_scratch and reduce-scattered, loss_sum counting shard rank 0's */
	bool shard_group;
};

/* The gradient norm's arguments (packed by value: the scale changes per step). */
struct _sf_norm_args {
	struct _sf_comm_args *comm; /* the model's loss arguments: no unit */
	int nunits;
	float scale;    /* 1 / the step's micro-batches: the norm is of the mean gradient */
	float max_norm; /* INFINITY: the norm only, factor 1 */
	int replicas;   /* hybrid: each shard is held this many times over the world */
};

/* A pipeline transfer's arguments (pointer handed as cl_arg: the model keeps them):
 * the model's comm arguments (no unit: comm->unit names the tensor moved) and the
 * world rank at the other end. */
struct _sf_p2p_args {
	struct _sf_comm_args comm;
	int peer;
	size_t n; /* floats moved, from v's start: 0 for v's whole length */
	int tag;  /* > 0: matched by this tag (p2p_tagged_post), whatever the posting order */
	void *req; /* the backend's posted transfer (p2p_post), from the post to its wait:
	              one argument block a transfer in flight */
};

/* The clip factor of a gradient of 2-norm `norm`: min(1, max_norm / (norm + 1e-6)),
 * 1 when max_norm is infinite (torch.nn.utils.clip_grad_norm_). */
double _sf_clip_factor(double norm, float max_norm);

extern struct starpu_codelet _sf_cl_gather;
extern struct starpu_codelet _sf_cl_gather_after; /* gather with an extra R dependency */
extern struct starpu_codelet _sf_cl_reduce_scatter;
extern struct starpu_codelet _sf_cl_allreduce;
extern struct starpu_codelet _sf_cl_rep_allreduce;
extern struct starpu_codelet _sf_cl_loss_sum;
extern struct starpu_codelet _sf_cl_tp_allreduce;
extern struct starpu_codelet _sf_cl_tp_allreduce_into; /* dst[RW]: added to */
extern struct starpu_codelet _sf_cl_tp_allreduce_set;  /* dst[W]: overwritten */
extern struct starpu_codelet _sf_cl_tp_gather; /* order[RW] local[R] whole[W] */
extern struct starpu_codelet _sf_cl_tp_slice;  /* whole[R] local[W] (no collective) */
extern struct starpu_codelet _sf_cl_tp_rs;     /* order[RW] v[R] dst[W] */
extern struct starpu_codelet _sf_cl_tp_rs_into; /* order[RW] v[R] dst[RW]: added to */
extern struct starpu_codelet _sf_cl_grad_norm; /* order[RW] clip[W] sq_u[R]..., packed
                                                  struct _sf_norm_args */
extern struct starpu_codelet _sf_cl_pp_send; /* order[RW] v[R] */
extern struct starpu_codelet _sf_cl_pp_recv; /* order[RW] v[W] */
extern struct starpu_codelet _sf_cl_pp_wait_send; /* order[RW] v[R] */
extern struct starpu_codelet _sf_cl_pp_wait_recv; /* order[RW] v[RW] */
extern struct starpu_codelet _sf_cl_cp_shift; /* order[RW] src[R] dst[W] */
extern struct starpu_codelet _sf_cl_free;

/* Submitting them (tasks/submit.h). Every collective runs on `worker` (the comm
 * worker) and takes the order handle first, read-write, so that every rank enqueues
 * its collectives in one order; `a` is the unit's (or the loss's) arguments, passed by
 * pointer: the model keeps them. */

/* gather: order[RW] shard[R] full[W] (after[R]: an extra dependency, or NULL) */
int _sf_submit_gather(struct _sf_comm_args *a, starpu_data_handle_t order,
                      starpu_data_handle_t shard, starpu_data_handle_t full,
                      starpu_data_handle_t after, int worker, const char *name,
                      struct _sf_task_done done);
/* the gathered copy is no longer read: full[RW] (counts the unit out; any worker) */
int _sf_submit_free(struct _sf_comm_args *a, starpu_data_handle_t full, const char *name,
                    struct _sf_task_done done);
/* out NULL: grad all-reduced in place (replicated parameters): order[RW] grad[RW];
 * else its reduce-scatter: order[RW] grad[RW] out[W] */
int _sf_submit_reduce(struct _sf_comm_args *a, starpu_data_handle_t order,
                      starpu_data_handle_t grad, starpu_data_handle_t out, int worker,
                      const char *name, struct _sf_task_done done);
/* hybrid: v summed over the replicas: order[RW] v[RW] */
int _sf_submit_rep_allreduce(struct _sf_comm_args *a, starpu_data_handle_t order,
                             starpu_data_handle_t v, int worker, const char *name,
                             struct _sf_task_done done);
/* tensor parallelism: v summed over the TP group, order[RW] v[RW]; with dst, then
 * copied (a->tp_acc: added) into it, dst[W] (dst[RW]) */
int _sf_submit_tp_allreduce(struct _sf_comm_args *a, starpu_data_handle_t order,
                            starpu_data_handle_t v, starpu_data_handle_t dst, int worker,
                            const char *name, struct _sf_task_done done);
/* gather_output: the TP group's local outputs (rows x tp_lcols each) all-gathered into
 * the whole output (rows x tp_cols), each rank's columns where its runs say:
 * order[RW] local[R] whole[W] */
int _sf_submit_tp_gather(struct _sf_comm_args *a, starpu_data_handle_t order,
                         starpu_data_handle_t local, starpu_data_handle_t whole, int worker,
                         const char *name, struct _sf_task_done done);
/* sequence parallelism: v (a->P floats: K blocks of rows) summed over the TP group,
 * this rank's block written into dst (a->tp_acc: added to it): order[RW] v[R] dst[W|RW] */
int _sf_submit_tp_rs(struct _sf_comm_args *a, starpu_data_handle_t order, starpu_data_handle_t v,
                     starpu_data_handle_t dst, int worker, const char *name,
                     struct _sf_task_done done);
/* context parallelism's ring step: a->P floats of src to the next CP rank, dst
 * receiving the previous one's: order[RW] src[R] dst[W] */
int _sf_submit_cp_shift(struct _sf_comm_args *a, starpu_data_handle_t order,
                        starpu_data_handle_t src, starpu_data_handle_t dst, int worker,
                        const char *name, struct _sf_task_done done);
/* gather_output's backward: this rank's columns of the whole output's gradient, on the
 * comm worker (a copy, no collective): whole[R] local[W] */
int _sf_submit_tp_slice(struct _sf_comm_args *a, starpu_data_handle_t whole,
                        starpu_data_handle_t local, int worker, const char *name,
                        struct _sf_task_done done);
/* the step's loss summed over the ranks: order[RW] loss[RW] */
int _sf_submit_loss_sum(struct _sf_comm_args *a, starpu_data_handle_t order,
                        starpu_data_handle_t loss, int worker, const char *name,
                        struct _sf_task_done done);
/* a pipeline transfer of v to (send) or from a->peer: order[RW] v[R] (v[W]). Where the
 * backend has p2p_post it is only posted, and _sf_submit_pp_wait completes it; else it
 * is done when the task ends. */
int _sf_submit_pp_transfer(struct _sf_p2p_args *a, bool send, starpu_data_handle_t order,
                           starpu_data_handle_t v, int worker, const char *name,
                           struct _sf_task_done done);
/* the posted transfer of a done: order[RW] v[R] (a send: v may be rewritten after it)
 * or v[RW] (a receive: v may be read); nothing is submitted when the backend has no
 * p2p_post. Submitted once per transfer, before v's next writer (a send) or reader (a
 * receive). */
int _sf_submit_pp_wait(struct _sf_p2p_args *a, bool send, starpu_data_handle_t order,
                       starpu_data_handle_t v, int worker, const char *name,
                       struct _sf_task_done done);
/* the gradient's norm and clip factor: order[RW] clip[W] sq[R] x nunits; descr: room
 * for nunits + 2 buffers (the model's, allocated once); a copied into the task */
int _sf_submit_grad_norm(const struct _sf_norm_args *a, starpu_data_handle_t order,
                         starpu_data_handle_t clip, const starpu_data_handle_t *sq,
                         struct starpu_data_descr *descr, int worker, const char *name,
                         struct _sf_task_done done);

#endif
