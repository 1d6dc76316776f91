/*
 * comm_mpi.c — the collectives of a step, as StarPU codelets run by the comm worker.
 *
 * Buffer 0 of every comm codelet is the comm-order handle in STARPU_RW: StarPU's
 * implicit dependencies then run them one after another in submission order, which
 * is the same program on every rank, so every rank enters the same collective next
 * (schedulers reorder ready tasks; they cannot reorder a RW chain). The
 * communicator is the one duplicated at sf_init for steps only; its error handler is
 * MPI's default, so a failed collective ends the job instead of hanging it.
 */
#include "scheduler/internal.h"
#include "tasks/mpi_wait.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

static void mpi_assert(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING] = "";
	int len = 0;
	if (rc == MPI_SUCCESS)
		return;
	MPI_Error_string(rc, msg, &len);
	STARPU_ASSERT_MSG(rc == MPI_SUCCESS, "%s failed: %s", what, msg);
}

/* Waits for one request, sleeping between polls (tasks/mpi_wait.h). */
static void wait_one(MPI_Request *req, const char *what)
{
	int idx[1];
	mpi_assert(_sf_wait_all(1, req, idx, SF_COMM_PACE), what);
}

/*
 * Ring collectives on point-to-point messages. Open MPI's reduce-scatter for large
 * blocks (blocking or libnbc) reduces on one rank and scatters back, so a rank moves
 * about twice the bytes a ring needs; over a 1 Gbit/s link the comm-only step of the
 * benchmark took ~270 ms for ~12 MB per rank (docs/performance.md). A ring moves
 * (N-1)/N of the data each way, in N-1 steps, each rank sending to r+1 and receiving
 * from r-1 at once. Messages of consecutive collectives between two ranks cannot
 * overtake each other (MPI's ordering rule) and collectives run one at a time on the
 * comm worker, so one tag serves them all. The order of the sums is fixed by the ring:
 * results are deterministic for a given world size.
 */
#define RING_TAG 7301

static int ring_rank(MPI_Comm comm)
{
	int r = 0;
	mpi_assert(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
	return r;
}

/*
 * One ring step of this unit's blocks (tasks/mpi_wait.h), cut into pieces of
 * _sf_comm_chunk floats (SHARDFLOW_COMM_CHUNK). Over Open MPI's TCP BTL a block sent
 * as one message goes by the rendezvous (put) protocol, which ran at 0.57 of a
 * 1 Gbit/s link in bench/ring_bw; pieces under the eager limit (64 KiB) ran at 0.95
 * (docs/performance.md).
 */
static void ring_exchange(struct _sf_comm_args *a, const float *sbuf, float *rbuf, const char *what)
{
	int N = a->nranks, r = ring_rank(a->comm);
	mpi_assert(_sf_ring_exchange(a->comm, (r + 1) % N, (r + N - 1) % N, RING_TAG, sbuf, rbuf,
	                             a->S, _sf_comm_chunk, SF_COMM_PACE),
	           what);
}

/* full (N blocks of S): block r is this rank's; on return every block is filled. */
static void ring_allgather(struct _sf_comm_args *a, float *full)
{
	int N = a->nranks, r = ring_rank(a->comm);
	for (int k = 0; k < N - 1; k++) {
		int sb = (r - k + N) % N, rb = (r - k - 1 + 2 * N) % N;
		ring_exchange(a, full + (size_t)sb * a->S, full + (size_t)rb * a->S,
		              "ring all-gather");
	}
}

/* grad (N blocks of S) is summed over the ranks; block r of the sum goes to out. */
static void ring_reduce_scatter(struct _sf_comm_args *a, float *grad, float *out)
{
	int N = a->nranks, r = ring_rank(a->comm);
	for (int k = 0; k < N - 1; k++) {
		int sb = (r - k - 1 + 2 * N) % N, rb = (r - k - 2 + 2 * N) % N;
		ring_exchange(a, grad + (size_t)sb * a->S, a->scratch, "ring reduce-scatter");
		float *dst = grad + (size_t)rb * a->S;
		for (size_t i = 0; i < a->S; i++)
			dst[i] += a->scratch[i];
	}
	memcpy(out, grad + (size_t)r * a->S, a->S * sizeof(float));
}

/* ---- what the comm path costs: wall and CPU time of each collective task ---- */

struct acct_mark {
	struct timespec wall, cpu;
};

static void acct_begin(struct acct_mark *k)
{
	clock_gettime(CLOCK_MONOTONIC, &k->wall);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &k->cpu);
}

/* Adds the time since acct_begin to the model's totals (only the comm worker runs
 * collectives, so there is one writer; the host reads after a sync). */
static void acct_end(struct _sf_comm_args *a, const struct acct_mark *k)
{
	struct acct_mark e;
	if (!a->acct)
		return;
	acct_begin(&e);
	a->acct->wall += 1e-9 * (double)_sf_ns_between(&k->wall, &e.wall);
	a->acct->cpu += 1e-9 * (double)_sf_ns_between(&k->cpu, &e.cpu);
}

struct clock_query {
	clockid_t id;
	int err;
};

static void clock_cpu(void *buffers[], void *cl_arg)
{
	struct clock_query *q = cl_arg;
	(void)buffers;
	q->err = pthread_getcpuclockid(pthread_self(), &q->id);
}

static struct starpu_codelet clock_cl = {
    .where = STARPU_CPU,
    .cpu_funcs = {clock_cpu},
    .cpu_funcs_name = {"clock_cpu"},
    .nbuffers = 0,
    .name = "worker clock",
};

int _sf_worker_cpu_clock(int worker, clockid_t *out)
{
	struct clock_query q = {.err = -1};
	struct starpu_task *t = starpu_task_create();
	if (!t)
		return SF_ERR(SF_ERR_NOMEM, "starpu_task_create failed");
	t->cl = &clock_cl;
	t->cl_arg = &q;
	t->execute_on_a_specific_worker = 1;
	t->workerid = (unsigned)worker;
	t->synchronous = 1;
	t->name = "worker clock";
	int ret = starpu_task_submit(t);
	if (ret != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_task_submit(worker clock) failed (%d)", ret);
	if (q.err != 0)
		return SF_ERR(SF_ERR_STARPU, "pthread_getcpuclockid on the comm worker failed: %s",
		              strerror(q.err));
	*out = q.id;
	return SF_OK;
}

double _sf_clock_seconds(clockid_t c)
{
	struct timespec t;
	if (clock_gettime(c, &t) != 0)
		return 0;
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void note_resident(struct _sf_comm_args *a, int delta)
{
	int now = atomic_fetch_add(a->resident, delta) + delta;
	int max = atomic_load(a->max_resident);
	while (now > max && !atomic_compare_exchange_weak(a->max_resident, &max, now))
		;
}

/* order[RW] shard[R] slot[W] (extra[R]): slot = concatenation of every rank's shard */
static void gather_cpu(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	const float *shard = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *full = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	STARPU_ASSERT(STARPU_VECTOR_GET_NX(buffers[2]) >= a->S * (size_t)a->nranks);
	STARPU_ASSERT_MSG(starpu_worker_get_id() == _sf_comm_worker,
	                  "a collective ran outside the comm worker");
	if (a->resident)
		note_resident(a, +1);
	if (_sf_skip == SF_SKIP_COMM)
		return;
	struct acct_mark k;
	acct_begin(&k);
	memcpy(full + (size_t)ring_rank(a->comm) * a->S, shard, a->S * sizeof(float));
	ring_allgather(a, full);
	acct_end(a, &k);
}

/* order[RW] grad[RW] gshard[W]: gshard = this rank's block of the sum over ranks */
static void reduce_scatter_cpu(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	float *grad = (float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *gshard = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	size_t padded = a->S * (size_t)a->nranks;
	/* the slot is shared by units of different sizes: its tail is stale */
	memset(grad + a->P, 0, (padded - a->P) * sizeof(float));
	if (_sf_skip == SF_SKIP_COMM)
		return;
	struct acct_mark k;
	acct_begin(&k);
	ring_reduce_scatter(a, grad, gshard);
	acct_end(a, &k);
}

/* order[RW] grad[RW]: grad = sum over ranks (replicated parameters) */
static void allreduce_cpu(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	float *grad = (float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	if (_sf_skip == SF_SKIP_COMM)
		return;
	MPI_Request req;
	struct acct_mark k;
	acct_begin(&k);
	mpi_assert(MPI_Iallreduce(MPI_IN_PLACE, grad, (int)a->P, MPI_FLOAT, MPI_SUM, a->comm, &req),
	           "MPI_Iallreduce");
	wait_one(&req, "MPI_Iallreduce");
	acct_end(a, &k);
}

/* order[RW] loss[RW]: one double summed over ranks */
static void loss_sum_cpu(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	double *v = (double *)STARPU_VECTOR_GET_PTR(buffers[1]);
	if (_sf_skip == SF_SKIP_COMM)
		return;
	MPI_Request req;
	struct acct_mark k;
	acct_begin(&k);
	mpi_assert(MPI_Iallreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE, MPI_SUM, a->comm, &req),
	           "MPI_Iallreduce(loss)");
	wait_one(&req, "MPI_Iallreduce(loss)");
	acct_end(a, &k);
}

/* slot[RW]: the unit's last reader is done; the slot may be gathered into again */
static void free_cpu(void *buffers[], void *cl_arg)
{
	(void)buffers;
	note_resident(cl_arg, -1);
}

#define COMM_CODELET(var, fn, n, ...)                                                              \
	struct starpu_codelet var = {                                                              \
	    .where = STARPU_CPU,                                                                   \
	    .cpu_funcs = {fn},                                                                     \
	    .cpu_funcs_name = {#fn},                                                               \
	    .nbuffers = n,                                                                         \
	    .modes = {__VA_ARGS__},                                                                \
	    .name = #fn,                                                                           \
	}

COMM_CODELET(_sf_cl_gather, gather_cpu, 3, STARPU_RW, STARPU_R, STARPU_W);
COMM_CODELET(_sf_cl_gather_after, gather_cpu, 4, STARPU_RW, STARPU_R, STARPU_W, STARPU_R);
COMM_CODELET(_sf_cl_reduce_scatter, reduce_scatter_cpu, 3, STARPU_RW, STARPU_RW, STARPU_W);
COMM_CODELET(_sf_cl_allreduce, allreduce_cpu, 2, STARPU_RW, STARPU_RW);
COMM_CODELET(_sf_cl_loss_sum, loss_sum_cpu, 2, STARPU_RW, STARPU_RW);

struct starpu_codelet _sf_cl_free = {
    .where = STARPU_CPU,
    .cpu_funcs = {free_cpu},
    .cpu_funcs_name = {"free_cpu"},
    .nbuffers = 1,
    .modes = {STARPU_RW},
    .can_execute = _sf_compute_can_execute,
    .name = "free",
};
