/*
 * comm.h — the communication backends behind one interface, and the codelets that
 * run a step's collectives.
 *
 * A backend (tasks/comm_mpi.c; tasks/comm_nccl.c in NCCL builds) is a table of functions. The step's
 * collectives (all_gather, reduce_scatter, all_reduce, sum_scalar) run inside tasks on
 * the comm worker; the host-side operations (barrier, bcast, gather, gatherv,
 * allgather, min_rank) run on the calling thread, for model setup, checkpoints and
 * traces. Nothing above tasks/ names MPI: the scheduler and io/ call these.
 *
 * Comm codelets (tasks/comm.c) take the comm-order handle as buffer 0 in STARPU_RW,
 * so StarPU runs them one at a time in submission order — the same program on every
 * rank — and are always submitted with STARPU_EXECUTE_ON_WORKER = the comm worker:
 *   gather   : order[RW] shard[R] slot[W] (extra[R])    cl_arg struct _sf_comm_args*
 *   rep_ar   : order[RW] gshard[RW]                     idem (hybrid: the shard summed
 *                                                        over the replicas)
 *   rs       : order[RW] grad[RW] gshard[W]             idem (pads grad with zeros)
 *   allreduce: order[RW] grad[RW]                       idem (sum of P floats, in place)
 *   loss_sum : order[RW] loss[RW]                       idem (sum of one double)
 *   grad_norm: order[RW] clip[W] sq_0 .. sq_{U-1}[R]     packed struct _sf_norm_args
 *              (clip = {norm, factor}: the units' squared norms summed, then over
 *              the ranks)
 *   free     : slot[RW]                                 idem (drops the unit's residency;
 *                                                        a compute codelet)
 * A collective that fails (an MPI error, or no progress for SHARDFLOW_COMM_TIMEOUT
 * seconds: a peer stopped, stuck or cut off) prints which collective of which unit,
 * and ends the whole job through the backend's abort: no rank waits forever.
 * Shape letters: N ranks, P parameters of a unit, S = ceil(P / N) its shard.
 */
#ifndef SF_TASKS_COMM_H
#define SF_TASKS_COMM_H

#include "shardflow.h"

#include <starpu.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct _sf_comm;

struct _sf_comm_ops {
	const char *name;
	/* The step's collectives run on a CUDA comm worker, on device memory (NCCL); else
	 * on a CPU comm worker (MPI). */
	bool device;
	/* Starts the transport (argc/argv may be NULL) and fills rank, size, node_rank,
	 * node_size; fini releases what init made. */
	int (*init)(struct _sf_comm *c, int *argc, char ***argv);
	int (*fini)(struct _sf_comm *c);
	/* Optional (NULL: nothing to do). attach runs once StarPU is up and the comm
	 * worker chosen, collectively (NCCL makes its communicator on that worker's
	 * thread); detach before StarPU stops. */
	int (*attach)(struct _sf_comm *c, int comm_worker);
	int (*detach)(struct _sf_comm *c, int comm_worker);

	/* In tasks, on the comm worker. full: N blocks of S, block `rank` filled; on
	 * return every block is. */
	int (*all_gather)(struct _sf_comm *c, float *full, size_t S);
	/* grad: N blocks of S, summed over the ranks; block `rank` of the sum goes to out.
	 * scratch: S floats. grad is clobbered. */
	int (*reduce_scatter)(struct _sf_comm *c, float *grad, size_t S, float *out,
	                      float *scratch);
	/* Mixed precision (optional: NULL when the backend has none): the same with bf16
	 * on the wire. all_gather16: full (N blocks of S floats) = every rank's shard (S
	 * floats) rounded to bf16, travelling as bf16; stage: N S bf16 of host memory
	 * (a CPU backend's; a device backend keeps its own). reduce_scatter16: as
	 * reduce_scatter, the sums travelling as bf16. */
	int (*all_gather16)(struct _sf_comm *c, const float *shard, float *full, size_t S,
	                    uint16_t *stage);
	int (*reduce_scatter16)(struct _sf_comm *c, float *grad, size_t S, float *out,
	                        float *scratch);
	/* Hybrid sharding (optional): v (n floats) = its sum over the replica group, the
	 * same bits on every replica (a ring: each sum made once, then passed on).
	 * scratch: (rep_size + 1) * ceil(n / rep_size) floats. */
	int (*rep_all_reduce)(struct _sf_comm *c, float *v, size_t n, float *scratch);
	/* v (n floats) = its sum over the ranks */
	int (*all_reduce)(struct _sf_comm *c, float *v, size_t n);
	/* *v = its sum over the ranks */
	int (*sum_scalar)(struct _sf_comm *c, double *v);

	/* Host side, on the calling thread; collective over the world (or, with
	 * node_only, over the ranks of this machine). */
	int (*barrier)(struct _sf_comm *c, bool node_only);
	int (*bcast)(struct _sf_comm *c, void *buf, size_t bytes, int root);
	/* root receives size blocks of `bytes` in rank order */
	int (*gather)(struct _sf_comm *c, const void *mine, size_t bytes, void *all, int root);
	/* root receives counts[r] bytes of each rank r, in rank order (counts: root only) */
	int (*gatherv)(struct _sf_comm *c, const void *mine, size_t bytes, void *all,
	               const size_t *counts, int root);
	/* every rank receives size blocks of `bytes` */
	int (*allgather)(struct _sf_comm *c, const void *mine, size_t bytes, void *all);
	/* the least value over the ranks and the lowest rank holding it */
	int (*min_rank)(struct _sf_comm *c, int value, int *min, int *rank);

	/* Ends the whole job with `code` (a collective that cannot complete): never
	 * returns. */
	void (*abort)(struct _sf_comm *c, int code);
};

struct _sf_comm {
	const struct _sf_comm_ops *ops;
	int rank, size;           /* in the world */
	int node_rank, node_size; /* among the ranks of this machine */
	/* The shard group (gathers and reduce-scatters run over it) and the replica group
	 * (the same shard on other nodes). The world and 1 replica, but with
	 * SHARDFLOW_SHARDING=hybrid: a node of `shard_size` consecutive ranks, and
	 * rep_size = size / shard_size nodes. Set by init. */
	int shard_rank, shard_size, rep_rank, rep_size;
	bool hybrid;   /* init's request: SHARDFLOW_SHARDING=hybrid */
	int node_req;  /* init's request: SHARDFLOW_NODE_SIZE (0: the machine's ranks) */
	int node_k;    /* ranks per node as the accounting counts them (set by init):
	                  SHARDFLOW_NODE_SIZE, else node_size; nodes are consecutive ranks */
	size_t chunk;             /* SHARDFLOW_COMM_CHUNK in floats (0: whole messages) */
	double timeout;           /* SHARDFLOW_COMM_TIMEOUT in seconds (0: wait forever) */
	void *impl;               /* the backend's own state */
};

extern const struct _sf_comm_ops _sf_comm_mpi_ops;
#ifdef SF_HAVE_NCCL
extern const struct _sf_comm_ops _sf_comm_nccl_ops;
#endif

/* The backend SHARDFLOW_COMM names, or an error when this build has none such. */
int _sf_comm_backend(enum sf_comm_backend which, const struct _sf_comm_ops **out);

/* Makes and starts a communicator on `ops`; *out is released by _sf_comm_destroy. */
int _sf_comm_create(const struct _sf_comm_ops *ops, const struct sf_config *cfg, int *argc,
                    char ***argv, struct _sf_comm **out);
int _sf_comm_destroy(struct _sf_comm *c);

/* Every rank returns the same status: the lowest failing rank's (its message is
 * recorded on the others, prefixed by `what`). Collective. */
int _sf_comm_agree(struct _sf_comm *c, int rc, const char *what);

/* ---- the step's comm codelets ----------------------------------------------- */

/* Time the comm worker spent in a model's collective tasks (written by the comm
 * worker only, read by the host after a sync). */
struct _sf_comm_acct {
	double wall, cpu; /* seconds: CLOCK_MONOTONIC, the thread's CPU clock */
	double bytes;     /* bytes this rank sent in the collectives (rings: (N-1) blocks;
	                     all-reduces: what a ring all-reduce sends, 2 (N-1)/N of them) */
	double bytes_inter; /* of which to a rank of another node (struct _sf_comm::node_k) */
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
};

/* The gradient norm's arguments (packed by value: the scale changes per step). */
struct _sf_norm_args {
	struct _sf_comm_args *comm; /* the model's loss arguments: no unit */
	int nunits;
	float scale;    /* 1 / the step's micro-batches: the norm is of the mean gradient */
	float max_norm; /* INFINITY: the norm only, factor 1 */
	int replicas;   /* hybrid: each shard is held this many times over the world */
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
extern struct starpu_codelet _sf_cl_grad_norm; /* order[RW] clip[W] sq_u[R]..., packed
                                                  struct _sf_norm_args */
extern struct starpu_codelet _sf_cl_free;

#endif
