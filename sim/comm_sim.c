/*
 * comm_sim.c — the MPI backend in simulated time (a build with --enable-simulation:
 * StarPU's SimGrid mode, SMPI; docs/scale.md).
 *
 * Under SMPI each simulated rank is one SimGrid actor, and only that actor may call
 * MPI: StarPU's workers and the application's main run as other actors of the rank.
 * So the rank's actor becomes a proxy. StarPU's main (simulation builds rename the
 * program's main to starpu_main) calls _starpu_mpi_simgrid_init on the rank's actor,
 * a hook StarPU-MPI would otherwise fill: it initialises MPI, starts the program's
 * main as another actor, and then runs the MPI backend's operations (comm/comm_mpi.c,
 * unchanged: the same rings, the same agreement) that the program's main (host-side
 * collectives) and the comm worker (the step's collectives) hand it, one at a time.
 * While an operation waits for its requests, _sf_wait_all (comm/mpi_wait.h) serves
 * the other actor's operation (serve, plugged in as _sf_wait_serve), so a host collective and a step collective in flight
 * at once on different ranks cannot wait for each other (SMPI progresses posted
 * requests without their actor). When the program's main returns, the proxy
 * finalises MPI.
 *
 * SHARDFLOW_SIM_NCCL=G,NVLINK_BPS,NVLINK_LAT,NIC_BPS,NIC_LAT puts NCCL's ring cost
 * model in place of the rings' messages (what a GPU job's NCCL backend does; and a
 * ring on N ranks is N - 1 messages a rank, so simulating it costs N^2 messages a
 * collective, where the model costs a barrier). A step collective is then a
 * barrier of its communicator's ranks (simulated by SMPI: a rank that comes late
 * holds the others up) and then, on the calling actor, a wait of NCCL's own tuning
 * model's time for it (_sf_nccl_time, sim/sim_device.c: rings for all-gathers and
 * reduce-scatters, rings or trees for all-reduces, the fastest of the LL, LL128 and
 * Simple protocols); about (n - 1) (lat + s / bw) for blocks of s bytes on n ranks,
 * bw NVLink's when they are all in one node of G consecutive ranks, else the NIC's
 * (per GPU: NCCL drives one NIC per GPU). The loss's scalar sum and the host side
 * stay SMPI's. Not modelled: NCCL's channel count, the GPU time its kernels take from
 * compute.
 *
 * Tensor parallelism's all-reduces and all-gathers are modelled so on the TP group
 * (tp_size consecutive ranks), and the shard group's collectives on its dp ranks, a TP
 * group apart (group_shape). A pipeline's transfers (p2p_post) are SMPI's messages on
 * the platform's route, or by the model a rendezvous of the two ranks' pipeline
 * streams and then lat + bytes / bw of the link between them (sim_p2p_post). Context parallelism's ring
 * steps (cp_shift) likewise: SMPI's messages, or by the model a barrier of the CP
 * group (cp_size ranks, tp_size apart) and then, on each rank, lat + bytes / bw of the
 * slower of its two links, to the next CP rank and from the previous (sim_cp_shift).
 *
 * SHARDFLOW_SIM_COMM_CPU=NS (with SHARDFLOW_SIM_SHARED_CPUS, a CPU cluster's
 * emulation) charges the CPU that a CPU rank's rings burn, NS nanoseconds per byte
 * the rank sends (its copies, the TCP stack, its polls), to the rank's shared host
 * while the collective runs: the compute tasks there slow down as they do for real,
 * and the collective ends no sooner than its CPU work.
 */
#include "config.h"

#include "sim/comm_sim.h"
#include "comm/comm.h"
#include "comm/mpi_wait.h"
#include "sim/sim_device.h"
#include "common/error.h"

#include <mpi.h>
#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/cond.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/mutex.h>
#include <starpu.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* StarPU's internal host lookup by the rank's platform name ("MAIN" ->
 * "StarPU-MPI<rank>-MAIN"), as StarPU-MPI uses it */
extern starpu_sg_host_t _starpu_simgrid_get_host_by_name(const char *name);

enum sim_op {
	OP_INIT,
	OP_FINI,
	OP_ALL_GATHER,
	OP_REDUCE_SCATTER,
	OP_ALL_GATHER16,
	OP_REDUCE_SCATTER16,
	OP_REP_ALL_REDUCE,
	OP_ALL_REDUCE,
	OP_SUM_SCALAR,
	OP_BARRIER,
	OP_BCAST,
	OP_GATHER_BYTES,
	OP_GATHERV_BYTES,
	OP_ALLGATHER_BYTES,
	OP_MIN_RANK,
	OP_ABORT,
	OP_GROUP,
	OP_TP_ALL_REDUCE,
	OP_TP_ALL_GATHER,
	OP_P2P,
	OP_CP_SHIFT
};

/* One operation handed to the proxy: its arguments, its status, whether it is done */
struct sim_req {
	enum sim_op op;
	struct _sf_comm *c;
	float *f1, *f2, *f3;
	const float *cf;
	void *v1;
	const void *cv;
	uint16_t *stage;
	double *d;
	const size_t *counts;
	size_t n;
	int i1;
	int64_t add;
	int *pi1, *pi2;
	int64_t *pl;
	bool flag;
	int *argc;
	char ***argv;
	int rc;
	bool done;
	struct sim_req *next;
};

static const struct _sf_comm_ops *const mpi = &_sf_comm_mpi_ops;
static starpu_pthread_mutex_t mu;
static starpu_pthread_cond_t wake, finished; /* the proxy's, the callers' */
static struct sim_req *head, *tail;
static bool main_done;
static sg_actor_t proxy;
static int world_rank = -1;
static int main_ret;

/* SHARDFLOW_SIM_COMM_CPU: seconds of CPU a byte sent costs, or 0 */
static double comm_cpu;

/* SHARDFLOW_SIM_NCCL's model, when set */
static struct {
	bool on;
	int gpn;
	double nv_bw, nv_lat, nic_bw, nic_lat;
} nccl;

bool _sf_comm_sim_modelled(void)
{
	return nccl.on;
}

/* StarPU's simulation asks the rank of a simulated process through this hook (weak
 * in StarPU, StarPU-MPI's otherwise): its actors live on that rank's hosts */
int starpu_mpi_world_rank(void);
int starpu_mpi_world_rank(void)
{
	return world_rank;
}

static int run(struct sim_req *r)
{
	struct _sf_comm *c = r->c;
	switch (r->op) {
	case OP_INIT: return mpi->init(c, r->argc, r->argv);
	case OP_FINI: return mpi->fini(c);
	case OP_ALL_GATHER: return mpi->all_gather(c, r->f1, r->n);
	case OP_REDUCE_SCATTER: return mpi->reduce_scatter(c, r->f1, r->n, r->f2, r->f3);
	case OP_ALL_GATHER16: return mpi->all_gather16(c, r->cf, r->f1, r->n, r->stage);
	case OP_REDUCE_SCATTER16: return mpi->reduce_scatter16(c, r->f1, r->n, r->f2, r->f3);
	case OP_REP_ALL_REDUCE: return mpi->rep_all_reduce(c, r->f1, r->n, r->f2);
	case OP_ALL_REDUCE: return mpi->all_reduce(c, r->f1, r->n);
	case OP_SUM_SCALAR: return mpi->sum_scalar(c, r->d);
	case OP_BARRIER: return mpi->barrier(c, r->flag);
	case OP_BCAST: return mpi->bcast(c, r->v1, r->n, r->i1);
	case OP_GATHER_BYTES: return mpi->gather_bytes(c, r->cv, r->n, r->v1, r->i1);
	case OP_GATHERV_BYTES: return mpi->gatherv_bytes(c, r->cv, r->n, r->v1, r->counts, r->i1);
	case OP_ALLGATHER_BYTES: return mpi->allgather_bytes(c, r->cv, r->n, r->v1);
	case OP_MIN_RANK: return mpi->min_rank(c, r->i1, r->add, r->pi1, r->pi2, r->pl);
	case OP_ABORT: mpi->abort(c, r->i1); return SF_OK;
	case OP_GROUP: return _sf_comm_mpi_group(c, r->i1, r->pi1, r->pi2);
	case OP_TP_ALL_REDUCE: return mpi->tp_all_reduce(c, r->f1, r->n, r->f2);
	case OP_TP_ALL_GATHER: return mpi->tp_all_gather(c, r->f1, r->n);
	case OP_P2P: return mpi->p2p(c, r->f1, r->n, r->i1, r->flag);
	case OP_CP_SHIFT: return mpi->cp_shift(c, r->cf, r->f1, r->n);
	}
	return SF_ERR(SF_ERR_INVALID, "simulation: unknown operation %d", (int)r->op);
}

/* Takes the first waiting operation, or NULL; with mu held */
static struct sim_req *pop(void)
{
	struct sim_req *r = head;
	if (r) {
		head = r->next;
		if (!head)
			tail = NULL;
	}
	return r;
}

static void finish(struct sim_req *r, int rc)
{
	STARPU_PTHREAD_MUTEX_LOCK(&mu);
	r->rc = rc;
	r->done = true;
	STARPU_PTHREAD_COND_BROADCAST(&finished);
	STARPU_PTHREAD_MUTEX_UNLOCK(&mu);
}

/* Runs an operation on the proxy and waits for it (on the proxy itself: at once) */
static int call(struct sim_req *r)
{
	if (sg_actor_self() == proxy)
		return run(r);
	STARPU_PTHREAD_MUTEX_LOCK(&mu);
	r->next = NULL;
	if (tail)
		tail->next = r;
	else
		head = r;
	tail = r;
	STARPU_PTHREAD_COND_SIGNAL(&wake);
	while (!r->done)
		STARPU_PTHREAD_COND_WAIT(&finished, &mu);
	STARPU_PTHREAD_MUTEX_UNLOCK(&mu);
	return r->rc;
}

/* comm/mpi_wait.h's _sf_wait_serve: called by the proxy while it waits; runs another
 * actor's operation if one waits */
static void serve(void)
{
	if (sg_actor_self() != proxy)
		return;
	STARPU_PTHREAD_MUTEX_LOCK(&mu);
	struct sim_req *r = pop();
	STARPU_PTHREAD_MUTEX_UNLOCK(&mu);
	if (r)
		finish(r, run(r));
}

/* The program's main, as an actor of the rank; the proxy stops when it returns */
extern int smpi_simulated_main_(int argc, char *argv[]);
static void program(int argc, char *argv[])
{
	starpu_sleep(0.000001); /* as StarPU-MPI: SMPI's context is set once it runs */
	int ret = smpi_simulated_main_(argc, argv);
	STARPU_PTHREAD_MUTEX_LOCK(&mu);
	main_ret = ret;
	main_done = true;
	STARPU_PTHREAD_COND_SIGNAL(&wake);
	STARPU_PTHREAD_MUTEX_UNLOCK(&mu);
}

static const struct _sf_comm_ops sim_ops;
/* sim_ops with the interleaved schedule's transfers matched by tag (sim_p2p_tagged_post) */
static struct _sf_comm_ops sim_ops_tagged;
static int sim_p2p_tagged_post(struct _sf_comm *c, float *v, size_t n, int peer, bool send,
                               int tag, void **req);

/* StarPU's main calls this on the rank's actor (the hook StarPU-MPI fills when it is
 * linked; shardflow does not use StarPU-MPI) */
int _starpu_mpi_simgrid_init(int argc, char *argv[]);
int _starpu_mpi_simgrid_init(int argc, char *argv[])
{
	int provided = 0;
	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
		return 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	proxy = sg_actor_self();
	/* the MPI backend's row and its waits' idle hook, before the program starts */
	/* the interleaved schedule's transfers on the pipeline stream, in the order every
	 * stage agrees on (as the NCCL backend runs them), or with SF_SIM_PP_TAGS=1
	 * (shardflow-sim's --pp-transfers tagged) matched by tag */
	const char *tags = getenv("SF_SIM_PP_TAGS");
	sim_ops_tagged = sim_ops;
	sim_ops_tagged.p2p_tagged_post = sim_p2p_tagged_post;
	if (_sf_comm_backend_plug(SF_COMM_MPI, tags && !strcmp(tags, "1") ? &sim_ops_tagged
	                                                                   : &sim_ops) < 0 ||
	    _sf_comm_backend_plug(SF_COMM_MPI_SYNC, NULL) < 0) /* it would bypass the proxy */
		return 1;
	_sf_wait_serve = serve;
	starpu_pthread_mutex_init(&mu, NULL);
	starpu_pthread_cond_init(&wake, NULL);
	starpu_pthread_cond_init(&finished, NULL);
	/* StarPU keeps each actor's thread-specific data in the actor's data */
	void **tsd = calloc(64, sizeof(void *));
	char **args = calloc((size_t)argc + 1, sizeof(char *));
	if (!tsd || !args)
		return 1;
	sg_actor_set_data(proxy, tsd);
	for (int i = 0; i < argc; i++)
		args[i] = strdup(argv[i]);
	_starpu_simgrid_actor_create("main", program, _starpu_simgrid_get_host_by_name("MAIN"),
	                             argc, args);
	STARPU_PTHREAD_MUTEX_LOCK(&mu);
	for (;;) {
		struct sim_req *r = pop();
		if (!r && main_done)
			break;
		if (!r) {
			STARPU_PTHREAD_COND_WAIT(&wake, &mu);
			continue;
		}
		STARPU_PTHREAD_MUTEX_UNLOCK(&mu);
		finish(r, run(r));
		STARPU_PTHREAD_MUTEX_LOCK(&mu);
	}
	STARPU_PTHREAD_MUTEX_UNLOCK(&mu);
	int fin = 0;
	MPI_Finalized(&fin);
	if (!fin)
		MPI_Finalize();
	return main_ret;
}

/* ---- the backend: each operation handed to the proxy ---------------------------- */

#define CALL(...)                                                                                  \
	do {                                                                                       \
		struct sim_req r_ = {__VA_ARGS__};                                                 \
		return call(&r_);                                                                  \
	} while (0)

/* SHARDFLOW_SIM_COMM_CPU: a number of nanoseconds >= 0, with a shared host */
static int comm_cpu_setup(void)
{
	const char *s = getenv("SHARDFLOW_SIM_COMM_CPU");
	comm_cpu = 0;
	if (!s || !*s)
		return SF_OK;
	double v = 0;
	int used = 0;
	if (sscanf(s, "%lf%n", &v, &used) != 1 || s[used] != '\0' || !(v >= 0) || v > 1e6)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_SIM_COMM_CPU=\"%s\" is invalid: accepted is the CPU "
		              "nanoseconds a byte sent costs, a number from 0 to 1e6",
		              s);
	if (!_sf_sim_shared_host())
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_SIM_COMM_CPU=\"%s\" needs SHARDFLOW_SIM_SHARED_CPUS: the "
		              "CPU is charged to the rank's shared host",
		              s);
	comm_cpu = v * 1e-9;
	return SF_OK;
}

/* An operation on the proxy while its CPU, `sent` bytes' worth, runs on the rank's
 * shared host (SHARDFLOW_SIM_COMM_CPU) */
static int call(struct sim_req *r);
static int with_cpu(struct sim_req *r, double sent)
{
	if (!(comm_cpu > 0) || !(sent > 0))
		return call(r);
	sg_exec_t e = _sf_sim_host_exec(comm_cpu * sent);
	int rc = call(r);
	sg_exec_wait(e);
	return rc;
}

/* SHARDFLOW_SIM_NCCL: five numbers, all positive but the latencies (>= 0) */
static int nccl_setup(void)
{
	const char *s = getenv("SHARDFLOW_SIM_NCCL");
	nccl.on = false;
	if (!s || !*s)
		return SF_OK;
	double v[5];
	int used = 0;
	if (sscanf(s, "%lf,%lf,%lf,%lf,%lf%n", &v[0], &v[1], &v[2], &v[3], &v[4], &used) != 5 ||
	    s[used] != '\0' || v[0] < 1 || v[0] != (int)v[0] || !(v[1] > 0) || !(v[2] >= 0) ||
	    !(v[3] > 0) || !(v[4] >= 0))
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_SIM_NCCL=\"%s\" is invalid: accepted is "
		              "G,NVLINK_BPS,NVLINK_LAT,NIC_BPS,NIC_LAT: GPUs a node (an integer >= "
		              "1), bandwidths in bytes/s (> 0) and latencies in seconds (>= 0)",
		              s);
	nccl.on = true;
	nccl.gpn = (int)v[0];
	nccl.nv_bw = v[1], nccl.nv_lat = v[2], nccl.nic_bw = v[3], nccl.nic_lat = v[4];
	return SF_OK;
}

/* Communicator `which`'s ranks (0 the shard's, 1 the replicas', 2 the TP group's, 3
 * the CP group's): how many, and how far apart in world ranks. The TP group is tp_size
 * consecutive ranks; the shard group is consecutive too (the world, a node under hybrid
 * sharding, a pipeline stage) but under TP, where it is the dp ranks of one TP place,
 * tp_size apart; the replicas are a shard apart; the CP group's ranks are a TP group
 * apart. */
static void group_shape(const struct _sf_comm *c, int which, int *n, int *stride)
{
	switch (which) {
	case 0: *n = c->shard_size, *stride = c->tp_size; return;
	case 1: *n = c->rep_size, *stride = c->shard_size; return;
	case 3: *n = c->cp_size, *stride = c->tp_size; return;
	default: *n = c->tp_size, *stride = 1; return;
	}
}

/* The model's seconds for collective `coll` of `bytes` in all (the gathered output, the
 * scattered input, the reduced vector) on communicator `which` (as meet's) */
static double nccl_time(const struct _sf_comm *c, int which, enum _sf_nccl_coll coll,
                        double bytes)
{
	int n = 1, d = 1, g = nccl.gpn;
	group_shape(c, which, &n, &d);
	/* the nodes it spans: one a rank when they are a node or more apart */
	int nodes = d >= g ? n : (n * d + g - 1) / g;
	bool spans = nodes > 1; /* as NCCL sees it: a NIC on the way */
	struct _sf_nccl_link l = {
	    .nranks = n,
	    .nnodes = nodes,
	    .bw = spans ? (nccl.nic_bw < nccl.nv_bw ? nccl.nic_bw : nccl.nv_bw) : nccl.nv_bw,
	    .intra_lat = nccl.nv_lat,
	    .inter_lat = nccl.nic_lat,
	};
	return _sf_nccl_time(coll, &l, bytes, NULL, NULL);
}

/*
 * A modelled collective's ranks meet on a SimGrid barrier, waited for by the calling
 * actor (the comm worker) itself: an MPI barrier waited for by polling, as the proxy
 * must (it serves the other actors between polls), cost a poll every few simulated
 * microseconds of every wait, which at 512 ranks was most of the simulation's time
 * (docs/scale.md). Every rank lives in the one process, but SMPI gives each its own
 * copy of this file's variables: the barrier of a group is found by name in the
 * process's environment, which SMPI does not copy, made by the first of its ranks to
 * get there (the actors run one at a time, so no other can come in between).
 */
static sg_bar_t meet_bar[4]; /* this rank's, by communicator (group_shape's) */

/* communicator `which`'s barrier, found or made (a collective of its ranks: sim_init
 * calls it for every communicator, so that no step pays the naming's all-reduce) */
static int meet_find(struct _sf_comm *c, int which)
{
	int first = -1, size = 0;
	struct sim_req r = {.op = OP_GROUP, .c = c, .i1 = which, .pi1 = &first, .pi2 = &size};
	int rc = call(&r);
	if (rc < 0)
		return rc;
	char key[64], val[32];
	snprintf(key, sizeof key, "SF_SIM_MEET_%d_%d_%d", which, first, size);
	const char *v = getenv(key);
	void *bar = NULL;
	if (v && sscanf(v, "%p", &bar) == 1 && bar) {
		meet_bar[which] = bar;
	} else {
		meet_bar[which] = sg_barrier_init((unsigned)size);
		snprintf(val, sizeof val, "%p", (void *)meet_bar[which]);
		if (setenv(key, val, 1) != 0)
			return SF_ERR(SF_ERR_NOMEM, "simulation: cannot record the barrier %s",
			              key);
	}
	return SF_OK;
}

static int meet(struct _sf_comm *c, int which)
{
	if (!meet_bar[which]) {
		int rc = meet_find(c, which);
		if (rc < 0)
			return rc;
	}
	sg_barrier_wait(meet_bar[which]);
	return SF_OK;
}

/* A modelled collective: the ranks meet, then the model's time passes here */
static int modelled(struct _sf_comm *c, int which, double seconds)
{
	int rc = meet(c, which);
	if (rc < 0)
		return rc;
	if (seconds > 0)
		sg_actor_sleep_for(seconds);
	return SF_OK;
}

static int sim_init(struct _sf_comm *c, int *argc, char ***argv)
{
	/* no watchdog in simulated time: a stuck simulation is SimGrid's deadlock report */
	c->timeout = 0;
	int rc = nccl_setup();
	if (rc < 0)
		return rc;
	struct sim_req r = {.op = OP_INIT, .c = c, .argc = argc, .argv = argv};
	rc = call(&r);
	/* the shard's communicator, and the replicas', the TP group's and the CP group's
	 * where there are */
	for (int which = 0; rc >= 0 && nccl.on && which < 4; which++)
		if ((which != 1 || c->rep_size > 1) && (which != 2 || c->tp_size > 1) &&
		    (which != 3 || c->cp_size > 1))
			rc = meet_find(c, which);
	return rc;
}
/* Once StarPU is up: SHARDFLOW_SIM_COMM_CPU needs sf_init's shared host */
static int sim_attach(struct _sf_comm *c, int comm_worker)
{
	(void)c;
	(void)comm_worker;
	return comm_cpu_setup();
}
static int sim_fini(struct _sf_comm *c)
{
	CALL(.op = OP_FINI, .c = c);
}
/*
 * A step collective among the ranks of communicator `which` (group_shape's):
 * NCCL's cost model of `coll` on `total` bytes when
 * SHARDFLOW_SIM_NCCL is set, else r on the proxy, charged the CPU of the `steps` ring
 * steps of `bytes` each that it sends.
 */
static int step_collective(struct sim_req *r, int which, enum _sf_nccl_coll coll, double total,
                           double steps, double bytes)
{
	if (nccl.on)
		return modelled(r->c, which, nccl_time(r->c, which, coll, total));
	return with_cpu(r, steps * bytes);
}

/* the rings: N - 1 steps of a block of S values of w bytes (all-gather, reduce-scatter:
 * N S w in all); 2 (n - 1) steps of 1/n of the b bytes (all-reduce on n ranks) */
#define BLOCKS(c, S, w)                                                                    \
	(double)(c)->shard_size * (double)(S) * (w), (double)((c)->shard_size - 1),           \
	    (double)(S) * (w)
#define HALVES(n, b) (b), 2.0 * ((n) - 1), (b) / (n)

static int sim_all_gather(struct _sf_comm *c, float *full, size_t S)
{
	struct sim_req r = {.op = OP_ALL_GATHER, .c = c, .f1 = full, .n = S};
	return step_collective(&r, 0, SF_NCCL_ALL_GATHER, BLOCKS(c, S, 4));
}
static int sim_reduce_scatter(struct _sf_comm *c, float *grad, size_t S, float *out, float *scratch)
{
	struct sim_req r = {
	    .op = OP_REDUCE_SCATTER, .c = c, .f1 = grad, .n = S, .f2 = out, .f3 = scratch};
	return step_collective(&r, 0, SF_NCCL_REDUCE_SCATTER, BLOCKS(c, S, 4));
}
static int sim_all_gather16(struct _sf_comm *c, const float *shard, float *full, size_t S,
                            uint16_t *stage)
{
	struct sim_req r = {
	    .op = OP_ALL_GATHER16, .c = c, .cf = shard, .f1 = full, .n = S, .stage = stage};
	return step_collective(&r, 0, SF_NCCL_ALL_GATHER, BLOCKS(c, S, 2));
}
static int sim_reduce_scatter16(struct _sf_comm *c, float *grad, size_t S, float *out,
                                float *scratch)
{
	struct sim_req r = {
	    .op = OP_REDUCE_SCATTER16, .c = c, .f1 = grad, .n = S, .f2 = out, .f3 = scratch};
	return step_collective(&r, 0, SF_NCCL_REDUCE_SCATTER, BLOCKS(c, S, 2));
}
static int sim_rep_all_reduce(struct _sf_comm *c, float *v, size_t n, float *scratch)
{
	struct sim_req r = {.op = OP_REP_ALL_REDUCE, .c = c, .f1 = v, .n = n, .f2 = scratch};
	return step_collective(&r, 1, SF_NCCL_ALL_REDUCE, HALVES(c->rep_size, 4.0 * (double)n));
}
/* over the shard's communicator, as the MPI backend's (the step's ranks but with hybrid
 * sharding, TP or a pipeline) */
static int sim_all_reduce(struct _sf_comm *c, float *v, size_t n)
{
	struct sim_req r = {.op = OP_ALL_REDUCE, .c = c, .f1 = v, .n = n};
	return step_collective(&r, 0, SF_NCCL_ALL_REDUCE, HALVES(c->shard_size, 4.0 * (double)n));
}
/* Tensor parallelism's: a linear_row's partial output (or a linear_col's input
 * gradient) summed, a gather_output's columns gathered, over the TP group */
static int sim_tp_all_reduce(struct _sf_comm *c, float *v, size_t n, float *scratch)
{
	struct sim_req r = {.op = OP_TP_ALL_REDUCE, .c = c, .f1 = v, .n = n, .f2 = scratch};
	return step_collective(&r, 2, SF_NCCL_ALL_REDUCE, HALVES(c->tp_size, 4.0 * (double)n));
}
static int sim_tp_all_gather(struct _sf_comm *c, float *full, size_t S)
{
	struct sim_req r = {.op = OP_TP_ALL_GATHER, .c = c, .f1 = full, .n = S};
	return step_collective(&r, 2, SF_NCCL_ALL_GATHER, (double)c->tp_size * (double)S * 4.0,
	                       (double)(c->tp_size - 1), (double)S * 4.0);
}

/*
 * A pipeline's transfer under NCCL's model: NCCL's send and receive are a rendezvous
 * of the two GPUs, then the bytes at the link's pace, lat + bytes / bw (NVLink inside a
 * node, else the GPU's NIC), on both. The two ranks meet on a SimGrid barrier of their
 * own, found or made by name as meet's; one barrier serves both directions, since two
 * ranks run their transfers to each other in one order (comm/comm.h's p2p). A rank
 * talks to the stage before and the stage after: two peers, cached.
 */
static struct {
	int peer;
	sg_bar_t bar;
} pairs[4];

static int pair_find(int me, int peer, sg_bar_t *out)
{
	for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
		if (pairs[k].bar && pairs[k].peer == peer) {
			*out = pairs[k].bar;
			return SF_OK;
		}
	char key[64], val[32];
	snprintf(key, sizeof key, "SF_SIM_PAIR_%d_%d", me < peer ? me : peer, me < peer ? peer : me);
	const char *v = getenv(key);
	void *bar = NULL;
	if (!(v && sscanf(v, "%p", &bar) == 1 && bar)) {
		bar = sg_barrier_init(2);
		snprintf(val, sizeof val, "%p", bar);
		if (setenv(key, val, 1) != 0)
			return SF_ERR(SF_ERR_NOMEM, "simulation: cannot record the barrier %s", key);
	}
	for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
		if (!pairs[k].bar) {
			pairs[k].peer = peer, pairs[k].bar = bar;
			break;
		}
	*out = bar;
	return SF_OK;
}

/* NCCL's model of `bytes` between world ranks a and b: lat + bytes / bw, NVLink's
 * inside a node of nccl.gpn consecutive ranks, else the GPU's NIC (and the slower of
 * the two) */
static double link_time(int a, int b, double bytes)
{
	bool node = a / nccl.gpn == b / nccl.gpn;
	double bw = node || nccl.nv_bw < nccl.nic_bw ? nccl.nv_bw : nccl.nic_bw;
	return (node ? nccl.nv_lat : nccl.nic_lat) + bytes / bw;
}

static int sim_p2p(struct _sf_comm *c, float *v, size_t n, int peer, bool send)
{
	double bytes = 4.0 * (double)n;
	if (!nccl.on) { /* SMPI's message on the platform's route */
		struct sim_req r = {.op = OP_P2P, .c = c, .f1 = v, .n = n, .i1 = peer, .flag = send};
		return with_cpu(&r, send ? bytes : 0);
	}
	sg_bar_t bar = NULL;
	int rc = pair_find(c->rank, peer, &bar);
	if (rc < 0)
		return rc;
	sg_barrier_wait(bar);
	sg_actor_sleep_for(link_time(c->rank, peer, bytes));
	return SF_OK;
}

/*
 * The interleaved schedule's transfers (comm.h's p2p_tagged_post, p2p_wait) under
 * NCCL's model: a send posts, in the queue of its (sender, receiver, tag), the time its
 * bytes are in, lat + bytes / bw after the post, and is done (the model's sender does
 * not wait for its receiver: the schedule's waits are for the receiver's data); a
 * receive's wait takes that time from the queue, waiting for the send's post, and
 * sleeps until it. Matched by tag, whatever order the two ranks post in, as MPI
 * matches them: SF_SIM_PP_TAGS=1 (shardflow-sim --pp-transfers tagged) only; without it
 * the ops have no tagged post, and the pipeline posts its transfers on the rank's
 * pipeline stream (sim_p2p_post, below: each waiting for its other end, as NCCL's) in
 * the order every stage agrees on (scheduler/pipeline_order.c). The queues are one table every simulated rank shares (found through
 * the environment, as the pairs' barriers are: SMPI gives each rank its own globals);
 * SimGrid runs one actor at a time, so its mutex and condition are the only locking.
 * Without the model (SMPI's messages) refused: the proxy posts nothing.
 */
#define TAG_SLOTS 4 /* sends of one tag not yet received: one a step */
struct tag_queue {
	int from, to, tag, head, n;
	double ready[TAG_SLOTS];
	struct tag_queue *next;
};
struct tag_table {
	sg_mutex_t mu;
	sg_cond_t posted;
	struct tag_queue *bucket[4096];
};

static struct tag_table *tag_table(void)
{
	const char *v = getenv("SF_SIM_TAGS");
	void *t = NULL;
	if (v && sscanf(v, "%p", &t) == 1 && t)
		return t;
	struct tag_table *n = calloc(1, sizeof *n);
	char val[32];
	if (!n)
		return NULL;
	n->mu = sg_mutex_init(), n->posted = sg_cond_init();
	snprintf(val, sizeof val, "%p", (void *)n);
	if (setenv("SF_SIM_TAGS", val, 1) != 0) {
		free(n);
		return NULL;
	}
	return n; /* lives as long as the simulation: every rank's */
}

/* the queue of (from, to, tag), made if new (with the table's mutex held) */
static struct tag_queue *tag_queue(struct tag_table *t, int from, int to, int tag)
{
	unsigned h = ((unsigned)from * 31u + (unsigned)to) * 131u + (unsigned)tag;
	struct tag_queue **b = &t->bucket[h % 4096u];
	for (struct tag_queue *q = *b; q; q = q->next)
		if (q->from == from && q->to == to && q->tag == tag)
			return q;
	struct tag_queue *q = calloc(1, sizeof *q);
	if (q)
		*q = (struct tag_queue){.from = from, .to = to, .tag = tag, .next = *b}, *b = q;
	return q;
}

/* A posted transfer (p2p_post's or p2p_tagged_post's *req): which of the two, first */
enum { POSTED_TAGGED, POSTED_STREAM };

struct sim_tagged {
	int kind; /* POSTED_TAGGED */
	bool send;
	int from, to, tag;
};

static int sim_p2p_tagged_post(struct _sf_comm *c, float *v, size_t n, int peer, bool send,
                               int tag, void **req)
{
	(void)v;
	*req = NULL;
	if (!nccl.on)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_PP_SCHEDULE=interleaved in a simulation needs NCCL's model "
		              "(SHARDFLOW_SIM_NCCL, which tools/shardflow-sim sets); accepted "
		              "without it: gpipe, 1f1b, zero-bubble");
	struct tag_table *t = tag_table();
	struct sim_tagged *r = malloc(sizeof *r);
	if (!t || !r) {
		free(r);
		return SF_ERR(SF_ERR_NOMEM, "simulation: a pipeline transfer: out of memory");
	}
	*r = (struct sim_tagged){POSTED_TAGGED, send, send ? c->rank : peer, send ? peer : c->rank,
	                         tag};
	if (send) {
		sg_mutex_lock(t->mu);
		struct tag_queue *q = tag_queue(t, r->from, r->to, tag);
		int rc = !q              ? SF_ERR(SF_ERR_NOMEM, "simulation: out of memory")
		         : q->n == TAG_SLOTS ? SF_ERR(SF_ERR_STATE,
		                                      "simulation: %d sends of tag %d from rank %d "
		                                      "to %d not received",
		                                      TAG_SLOTS, tag, r->from, r->to)
		                         : SF_OK;
		if (rc == SF_OK) {
			q->ready[(q->head + q->n++) % TAG_SLOTS] =
			    simgrid_get_clock() + link_time(c->rank, peer, 4.0 * (double)n);
			sg_cond_notify_all(t->posted);
		}
		sg_mutex_unlock(t->mu);
		if (rc < 0) {
			free(r);
			return rc;
		}
	}
	*req = r;
	return SF_OK;
}

/*
 * The pipeline's transfers (comm.h's p2p_post, p2p_wait) under NCCL's model: the NCCL
 * backend runs them on a stream and a communicator of their own, in the order they are
 * posted, a send waiting there for its peer's receive and holding only the stream's
 * later transfers, not the comm worker's collectives. Modelled by an actor a rank, the
 * stream, started at the rank's first post: a post queues the transfer and returns;
 * the actor takes the transfers in turn, meets its peer's actor on the pair's barrier
 * and sleeps the link's time (lat + bytes / bw); a wait waits until its transfer is
 * done. The actor touches only the queue it is given (the rank's globals are SMPI's
 * per rank). Without the model a post runs the transfer whole (sim_p2p: SMPI's
 * messages on the proxy).
 */
struct stream_job {
	int kind; /* POSTED_STREAM */
	sg_bar_t bar;
	double secs;
	bool done;
	struct stream_job *next;
};
struct pp_stream {
	sg_mutex_t mu;
	sg_cond_t cond;
	struct stream_job *head, *tail;
};
static struct pp_stream *pp_stream; /* the rank's, made at its first post */

static void stream_main(int argc, char *argv[])
{
	struct pp_stream *q = NULL;
	if (argc < 2 || sscanf(argv[1], "%p", (void **)&q) != 1 || !q)
		return;
	for (;;) {
		sg_mutex_lock(q->mu);
		while (!q->head)
			sg_cond_wait(q->cond, q->mu);
		struct stream_job *j = q->head;
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
		sg_mutex_unlock(q->mu);
		sg_barrier_wait(j->bar);
		sg_actor_sleep_for(j->secs);
		sg_mutex_lock(q->mu);
		j->done = true;
		sg_cond_notify_all(q->cond);
		sg_mutex_unlock(q->mu);
	}
}

static int sim_p2p_post(struct _sf_comm *c, float *v, size_t n, int peer, bool send, void **req)
{
	struct stream_job *j = calloc(1, sizeof *j);
	*req = NULL;
	if (!j)
		return SF_ERR(SF_ERR_NOMEM, "simulation: a pipeline transfer: out of memory");
	j->kind = POSTED_STREAM;
	if (!nccl.on) { /* SMPI's messages: the whole transfer, here */
		int rc = sim_p2p(c, v, n, peer, send);
		if (rc < 0) {
			free(j);
			return rc;
		}
		j->done = true, *req = j;
		return SF_OK;
	}
	if (!pp_stream) {
		struct pp_stream *q = calloc(1, sizeof *q);
		char arg[32], *args[] = {"pipeline stream", arg, NULL};
		if (!q) {
			free(j);
			return SF_ERR(SF_ERR_NOMEM, "simulation: the pipeline stream: out of memory");
		}
		q->mu = sg_mutex_init(), q->cond = sg_cond_init();
		snprintf(arg, sizeof arg, "%p", (void *)q);
		sg_actor_t a = sg_actor_create("pipeline stream", sg_host_self(), stream_main, 2, args);
		sg_actor_daemonize(a); /* it waits for transfers until the simulation ends */
		pp_stream = q;
	}
	int rc = pair_find(c->rank, peer, &j->bar);
	if (rc < 0) {
		free(j);
		return rc;
	}
	j->secs = link_time(c->rank, peer, 4.0 * (double)n);
	sg_mutex_lock(pp_stream->mu);
	if (pp_stream->tail)
		pp_stream->tail->next = j;
	else
		pp_stream->head = j;
	pp_stream->tail = j;
	sg_cond_notify_all(pp_stream->cond);
	sg_mutex_unlock(pp_stream->mu);
	*req = j;
	return SF_OK;
}

static int sim_p2p_wait(struct _sf_comm *c, void *req, bool send)
{
	(void)c, (void)send;
	if (*(int *)req == POSTED_STREAM) {
		struct stream_job *j = req;
		if (!j->done) { /* posted by the model: the stream marks it done */
			sg_mutex_lock(pp_stream->mu);
			while (!j->done)
				sg_cond_wait(pp_stream->cond, pp_stream->mu);
			sg_mutex_unlock(pp_stream->mu);
		}
		free(j);
		return SF_OK;
	}
	struct sim_tagged *r = req;
	int rc = SF_OK;
	if (!r->send) {
		struct tag_table *t = tag_table();
		sg_mutex_lock(t->mu);
		struct tag_queue *q = tag_queue(t, r->from, r->to, r->tag);
		while (q && q->n == 0)
			sg_cond_wait(t->posted, t->mu);
		double ready = 0.0;
		if (q) {
			ready = q->ready[q->head];
			q->head = (q->head + 1) % TAG_SLOTS, q->n--;
		} else {
			rc = SF_ERR(SF_ERR_NOMEM, "simulation: out of memory");
		}
		sg_mutex_unlock(t->mu);
		double now = simgrid_get_clock();
		if (ready > now)
			sg_actor_sleep_for(ready - now);
	}
	free(r);
	return rc;
}

/*
 * Context parallelism's ring step under NCCL's model: every CP rank sends n floats to
 * the next and receives the previous one's at once (NCCL's grouped send and receive,
 * comm/comm_nccl.c), so the group meets on its barrier and each rank is done when the
 * slower of its two transfers is: lat + bytes / bw of the link to the next CP rank or
 * from the previous one. Without the model, the MPI backend's ring step on the proxy.
 */
static int sim_cp_shift(struct _sf_comm *c, const float *src, float *dst, size_t n)
{
	double bytes = 4.0 * (double)n;
	if (!nccl.on) {
		struct sim_req r = {.op = OP_CP_SHIFT, .c = c, .cf = src, .f1 = dst, .n = n};
		return with_cpu(&r, bytes);
	}
	int K = c->cp_size, k = c->cp_rank, tp = c->tp_size;
	int next = c->rank + ((k + 1) % K - k) * tp, prev = c->rank + ((k + K - 1) % K - k) * tp;
	double t_next = link_time(c->rank, next, bytes), t_prev = link_time(prev, c->rank, bytes);
	return modelled(c, 3, t_next > t_prev ? t_next : t_prev);
}
static int sim_sum_scalar(struct _sf_comm *c, double *v)
{
	CALL(.op = OP_SUM_SCALAR, .c = c, .d = v);
}
static int sim_barrier(struct _sf_comm *c, bool node_only)
{
	CALL(.op = OP_BARRIER, .c = c, .flag = node_only);
}
static int sim_bcast(struct _sf_comm *c, void *buf, size_t bytes, int root)
{
	CALL(.op = OP_BCAST, .c = c, .v1 = buf, .n = bytes, .i1 = root);
}
static int sim_gather_bytes(struct _sf_comm *c, const void *mine, size_t bytes, void *all, int root)
{
	CALL(.op = OP_GATHER_BYTES, .c = c, .cv = mine, .n = bytes, .v1 = all, .i1 = root);
}
static int sim_gatherv_bytes(struct _sf_comm *c, const void *mine, size_t bytes, void *all,
                             const size_t *counts, int root)
{
	CALL(.op = OP_GATHERV_BYTES, .c = c, .cv = mine, .n = bytes, .v1 = all, .counts = counts,
	     .i1 = root);
}
static int sim_allgather_bytes(struct _sf_comm *c, const void *mine, size_t bytes, void *all)
{
	CALL(.op = OP_ALLGATHER_BYTES, .c = c, .cv = mine, .n = bytes, .v1 = all);
}
static int sim_min_rank(struct _sf_comm *c, int value, int64_t add, int *min, int *rank,
                        int64_t *sum)
{
	CALL(.op = OP_MIN_RANK, .c = c, .i1 = value, .add = add, .pi1 = min, .pi2 = rank,
	     .pl = sum);
}
static void sim_abort(struct _sf_comm *c, int code)
{
	struct sim_req r = {.op = OP_ABORT, .c = c, .i1 = code};
	call(&r);
	abort(); /* MPI_Abort does not return */
}

/* The MPI backend's operations, run by the rank's actor */
static const struct _sf_comm_ops sim_ops = {
    .name = "mpi",
    .mem = &_sf_comm_host_mem,
    .init = sim_init,
    .fini = sim_fini,
    .attach = sim_attach,
    .all_gather = sim_all_gather,
    .reduce_scatter = sim_reduce_scatter,
    .all_gather16 = sim_all_gather16,
    .reduce_scatter16 = sim_reduce_scatter16,
    .rep_all_reduce = sim_rep_all_reduce,
    .tp_all_reduce = sim_tp_all_reduce,
    .tp_all_gather = sim_tp_all_gather,
    .p2p = sim_p2p,
    .p2p_post = sim_p2p_post,
    .p2p_wait = sim_p2p_wait,
    .cp_shift = sim_cp_shift,
    .all_reduce = sim_all_reduce,
    .sum_scalar = sim_sum_scalar,
    .barrier = sim_barrier,
    .bcast = sim_bcast,
    .gather_bytes = sim_gather_bytes,
    .gatherv_bytes = sim_gatherv_bytes,
    .allgather_bytes = sim_allgather_bytes,
    .min_rank = sim_min_rank,
    .abort = sim_abort,
};
