/*
 * comm_mpi.c — the MPI communication backend (struct _sf_comm_ops).
 *
 * MPI is started with MPI_THREAD_MULTIPLE (unless the program did it) because the
 * step's collectives are issued from the comm worker's thread while the main thread
 * makes host-side calls (model setup, checkpoints). Two duplicates of
 * MPI_COMM_WORLD keep them apart: `step`, used by the comm worker only, keeps MPI's
 * default error handler (a rank that fails inside a collective takes the job down
 * rather than leave the others waiting); `ctl`, for the host side, returns errors as
 * codes, which become SF_ERR_MPI with MPI's message.
 *
 * Waiting never spins: requests are polled with naps in between (comm/mpi_wait.h).
 */
#include "config.h"

#include "common/bf16.h"
#include "common/error.h"
#include "comm/comm.h"
#include "tasks/grad.h"
#include "comm/mpi_wait.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

struct mpi_impl {
	MPI_Comm step;  /* the step's collectives (comm worker) */
	MPI_Comm ctl;   /* host-side calls */
	MPI_Comm node;  /* the ranks of this machine (host side) */
	MPI_Comm shard; /* hybrid: the ranks of a node (comm worker); else MPI_COMM_NULL */
	MPI_Comm rep;   /* hybrid: the ranks holding the same shard (comm worker) */
	MPI_Comm tp;    /* SHARDFLOW_TP > 1: the TP group's ranks (comm worker) */
	MPI_Comm cp;    /* SHARDFLOW_CP > 1: the CP group's ranks (comm worker) */
	bool own_mpi;   /* init started MPI, so fini stops it */
	bool started;   /* init completed: fini meets the other ranks before stopping */
};

/* The communicator of the rings of gathers and reduce-scatters. */
static MPI_Comm shard_comm(struct _sf_comm *c);

static struct mpi_impl *impl(struct _sf_comm *c)
{
	return c->impl;
}

static int mpi_err(int mpirc, const char *what, const char *file, int line)
{
	char msg[MPI_MAX_ERROR_STRING] = "";
	int len = 0;
	if (MPI_Error_string(mpirc, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof msg, "MPI error code %d", mpirc);
	return _sf_err(SF_ERR_MPI, file, line, "%s failed: %s", what, msg);
}

#define MPI_CHECK_GOTO(call, label)                                                                \
	do {                                                                                       \
		int mpi_rc_ = (call);                                                              \
		if (mpi_rc_ != MPI_SUCCESS) {                                                      \
			rc = mpi_err(mpi_rc_, #call, __FILE__, __LINE__);                          \
			goto label;                                                                \
		}                                                                                  \
	} while (0)

static int host_wait(struct _sf_comm *c, int n, MPI_Request *req, int mrc, const char *what,
                     double bytes);
static int host_barrier_on(struct _sf_comm *c, MPI_Comm comm, const char *what);

/* Byte counts of host-side calls travel as ints. */
static int count_of(size_t bytes, int *out)
{
	if (bytes > INT_MAX)
		return SF_ERR(SF_ERR_INVALID,
		              "a host-side message of %zu bytes is over MPI's limit", bytes);
	*out = (int)bytes;
	return SF_OK;
}

static void free_comms(struct mpi_impl *st)
{
	MPI_Comm *cs[] = {&st->step, &st->ctl, &st->node, &st->shard, &st->rep, &st->tp, &st->cp};
	for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (*cs[i] != MPI_COMM_NULL)
			MPI_Comm_free(cs[i]);
}

static int mpi_fini(struct _sf_comm *c)
{
	struct mpi_impl *st = impl(c);
	int rc = SF_OK;
	if (!st)
		return SF_OK;
	/* MPI_Finalize waits for every rank without a bound: meet them first, bounded */
	if (st->started && st->own_mpi)
		rc = host_barrier_on(c, st->ctl, "sf_finalize's last barrier");
	free_comms(st);
	if (st->own_mpi) {
		int fin = 0;
		MPI_Finalized(&fin);
		if (!fin)
			MPI_Finalize();
	}
	free(st);
	c->impl = NULL;
	return rc;
}

/* SHARDFLOW_TP=K: groups of K consecutive ranks (the TP groups), and the ranks of the
 * same place in every group (the shard group, the data-parallel ranks). */
static int make_tp_groups(struct _sf_comm *c, struct mpi_impl *st)
{
	int rc = SF_OK, K = c->tp_req;
	if (c->size % K != 0)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_TP=%d does not divide the %d ranks: accepted values are "
		              "divisors of the world size (world = dp x tp, TP groups of "
		              "consecutive ranks)",
		              K, c->size);
	if (c->hybrid)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_TP=%d with SHARDFLOW_SHARDING=hybrid: not supported "
		              "(hybrid shards inside a node, where the TP groups are); accepted "
		              "with TP: sharding full, grad_op or none",
		              K);
	if (c->node_k % K != 0 && c->rank == 0)
		_sf_log(SF_LOG_WARN,
		        "SHARDFLOW_TP=%d: nodes of %d ranks do not hold whole TP groups; the "
		        "activation all-reduces will cross nodes",
		        K, c->node_k);
	SF_CHECK_GOTO(host_barrier_on(c, st->ctl, "sf_init's barrier before the TP split"), out);
	MPI_CHECK_GOTO(MPI_Comm_split(st->step, c->rank / K, c->rank, &st->tp), out);
	MPI_CHECK_GOTO(MPI_Comm_split(st->step, c->rank % K, c->rank, &st->shard), out);
	c->tp_rank = c->rank % K, c->tp_size = K;
	c->shard_rank = c->rank / K, c->shard_size = c->size / K;
out:
	return rc;
}

/* SHARDFLOW_CP=K (after the TP groups and a pipeline's stages, if any): the K ranks of
 * one stage, dp index and TP place, rank = ((s dp + d) K + k) tp + t, form a CP group; the shard group (every rank of the
 * TP place, the world, or with hybrid sharding a node) is left as it is: CP ranks shard
 * the units as dp ranks do. */
static int make_cp_groups(struct _sf_comm *c, struct mpi_impl *st)
{
	int rc = SF_OK, K = c->cp_req, tp = c->tp_size, places = c->size / c->pp_size / tp;
	if (places % K != 0)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_CP=%d does not divide the %d ranks%s: accepted values "
		              "are divisors of world / (pp tp) (world = pp x dp x cp x tp)",
		              K, places,
		              c->pp_size > 1 ? " of a pipeline stage's TP place"
		              : tp > 1       ? " of a TP place"
		                             : "");
	int q = c->rank / tp; /* this rank's place among the TP places: d K + k */
	SF_CHECK_GOTO(host_barrier_on(c, st->ctl, "sf_init's barrier before the CP split"), out);
	MPI_CHECK_GOTO(MPI_Comm_split(st->step, (q / K) * tp + c->rank % tp, c->rank, &st->cp), out);
	c->cp_rank = q % K, c->cp_size = K;
out:
	return rc;
}

/* SHARDFLOW_PP=S (with SHARDFLOW_TP=K or not): the world is pp x dp x tp, stage s the
 * dp K consecutive ranks [s dp K, (s+1) dp K), rank = (s dp + d) K + t. Inside a
 * stage, TP groups of K consecutive ranks as without a pipeline; the shard group (a
 * unit's gathers and reduce-scatters) is the dp ranks of one TP place of the stage.
 * The transfers between stages run on the step communicator (mpi_p2p), between the
 * same (d, t) of neighbouring stages: rank +- dp K. */
static int make_pp_groups(struct _sf_comm *c, struct mpi_impl *st)
{
	int rc = SF_OK, S = c->pp_req, K = c->tp_req;
	if (c->size % S != 0)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_PP=%d does not divide the %d ranks: accepted values are "
		              "divisors of the world size (world = pp x dp x tp, a stage's ranks "
		              "consecutive)",
		              S, c->size);
	if ((c->size / S) % K != 0)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_TP=%d does not divide the %d ranks of a pipeline stage "
		              "(SHARDFLOW_PP=%d on %d ranks): accepted values are divisors of "
		              "world / pp (world = pp x dp x tp, TP groups of consecutive ranks)",
		              K, c->size / S, S, c->size);
	if (c->hybrid)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_PP=%d with SHARDFLOW_SHARDING=hybrid: not supported yet; "
		              "accepted with a pipeline: sharding full or grad_op",
		              S);
	int dp = c->size / S / K, stage = dp * K;
	if (K > 1 && c->node_k % K != 0 && c->rank == 0)
		_sf_log(SF_LOG_WARN,
		        "SHARDFLOW_TP=%d: nodes of %d ranks do not hold whole TP groups; the "
		        "activation all-reduces will cross nodes",
		        K, c->node_k);
	SF_CHECK_GOTO(host_barrier_on(c, st->ctl, "sf_init's barrier before the PP split"), out);
	if (K > 1)
		MPI_CHECK_GOTO(MPI_Comm_split(st->step, c->rank / K, c->rank, &st->tp), out);
	MPI_CHECK_GOTO(
	    MPI_Comm_split(st->step, (c->rank / stage) * K + c->rank % K, c->rank, &st->shard),
	    out);
	c->tp_rank = c->rank % K, c->tp_size = K;
	c->pp_rank = c->rank / stage, c->pp_size = S;
	c->shard_rank = (c->rank / K) % dp, c->shard_size = dp;
out:
	return rc;
}

/* Nodes of node_k consecutive ranks: SHARDFLOW_NODE_SIZE, or this machine's ranks,
 * which must then be equally many everywhere and consecutive (mpirun's default
 * --map-by slot). Hybrid sharding splits the step communicator into the node's ranks
 * (the shard group) and the ranks of the same place on every node (the replicas). */
static int make_groups(struct _sf_comm *c, struct mpi_impl *st)
{
	int rc = SF_OK, K = c->node_req > 0 ? c->node_req : c->node_size;
	c->node_k = K;
	c->shard_rank = c->rank, c->shard_size = c->size, c->rep_rank = 0, c->rep_size = 1;
	if (c->node_req > 0 && c->size % K != 0)
		return SF_ERR(
		    SF_ERR_CONFIG,
		    "SHARDFLOW_NODE_SIZE=%d does not divide the %d ranks: accepted values "
		    "are divisors of the world size (consecutive ranks form a node)",
		    K, c->size);
	if (c->node_req == 0) { /* the machine's ranks: equal and consecutive everywhere? */
		int mine = c->rank % K == c->node_rank && c->size % K == 0, all = 0;
		MPI_Request req;
		SF_CHECK_GOTO(host_wait(c, 1, &req,
		                   MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MIN, st->ctl, &req),
		                   "sf_init's all-reduce of the machines' ranks", sizeof mine), out);
		if (!all) {
			c->node_k = c->size; /* the accounting then sees one node */
			if (c->hybrid)
				return SF_ERR(
				    SF_ERR_CONFIG,
				    "SHARDFLOW_SHARDING=hybrid: the machines do not hold equally "
				    "many consecutive ranks (this one: %d ranks, rank %d is its "
				    "number %d); start them so (mpirun --map-by slot) or set "
				    "SHARDFLOW_NODE_SIZE",
				    c->node_size, c->rank, c->node_rank);
		}
	}
	if (c->pp_req > 1) { /* a stage's CP groups inside it, if asked */
		SF_CHECK(make_pp_groups(c, st));
		return c->cp_req > 1 ? make_cp_groups(c, st) : SF_OK;
	}
	if (c->tp_req > 1)
		SF_CHECK(make_tp_groups(c, st));
	if (c->cp_req > 1) /* hybrid sharding's groups below, if asked: CP ranks are dp ranks */
		SF_CHECK(make_cp_groups(c, st));
	if (c->tp_req > 1)
		return SF_OK;
	if (!c->hybrid)
		return SF_OK;
	SF_CHECK_GOTO(host_barrier_on(c, st->ctl, "sf_init's barrier before the hybrid split"), out);
	MPI_CHECK_GOTO(MPI_Comm_split(st->step, c->rank / K, c->rank, &st->shard), out);
	MPI_CHECK_GOTO(MPI_Comm_split(st->step, c->rank % K, c->rank, &st->rep), out);
	c->shard_rank = c->rank % K, c->shard_size = K;
	c->rep_rank = c->rank / K, c->rep_size = c->size / K;
out:
	return rc;
}

/*
 * MPI_Init_thread has no non-blocking form and waits for every rank of the job: a
 * watchdog thread ends this rank when it has not returned within
 * SHARDFLOW_COMM_TIMEOUT (mpirun then ends the others). Before it does, it leaves a
 * flight record as a later stall does, so that the ranks that arrived name the one
 * that did not: the record's rank, size and job come from the launcher's environment
 * (MPI cannot be asked yet), its one operation is MPI_Init_thread.
 */
struct init_watch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	struct _sf_comm *c;
	int rank;              /* this rank in mpirun's environment, or -1 */
	struct _sf_flight *f; /* the start-up's record (init_record), or NULL */
};

/* The job's key for the start-up record: a hash of the launcher's name for the job
 * (PMIx's namespace, Open MPI's job id), which every rank of it sees; 0 when there is
 * none. */
static uint64_t launcher_job_key(void)
{
	const char *id = getenv("PMIX_NAMESPACE");
	if (!id || !*id)
		id = getenv("OMPI_MCA_ess_base_jobid");
	if (!id || !*id)
		return 0;
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

/* The start-up's record, MPI_Init_thread started in it; NULL without one (no record
 * wanted, or no launcher to say the rank, size and job) */
static struct _sf_flight *init_record(const struct _sf_comm *c, int rank)
{
	const char *s = getenv("OMPI_COMM_WORLD_SIZE");
	int size = s ? atoi(s) : 0;
	uint64_t key = launcher_job_key();
	struct _sf_flight *f = NULL;
	if (rank < 0 || size < 1 || rank >= size || !key || c->flight_cap < 1 ||
	    _sf_flight_create(1, rank, size, key, &f) < 0 || !f)
		return NULL;
	_sf_flight_set_dir(f, c->flight_dir);
	_sf_flight_start(f, SF_FLIGHT_HOST, NULL, "MPI_Init_thread", 0);
	return f;
}

/* A start-up that did not end: its record written, the ranks it blames logged */
static void init_watch_record(const struct init_watch *w, const char *why)
{
	char path[4200], blame[2048] = "";
	if (w->f && _sf_flight_dump(w->f, why, path, sizeof path) == SF_OK) {
		double t = w->c->timeout, grace = t / 2 < 3 ? t / 2 : 3;
		_sf_flight_blame(w->f, SF_FLIGHT_HOST, grace, blame, sizeof blame);
		fprintf(stderr, "shardflow: error: [rank %d] flight record written to %s%s%s\n",
		        w->rank, path, blame[0] ? ": " : "", blame);
	}
}

static void *init_watch_run(void *arg)
{
	struct init_watch *w = arg;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)w->c->timeout;
	pthread_mutex_lock(&w->mu);
	int e = 0;
	while (!w->done && e != ETIMEDOUT)
		e = pthread_cond_timedwait(&w->cv, &w->mu, &until);
	bool late = !w->done;
	pthread_mutex_unlock(&w->mu);
	if (late) {
		char why[256];
		snprintf(why, sizeof why,
		         "sf_init: MPI_Init_thread did not return within %g s "
		         "(SHARDFLOW_COMM_TIMEOUT): a peer rank is stopped, stuck or never started; "
		         "ending this rank",
		         w->c->timeout);
		fprintf(stderr, "shardflow: error: [rank %d] %s\n", w->rank, why);
		fflush(stderr);
		init_watch_record(w, why);
		fflush(stderr);
		_exit(1);
	}
	return NULL;
}

/*
 * A rank that mpirun (or its daemon, orted) started ends with it. Open MPI's ranks see
 * the loss of their launcher only as a closed socket, on which Open MPI 4 does nothing:
 * orphans of a killed mpirun trained and saved on until a write to their closed output
 * killed them, holding the checkpoint directory's lock meanwhile. The kernel's
 * parent-death signal ends them at once (Linux); SIGKILL, as mpirun ends ranks.
 * launcher: the parent before MPI_Init_thread, so that one gone since is seen.
 */
static void end_with_launcher(pid_t launcher)
{
#ifdef __linux__
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() != launcher) {
		fprintf(stderr, "shardflow: error: sf_init: this rank's launcher (pid %ld) has "
		                "ended; ending this rank\n",
		        (long)launcher);
		fflush(stderr);
		_exit(1);
	}
#else
	(void)launcher;
#endif
}

static int init_mpi(struct _sf_comm *c, struct mpi_impl *st, int *argc, char ***argv,
                    int *provided)
{
	int rc = SF_OK;
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	pid_t launcher = getppid();
	struct init_watch w = {.c = c, .rank = r ? atoi(r) : -1};
	pthread_t th;
	bool watched = c->timeout > 0;
	if (watched) {
		w.f = init_record(c, w.rank);
		pthread_mutex_init(&w.mu, NULL);
		pthread_cond_init(&w.cv, NULL);
		watched = pthread_create(&th, NULL, init_watch_run, &w) == 0;
	}
	int mrc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, provided);
	if (watched) {
		pthread_mutex_lock(&w.mu);
		w.done = true;
		pthread_cond_signal(&w.cv);
		pthread_mutex_unlock(&w.mu);
		pthread_join(th, NULL);
		pthread_cond_destroy(&w.cv);
		pthread_mutex_destroy(&w.mu);
	}
	_sf_flight_destroy(w.f);
	MPI_CHECK_GOTO(mrc, out);
	st->own_mpi = true;
	if (r)
		end_with_launcher(launcher);
out:
	return rc;
}

static int mpi_init(struct _sf_comm *c, int *argc, char ***argv)
{
	int rc = SF_OK, inited = 0, provided = 0;
	struct mpi_impl *st = calloc(1, sizeof *st);
	if (!st)
		return SF_ERR(SF_ERR_NOMEM, "sf_init: out of memory");
	st->step = st->ctl = st->node = st->shard = st->rep = st->tp = st->cp = MPI_COMM_NULL;
	c->impl = st;
	MPI_CHECK_GOTO(MPI_Initialized(&inited), fail);
	if (!inited)
		SF_CHECK_GOTO(init_mpi(c, st, argc, argv, &provided), fail);
	else
		MPI_CHECK_GOTO(MPI_Query_thread(&provided), fail);
#ifdef SF_SIMULATION
	provided = MPI_THREAD_MULTIPLE; /* SMPI says 0, but one actor calls MPI (comm_sim.c) */
#endif
	if (provided < MPI_THREAD_MULTIPLE) {
		rc = SF_ERR(SF_ERR_MPI,
		            "MPI provides thread level %d, shardflow needs MPI_THREAD_MULTIPLE "
		            "(%d): initialise MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, "
		            "...) or let sf_init do it",
		            provided, MPI_THREAD_MULTIPLE);
		goto fail;
	}
	/* the start-up exchanges are bounded like every host-side collective (host_wait);
	 * one duplication at a time: Open MPI has hung on several outstanding on one
	 * communicator (open-mpi/ompi#2025) */
#ifdef SF_SIMULATION
	/* SMPI has no MPI_Comm_idup; simulated time needs no watchdog */
	MPI_CHECK_GOTO(MPI_Comm_dup(MPI_COMM_WORLD, &st->step), fail);
	MPI_CHECK_GOTO(MPI_Comm_dup(MPI_COMM_WORLD, &st->ctl), fail);
#else
	MPI_Request dup;
	SF_CHECK_GOTO(host_wait(c, 1, &dup, MPI_Comm_idup(MPI_COMM_WORLD, &st->step, &dup),
	                   "sf_init's duplication of MPI_COMM_WORLD", 0), fail);
	SF_CHECK_GOTO(host_wait(c, 1, &dup, MPI_Comm_idup(MPI_COMM_WORLD, &st->ctl, &dup),
	                   "sf_init's duplication of MPI_COMM_WORLD", 0), fail);
#endif
	MPI_CHECK_GOTO(MPI_Comm_set_errhandler(st->ctl, MPI_ERRORS_RETURN), fail);
	MPI_CHECK_GOTO(MPI_Comm_rank(st->step, &c->rank), fail);
	MPI_CHECK_GOTO(MPI_Comm_size(st->step, &c->size), fail);
	SF_CHECK_GOTO(host_barrier_on(c, st->ctl, "sf_init's barrier before the machines' split"), fail);
	MPI_CHECK_GOTO(
	    MPI_Comm_split_type(st->ctl, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &st->node), fail);
	MPI_CHECK_GOTO(MPI_Comm_set_errhandler(st->node, MPI_ERRORS_RETURN), fail);
	MPI_CHECK_GOTO(MPI_Comm_rank(st->node, &c->node_rank), fail);
	MPI_CHECK_GOTO(MPI_Comm_size(st->node, &c->node_size), fail);
	SF_CHECK_GOTO(make_groups(c, st), fail);
	st->started = true;
	return SF_OK;
fail:
	mpi_fini(c);
	return rc;
}

/* ---- the step's collectives ------------------------------------------------- */

/*
 * Ring collectives on point-to-point messages. Open MPI's reduce-scatter for large
 * blocks (blocking or libnbc) reduces on one rank and scatters back, so a rank moves
 * about twice the bytes a ring needs (docs/performance.md has the measurements). A ring moves
 * (N-1)/N of the data each way, in N-1 steps, each rank sending to r+1 and receiving
 * from r-1 at once. Messages of consecutive collectives between two ranks cannot
 * overtake each other (MPI's ordering rule) and collectives run one at a time on the
 * comm worker, so one tag serves them all. The order of the sums is fixed by the ring:
 * results are deterministic for a given world size.
 */
#define RING_TAG 7301

/* In simulated time (SF_SIMULATED, config.h; docs/scale.md) the step's values are not
 * computed: the rings' local sums, roundings and copies are skipped (they would cost
 * real time in proportion to the simulated model's size), the messages, which SMPI
 * times, remain. */
#define SF_TOUCH_DATA (!SF_SIMULATED)

/* The status of a wait: MPI's error, or no progress for SHARDFLOW_COMM_TIMEOUT. */
static int wait_status(struct _sf_comm *c, int mrc, const char *what)
{
	if (mrc == SF_WAIT_TIMEOUT)
		return SF_ERR(SF_ERR_MPI,
		              "%s: no progress for %g s (SHARDFLOW_COMM_TIMEOUT): a peer rank is "
		              "stopped, stuck or unreachable",
		              what, c->timeout);
	return mrc == MPI_SUCCESS ? SF_OK : mpi_err(mrc, what, __FILE__, __LINE__);
}

/* One ring step (comm/mpi_wait.h): S elements to rank+1 while S come from rank-1, cut
 * into pieces of c->chunk floats' bytes (SHARDFLOW_COMM_CHUNK; docs/performance.md has
 * why); floats, or bf16 (half the bytes: twice the elements a piece). */
static MPI_Comm shard_comm(struct _sf_comm *c)
{
	return impl(c)->shard != MPI_COMM_NULL ? impl(c)->shard : impl(c)->step;
}

static int ring_exchange_fn(struct _sf_comm *c, const void *sbuf, void *rbuf, size_t S, bool bf16,
                            _sf_piece_fn on_recv, void *ctx, const char *what)
{
	int N = c->shard_size, r = c->shard_rank;
	int mrc = _sf_ring_exchange_fn(
	    shard_comm(c), (r + 1) % N, (r + N - 1) % N, RING_TAG, sbuf, rbuf, S,
	    bf16 ? MPI_UINT16_T : MPI_FLOAT, bf16 ? sizeof(uint16_t) : sizeof(float),
	    bf16 ? 2 * c->chunk : c->chunk, SF_COMM_PACE, c->timeout, on_recv, ctx);
	return wait_status(c, mrc, what);
}

static int ring_exchange_t(struct _sf_comm *c, const void *sbuf, void *rbuf, size_t S, bool bf16,
                           const char *what)
{
	return ring_exchange_fn(c, sbuf, rbuf, S, bf16, NULL, NULL, what);
}

static int ring_exchange(struct _sf_comm *c, const float *sbuf, float *rbuf, size_t S,
                         const char *what)
{
	return ring_exchange_t(c, sbuf, rbuf, S, false, what);
}

/* What the rings do with each piece as it arrives (_sf_piece_fn), so that the link
 * is not idle while a whole block is copied or summed after its exchange:
 *   copy_own : the all-gather's first step also copies that piece of this rank's
 *              shard into its block of full (the ring sends from the shard itself);
 *   add_into : a reduce-scatter step's sum, dst += the piece received (add16_into:
 *              received as bf16);
 *   add_out  : its last step, out = this rank's block + the piece received (the sum
 *              goes straight where it belongs; the same additions, the same bits). */
struct piece_work {
	float *dst;          /* add_into: the block summed into; add_out: out */
	const float *src;    /* add_out: this rank's block of grad; copy_own: the shard */
	const float *rbuf;   /* what arrived */
	float *own;          /* copy_own: this rank's block of full */
	const uint16_t *r16; /* add16_into: what arrived, bf16 */
};

static void copy_own(void *ctx, size_t off, size_t len)
{
	struct piece_work *p = ctx;
	memcpy(p->own + off, p->src + off, len * sizeof(float));
}

static void add_into(void *ctx, size_t off, size_t len)
{
	struct piece_work *p = ctx;
	float *d = p->dst + off;
	const float *x = p->rbuf + off;
	for (size_t i = 0; i < len; i++)
		d[i] += x[i];
}

static void add16_into(void *ctx, size_t off, size_t len)
{
	struct piece_work *p = ctx;
	float *d = p->dst + off;
	const uint16_t *x = p->r16 + off;
	for (size_t i = 0; i < len; i++)
		d[i] += sf_bf16_to_float(x[i]);
}

static void add_out(void *ctx, size_t off, size_t len)
{
	struct piece_work *p = ctx;
	float *d = p->dst + off;
	const float *a = p->src + off, *x = p->rbuf + off;
	for (size_t i = 0; i < len; i++)
		d[i] = a[i] + x[i];
}

static int mpi_all_gather(struct _sf_comm *c, float *full, size_t S)
{
	int N = c->shard_size, r = c->shard_rank;
	for (int k = 0; k < N - 1; k++) {
		int sb = (r - k + N) % N, rb = (r - k - 1 + 2 * N) % N;
		int rc = ring_exchange(c, full + (size_t)sb * S, full + (size_t)rb * S, S,
		                       "ring all-gather");
		if (rc < 0)
			return rc;
	}
	return SF_OK;
}

/* The same from the shard: the first step sends it as it is and copies it into full
 * piece by piece while the pieces travel. */
static int mpi_all_gather_from(struct _sf_comm *c, const float *shard, float *full, size_t S)
{
	int N = c->shard_size, r = c->shard_rank;
	float *own = full + (size_t)r * S;
	if (N == 1) {
		if (SF_TOUCH_DATA)
			memcpy(own, shard, S * sizeof(float));
		return SF_OK;
	}
	struct piece_work p = {.src = shard, .own = own};
	for (int k = 0; k < N - 1; k++) {
		int sb = (r - k + N) % N, rb = (r - k - 1 + 2 * N) % N;
		bool first = k == 0;
		int rc = ring_exchange_fn(
		    c, first ? shard : full + (size_t)sb * S, full + (size_t)rb * S, S, false,
		    first && SF_TOUCH_DATA ? copy_own : NULL, &p, "ring all-gather");
		if (rc < 0)
			return rc;
	}
	return SF_OK;
}

static int mpi_reduce_scatter(struct _sf_comm *c, float *grad, size_t S, float *out, float *scratch)
{
	int N = c->shard_size, r = c->shard_rank;
	for (int k = 0; k < N - 1; k++) {
		int sb = (r - k - 1 + 2 * N) % N, rb = (r - k - 2 + 2 * N) % N;
		bool last = k == N - 2; /* rb == r: the sum is this rank's block */
		struct piece_work p = {.dst = last ? out : grad + (size_t)rb * S,
		                       .src = grad + (size_t)rb * S,
		                       .rbuf = scratch};
		int rc = ring_exchange_fn(c, grad + (size_t)sb * S, scratch, S, false,
		                          !SF_TOUCH_DATA ? NULL
		                          : last         ? add_out
		                                         : add_into,
		                          &p, "ring reduce-scatter");
		if (rc < 0)
			return rc;
	}
	if (N == 1 && SF_TOUCH_DATA)
		memcpy(out, grad + (size_t)r * S, S * sizeof(float));
	return SF_OK;
}

/* bf16 on the wire (SHARDFLOW_PARAM_DTYPE): the ring of all_gather on N blocks of S
 * bf16 values in stage, then every block widened into full. */
static int mpi_all_gather16(struct _sf_comm *c, const float *shard, float *full, size_t S,
                            uint16_t *stage)
{
	int N = c->shard_size, r = c->shard_rank;
	if (SF_TOUCH_DATA)
		_sf_bf16_round_n(S, shard, stage + (size_t)r * S);
	for (int k = 0; k < N - 1; k++) {
		int sb = (r - k + N) % N, rb = (r - k - 1 + 2 * N) % N;
		int rc = ring_exchange_t(c, stage + (size_t)sb * S, stage + (size_t)rb * S, S, true,
		                         "ring all-gather (bf16)");
		if (rc < 0)
			return rc;
	}
	if (SF_TOUCH_DATA)
		_sf_bf16_widen_n(S * (size_t)N, stage, full);
	return SF_OK;
}

/* bf16 on the wire (SHARDFLOW_REDUCE_DTYPE): the ring of reduce_scatter, each partial
 * sum rounded to bf16 to travel and added in fp32 where it lands. scratch: S floats,
 * used as two halves of S bf16 (what goes, what comes). */
static int mpi_reduce_scatter16(struct _sf_comm *c, float *grad, size_t S, float *out,
                                float *scratch)
{
	int N = c->shard_size, r = c->shard_rank;
	uint16_t *snd = (uint16_t *)scratch, *rcv = snd + S;
	for (int k = 0; k < N - 1; k++) {
		int sb = (r - k - 1 + 2 * N) % N, rb = (r - k - 2 + 2 * N) % N;
		if (SF_TOUCH_DATA)
			_sf_bf16_round_n(S, grad + (size_t)sb * S, snd);
		struct piece_work p = {.dst = grad + (size_t)rb * S, .r16 = rcv};
		int rc = ring_exchange_fn(c, snd, rcv, S, true, SF_TOUCH_DATA ? add16_into : NULL,
		                          &p, "ring reduce-scatter (bf16)");
		if (rc < 0)
			return rc;
	}
	if (SF_TOUCH_DATA)
		memcpy(out, grad + (size_t)r * S, S * sizeof(float));
	return SF_OK;
}

/* Hybrid sharding: v (n floats) summed over the replicas as a ring (a reduce-scatter
 * of M blocks of q = ceil(n / M), then their all-gather): each element is summed once,
 * in ring order, and passed on, so every replica has the same bits. scratch: M q
 * floats of v padded with zeros, then q to receive. */
/* The ring's first half over M ranks: buf (M blocks of q) summed, block r ending
 * summed here (tmp: q floats) */
static int ring_rs_phase(struct _sf_comm *c, MPI_Comm rep, int M, int r, float *buf, size_t q,
                         float *tmp, const char *what)
{
	int next = (r + 1) % M, prev = (r + M - 1) % M;
	for (int k = 0; k < M - 1; k++) { /* reduce-scatter: block r ends summed here */
		int sb = (r - k - 1 + 2 * M) % M, rb = (r - k - 2 + 2 * M) % M;
		struct piece_work p = {.dst = buf + (size_t)rb * q, .rbuf = tmp};
		int mrc = _sf_ring_exchange_fn(rep, next, prev, RING_TAG, buf + (size_t)sb * q, tmp,
		                               q, MPI_FLOAT, sizeof(float), c->chunk, SF_COMM_PACE,
		                               c->timeout, SF_TOUCH_DATA ? add_into : NULL, &p);
		int rc = wait_status(c, mrc, what);
		if (rc < 0)
			return rc;
	}
	return SF_OK;
}

static int ring_all_reduce(struct _sf_comm *c, MPI_Comm rep, int M, int r, float *v, size_t n,
                           float *scratch, const char *what)
{
	if (M == 1)
		return SF_OK;
	size_t q = (n + (size_t)M - 1) / (size_t)M;
	float *buf = scratch, *tmp = scratch + (size_t)M * q;
	if (SF_TOUCH_DATA) {
		memcpy(buf, v, n * sizeof(float));
		memset(buf + n, 0, ((size_t)M * q - n) * sizeof(float));
	}
	int rc = ring_rs_phase(c, rep, M, r, buf, q, tmp, what);
	if (rc < 0)
		return rc;
	int next = (r + 1) % M, prev = (r + M - 1) % M;
	for (int k = 0; k < M - 1; k++) { /* all-gather of the summed blocks */
		int sb = (r - k + M) % M, rb = (r - k - 1 + 2 * M) % M;
		int mrc = _sf_ring_exchange(rep, next, prev, RING_TAG, buf + (size_t)sb * q,
		                            buf + (size_t)rb * q, q, MPI_FLOAT, sizeof(float),
		                            c->chunk, SF_COMM_PACE, c->timeout);
		rc = wait_status(c, mrc, what);
		if (rc < 0)
			return rc;
	}
	if (SF_TOUCH_DATA)
		memcpy(v, buf, n * sizeof(float));
	return SF_OK;
}

static int mpi_rep_all_reduce(struct _sf_comm *c, float *v, size_t n, float *scratch)
{
	return ring_all_reduce(c, impl(c)->rep, c->rep_size, c->rep_rank, v, n, scratch,
	                       "ring all-reduce across nodes");
}

/* In place, over the TP group's ring: block tp_rank of full is this rank's */
static int mpi_tp_all_gather(struct _sf_comm *c, float *full, size_t S)
{
	int N = c->tp_size, r = c->tp_rank, next = (r + 1) % N, prev = (r + N - 1) % N;
	for (int k = 0; k < N - 1; k++) {
		int sb = (r - k + N) % N, rb = (r - k - 1 + 2 * N) % N;
		int mrc = _sf_ring_exchange(impl(c)->tp, next, prev, RING_TAG, full + (size_t)sb * S,
		                            full + (size_t)rb * S, S, MPI_FLOAT, sizeof(float),
		                            c->chunk, SF_COMM_PACE, c->timeout);
		int rc = wait_status(c, mrc, "ring all-gather in the TP group");
		if (rc < 0)
			return rc;
	}
	return SF_OK;
}

static int mpi_tp_all_reduce(struct _sf_comm *c, float *v, size_t n, float *scratch)
{
	return ring_all_reduce(c, impl(c)->tp, c->tp_size, c->tp_rank, v, n, scratch,
	                       "ring all-reduce in the TP group");
}

/* Sequence parallelism: the all-reduce's first half, block tp_rank of the sum to out */
static int mpi_tp_reduce_scatter(struct _sf_comm *c, float *v, size_t S, float *out, float *scratch)
{
	int K = c->tp_size, r = c->tp_rank;
	float *buf = scratch, *tmp = scratch + (size_t)K * S;
	if (SF_TOUCH_DATA)
		memcpy(buf, v, (size_t)K * S * sizeof(float));
	int rc =
	    ring_rs_phase(c, impl(c)->tp, K, r, buf, S, tmp, "ring reduce-scatter in the TP group");
	if (rc == SF_OK && SF_TOUCH_DATA)
		memcpy(out, buf + (size_t)r * S, S * sizeof(float));
	return rc;
}

/* Context parallelism's ring step: src to the next CP rank, dst from the previous */
static int mpi_cp_shift(struct _sf_comm *c, const float *src, float *dst, size_t n)
{
	int K = c->cp_size, r = c->cp_rank;
	int mrc = _sf_ring_exchange(impl(c)->cp, (r + 1) % K, (r + K - 1) % K, RING_TAG, src, dst,
	                            n, MPI_FLOAT, sizeof(float), c->chunk, SF_COMM_PACE,
	                            c->timeout);
	return wait_status(c, mrc, "ring step in the CP group");
}

/* A non-blocking call waited for with naps (comm/mpi_wait.h). */
static int wait_one(struct _sf_comm *c, MPI_Request *req, int mrc, const char *what)
{
	int idx[1];
	if (mrc == MPI_SUCCESS)
		mrc = _sf_wait_all(1, req, idx, SF_COMM_PACE, c->timeout);
	return wait_status(c, mrc, what);
}

/* Activations and their gradients between pipeline stages: one message on the step
 * communicator under a tag of its own (the rings' messages are on the shard group's).
 * Two ranks submit their transfers to each other in one order, and MPI does not let
 * messages of one tag between two ranks overtake each other. */
#define PP_TAG 7302

/* A pipeline transfer's float count, as MPI's int */
static int p2p_count(size_t n, int *out)
{
	if (n > INT_MAX)
		return SF_ERR(SF_ERR_INVALID, "a pipeline transfer of %zu floats is over MPI's limit",
		              n);
	*out = (int)n;
	return SF_OK;
}

static int mpi_p2p(struct _sf_comm *c, float *v, size_t n, int peer, bool send)
{
	MPI_Request req;
	int k = 0;
	SF_CHECK(p2p_count(n, &k));
	int mrc = send ? MPI_Isend(v, k, MPI_FLOAT, peer, PP_TAG, impl(c)->step, &req)
	               : MPI_Irecv(v, k, MPI_FLOAT, peer, PP_TAG, impl(c)->step, &req);
	return wait_one(c, &req, mrc, send ? "MPI_Isend (pipeline)" : "MPI_Irecv (pipeline)");
}

/* The same in two halves (comm.h's p2p_post, p2p_wait): the request, malloc'ed here,
 * freed by the wait. Posting in the agreed order is what keeps the matching: a send
 * and a receive posted are matched in posting order, whatever order they complete in. */
static int post_tagged(struct _sf_comm *c, float *v, size_t n, int peer, bool send, int tag,
                       void **req);

static int mpi_p2p_post(struct _sf_comm *c, float *v, size_t n, int peer, bool send, void **req)
{
	return post_tagged(c, v, n, peer, send, PP_TAG, req);
}

/* The interleaved schedule's (comm.h's p2p_tagged_post): tag 1 .. SF_P2P_TAGS above
 * PP_TAG, so that its transfers match by tag, not by the order they are posted in */
static int mpi_p2p_tagged_post(struct _sf_comm *c, float *v, size_t n, int peer, bool send,
                               int tag, void **req)
{
	*req = NULL;
	if (tag < 1 || tag > SF_P2P_TAGS)
		return SF_ERR(SF_ERR_INVALID, "a pipeline transfer's tag %d is outside 1..%d", tag,
		              SF_P2P_TAGS);
	return post_tagged(c, v, n, peer, send, PP_TAG + tag, req);
}

static int post_tagged(struct _sf_comm *c, float *v, size_t n, int peer, bool send, int tag,
                       void **req)
{
	int k = 0;
	*req = NULL;
	SF_CHECK(p2p_count(n, &k));
	MPI_Request *r = malloc(sizeof *r);
	if (!r)
		return SF_ERR(SF_ERR_NOMEM, "a pipeline transfer's request: out of memory");
	int mrc = send ? MPI_Isend(v, k, MPI_FLOAT, peer, tag, impl(c)->step, r)
	               : MPI_Irecv(v, k, MPI_FLOAT, peer, tag, impl(c)->step, r);
	if (mrc != MPI_SUCCESS) {
		free(r);
		return mpi_err(mrc, send ? "MPI_Isend (pipeline)" : "MPI_Irecv (pipeline)", __FILE__,
		               __LINE__);
	}
	*req = r;
	return SF_OK;
}

static int mpi_p2p_wait(struct _sf_comm *c, void *req, bool send)
{
	int rc = wait_one(c, req, MPI_SUCCESS,
	                  send ? "MPI_Isend (pipeline)" : "MPI_Irecv (pipeline)");
	free(req);
	return rc;
}

/* SHARDFLOW_COMM=mpi-sync: the pipeline's transfers under NCCL's rules. NCCL enqueues
 * a send or a receive on the comm worker's one stream, which runs them in order, a
 * send waiting there for its peer's receive; two ranks that post their transfers to
 * each other in different orders hang, each stream in a send whose receive is queued
 * behind the other's. MPI's posts return at once and match in whatever order they
 * complete, which hides that. Here a post is the whole transfer, waited for on the
 * comm worker before its next comm task (the comm worker is the stream): a synchronous
 * send (MPI_Issend: done only once the peer's receive has matched it) or a receive.
 * An order NCCL would hang on hangs here, and SHARDFLOW_COMM_TIMEOUT's message names
 * the transfer. No tags, as NCCL: the interleaved schedule runs in the order every
 * stage agrees on (scheduler/pipeline_order.c). */
static int sync_p2p_post(struct _sf_comm *c, float *v, size_t n, int peer, bool send, void **req)
{
	MPI_Request r;
	int k = 0;
	*req = NULL;
	SF_CHECK(p2p_count(n, &k));
	int mrc = send ? MPI_Issend(v, k, MPI_FLOAT, peer, PP_TAG, impl(c)->step, &r)
	               : MPI_Irecv(v, k, MPI_FLOAT, peer, PP_TAG, impl(c)->step, &r);
	int rc =
	    wait_one(c, &r, mrc,
	             send ? "MPI_Issend (pipeline, mpi-sync)" : "MPI_Irecv (pipeline, mpi-sync)");
	if (rc == SF_OK)
		*req = impl(c); /* only marked: the transfer is done */
	return rc;
}

static int sync_p2p_wait(struct _sf_comm *c, void *req, bool send)
{
	(void)c, (void)req, (void)send;
	return SF_OK;
}

static int sync_p2p(struct _sf_comm *c, float *v, size_t n, int peer, bool send)
{
	void *req = NULL;
	return sync_p2p_post(c, v, n, peer, send, &req);
}

static int mpi_all_reduce(struct _sf_comm *c, float *v, size_t n)
{
	MPI_Request req;
	if (n > INT_MAX)
		return SF_ERR(SF_ERR_INVALID, "all-reduce of %zu floats is over MPI's limit", n);
	return wait_one(
	    c, &req,
	    MPI_Iallreduce(MPI_IN_PLACE, v, (int)n, MPI_FLOAT, MPI_SUM, shard_comm(c), &req),
	    "MPI_Iallreduce");
}

static int mpi_sum_scalar(struct _sf_comm *c, double *v)
{
	MPI_Request req;
	return wait_one(
	    c, &req, MPI_Iallreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE, MPI_SUM, impl(c)->step, &req),
	    "MPI_Iallreduce(loss)");
}

/* ---- host side -------------------------------------------------------------- */

/*
 * Every host-side collective is a non-blocking call waited for with naps under
 * SHARDFLOW_COMM_TIMEOUT, as the step's are (a blocking MPI call busy-polls, and waits
 * for ever for a stopped peer): no progress for the timeout ends the job, naming the
 * operation and the agreement it belongs to, with the flight record (comm/flight.h).
 */
/* host_wait's work for an operation already named in full */
static int host_wait_named(struct _sf_comm *c, int n, MPI_Request *req, int mrc,
                           const char *name, double bytes)
{
	int idx[2];
	int64_t id = _sf_flight_start(c->flight, SF_FLIGHT_HOST, NULL, name, bytes);
	if (mrc == MPI_SUCCESS)
		mrc = _sf_wait_all(n, req, idx, SF_COMM_PACE, c->timeout);
	_sf_flight_end(c->flight, id, mrc == MPI_SUCCESS);
	if (mrc == SF_WAIT_TIMEOUT)
		_sf_comm_fail_job(c, SF_ERR_MPI, SF_FLIGHT_HOST,
		                  "the host-side %s made no progress for %g s "
		                  "(SHARDFLOW_COMM_TIMEOUT), ending the job: a peer rank is stopped, "
		                  "stuck or unreachable",
		                  name, c->timeout);
	return wait_status(c, mrc, name);
}

static int host_wait(struct _sf_comm *c, int n, MPI_Request *req, int mrc, const char *what,
                     double bytes)
{
	char name[192];
	/* a call of the library's own ("sf_init's ...") is named; the others by the
	 * agreement that came last: the operation they serve began there */
	if (c->agreeing && strncmp(what, "sf_", 3) != 0)
		snprintf(name, sizeof name, "%s (after the agreement of %s)", what, c->agreeing);
	else
		snprintf(name, sizeof name, "%s", what);
	return host_wait_named(c, n, req, mrc, name, bytes);
}

/* Waits until every rank of comm has arrived (host_wait): a blocking collective that
 * has no non-blocking form (a communicator split) follows one, so that it only waits
 * for ranks already there. */
static int host_barrier_on(struct _sf_comm *c, MPI_Comm comm, const char *what)
{
	MPI_Request req;
	return host_wait(c, 1, &req, MPI_Ibarrier(comm, &req), what, 0);
}

static int mpi_barrier(struct _sf_comm *c, bool node_only)
{
	return host_barrier_on(c, node_only ? impl(c)->node : impl(c)->ctl,
	                       node_only ? "barrier of the machine's ranks" : "barrier");
}

static int mpi_bcast(struct _sf_comm *c, void *buf, size_t bytes, int root)
{
	int n = 0;
	MPI_Request req;
	char what[96];
	SF_CHECK(count_of(bytes, &n));
	snprintf(what, sizeof what, "broadcast of %zu bytes from rank %d", bytes, root);
	SF_CHECK(host_wait(c, 1, &req, MPI_Ibcast(buf, n, MPI_BYTE, root, impl(c)->ctl, &req),
	                   what, (double)bytes));
	return SF_OK;
}

static int mpi_gather_bytes(struct _sf_comm *c, const void *mine, size_t bytes, void *all, int root)
{
	int n = 0;
	MPI_Request req;
	char what[96];
	SF_CHECK(count_of(bytes, &n));
	snprintf(what, sizeof what, "gather of %zu bytes a rank to rank %d", bytes, root);
	SF_CHECK(host_wait(c, 1, &req,
	                   MPI_Igather(mine, n, MPI_BYTE, all, n, MPI_BYTE, root, impl(c)->ctl, &req),
	                   what, (double)bytes));
	return SF_OK;
}

static int mpi_gatherv_bytes(struct _sf_comm *c, const void *mine, size_t bytes, void *all,
                             const size_t *counts, int root)
{
	int rc = SF_OK, n = 0;
	int *cnt = NULL, *displs = NULL;
	MPI_Request req;
	char what[96];
	SF_CHECK_GOTO(count_of(bytes, &n), out);
	if (c->rank == root) {
		cnt = calloc((size_t)c->size, sizeof *cnt);
		displs = calloc((size_t)c->size, sizeof *displs);
		if (!cnt || !displs) {
			rc = SF_ERR(SF_ERR_NOMEM, "gatherv: out of memory");
			goto out;
		}
		size_t off = 0;
		for (int r = 0; r < c->size; r++) {
			SF_CHECK_GOTO(count_of(counts[r], &cnt[r]), out);
			SF_CHECK_GOTO(count_of(off, &displs[r]), out);
			off += counts[r];
		}
	}
	snprintf(what, sizeof what, "gather of %zu bytes (this rank's) to rank %d", bytes, root);
	SF_CHECK_GOTO(host_wait(
	    c, 1, &req,
	    MPI_Igatherv(mine, n, MPI_BYTE, all, cnt, displs, MPI_BYTE, root, impl(c)->ctl, &req),
	    what, (double)bytes), out);
out:
	free(cnt);
	free(displs);
	return rc;
}

static int mpi_allgather_bytes(struct _sf_comm *c, const void *mine, size_t bytes, void *all)
{
	int n = 0;
	MPI_Request req;
	char what[96];
	SF_CHECK(count_of(bytes, &n));
	snprintf(what, sizeof what, "all-gather of %zu bytes a rank", bytes);
	SF_CHECK(host_wait(c, 1, &req,
	                   MPI_Iallgather(mine, n, MPI_BYTE, all, n, MPI_BYTE, impl(c)->ctl, &req),
	                   what, (double)bytes));
	return SF_OK;
}

static void mpi_abort(struct _sf_comm *c, int code);

static int mpi_min_rank(struct _sf_comm *c, int value, int64_t add, int *min, int *rank,
                        int64_t *sum)
{
	/* one all-gather of {value, add} (rather than two reductions in flight on one
	 * communicator), then the least value, its lowest rank and the sum, in rank order */
	int64_t mine[2] = {value, add}, *all = malloc(2 * sizeof(int64_t) * (size_t)c->size);
	if (!all)
		return SF_ERR(SF_ERR_NOMEM, "the ranks' status all-gather: out of memory");
	char what[160];
	snprintf(what, sizeof what, "%s's agreement (all-gather of the ranks' status)",
	         c->agreeing ? c->agreeing : "sf_?");
	MPI_Request req;
	int rc = host_wait_named(c, 1, &req,
	                         MPI_Iallgather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T,
	                                        impl(c)->ctl, &req),
	                         what, sizeof mine);
	if (rc == SF_OK) {
		*min = (int)all[0], *rank = 0, *sum = 0;
		for (int r = 0; r < c->size; r++) {
			if (all[2 * r] < *min)
				*min = (int)all[2 * r], *rank = r;
			*sum += all[2 * r + 1];
		}
	}
	free(all);
	return rc;
}

/* Ends every rank of the job: mpirun reports the code and kills the others, a stopped
 * one included. */
static void mpi_abort(struct _sf_comm *c, int code)
{
	(void)c;
	MPI_Abort(MPI_COMM_WORLD, code);
}

/* The comm worker is a CPU worker: the codelets' buffers are host memory. */
static void host_copy(void *dst, const void *src, size_t bytes)
{
	if (SF_TOUCH_DATA)
		memcpy(dst, src, bytes);
}

static void host_zero(void *dst, size_t bytes)
{
	if (SF_TOUCH_DATA)
		memset(dst, 0, bytes);
}

static void host_add(float *dst, const float *src, size_t n)
{
	for (size_t i = 0; SF_TOUCH_DATA && i < n; i++)
		dst[i] += src[i];
}

static void host_sync(void)
{
}

static void host_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                        size_t rows)
{
	for (size_t i = 0; SF_TOUCH_DATA && i < rows; i++)
		memcpy((char *)dst + i * dpitch, (const char *)src + i * spitch, width);
}

const struct _sf_comm_mem _sf_comm_host_mem = {host_copy, host_zero, host_copy, host_copy,
                                               host_add,  host_sync, host_copy2d};

#if SF_SIMULATED
void (*_sf_wait_serve)(void); /* comm/mpi_wait.h */

/* sim/comm_sim.c's collectives by a cost model: which ranks meet on communicator
 * `which` (0 the shard's, 1 the replicas', 2 the TP group's, 3 the CP group's), as its
 * lowest world rank
 * (the group's name) and its size; a collective of that communicator */
int _sf_comm_mpi_group(struct _sf_comm *c, int which, int *first, int *size)
{
	MPI_Comm comm = which == 0   ? shard_comm(c)
	                : which == 1 ? impl(c)->rep
	                : which == 2 ? impl(c)->tp
	                             : impl(c)->cp;
	MPI_Request req;
	int me = c->rank;
	MPI_Comm_size(comm, size);
	return wait_one(c, &req, MPI_Iallreduce(&me, first, 1, MPI_INT, MPI_MIN, comm, &req),
	                "naming the ranks of a modelled collective");
}
#endif

/* The two tables: every entry the same but the pipeline's transfers */
/* clang-format off */
#define MPI_OPS(name_, p2p_, post_, tagged_, wait_)     \
	{                                               \
	    .name = name_,                              \
	    .mem = &_sf_comm_host_mem,                  \
	    .init = mpi_init,                           \
	    .fini = mpi_fini,                           \
	    .all_gather = mpi_all_gather,               \
	    .all_gather_from = mpi_all_gather_from,     \
	    .reduce_scatter = mpi_reduce_scatter,       \
	    .all_gather16 = mpi_all_gather16,           \
	    .reduce_scatter16 = mpi_reduce_scatter16,   \
	    .rep_all_reduce = mpi_rep_all_reduce,       \
	    .tp_all_reduce = mpi_tp_all_reduce,         \
	    .tp_all_gather = mpi_tp_all_gather,         \
	    .tp_reduce_scatter = mpi_tp_reduce_scatter, \
	    .p2p = p2p_,                                \
	    .p2p_post = post_,                          \
	    .p2p_tagged_post = tagged_,                 \
	    .p2p_wait = wait_,                          \
	    .cp_shift = mpi_cp_shift,                   \
	    .all_reduce = mpi_all_reduce,               \
	    .sum_scalar = mpi_sum_scalar,               \
	    .barrier = mpi_barrier,                     \
	    .bcast = mpi_bcast,                         \
	    .gather_bytes = mpi_gather_bytes,           \
	    .gatherv_bytes = mpi_gatherv_bytes,         \
	    .allgather_bytes = mpi_allgather_bytes,     \
	    .min_rank = mpi_min_rank,                   \
	    .abort = mpi_abort,                         \
	}
/* clang-format on */

const struct _sf_comm_ops _sf_comm_mpi_ops =
    MPI_OPS("mpi", mpi_p2p, mpi_p2p_post, mpi_p2p_tagged_post, mpi_p2p_wait);
const struct _sf_comm_ops _sf_comm_mpi_sync_ops =
    MPI_OPS("mpi-sync", sync_p2p, sync_p2p_post, NULL, sync_p2p_wait);
