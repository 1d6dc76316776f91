/*
 * comm.h — the communication backends behind one interface (comm/comm.c: picking one,
 * creating and destroying a communicator, agreeing on a status).
 *
 * A backend (comm/comm_mpi.c; comm/comm_nccl.c in NCCL builds) is a table of
 * functions. The step's collectives (all_gather, reduce_scatter, all_reduce,
 * sum_scalar) run inside tasks on the comm worker (the codelets of
 * comm/comm_codelets.h); the host-side operations (barrier, bcast, gather, gatherv,
 * allgather, min_rank) run on the calling thread, for model setup, checkpoints and
 * traces. Nothing outside comm/ (and the simulation's proxy, sim/) names MPI: the scheduler
 * and io/ call these.
 * Shape letters: N ranks, S a block (a shard) of floats.
 */
#ifndef SF_COMM_COMM_H
#define SF_COMM_COMM_H

#include "shardflow.h"
#include "comm/flight.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct _sf_comm;

/* How the comm codelets move their own bytes around a collective (a shard into place,
 * a gradient's padding zeroed, a few bytes to and from the host), in the memory and on
 * the thread of the backend's comm worker. */
struct _sf_comm_mem {
	void (*copy)(void *dst, const void *src, size_t bytes);
	void (*zero)(void *dst, size_t bytes);
	/* a few bytes between the buffer and the host, waiting for them */
	void (*to_host)(void *host, const void *src, size_t bytes);
	void (*from_host)(void *dst, const void *host, size_t bytes);
	/* dst += src, n floats (TP: a linear_col's input gradient added in), and done when
	 * it returns */
	void (*add)(float *dst, const float *src, size_t n);
	/* waits for the copies enqueued so far (a device's stream; nothing on the host) */
	void (*sync)(void);
	/* rows of `width` bytes, `spitch` bytes apart in src, to `dpitch` apart in dst */
	void (*copy2d)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
	               size_t rows);
};

/* The tags p2p_tagged_post takes: 1 .. SF_P2P_TAGS (MPI guarantees 32767 tags; the
 * backend adds its own base) */
#define SF_P2P_TAGS 24000

struct _sf_comm_ops {
	const char *name;
	/* The step's collectives run on a CUDA comm worker, on device memory (NCCL); else
	 * on a CPU comm worker (MPI). */
	bool device;
	/* memcpy and memset for a CPU comm worker; the comm worker's stream for a device
	 * backend */
	const struct _sf_comm_mem *mem;
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
	/* Optional (NULL: the caller copies shard into its block of full, then calls
	 * all_gather): the same from the shard, which the backend copies itself (the MPI
	 * rings while the pieces travel). */
	int (*all_gather_from)(struct _sf_comm *c, const float *shard, float *full, size_t S);
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
	/* Tensor parallelism (optional: NULL when the backend has none, and SHARDFLOW_TP
	 * is then refused): v (n floats) = its sum over the TP group, the same bits on
	 * every member (a ring, as rep_all_reduce). scratch: (tp_size + 1) *
	 * ceil(n / tp_size) floats. */
	int (*tp_all_reduce)(struct _sf_comm *c, float *v, size_t n, float *scratch);
	/* full: tp_size blocks of S, block tp_rank filled; on return every block is (a
	 * linear_col's gather_output). Optional as tp_all_reduce, needed with it. */
	int (*tp_all_gather)(struct _sf_comm *c, float *full, size_t S);
	/* Sequence parallelism (optional: NULL refuses SHARDFLOW_SEQUENCE_PARALLEL): v
	 * (tp_size blocks of S) summed over the TP group, block tp_rank of the sum to out
	 * (S floats); v is left as it was. scratch: (tp_size + 1) S floats. */
	int (*tp_reduce_scatter)(struct _sf_comm *c, float *v, size_t S, float *out,
	                         float *scratch);
	/* Pipeline parallelism (optional: NULL when the backend has none, and SHARDFLOW_PP
	 * is then refused): v (n floats) sent to world rank `peer` (send) or received from
	 * it, point to point. Two ranks run their transfers to each other in the same order
	 * (the pipeline's planner, scheduler/pipeline.c, submits them so). */
	int (*p2p)(struct _sf_comm *c, float *v, size_t n, int peer, bool send);
	/* Optional (NULL: the pipeline's transfers are p2p, whole, where they are posted):
	 * the same transfer in two halves, so that the comm worker never waits in a
	 * transfer while the collectives after it are ready. p2p_post starts it and
	 * returns at once, *req the backend's record of it (v stays untouched by anything
	 * else until the wait); p2p_wait waits until it is done and releases req. A rank's
	 * posts to one peer are matched in the order it makes them. */
	int (*p2p_post)(struct _sf_comm *c, float *v, size_t n, int peer, bool send, void **req);
	int (*p2p_wait)(struct _sf_comm *c, void *req, bool send);
	/* Optional (NULL: the interleaved schedule's transfers are posted in the order every
	 * stage agrees on, scheduler/pipeline_order.c): p2p_post's transfer
	 * matched by its tag (1 .. SF_P2P_TAGS) whatever the order two ranks post their
	 * transfers to each other in, completed by p2p_wait. */
	int (*p2p_tagged_post)(struct _sf_comm *c, float *v, size_t n, int peer, bool send, int tag,
	                       void **req);
	/* Context parallelism (optional: NULL refuses SHARDFLOW_CP): one step of the CP
	 * group's ring, src (n floats) to the next CP rank while dst receives the previous
	 * one's. Every member runs it at once, in the same order. */
	int (*cp_shift)(struct _sf_comm *c, const float *src, float *dst, size_t n);
	/* v (n floats) = its sum over the ranks */
	int (*all_reduce)(struct _sf_comm *c, float *v, size_t n);
	/* *v = its sum over the ranks */
	int (*sum_scalar)(struct _sf_comm *c, double *v);

	/* Host side, on the calling thread; collective over the world (or, with
	 * node_only, over the ranks of this machine). */
	int (*barrier)(struct _sf_comm *c, bool node_only);
	int (*bcast)(struct _sf_comm *c, void *buf, size_t bytes, int root);
	/* root receives size blocks of `bytes` in rank order (the _bytes calls move raw
	 * bytes between hosts, unlike the step's all_gather of a unit's floats) */
	int (*gather_bytes)(struct _sf_comm *c, const void *mine, size_t bytes, void *all,
	                    int root);
	/* root receives counts[r] bytes of each rank r, in rank order (counts: root only) */
	int (*gatherv_bytes)(struct _sf_comm *c, const void *mine, size_t bytes, void *all,
	                     const size_t *counts, int root);
	/* every rank receives size blocks of `bytes` */
	int (*allgather_bytes)(struct _sf_comm *c, const void *mine, size_t bytes, void *all);
	/* the least value over the ranks and the lowest rank holding it, and the sum of
	 * `add` over the ranks (one round trip: a status and a count agreed at once) */
	int (*min_rank)(struct _sf_comm *c, int value, int64_t add, int *min, int *rank,
	                int64_t *sum);

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
	/* The TP group: tp_size consecutive ranks (SHARDFLOW_TP; 1: none). With tp_size >
	 * 1 the shard group is the world / tp_size ranks of the same place in every TP
	 * group (shard_rank = rank / tp_size): the data-parallel ranks. Set by init. */
	int tp_rank, tp_size;
	int tp_req;     /* init's request: SHARDFLOW_TP */
	/* The pipeline's stages: pp_size groups of size / pp_size consecutive ranks, this
	 * rank's stage pp_rank (SHARDFLOW_PP; 1: none). With pp_size > 1 the shard group
	 * is the stage's ranks of this TP place (all of them without TP): world = pp x dp
	 * x tp. Set by init, from pp_req (SHARDFLOW_PP). */
	int pp_rank, pp_size, pp_req;
	/* The CP group: the cp_size ranks of one dp index and TP place (SHARDFLOW_CP; 1:
	 * none), rank = (dp cp_size + cp_rank) tp_size + tp_rank; they belong to the
	 * shard group, which is then dp x cp ranks. Set by init, from cp_req. */
	int cp_rank, cp_size, cp_req;
	bool hybrid;    /* init's request: SHARDFLOW_SHARDING=hybrid */
	int node_req;   /* init's request: SHARDFLOW_NODE_SIZE (0: the machine's ranks) */
	int node_k;     /* ranks per node as the accounting counts them (set by init):
	                   SHARDFLOW_NODE_SIZE, else node_size; nodes are consecutive ranks */
	size_t chunk;   /* SHARDFLOW_COMM_CHUNK in floats (0: whole messages) */
	double timeout; /* SHARDFLOW_COMM_TIMEOUT in seconds (0: wait forever) */
	struct _sf_flight *flight; /* the last operations (comm/flight.h), or NULL */
	/* the record's entries (SHARDFLOW_FLIGHT_RECORD) and directory (beside the trace,
	 * "" for $TMPDIR), set before init so that a start-up that stalls before the record
	 * exists (MPI_Init_thread) leaves one too */
	int flight_cap;
	char flight_dir[4096];
	const char *agreeing;      /* the `what` of the agreement under way, or of the
	                              last one: names the host operations in messages */
	void *impl;                /* the backend's own state */
};

extern const struct _sf_comm_ops _sf_comm_mpi_ops;
/* SHARDFLOW_COMM=mpi-sync: the MPI backend, its pipeline transfers under NCCL's rules */
extern const struct _sf_comm_ops _sf_comm_mpi_sync_ops;
/* memcpy and memset: a CPU comm worker's (the MPI backend's) */
extern const struct _sf_comm_mem _sf_comm_host_mem;
#ifdef SF_SIMULATION
/* A simulation build's modelled collectives (sim/comm_sim.c): the lowest world rank
 * and the size of the shard's (0), the replicas' (1), the TP group's (2) or the CP
 * group's (3) ranks */
int _sf_comm_mpi_group(struct _sf_comm *c, int which, int *first, int *size);
#endif
#ifdef SF_HAVE_NCCL
extern const struct _sf_comm_ops _sf_comm_nccl_ops;
#endif

/* Puts ops in the row of SHARDFLOW_COMM value `which` (a simulation build's proxy of
 * the MPI backend, sim/comm_sim.c, before the program's main runs); NULL empties the
 * row (a backend the simulation does not proxy). */
int _sf_comm_backend_plug(enum sf_comm_backend which, const struct _sf_comm_ops *ops);
/* The backend SHARDFLOW_COMM names, or an error when this build has none such. */
int _sf_comm_backend(enum sf_comm_backend which, const struct _sf_comm_ops **out);

/* Makes and starts a communicator on `ops`; *out is released by _sf_comm_destroy. */
int _sf_comm_create(const struct _sf_comm_ops *ops, const struct sf_config *cfg, int *argc,
                    char ***argv, struct _sf_comm **out);
int _sf_comm_destroy(struct _sf_comm *c);

/* Every rank returns the same status: the lowest failing rank's. Its message is
 * recorded on the others ("<what> failed on rank N: <message>",
 * sf_last_error_peer() N), which print only "<what>: stopping: rank N failed"
 * (_sf_err_peer): the job's log says the failure once. Collective. */
int _sf_comm_agree(struct _sf_comm *c, int rc, const char *what);
/* Ends the whole job (never returns): records `rc` with the message, prints it even
 * for a quiet program, writes this rank's flight record and, after waiting a little
 * for the other ranks' records, says which rank was behind, then aborts through the
 * backend. Once per process: a second caller (the comm worker and the main thread
 * may both time out) waits for the first's abort. ch: the channel that failed. */
_Noreturn void _sf_comm_fail_job(struct _sf_comm *c, int rc, enum _sf_flight_channel ch,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The same, and *count (this rank's on entry) becomes its sum over the ranks (left
 * as it was when the agreed status is a failure). Collective. */
int _sf_comm_agree_sum(struct _sf_comm *c, int rc, const char *what, int64_t *count);

#endif
