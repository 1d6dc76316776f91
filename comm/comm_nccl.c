/*
 * comm_nccl.c — the NCCL communication backend (struct _sf_comm_ops), for one process
 * per GPU (SHARDFLOW_COMM=nccl; built when configure finds CUDA and NCCL).
 *
 * The host side (model setup, checkpoints, traces) and the bootstrap go over the MPI
 * backend, which this one wraps: the ranks' GPUs are compared with it (NCCL needs one
 * GPU per rank; a shared one is refused on every rank) and rank 0's ncclUniqueId is
 * broadcast with it. The step's collectives are NCCL's, enqueued on the comm worker's
 * own CUDA stream: the comm worker is the second StarPU CUDA worker of the rank's GPU
 * (STARPU_NWORKER_PER_CUDA=2, a thread each), so collectives and compute run on
 * different streams, and the comm-order handle still makes every rank enqueue them in
 * the same order, one at a time (what NCCL requires of a communicator). SHARDFLOW_TP
 * and SHARDFLOW_CP split it, at attach, into the shard, TP and CP groups, laid out as
 * the MPI backend lays them out (comm_mpi.c); a CP ring step is a grouped send and
 * receive on the CP group's communicator. The
 * communicator is created on that worker's thread (attach, after starpu_init),
 * non-blocking (config.blocking = 0): a rank whose creation fails aborts its own, and
 * the others stop waiting for it at SHARDFLOW_COMM_TIMEOUT at the latest, so that
 * every rank reaches the agreement on the outcome. A non-blocking communicator may
 * answer any call (a collective's first enqueueing, which connects the peers) with
 * ncclInProgress; settle() waits for the call to be done, under the same timeout.
 *
 * A collective's codelet waits for its stream, polling cudaStreamQuery and
 * ncclCommGetAsyncError with naps: an asynchronous NCCL error (a peer died, a
 * network failed) or no completion for SHARDFLOW_COMM_TIMEOUT seconds aborts the
 * communicator (ncclCommAbort) and fails the collective, which ends the job with a
 * message naming it (comm/comm_codelets.c), as with MPI.
 *
 * What of it has run where (with a GPU and without one): docs/gpu.md, "What has run,
 * and what has not".
 */
#include "config.h"

#include "common/clock.h"
#include "common/error.h"
#include "comm/comm.h"
#include "tasks/grad.h"
#include "tasks/worker.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <starpu.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct nccl_impl {
	struct _sf_comm mpi; /* host side and bootstrap */
	ncclUniqueId id;
	ncclComm_t comm;
	/* SHARDFLOW_TP > 1: split from comm on the comm worker, the shard group (the dp
	 * ranks of this rank's TP place: gathers, reduce-scatters) and the TP group (the
	 * activations' all-reduces); NULL otherwise */
	ncclComm_t shard, tp;
	/* SHARDFLOW_CP > 1: split from comm on the comm worker, the CP group (the cp ranks
	 * of one dp index and TP place: context parallelism's ring steps); NULL otherwise */
	ncclComm_t cp;
	/* SHARDFLOW_PP > 1: the pipeline's transfers on a communicator (split from comm)
	 * and a stream of their own, so that a transfer waiting for its peer holds no
	 * collective of the comm worker's stream (as PyTorch's process groups give
	 * Megatron-LM's and torchtitan's pipelines); NULL otherwise */
	ncclComm_t pp;
	cudaStream_t pp_stream;
	bool attached;
	int attach_rc; /* attach's status, set on the comm worker's thread */
	char attach_msg[512];
	/* bf16 collectives: device memory of `stage_n` bf16, grown once to the largest
	 * N S met and kept (the comm worker's thread allocates and frees it) */
	uint16_t *stage;
	size_t stage_n;
};

static struct nccl_impl *impl(struct _sf_comm *c)
{
	return c->impl;
}

/* The communicator of the gathers and reduce-scatters: the shard group's */
static ncclComm_t step_comm(struct _sf_comm *c)
{
	return impl(c)->shard ? impl(c)->shard : impl(c)->comm;
}

/* Every communicator this rank holds, aborted (a failed or stalled collective) */
static void abort_all(struct nccl_impl *st)
{
	ncclComm_t *cs[] = {&st->pp, &st->cp, &st->tp, &st->shard, &st->comm};
	for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (*cs[i]) {
			ncclCommAbort(*cs[i]);
			*cs[i] = NULL;
		}
}

static int nccl_fail(ncclResult_t r, const char *what)
{
	return SF_ERR(SF_ERR_COMM, "%s failed: %s (NCCL %d)", what, ncclGetErrorString(r), (int)r);
}

/* The GPU a rank uses, as the world compares them: the UUID tells GPUs apart on every
 * machine; the PCI bus id and the device's index are for the message. */
struct gpu_id {
	unsigned char uuid[16];
	char pci[32]; /* "0000:65:00.0" */
	int dev;      /* among the devices the rank sees (CUDA_VISIBLE_DEVICES) */
};

static int gpu_of(int node_rank, int ndev, struct gpu_id *g)
{
	struct cudaDeviceProp p;
	g->dev = _sf_cuda_device(node_rank, ndev);
	cudaError_t ce = cudaGetDeviceProperties(&p, g->dev);
	if (ce == cudaSuccess)
		ce = cudaDeviceGetPCIBusId(g->pci, (int)sizeof g->pci, g->dev);
	if (ce != cudaSuccess) {
		(void)cudaGetLastError();
		return SF_ERR(SF_ERR_CONFIG, "SHARDFLOW_COMM=nccl: CUDA device %d: %s", g->dev,
		              cudaGetErrorString(ce));
	}
	memcpy(g->uuid, p.uuid.bytes, sizeof g->uuid);
	return SF_OK;
}

/* NCCL needs a GPU of its own for each rank (two ranks on one GPU hang or fail inside
 * NCCL). Every rank gets every rank's GPU (UUIDs are unique across machines, so the
 * world's list finds the ranks of a machine that share one) and takes the same
 * decision: refused everywhere, with the same message, or accepted everywhere. */
static int one_gpu_per_rank(struct _sf_comm *c, struct nccl_impl *st, const struct gpu_id *mine)
{
	struct gpu_id *all = calloc((size_t)c->size, sizeof *all);
	if (!all)
		return SF_ERR(SF_ERR_NOMEM, "sf_init: out of memory");
	int rc = st->mpi.ops->allgather_bytes(&st->mpi, mine, sizeof *mine, all);
	for (int a = 0; rc >= 0 && a < c->size; a++)
		for (int b = a + 1; b < c->size; b++) {
			if (memcmp(all[a].uuid, all[b].uuid, sizeof all[a].uuid) != 0)
				continue;
			all[a].pci[sizeof all[a].pci - 1] = '\0';
			rc = SF_ERR(
			    SF_ERR_CONFIG,
			    "SHARDFLOW_COMM=nccl: ranks %d and %d share GPU %d (PCI %s): NCCL "
			    "needs one GPU per rank; start one rank per GPU, or use "
			    "SHARDFLOW_COMM=mpi",
			    a, b, all[a].dev, all[a].pci);
			break;
		}
	free(all);
	return rc;
}

/* The groups nccl_init lays out for attach to split (SHARDFLOW_TP, SHARDFLOW_CP,
 * SHARDFLOW_PP: as comm_mpi.c lays them out, with its refusals), or the refusal of what
 * the backend lacks (hybrid sharding, CP with a pipeline) */
static int nccl_groups(struct _sf_comm *c)
{
	int K = c->tp_req, S = c->pp_req;
	if (S > 1) { /* pp x dp x tp: stage s the dp K consecutive ranks [s dp K, (s+1) dp K) */
		if (c->size % S != 0 || (c->size / S) % K != 0 || c->hybrid || c->cp_req > 1)
			return SF_ERR(SF_ERR_CONFIG,
			              c->size % S != 0 ? "SHARDFLOW_PP=%d does not divide the %d ranks: "
			                                 "accepted values are divisors of the world "
			                                 "size"
			              : (c->size / S) % K != 0
			                  ? "SHARDFLOW_PP=%d: SHARDFLOW_TP does not divide the %d "
			                    "ranks' stages: accepted values are divisors of world / pp"
			                  : "SHARDFLOW_PP=%d on %d ranks with SHARDFLOW_SHARDING=hybrid "
			                    "or SHARDFLOW_CP: not with the NCCL backend yet; accepted: "
			                    "sharding full, CP 1, or SHARDFLOW_COMM=mpi",
			              S, c->size);
		int dp = c->size / S / K, stage = dp * K;
		c->tp_rank = c->rank % K, c->tp_size = K;
		c->pp_rank = c->rank / stage, c->pp_size = S;
		c->shard_rank = (c->rank / K) % dp, c->shard_size = dp;
		return SF_OK;
	}
	if (K > 1 && c->size % K == 0 && !c->hybrid) { /* TP groups split at attach */
		c->tp_rank = c->rank % K, c->tp_size = K;
		c->shard_rank = c->rank / K, c->shard_size = c->size / K;
	} else if (K > 1) {
		return SF_ERR(SF_ERR_CONFIG,
		              c->hybrid ? "SHARDFLOW_TP=%d with SHARDFLOW_SHARDING=hybrid: not "
		                          "supported; accepted with TP: sharding full, grad_op or "
		                          "none"
		                        : "SHARDFLOW_TP=%d does not divide the %d ranks: accepted "
		                          "values are divisors of the world size",
		              K, c->size);
	}
	/* SHARDFLOW_CP=C: the CP group split at attach (the shard group is left as it is) */
	int C = c->cp_req, tp = c->tp_size;
	if (C > 1 && c->hybrid)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_CP=%d with SHARDFLOW_SHARDING=hybrid: not supported "
		              "yet; accepted with CP: sharding full, grad_op or none",
		              C);
	if (C > 1 && (c->size / tp) % C != 0)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_CP=%d does not divide the %d ranks%s: accepted "
		              "values are divisors of world / tp (world = dp x cp x tp)",
		              C, c->size / tp, tp > 1 ? " of a TP place" : "");
	if (C > 1)
		c->cp_rank = (c->rank / tp) % C, c->cp_size = C;
	if (c->hybrid)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_SHARDING=hybrid: the NCCL backend has no hybrid groups "
		              "yet; use SHARDFLOW_COMM=mpi");
	return SF_OK;
}

static int nccl_init(struct _sf_comm *c, int *argc, char ***argv)
{
	struct nccl_impl *st = calloc(1, sizeof *st);
	if (!st)
		return SF_ERR(SF_ERR_NOMEM, "sf_init: out of memory");
	st->mpi.ops = &_sf_comm_mpi_ops;
	st->mpi.chunk = c->chunk;
	st->mpi.timeout = c->timeout;
	st->mpi.node_req = c->node_req;
	int rc = _sf_comm_mpi_ops.init(&st->mpi, argc, argv);
	if (rc < 0) {
		free(st);
		return rc;
	}
	c->impl = st;
	c->rank = st->mpi.rank;
	c->size = st->mpi.size;
	c->node_rank = st->mpi.node_rank;
	c->node_size = st->mpi.node_size;
	c->shard_rank = c->rank, c->shard_size = c->size, c->rep_rank = 0, c->rep_size = 1;
	c->node_k = st->mpi.node_k;
	rc = nccl_groups(c);
	if (rc < 0) {
		_sf_comm_mpi_ops.fini(&st->mpi);
		free(st);
		c->impl = NULL;
		return rc;
	}
	/* every rank needs a device of its own; all agree before going on */
	int ndev = 0;
	struct gpu_id mine = {.dev = -1};
	cudaError_t ce = cudaGetDeviceCount(&ndev);
	if (ce != cudaSuccess || ndev <= 0) {
		(void)cudaGetLastError();
		rc = SF_ERR(
		    SF_ERR_CONFIG,
		    "SHARDFLOW_COMM=nccl: no CUDA device on this machine (cudaGetDeviceCount: "
		    "%s); NCCL needs one GPU per rank: use SHARDFLOW_COMM=mpi (the default) "
		    "on CPU ranks",
		    ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
	} else {
		rc = gpu_of(c->node_rank, ndev, &mine);
	}
	rc = _sf_comm_agree(&st->mpi, rc, "the NCCL bootstrap");
	if (rc >= 0)
		rc = one_gpu_per_rank(c, st, &mine);
	if (rc >= 0 && c->rank == 0) {
		ncclResult_t r = ncclGetUniqueId(&st->id);
		if (r != ncclSuccess)
			rc = nccl_fail(r, "ncclGetUniqueId");
	}
	rc = _sf_comm_agree(&st->mpi, rc, "the NCCL bootstrap");
	if (rc >= 0)
		rc = st->mpi.ops->bcast(&st->mpi, &st->id, sizeof st->id, 0);
	if (rc < 0) {
		_sf_comm_mpi_ops.fini(&st->mpi);
		free(st);
		c->impl = NULL;
	}
	return rc;
}

/* The state of a non-blocking communicator once its pending call is done: ncclSuccess
 * or NCCL's error; ncclInProgress when SHARDFLOW_COMM_TIMEOUT passed first. */
static ncclResult_t settle(struct _sf_comm *c, ncclComm_t comm)
{
	struct timespec t0, now, nap = {0, 20000}; /* 20 us */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		ncclResult_t state = ncclInProgress;
		ncclResult_t r = ncclCommGetAsyncError(comm, &state);
		if (r != ncclSuccess)
			return r;
		if (state != ncclInProgress)
			return state;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (c->timeout > 0 && 1e-9 * (double)_sf_ns_between(&t0, &now) > c->timeout)
			return ncclInProgress;
		nanosleep(&nap, NULL);
	}
}

/* on the comm worker's thread (StarPU made the rank's device current) */
static void attach_on_worker(void *arg)
{
	struct _sf_comm *c = arg;
	struct nccl_impl *st = impl(c);
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	config.blocking = 0; /* a failed rank must not leave the others inside their init */
	st->comm = NULL;
	ncclResult_t r = ncclCommInitRankConfig(&st->comm, c->size, st->id, c->rank, &config);
	if ((r == ncclSuccess || r == ncclInProgress) && st->comm)
		r = settle(c, st->comm);
	st->attach_rc = r == ncclSuccess ? SF_OK : SF_ERR_COMM;
	if (r == ncclInProgress)
		snprintf(st->attach_msg, sizeof st->attach_msg,
		         "ncclCommInitRankConfig: not done after %g s (SHARDFLOW_COMM_TIMEOUT): a "
		         "rank failed, or is stopped, stuck or unreachable",
		         c->timeout);
	else if (r != ncclSuccess)
		snprintf(st->attach_msg, sizeof st->attach_msg,
		         "ncclCommInitRankConfig failed: %s (NCCL %d): %s", ncclGetErrorString(r),
		         (int)r, ncclGetLastError(st->comm));
	/* SHARDFLOW_TP: the shard group (same TP place) and the TP group (same dp rank);
	 * SHARDFLOW_CP: the CP group (same dp index and TP place: rank = (d C + k) K + t);
	 * SHARDFLOW_PP: the shard group a stage's ranks of one TP place (rank = (s dp + d)
	 * K + t), the transfers between stages on the whole world's second communicator */
	int K = c->tp_size, C = c->cp_size, q = c->rank / K, S = c->pp_size;
	int shard_color = S > 1 ? c->pp_rank * K + c->rank % K : c->rank % K;
	struct {
		bool want;
		ncclComm_t *out;
		int color;
		const char *what;
	} splits[] = {{K > 1 || S > 1, &st->shard, shard_color, "ncclCommSplit (shard group)"},
	              {K > 1, &st->tp, c->rank / K, "ncclCommSplit (TP group)"},
	              {C > 1, &st->cp, (q / C) * K + c->rank % K, "ncclCommSplit (CP group)"},
	              {S > 1, &st->pp, 0, "ncclCommSplit (pipeline transfers)"}};
	for (size_t i = 0; i < sizeof splits / sizeof splits[0] && r == ncclSuccess; i++) {
		if (!splits[i].want)
			continue;
		r = ncclCommSplit(st->comm, splits[i].color, c->rank, splits[i].out, &config);
		if ((r == ncclSuccess || r == ncclInProgress) && *splits[i].out)
			r = settle(c, *splits[i].out);
		if (r != ncclSuccess)
			snprintf(st->attach_msg, sizeof st->attach_msg, "%s failed: %s (NCCL %d)",
			         splits[i].what, ncclGetErrorString(r), (int)r);
	}
	if (r == ncclSuccess && S > 1) {
		cudaError_t ce = cudaStreamCreateWithFlags(&st->pp_stream, cudaStreamNonBlocking);
		if (ce != cudaSuccess) {
			st->pp_stream = NULL;
			r = ncclUnhandledCudaError;
			snprintf(st->attach_msg, sizeof st->attach_msg,
			         "cudaStreamCreateWithFlags (pipeline transfers): %s",
			         cudaGetErrorString(ce));
		}
	}
	if (r != ncclSuccess && st->attach_rc == SF_OK)
		st->attach_rc = SF_ERR_COMM;
	/* aborting closes this rank's connections, which ends the peers' wait early */
	if (r != ncclSuccess)
		abort_all(st);
}

static int nccl_attach(struct _sf_comm *c, int worker)
{
	struct nccl_impl *st = impl(c);
	if (starpu_worker_get_type(worker) != STARPU_CUDA_WORKER)
		return SF_ERR(SF_ERR_STARPU,
		              "SHARDFLOW_COMM=nccl: the comm worker %d is not a CUDA worker",
		              worker);
	unsigned w = (unsigned)worker;
	starpu_execute_on_specific_workers(attach_on_worker, c, 1, &w, "shardflow nccl init");
	int rc = st->attach_rc < 0 ? SF_ERR(st->attach_rc, "%s", st->attach_msg) : SF_OK;
	rc = _sf_comm_agree(&st->mpi, rc, "ncclCommInitRankConfig");
	if (rc < 0) /* made here, failed on another rank */
		abort_all(st);
	st->attached = rc >= 0;
	return rc;
}

/* Finalizing flushes the communicator's work with the peers (non-blocking: settle
 * waits for it, under SHARDFLOW_COMM_TIMEOUT), then destroying frees it locally; a
 * communicator that does not settle is aborted instead. */
static void destroy_on_worker(void *arg)
{
	struct _sf_comm *c = arg;
	struct nccl_impl *st = impl(c);
	ncclComm_t *cs[] = {&st->pp, &st->cp, &st->tp, &st->shard, &st->comm};
	for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
		if (!*cs[i])
			continue;
		ncclResult_t r = ncclCommFinalize(*cs[i]);
		if (r == ncclSuccess || r == ncclInProgress)
			r = settle(c, *cs[i]);
		if (r == ncclSuccess)
			ncclCommDestroy(*cs[i]);
		else
			ncclCommAbort(*cs[i]);
		*cs[i] = NULL;
	}
	if (st->stage)
		cudaFree(st->stage);
	st->stage = NULL;
	st->stage_n = 0;
	if (st->pp_stream)
		cudaStreamDestroy(st->pp_stream);
	st->pp_stream = NULL;
}

static int nccl_detach(struct _sf_comm *c, int worker)
{
	struct nccl_impl *st = impl(c);
	/* after give_up the communicators are aborted (NULL: skipped), the staging buffer
	 * and the pipeline's stream are still to free, on the worker whose device holds
	 * them */
	if (!st || (!st->attached && !st->stage && !st->pp_stream))
		return SF_OK;
	unsigned w = (unsigned)worker;
	starpu_execute_on_specific_workers(destroy_on_worker, c, 1, &w, "shardflow nccl destroy");
	st->attached = false;
	return SF_OK;
}

static int nccl_fini(struct _sf_comm *c)
{
	struct nccl_impl *st = impl(c);
	if (!st)
		return SF_OK;
	if (st->attached) /* detach was not called (an error path): release what we can */
		abort_all(st);
	int rc = _sf_comm_mpi_ops.fini(&st->mpi);
	free(st);
	c->impl = NULL;
	return rc;
}

/* The communicator cannot be trusted any more: abort it, and fail with `rc`. */
static int give_up(struct nccl_impl *st, int rc)
{
	abort_all(st);
	st->attached = false;
	return rc;
}

/* Waits for ev (NULL: for the collectives enqueued on the worker's stream): NCCL's
 * asynchronous errors and SHARDFLOW_COMM_TIMEOUT end the wait with an aborted
 * communicator. */
static int wait_done(struct _sf_comm *c, cudaEvent_t ev, const char *what)
{
	struct nccl_impl *st = impl(c);
	cudaStream_t s = starpu_cuda_get_local_stream();
	struct timespec t0, now, nap = {0, 20000}; /* 20 us */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		cudaError_t ce = ev ? cudaEventQuery(ev) : cudaStreamQuery(s);
		if (ce == cudaSuccess)
			return SF_OK;
		if (ce != cudaErrorNotReady)
			return give_up(st, SF_ERR(SF_ERR_COMM, "%s: CUDA error %s", what,
			                          cudaGetErrorString(ce)));
		ncclComm_t cs[] = {st->comm, st->shard, st->tp, st->cp, st->pp};
		for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
			ncclResult_t ar = ncclSuccess;
			if (cs[i] && ncclCommGetAsyncError(cs[i], &ar) == ncclSuccess &&
			    ar != ncclSuccess && ar != ncclInProgress)
				return give_up(st, nccl_fail(ar, what));
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (c->timeout > 0 && 1e-9 * (double)_sf_ns_between(&t0, &now) > c->timeout)
			return give_up(
			    st, SF_ERR(SF_ERR_COMM,
			               "%s: no progress for %g s (SHARDFLOW_COMM_TIMEOUT): a "
			               "peer rank is stopped, stuck or unreachable",
			               what, c->timeout));
		nanosleep(&nap, NULL);
	}
}

static int wait_stream(struct _sf_comm *c, const char *what)
{
	return wait_done(c, NULL, what);
}

/* r: what enqueueing a collective on `comm` returned; SF_OK once it is on the stream */
static int posted(struct _sf_comm *c, ncclComm_t comm, ncclResult_t r, const char *what)
{
	struct nccl_impl *st = impl(c);
	if (r == ncclInProgress) { /* not yet on the stream: NCCL is still enqueueing it */
		r = settle(c, comm);
		if (r == ncclInProgress)
			return give_up(
			    st, SF_ERR(SF_ERR_COMM,
			               "%s: not enqueued after %g s (SHARDFLOW_COMM_TIMEOUT): a "
			               "peer rank is stopped, stuck or unreachable",
			               what, c->timeout));
		if (r != ncclSuccess)
			return give_up(st, nccl_fail(r, what));
	}
	if (r != ncclSuccess)
		return nccl_fail(r, what);
	return SF_OK;
}

/* the same, then waits for the stream */
static int enqueued(struct _sf_comm *c, ncclComm_t comm, ncclResult_t r, const char *what)
{
	int rc = posted(c, comm, r, what);
	return rc < 0 ? rc : wait_stream(c, what);
}

/* in place: block `shard_rank` of full is this rank's shard */
static int nccl_all_gather(struct _sf_comm *c, float *full, size_t S)
{
	ncclComm_t sc = step_comm(c);
	return enqueued(c, sc,
	                ncclAllGather(full + (size_t)c->shard_rank * S, full, S, ncclFloat, sc,
	                              starpu_cuda_get_local_stream()),
	                "ncclAllGather");
}

static int nccl_reduce_scatter(struct _sf_comm *c, float *grad, size_t S, float *out,
                               float *scratch)
{
	(void)scratch;
	ncclComm_t sc = step_comm(c);
	return enqueued(
	    c, sc,
	    ncclReduceScatter(grad, out, S, ncclFloat, ncclSum, sc, starpu_cuda_get_local_stream()),
	    "ncclReduceScatter");
}

/* The device staging of n bf16 (grown, never shrunk: steps meet the same sizes). */
static int stage_of(struct _sf_comm *c, size_t n, uint16_t **out)
{
	struct nccl_impl *st = impl(c);
	if (n > st->stage_n) {
		if (st->stage)
			cudaFree(st->stage);
		st->stage = NULL;
		st->stage_n = 0;
		cudaError_t ce = cudaMalloc((void **)&st->stage, n * sizeof(uint16_t));
		if (ce != cudaSuccess)
			return SF_ERR(SF_ERR_NOMEM, "bf16 collectives: cudaMalloc of %zu bytes: %s",
			              n * sizeof(uint16_t), cudaGetErrorString(ce));
		st->stage_n = n;
	}
	*out = st->stage;
	return SF_OK;
}

/* bf16 collectives in place on the device staging (S bf16 per rank): a gather rounds
 * this rank's shard into its block, all-gathers in bf16 and widens every block into
 * out; a reduce-scatter rounds the whole gradient, reduce-scatters in bf16 (its sums
 * are bf16, as FSDP's with reduce_dtype bf16) and widens this rank's block into out. */
static int nccl_bf16(struct _sf_comm *c, bool gather, const float *in, size_t S, float *out)
{
	uint16_t *st = NULL;
	size_t n = S * (size_t)c->shard_size;
	int rc = stage_of(c, n, &st);
	if (rc < 0)
		return rc;
	uint16_t *mine = st + (size_t)c->shard_rank * S;
	cudaStream_t stream = starpu_cuda_get_local_stream();
	ncclComm_t sc = step_comm(c);
	if (gather) {
		_sf_bf16_round_n_cuda(S, in, mine);
		rc = enqueued(c, sc, ncclAllGather(mine, st, S, ncclBfloat16, sc, stream),
		              "ncclAllGather(bf16)");
	} else {
		_sf_bf16_round_n_cuda(n, in, st);
		rc = enqueued(c, sc,
		              ncclReduceScatter(st, mine, S, ncclBfloat16, ncclSum, sc, stream),
		              "ncclReduceScatter(bf16)");
	}
	if (rc < 0)
		return rc;
	_sf_bf16_widen_n_cuda(gather ? n : S, gather ? st : mine, out);
	return wait_stream(c, "bf16 widening");
}

static int nccl_all_gather16(struct _sf_comm *c, const float *shard, float *full, size_t S,
                             uint16_t *host_stage)
{
	(void)host_stage;
	return nccl_bf16(c, true, shard, S, full);
}

static int nccl_reduce_scatter16(struct _sf_comm *c, float *grad, size_t S, float *out,
                                 float *scratch)
{
	(void)scratch;
	return nccl_bf16(c, false, grad, S, out);
}

/* sharding none: the gradient summed over the shard group (the dp ranks with TP) */
static int nccl_all_reduce(struct _sf_comm *c, float *v, size_t n)
{
	ncclComm_t sc = step_comm(c);
	return enqueued(
	    c, sc, ncclAllReduce(v, v, n, ncclFloat, ncclSum, sc, starpu_cuda_get_local_stream()),
	    "ncclAllReduce");
}

/* SHARDFLOW_TP: an activation (or its gradient) summed over the TP group. NCCL's ring
 * and tree all-reduces leave every rank the same bits, as the MPI backend's ring does,
 * so what every TP rank holds alike stays alike. scratch: unused (NCCL's own). */
static int nccl_tp_all_reduce(struct _sf_comm *c, float *v, size_t n, float *scratch)
{
	(void)scratch;
	struct nccl_impl *st = impl(c);
	if (!st->tp)
		return SF_OK; /* K 1: nothing to sum */
	return enqueued(
	    c, st->tp,
	    ncclAllReduce(v, v, n, ncclFloat, ncclSum, st->tp, starpu_cuda_get_local_stream()),
	    "ncclAllReduce(TP)");
}

/* SHARDFLOW_SEQUENCE_PARALLEL: v (tp_size blocks of S) summed, block tp_rank to out.
 * scratch: unused. */
static int nccl_tp_reduce_scatter(struct _sf_comm *c, float *v, size_t S, float *out,
                                  float *scratch)
{
	(void)scratch;
	struct nccl_impl *st = impl(c);
	if (!st->tp)
		return SF_OK;
	return enqueued(c, st->tp,
	                ncclReduceScatter(v, out, S, ncclFloat, ncclSum, st->tp,
	                                  starpu_cuda_get_local_stream()),
	                "ncclReduceScatter(TP)");
}

/* In place over the TP group: block tp_rank of full is this rank's */
static int nccl_tp_all_gather(struct _sf_comm *c, float *full, size_t S)
{
	struct nccl_impl *st = impl(c);
	if (!st->tp)
		return SF_OK;
	return enqueued(c, st->tp,
	                ncclAllGather(full + (size_t)c->tp_rank * S, full, S, ncclFloat, st->tp,
	                              starpu_cuda_get_local_stream()),
	                "ncclAllGather(TP)");
}

/* SHARDFLOW_CP: one step of the CP group's ring, src to the next CP rank while dst
 * receives the previous one's, as one NCCL group (a send and a receive posted alone
 * would wait for each other around the ring); the CP communicator's ranks are the
 * cp_rank order, as the split's key (the world rank) sorts them. */
static int nccl_cp_shift(struct _sf_comm *c, const float *src, float *dst, size_t n)
{
	struct nccl_impl *st = impl(c);
	int K = c->cp_size, k = c->cp_rank;
	if (!st->cp)
		return SF_ERR(SF_ERR_INVALID, "a CP ring step without a CP group (SHARDFLOW_CP=1)");
	cudaStream_t s = starpu_cuda_get_local_stream();
	ncclResult_t r = ncclGroupStart();
	if (r == ncclSuccess) {
		ncclResult_t rs = ncclSend(src, n, ncclFloat, (k + 1) % K, st->cp, s);
		ncclResult_t rr = ncclRecv(dst, n, ncclFloat, (k + K - 1) % K, st->cp, s);
		r = ncclGroupEnd(); /* closed whatever the two answered */
		if (rs != ncclSuccess && rs != ncclInProgress)
			r = rs;
		else if (rr != ncclSuccess && rr != ncclInProgress)
			r = rr;
	}
	return enqueued(c, st->cp, r, "ncclSend/ncclRecv(CP ring step)");
}

/* SHARDFLOW_PP's transfers (comm.h's p2p_post, p2p_wait): ncclSend or ncclRecv on the
 * pipeline's communicator (peer: a world rank) and stream, an event recorded after it
 * (*req). The stream runs them in the order the comm worker enqueues them, the
 * planner's order, which the two ranks share: NCCL's send waits on the stream for its
 * receive, so the order is what keeps two stages from waiting for each other
 * (scheduler/pipeline_order.c for the interleaved schedule's ring); on a stream of
 * their own they hold none of the comm worker's collectives meanwhile. The wait
 * waits for the event. */
static const char *p2p_what(bool send)
{
	return send ? "ncclSend (pipeline)" : "ncclRecv (pipeline)";
}

static int nccl_p2p_post(struct _sf_comm *c, float *v, size_t n, int peer, bool send, void **req)
{
	struct nccl_impl *st = impl(c);
	const char *what = p2p_what(send);
	cudaEvent_t ev = NULL;
	*req = NULL;
	if (!st->pp || !st->pp_stream)
		return SF_ERR(SF_ERR_STATE, "%s: no pipeline communicator (SHARDFLOW_PP is 1)", what);
	cudaError_t ce = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
	if (ce != cudaSuccess)
		return SF_ERR(SF_ERR_COMM, "%s: cudaEventCreateWithFlags: %s", what,
		              cudaGetErrorString(ce));
	ncclResult_t r = send ? ncclSend(v, n, ncclFloat, peer, st->pp, st->pp_stream)
	                      : ncclRecv(v, n, ncclFloat, peer, st->pp, st->pp_stream);
	int rc = posted(c, st->pp, r, what);
	if (rc == SF_OK && (ce = cudaEventRecord(ev, st->pp_stream)) != cudaSuccess)
		rc = SF_ERR(SF_ERR_COMM, "%s: cudaEventRecord: %s", what, cudaGetErrorString(ce));
	if (rc < 0) {
		cudaEventDestroy(ev);
		return rc;
	}
	*req = ev;
	return SF_OK;
}

static int nccl_p2p_wait(struct _sf_comm *c, void *req, bool send)
{
	cudaEvent_t ev = req;
	int rc = wait_done(c, ev, p2p_what(send));
	cudaEventDestroy(ev);
	return rc;
}

static int nccl_p2p(struct _sf_comm *c, float *v, size_t n, int peer, bool send)
{
	void *req = NULL;
	int rc = nccl_p2p_post(c, v, n, peer, send, &req);
	return rc < 0 ? rc : nccl_p2p_wait(c, req, send);
}

static int nccl_sum_scalar(struct _sf_comm *c, double *v)
{
	return enqueued(c, impl(c)->comm,
	                ncclAllReduce(v, v, 1, ncclDouble, ncclSum, impl(c)->comm,
	                              starpu_cuda_get_local_stream()),
	                "ncclAllReduce(loss)");
}

/* ---- host side: the MPI backend's --------------------------------------------------- */

/* The MPI communicator of the host side, with this one's flight record and the
 * agreement under way (for the names of its operations) */
static struct _sf_comm *host(struct _sf_comm *c)
{
	impl(c)->mpi.flight = c->flight;
	impl(c)->mpi.agreeing = c->agreeing;
	return &impl(c)->mpi;
}

static int nccl_barrier(struct _sf_comm *c, bool node_only)
{
	return impl(c)->mpi.ops->barrier(host(c), node_only);
}

static int nccl_bcast(struct _sf_comm *c, void *buf, size_t bytes, int root)
{
	return impl(c)->mpi.ops->bcast(host(c), buf, bytes, root);
}

static int nccl_gather_bytes(struct _sf_comm *c, const void *mine, size_t bytes, void *all,
                             int root)
{
	return impl(c)->mpi.ops->gather_bytes(host(c), mine, bytes, all, root);
}

static int nccl_gatherv_bytes(struct _sf_comm *c, const void *mine, size_t bytes, void *all,
                              const size_t *counts, int root)
{
	return impl(c)->mpi.ops->gatherv_bytes(host(c), mine, bytes, all, counts, root);
}

static int nccl_allgather_bytes(struct _sf_comm *c, const void *mine, size_t bytes, void *all)
{
	return impl(c)->mpi.ops->allgather_bytes(host(c), mine, bytes, all);
}

static int nccl_min_rank(struct _sf_comm *c, int value, int64_t add, int *min, int *rank,
                         int64_t *sum)
{
	return impl(c)->mpi.ops->min_rank(host(c), value, add, min, rank, sum);
}

static void nccl_abort(struct _sf_comm *c, int code)
{
	struct nccl_impl *st = impl(c);
	if (st->attached)
		abort_all(st);
	st->mpi.ops->abort(&st->mpi, code);
}

/* ---- the codelets' own copies: on the comm worker's stream, before its collective -- */

static void dev_check(cudaError_t e, const char *what)
{
	STARPU_ASSERT_MSG(e == cudaSuccess, "%s on the comm stream failed: %s", what,
	                  cudaGetErrorString(e));
}

static void dev_copy(void *dst, const void *src, size_t bytes)
{
	dev_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
	                          starpu_cuda_get_local_stream()),
	          "cudaMemcpyAsync");
}

static void dev_zero(void *dst, size_t bytes)
{
	dev_check(cudaMemsetAsync(dst, 0, bytes, starpu_cuda_get_local_stream()),
	          "cudaMemsetAsync");
}

static void dev_to_host(void *host, const void *src, size_t bytes)
{
	cudaStream_t st = starpu_cuda_get_local_stream();
	dev_check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, st), "cudaMemcpyAsync");
	dev_check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
}

static void dev_from_host(void *dst, const void *host, size_t bytes)
{
	cudaStream_t st = starpu_cuda_get_local_stream();
	dev_check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, st), "cudaMemcpyAsync");
	dev_check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
}

static void dev_add(float *dst, const float *src, size_t n)
{
	_sf_grad_add_cuda(n, dst, src); /* on the worker's stream */
	dev_check(cudaStreamSynchronize(starpu_cuda_get_local_stream()), "cudaStreamSynchronize");
}

static void dev_sync(void)
{
	dev_check(cudaStreamSynchronize(starpu_cuda_get_local_stream()), "cudaStreamSynchronize");
}

static void dev_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                       size_t rows)
{
	dev_check(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice,
	                            starpu_cuda_get_local_stream()),
	          "cudaMemcpy2DAsync");
}

static const struct _sf_comm_mem dev_mem = {dev_copy, dev_zero, dev_to_host, dev_from_host,
                                            dev_add,  dev_sync, dev_copy2d};

const struct _sf_comm_ops _sf_comm_nccl_ops = {
    .name = "nccl",
    .device = true,
    .mem = &dev_mem,
    .init = nccl_init,
    .fini = nccl_fini,
    .attach = nccl_attach,
    .detach = nccl_detach,
    .all_gather = nccl_all_gather,
    .reduce_scatter = nccl_reduce_scatter,
    .all_gather16 = nccl_all_gather16,
    .reduce_scatter16 = nccl_reduce_scatter16,
    .all_reduce = nccl_all_reduce,
    .tp_all_reduce = nccl_tp_all_reduce,
    .tp_all_gather = nccl_tp_all_gather,
    .tp_reduce_scatter = nccl_tp_reduce_scatter,
    .p2p = nccl_p2p,
    .p2p_post = nccl_p2p_post,
    .p2p_wait = nccl_p2p_wait,
    .cp_shift = nccl_cp_shift,
    .sum_scalar = nccl_sum_scalar,
    .barrier = nccl_barrier,
    .bcast = nccl_bcast,
    .gather_bytes = nccl_gather_bytes,
    .gatherv_bytes = nccl_gatherv_bytes,
    .allgather_bytes = nccl_allgather_bytes,
    .min_rank = nccl_min_rank,
    .abort = nccl_abort,
};
