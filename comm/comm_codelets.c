/*
 * comm_codelets.c — the step's comm codelets (comm/comm_codelets.h), over whichever
 * backend the model's communicator has: the backend's table says how its collectives
 * run and how its memory is copied, so nothing here depends on which backends the
 * build has.
 *
 * A codelet cannot return a status: a failed collective asserts with the backend's
 * message. (With MPI, the step communicator's error handler aborts the job first, so
 * a rank that fails inside a collective takes the others down instead of leaving
 * them waiting.)
 */
#include "config.h"

#include "comm/comm_codelets.h"
#include "common/error.h"
#include "comm/comm.h"
#include "tasks/worker.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

/* ---- what the comm path costs: wall and CPU time of each collective task ---- */

struct acct_mark {
	struct timespec wall, cpu;
};

static void acct_begin(struct acct_mark *k)
{
	clock_gettime(CLOCK_MONOTONIC, &k->wall);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &k->cpu);
}

/* Whether this rank's sends in a ring leave its node: a ring of n members `stride`
 * ranks apart, this rank its member `pos`, sends to the next member (nodes: node_k
 * consecutive ranks) */
static bool ring_sends_out(const struct _sf_comm *c, int n, int pos, int stride)
{
	int next = c->rank + (pos + 1 < n ? stride : -(n - 1) * stride);
	return n > 1 && next / c->node_k != c->rank / c->node_k;
}

/* Bytes a rank sends in a ring of the shard group: N - 1 blocks of `bytes`; those of
 * its sends that leave the node count as inter-node (the world's ring crosses a node
 * boundary at the node's last rank; a hybrid node's ring never does; with TP the shard
 * group's members are tp_size ranks apart, so on nodes of whole TP groups every send
 * crosses). */
static void acct_bytes(struct _sf_comm_args *a, double bytes)
{
	struct _sf_comm *c = a->comm;
	if (!a->acct || _sf_skip == SF_SKIP_COMM)
		return;
	double sent = (double)(c->shard_size - 1) * bytes;
	a->acct->bytes += sent;
	if (ring_sends_out(c, c->shard_size, c->shard_rank, c->tp_size))
		a->acct->bytes_inter += sent;
}

/* The replica ring: every send leaves the node. */
static void acct_bytes_rep(struct _sf_comm_args *a, double bytes)
{
	struct _sf_comm *c = a->comm;
	if (!a->acct || _sf_skip == SF_SKIP_COMM)
		return;
	a->acct->bytes += (double)(c->rep_size - 1) * bytes;
	a->acct->bytes_inter += (double)(c->rep_size - 1) * bytes;
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

static void note_resident(struct _sf_comm_args *a, int delta)
{
	int now = atomic_fetch_add(a->resident, delta) + delta;
	int max = atomic_load(a->max_resident);
	while (now > max && !atomic_compare_exchange_weak(a->max_resident, &max, now))
		;
}

/* A collective that cannot complete ends the job, saying which one it was. */
static void comm_failed(struct _sf_comm_args *a, int rc, const char *kind)
{
	char why[1024];
	snprintf(why, sizeof why, "%s", sf_last_error()); /* _sf_err overwrites it */
	_sf_comm_fail_job(a->comm, rc, SF_FLIGHT_STEP, "%s of %s%s%s failed, ending the job: %s",
	                  kind, a->unit && a->unit[0] ? "unit \"" : "the loss",
	                  a->unit ? a->unit : "", a->unit && a->unit[0] ? "\"" : "", why);
}

/* A collective: its flight record entry (comm/flight.h), its time in the model's
 * totals, and the end of the job if it fails. key: the argument block it was
 * submitted with. */
#define COMM_RUN(a, key, kind, bytes, call)                                                        \
	do {                                                                                       \
		struct acct_mark k_;                                                               \
		int64_t fl_ = _sf_flight_start((a)->comm->flight, SF_FLIGHT_STEP, (key),            \
		                               current_name(), (bytes));                           \
		acct_begin(&k_);                                                                   \
		int rc_ = (call);                                                                  \
		_sf_flight_end((a)->comm->flight, fl_, rc_ == SF_OK);                              \
		if (rc_ != SF_OK)                                                                  \
			comm_failed((a), rc_, (kind));                                             \
		acct_end((a), &k_);                                                                \
	} while (0)

/* the running task's name (the trace's: "gather transformer.h.3 (L34)") */
static const char *current_name(void)
{
	struct starpu_task *t = starpu_task_get_current();
	return t && t->name ? t->name : "collective";
}

/* order[RW] shard[R] slot[W] (extra[R]): slot = concatenation of every rank's shard */
static void gather_run(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	struct _sf_comm *c = a->comm;
	const struct _sf_comm_mem *mo = c->ops->mem;
	const float *shard = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *full = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	STARPU_ASSERT(STARPU_VECTOR_GET_NX(buffers[2]) >= a->S * (size_t)c->shard_size);
	STARPU_ASSERT_MSG(starpu_worker_get_id() == _sf_comm_worker,
	                  "a collective ran outside the comm worker");
	if (a->resident)
		note_resident(a, +1);
	acct_bytes(a, (double)a->S * (a->param16 ? sizeof(uint16_t) : sizeof(float)));
	if (_sf_skip == SF_SKIP_COMM)
		return;
	if (a->param16) { /* bf16 on the wire; every block, this rank's too, rounded */
		COMM_RUN(a, a, "all-gather", (double)a->S * c->shard_size * sizeof(uint16_t),
		         c->ops->all_gather16(c, shard, full, a->S, a->stage16));
		return;
	}
	if (c->ops->all_gather_from) {
		COMM_RUN(a, a, "all-gather", (double)a->S * c->shard_size * sizeof(float),
		         c->ops->all_gather_from(c, shard, full, a->S));
		return;
	}
	mo->copy(full + (size_t)c->shard_rank * a->S, shard, a->S * sizeof(float));
	COMM_RUN(a, a, "all-gather", (double)a->S * c->shard_size * sizeof(float),
	         c->ops->all_gather(c, full, a->S));
}

/* order[RW] grad[RW] gshard[W]: gshard = this rank's block of the sum over ranks */
static void reduce_scatter_run(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	struct _sf_comm *c = a->comm;
	const struct _sf_comm_mem *mo = c->ops->mem;
	float *grad = (float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *gshard = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	size_t padded = a->S * (size_t)c->shard_size;
	/* the slot is shared by units of different sizes: its tail is stale */
	mo->zero(grad + a->P, (padded - a->P) * sizeof(float));
	acct_bytes(a, (double)a->S * (a->reduce16 ? sizeof(uint16_t) : sizeof(float)));
	if (_sf_skip == SF_SKIP_COMM)
		return;
	COMM_RUN(a, a, "reduce-scatter",
	         (double)padded * (a->reduce16 ? sizeof(uint16_t) : sizeof(float)),
	         a->reduce16 ? c->ops->reduce_scatter16(c, grad, a->S, gshard, a->scratch)
	                     : c->ops->reduce_scatter(c, grad, a->S, gshard, a->scratch));
}

/* order[RW] grad[RW]: grad = sum over ranks (replicated parameters) */
static void allreduce_run(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	float *grad = (float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	acct_bytes(a, 2.0 * (double)a->P * sizeof(float) / a->comm->size); /* as a ring's */
	if (_sf_skip == SF_SKIP_COMM)
		return;
	COMM_RUN(a, a, "all-reduce", (double)a->P * sizeof(float),
	         a->comm->ops->all_reduce(a->comm, grad, a->P));
}

/* order[RW] gshard[RW]: hybrid sharding's sum of a shard over the replicas */
static void rep_allreduce_run(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	struct _sf_comm *c = a->comm;
	float *g = (float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	acct_bytes_rep(a, 2.0 * (double)a->S * sizeof(float) / c->rep_size);
	if (_sf_skip == SF_SKIP_COMM)
		return;
	COMM_RUN(a, a, "all-reduce across nodes", (double)a->S * sizeof(float),
	         c->ops->rep_all_reduce(c, g, a->S, a->rep_scratch));
}

/* Tensor parallelism: v (P floats) summed over the TP group, as a ring all-reduce
 * (every member gets the same bits); with a destination, dst = v (or dst += v when
 * a->tp_acc: another consumer of the layer's input wrote its gradient first).
 *   tp_allreduce     : order[RW] v[RW]           (linear_row's partial outputs)
 *   tp_allreduce_into: order[RW] v[RW] dst[RW]   (linear_col's partial input gradient) */
static void tp_allreduce_sum(void *buffers[], struct _sf_comm_args *a)
{
	struct _sf_comm *c = a->comm;
	float *v = (float *)STARPU_VECTOR_GET_PTR(buffers[1]) + a->tp_off;
	if (a->acct && _sf_skip != SF_SKIP_COMM) { /* a ring's sends: 2 (K - 1) blocks of P / K */
		double sent =
		    2.0 * (double)(c->tp_size - 1) / c->tp_size * (double)a->P * sizeof(float);
		a->acct->bytes += sent;
		a->acct->bytes_tp += sent;
		/* TP groups are consecutive ranks: the ring leaves a node only where a group
		 * spans two (SHARDFLOW_TP not dividing the node's ranks) */
		if (ring_sends_out(c, c->tp_size, c->tp_rank, 1))
			a->acct->bytes_inter += sent;
	}
	if (_sf_skip == SF_SKIP_COMM)
		return;
	COMM_RUN(a, a, "tensor-parallel all-reduce", (double)a->P * sizeof(float),
	         c->ops->tp_all_reduce(c, v, a->P, a->tp_scratch));
}

static void tp_allreduce_run(void *buffers[], void *cl_arg)
{
	tp_allreduce_sum(buffers, cl_arg);
}

static void tp_allreduce_into_run(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	tp_allreduce_sum(buffers, a);
	const float *v = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *dst = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	const struct _sf_comm_mem *mo = a->comm->ops->mem;
	if (a->tp_acc) {
		mo->add(dst, v, a->P);
		return;
	}
	mo->copy(dst, v, a->P * sizeof(float));
	mo->sync(); /* a device backend's copy is on its stream: done before the task ends */
}

/* Sequence parallelism: v (P floats, the TP group's K blocks of rows) summed over the
 * group, this rank's block of the sum written (or, a->tp_acc, added) into dst:
 *   tp_rs     : order[RW] v[R] dst[W]    (a linear_row's partial outputs)
 *   tp_rs_into: order[RW] v[R] dst[RW]   (a linear_col's partial input gradient)
 * A ring's sends: K - 1 blocks of P / K, half an all-reduce's. */
/* shard_group: the same over the shard group, whose reduce-scatter consumes its input:
 * v copied into tp_scratch first (P floats, then the ring's S and the sum's S) */
static void group_rs(struct _sf_comm_args *a, const float *v, float *dst)
{
	struct _sf_comm *c = a->comm;
	size_t S = a->P / (size_t)c->shard_size;
	float *copy = a->tp_scratch, *out = a->tp_acc ? copy + a->P + S : dst;
	acct_bytes(a, (double)S * sizeof(float));
	if (_sf_skip == SF_SKIP_COMM)
		return;
	c->ops->mem->copy(copy, v, a->P * sizeof(float));
	COMM_RUN(a, a, "reduce-scatter", (double)a->P * sizeof(float),
	         c->ops->reduce_scatter(c, copy, S, out, copy + a->P));
	if (a->tp_acc)
		c->ops->mem->add(dst, out, S);
	c->ops->mem->sync();
}

static void tp_rs_run(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	struct _sf_comm *c = a->comm;
	float *v = (float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *dst = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	if (a->shard_group) {
		group_rs(a, v, dst);
		return;
	}
	size_t K = (size_t)c->tp_size, S = a->P / K;
	float *out = a->tp_acc ? a->tp_scratch + K * S : dst; /* the ring's tmp, free after */
	if (a->acct && _sf_skip != SF_SKIP_COMM) {
		double sent = (double)(K - 1) * (double)S * sizeof(float);
		a->acct->bytes += sent;
		a->acct->bytes_tp += sent;
		if (ring_sends_out(c, c->tp_size, c->tp_rank, 1))
			a->acct->bytes_inter += sent;
	}
	if (_sf_skip == SF_SKIP_COMM)
		return;
	COMM_RUN(a, a, "tensor-parallel reduce-scatter", (double)a->P * sizeof(float),
	         c->ops->tp_reduce_scatter(c, v, S, out, a->tp_scratch));
	if (a->tp_acc)
		c->ops->mem->add(dst, out, S);
	c->ops->mem->sync();
}

/* order[RW] local[R] whole[W]: gather_output's all-gather over the TP group */
static void tp_gather_run(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	struct _sf_comm *c = a->comm;
	const struct _sf_comm_mem *mo = c->ops->mem;
	const float *mine = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *whole = (float *)STARPU_VECTOR_GET_PTR(buffers[2]), *all = a->tp_scratch;
	size_t n = a->tp_rows * a->tp_lcols, K = (size_t)c->tp_size;
	if (a->shard_group) { /* the shard group's blocks, in place in rank order */
		acct_bytes(a, (double)n * sizeof(float));
		mo->copy(whole + (size_t)c->shard_rank * n, mine, n * sizeof(float));
		if (_sf_skip != SF_SKIP_COMM)
			COMM_RUN(a, a, "all-gather", (double)n * c->shard_size * sizeof(float),
			         c->ops->all_gather(c, whole, n));
		mo->sync();
		return;
	}
	if (a->acct && _sf_skip != SF_SKIP_COMM) { /* a ring's sends: K - 1 blocks */
		double sent = (double)(K - 1) * (double)n * sizeof(float);
		a->acct->bytes += sent;
		a->acct->bytes_tp += sent;
		if (ring_sends_out(c, c->tp_size, c->tp_rank, 1))
			a->acct->bytes_inter += sent;
	}
	mo->copy(all + (size_t)c->tp_rank * n, mine, n * sizeof(float));
	if (_sf_skip != SF_SKIP_COMM)
		COMM_RUN(a, a, "tensor-parallel all-gather", (double)n * K * sizeof(float),
		         c->ops->tp_all_gather(c, all, n));
	for (size_t t = 0; t < K; t++) /* rank t's columns into their places */
		for (int k = 0; k < a->tp_nruns; k++) {
			const struct _sf_tp_run *u = &a->tp_runs[t * SF_MAX_PARAM_TENSORS + (size_t)k];
			mo->copy2d(whole + u->whole, a->tp_cols * sizeof(float),
			           all + t * n + u->local, a->tp_lcols * sizeof(float),
			           u->n * sizeof(float), a->tp_rows);
		}
	mo->sync();
}

/* whole[R] local[W]: this rank's columns of gather_output's gradient */
static void tp_slice_run(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	struct _sf_comm *c = a->comm;
	const struct _sf_comm_mem *mo = c->ops->mem;
	const float *whole = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
	float *mine = (float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	for (int k = 0; k < a->tp_nruns; k++) {
		const struct _sf_tp_run *u =
		    &a->tp_runs[(size_t)c->tp_rank * SF_MAX_PARAM_TENSORS + (size_t)k];
		mo->copy2d(mine + u->local, a->tp_lcols * sizeof(float), whole + u->whole,
		           a->tp_cols * sizeof(float), u->n * sizeof(float), a->tp_rows);
	}
	mo->sync();
}

/* order[RW] loss[RW]: one double summed over ranks (with TP, the K members of a TP
 * group computed the same loss: only the first one's counts; with a pipeline, only the
 * last stage computes one) */
static void loss_sum_run(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	double *v = (double *)STARPU_VECTOR_GET_PTR(buffers[1]);
	if (a->comm->tp_rank != 0 || a->comm->pp_rank != a->comm->pp_size - 1 ||
	    (a->shard_group && a->comm->shard_rank != 0)) {
		double zero = 0.0;
		a->comm->ops->mem->from_host(v, &zero, sizeof zero);
	}
	if (_sf_skip == SF_SKIP_COMM)
		return;
	COMM_RUN(a, a, "all-reduce", (double)sizeof *v, a->comm->ops->sum_scalar(a->comm, v));
}

/* order[RW] clip[W] sq_0..sq_{U-1}[R]: the gradient's global 2-norm and clip factor.
 * Each sq_u is this rank's share of unit u's squared norm (its shard, or its slice of a
 * replicated unit: every element is counted once over the ranks); summed in unit order,
 * then over the ranks. */
static void grad_norm_run(void *buffers[], void *cl_arg)
{
	struct _sf_norm_args a;
	starpu_codelet_unpack_args(cl_arg, &a);
	const struct _sf_comm_mem *mo = a.comm->comm->ops->mem;
	double *clip = (double *)STARPU_VECTOR_GET_PTR(buffers[1]);
	double sum = 0.0, part, out[2];
	for (int u = 0; u < a.nunits; u++) { /* its runs' sums (one, but with TP), in order */
		const double *sq = (const double *)STARPU_VECTOR_GET_PTR(buffers[2 + u]);
		for (size_t k = 0; k < STARPU_VECTOR_GET_NX(buffers[2 + u]); k++) {
			mo->to_host(&part, sq + k, sizeof part);
			sum += part;
		}
	}
	if (_sf_skip != SF_SKIP_COMM) {
		mo->from_host(clip, &sum, sizeof sum);
		COMM_RUN(a.comm, a.comm, "all-reduce", (double)sizeof sum,
		         a.comm->comm->ops->sum_scalar(a.comm->comm, clip));
		mo->to_host(&sum, clip, sizeof sum);
	}
	out[0] = sqrt(sum / a.replicas) * (double)a.scale;
	out[1] = _sf_clip_factor(out[0], a.max_norm);
	mo->from_host(clip, out, sizeof out);
}

double _sf_clip_factor(double norm, float max_norm)
{
	/* torch.nn.utils.clip_grad_norm_: max_norm / (norm + 1e-6), clamped to 1 */
	if (isinf(max_norm))
		return 1.0;
	double f = (double)max_norm / (norm + 1e-6);
	return f < 1.0 ? f : 1.0;
}

/* order[RW] v[R] / v[W]: a pipeline stage's boundary tensor to or from the peer */
static void pp_transfer(void *buffers[], struct _sf_p2p_args *a, bool send)
{
	float *v = (float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	size_t n = a->n ? a->n : STARPU_VECTOR_GET_NX(buffers[1]);
	struct _sf_comm *c = a->comm.comm;
	STARPU_ASSERT_MSG(n <= STARPU_VECTOR_GET_NX(buffers[1]),
	                  "pipeline transfer of \"%s\": %zu floats from a buffer of %zu",
	                  a->comm.unit, n, (size_t)STARPU_VECTOR_GET_NX(buffers[1]));
	if (_sf_skip == SF_SKIP_COMM)
		return;
	if (a->tag > 0) {
		STARPU_ASSERT_MSG(!a->req && c->ops->p2p_tagged_post,
		                  "pipeline transfer of \"%s\" posted twice, or untagged", a->comm.unit);
		COMM_RUN(&a->comm, a, send ? "pipeline send (post)" : "pipeline receive (post)",
		         (double)(n * sizeof *v),
		         c->ops->p2p_tagged_post(c, v, n, a->peer, send, a->tag, &a->req));
	} else if (c->ops->p2p_post) {
		STARPU_ASSERT_MSG(!a->req,
		                  "pipeline transfer of \"%s\" posted twice before its wait",
		                  a->comm.unit);
		COMM_RUN(&a->comm, a, send ? "pipeline send (post)" : "pipeline receive (post)",
		         (double)(n * sizeof *v),
		         c->ops->p2p_post(c, v, n, a->peer, send, &a->req));
	} else {
		COMM_RUN(&a->comm, a, send ? "pipeline send" : "pipeline receive",
		         (double)(n * sizeof *v), c->ops->p2p(c, v, n, a->peer, send));
	}
	if (send && a->comm.acct) {
		a->comm.acct->bytes += (double)(n * sizeof *v);
		if (a->peer / a->comm.comm->node_k != a->comm.comm->rank / a->comm.comm->node_k)
			a->comm.acct->bytes_inter += (double)(n * sizeof *v);
	}
}

static void pp_send_run(void *buffers[], void *cl_arg)
{
	pp_transfer(buffers, cl_arg, true);
}

static void pp_recv_run(void *buffers[], void *cl_arg)
{
	pp_transfer(buffers, cl_arg, false);
}

/* order[RW] v[R] / v[RW]: the posted transfer done. The comm worker waits here only
 * for data that the tasks after it need (the planner submits it so). */
static void pp_wait(struct _sf_p2p_args *a, bool send)
{
	struct _sf_comm *c = a->comm.comm;
	if (_sf_skip == SF_SKIP_COMM)
		return;
	STARPU_ASSERT_MSG(a->req, "pipeline transfer of \"%s\" waited for but not posted",
	                  a->comm.unit);
	COMM_RUN(&a->comm, a, send ? "pipeline send" : "pipeline receive", 0.0,
	         c->ops->p2p_wait(c, a->req, send));
	a->req = NULL;
}

static void pp_wait_send_run(void *buffers[], void *cl_arg)
{
	(void)buffers;
	pp_wait(cl_arg, true);
}

static void pp_wait_recv_run(void *buffers[], void *cl_arg)
{
	(void)buffers;
	pp_wait(cl_arg, false);
}

/* order[RW] src[R] dst[W]: context parallelism's ring step, a->P floats of src to the
 * next CP rank while dst receives the previous one's */
static void cp_shift_run(void *buffers[], void *cl_arg)
{
	struct _sf_comm_args *a = cl_arg;
	struct _sf_comm *c = a->comm;
	const float *src = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *dst = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	if (_sf_skip == SF_SKIP_COMM)
		return;
	double bytes = (double)a->P * sizeof(float);
	COMM_RUN(a, a, "context-parallel ring step", bytes, c->ops->cp_shift(c, src, dst, a->P));
	if (a->acct) { /* the next CP rank is tp_size ranks on, the first one K - 1 back */
		a->acct->bytes += bytes;
		if (ring_sends_out(c, c->cp_size, c->cp_rank, c->tp_size))
			a->acct->bytes_inter += bytes;
	}
}

/* slot[RW]: the unit's last reader is done; the slot may be gathered into again */
static void free_cpu(void *buffers[], void *cl_arg)
{
	(void)buffers;
	note_resident(cl_arg, -1);
}

/* A comm codelet runs on the comm worker: a CPU worker (MPI), or a CUDA worker whose
 * body waits for its stream itself (NCCL), hence no STARPU_CUDA_ASYNC. Its body is the
 * same for both: the backend's own memory operations (struct _sf_comm_mem) are the
 * only difference, so the codelet runs wherever the backend put the comm worker. The
 * task names are the ones traces have always shown. */
#ifdef SF_HAVE_CUDA
#define SF_COMM_WHERE (STARPU_CPU | STARPU_CUDA)
#define SF_COMM_CUDA(f) .cuda_funcs = {f},
#else
#define SF_COMM_WHERE STARPU_CPU
#define SF_COMM_CUDA(f)
#endif
#define COMM_CODELET(var, base, n, ...)                                                            \
	struct starpu_codelet var = {                                                              \
	    .where = SF_COMM_WHERE,                                                                \
	    .cpu_funcs = {base##_run},                                                             \
	    .cpu_funcs_name = {#base "_run"},                                                      \
	    SF_COMM_CUDA(base##_run).nbuffers = n,                                                 \
	    .modes = {__VA_ARGS__},                                                                \
	    .flags = SF_SIM_EXECUTE,                                                               \
	    .name = #base "_cpu",                                                                  \
	}

COMM_CODELET(_sf_cl_gather, gather, 3, STARPU_RW, STARPU_R, STARPU_W);
COMM_CODELET(_sf_cl_gather_after, gather, 4, STARPU_RW, STARPU_R, STARPU_W, STARPU_R);
COMM_CODELET(_sf_cl_reduce_scatter, reduce_scatter, 3, STARPU_RW, STARPU_RW, STARPU_W);
COMM_CODELET(_sf_cl_allreduce, allreduce, 2, STARPU_RW, STARPU_RW);
COMM_CODELET(_sf_cl_rep_allreduce, rep_allreduce, 2, STARPU_RW, STARPU_RW);
COMM_CODELET(_sf_cl_loss_sum, loss_sum, 2, STARPU_RW, STARPU_RW);
COMM_CODELET(_sf_cl_tp_allreduce, tp_allreduce, 2, STARPU_RW, STARPU_RW);
COMM_CODELET(_sf_cl_tp_allreduce_into, tp_allreduce_into, 3, STARPU_RW, STARPU_RW, STARPU_RW);
/* the same body, its destination overwritten (a->tp_acc 0) */
COMM_CODELET(_sf_cl_tp_allreduce_set, tp_allreduce_into, 3, STARPU_RW, STARPU_RW, STARPU_W);
COMM_CODELET(_sf_cl_tp_gather, tp_gather, 3, STARPU_RW, STARPU_R, STARPU_W);
COMM_CODELET(_sf_cl_tp_rs, tp_rs, 3, STARPU_RW, STARPU_R, STARPU_W);
/* the same body, its destination added to (a->tp_acc) */
COMM_CODELET(_sf_cl_tp_rs_into, tp_rs, 3, STARPU_RW, STARPU_R, STARPU_RW);
COMM_CODELET(_sf_cl_tp_slice, tp_slice, 2, STARPU_R, STARPU_W);
COMM_CODELET(_sf_cl_grad_norm, grad_norm, STARPU_VARIABLE_NBUFFERS, 0);
COMM_CODELET(_sf_cl_pp_send, pp_send, 2, STARPU_RW, STARPU_R);
COMM_CODELET(_sf_cl_pp_recv, pp_recv, 2, STARPU_RW, STARPU_W);
COMM_CODELET(_sf_cl_pp_wait_send, pp_wait_send, 2, STARPU_RW, STARPU_R);
COMM_CODELET(_sf_cl_pp_wait_recv, pp_wait_recv, 2, STARPU_RW, STARPU_RW);
COMM_CODELET(_sf_cl_cp_shift, cp_shift, 3, STARPU_RW, STARPU_R, STARPU_W);

/* a compute codelet, where the unit's slot is: no data moves (CUDA builds: the GPU's
 * compute worker when there is one, by the placement rule of tasks/worker.c; its body
 * enqueues nothing, so it is asynchronous and does not drain the worker's stream) */
struct starpu_codelet _sf_cl_free = {
#ifdef SF_HAVE_CUDA
    .where = STARPU_CPU | STARPU_CUDA,
    .cuda_funcs = {free_cpu},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#else
    .where = STARPU_CPU,
#endif
    .cpu_funcs = {free_cpu},
    .cpu_funcs_name = {"free_cpu"},
    .nbuffers = 1,
    .modes = {STARPU_RW},
    .can_execute = _sf_compute_can_execute,
    .flags = SF_SIM_EXECUTE,
    .name = "free",
};

/* --- submitting them ------------------------------------------------------------------ */

/* every collective's argument block is the model's, passed by pointer; each is
 * queued in the flight record (comm/flight.h) as it is submitted */
static int submit_comm(struct starpu_codelet *cl, const struct starpu_data_descr *d, int n,
                       struct _sf_comm_args *a, int worker, const char *name,
                       struct _sf_task_done done)
{
	if (cl != &_sf_cl_free && _sf_skip != SF_SKIP_COMM)
		_sf_flight_submit(a->comm->flight, a, name, 0);
	return _sf_task_submit(cl, d, n, a, sizeof *a, false, worker, name, done);
}
#define SUBMIT_COMM(cl, d, n, a, worker, name, done) submit_comm(cl, d, n, a, worker, name, done)

int _sf_submit_gather(struct _sf_comm_args *a, starpu_data_handle_t order,
                      starpu_data_handle_t shard, starpu_data_handle_t full,
                      starpu_data_handle_t after, int worker, const char *name,
                      struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {
	    {order, STARPU_RW}, {shard, STARPU_R}, {full, STARPU_W}, {after, STARPU_R}};
	return SUBMIT_COMM(after ? &_sf_cl_gather_after : &_sf_cl_gather, d, after ? 4 : 3, a,
	                   worker, name, done);
}

int _sf_submit_free(struct _sf_comm_args *a, starpu_data_handle_t full, const char *name,
                    struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{full, STARPU_RW}};
	return SUBMIT_COMM(&_sf_cl_free, d, 1, a, -1, name, done);
}

int _sf_submit_reduce(struct _sf_comm_args *a, starpu_data_handle_t order,
                      starpu_data_handle_t grad, starpu_data_handle_t out, int worker,
                      const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{order, STARPU_RW}, {grad, STARPU_RW}, {out, STARPU_W}};
	return SUBMIT_COMM(out ? &_sf_cl_reduce_scatter : &_sf_cl_allreduce, d, out ? 3 : 2, a,
	                   worker, name, done);
}

int _sf_submit_rep_allreduce(struct _sf_comm_args *a, starpu_data_handle_t order,
                             starpu_data_handle_t v, int worker, const char *name,
                             struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{order, STARPU_RW}, {v, STARPU_RW}};
	return SUBMIT_COMM(&_sf_cl_rep_allreduce, d, 2, a, worker, name, done);
}

int _sf_submit_tp_allreduce(struct _sf_comm_args *a, starpu_data_handle_t order,
                            starpu_data_handle_t v, starpu_data_handle_t dst, int worker,
                            const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {
	    {order, STARPU_RW}, {v, STARPU_RW}, {dst, a->tp_acc ? STARPU_RW : STARPU_W}};
	struct starpu_codelet *cl = !dst        ? &_sf_cl_tp_allreduce
	                            : a->tp_acc ? &_sf_cl_tp_allreduce_into
	                                        : &_sf_cl_tp_allreduce_set;
	return SUBMIT_COMM(cl, d, dst ? 3 : 2, a, worker, name, done);
}

int _sf_submit_tp_gather(struct _sf_comm_args *a, starpu_data_handle_t order,
                         starpu_data_handle_t local, starpu_data_handle_t whole, int worker,
                         const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{order, STARPU_RW}, {local, STARPU_R}, {whole, STARPU_W}};
	return SUBMIT_COMM(&_sf_cl_tp_gather, d, 3, a, worker, name, done);
}

int _sf_submit_tp_rs(struct _sf_comm_args *a, starpu_data_handle_t order, starpu_data_handle_t v,
                     starpu_data_handle_t dst, int worker, const char *name,
                     struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {
	    {order, STARPU_RW}, {v, STARPU_R}, {dst, a->tp_acc ? STARPU_RW : STARPU_W}};
	return SUBMIT_COMM(a->tp_acc ? &_sf_cl_tp_rs_into : &_sf_cl_tp_rs, d, 3, a, worker, name,
	                   done);
}

int _sf_submit_cp_shift(struct _sf_comm_args *a, starpu_data_handle_t order,
                        starpu_data_handle_t src, starpu_data_handle_t dst, int worker,
                        const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{order, STARPU_RW}, {src, STARPU_R}, {dst, STARPU_W}};
	return SUBMIT_COMM(&_sf_cl_cp_shift, d, 3, a, worker, name, done);
}

int _sf_submit_tp_slice(struct _sf_comm_args *a, starpu_data_handle_t whole,
                        starpu_data_handle_t local, int worker, const char *name,
                        struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{whole, STARPU_R}, {local, STARPU_W}};
	/* no collective: not in the flight record */
	return _sf_task_submit(&_sf_cl_tp_slice, d, 2, a, sizeof *a, false, worker, name, done);
}

int _sf_submit_loss_sum(struct _sf_comm_args *a, starpu_data_handle_t order,
                        starpu_data_handle_t loss, int worker, const char *name,
                        struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{order, STARPU_RW}, {loss, STARPU_RW}};
	return SUBMIT_COMM(&_sf_cl_loss_sum, d, 2, a, worker, name, done);
}

int _sf_submit_pp_transfer(struct _sf_p2p_args *a, bool send, starpu_data_handle_t order,
                           starpu_data_handle_t v, int worker, const char *name,
                           struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{order, STARPU_RW}, {v, send ? STARPU_R : STARPU_W}};
	if (_sf_skip != SF_SKIP_COMM)
		_sf_flight_submit(a->comm.comm->flight, a, name, 0);
	return _sf_task_submit(send ? &_sf_cl_pp_send : &_sf_cl_pp_recv, d, 2, a, sizeof *a, false,
	                       worker, name, done);
}

int _sf_submit_pp_wait(struct _sf_p2p_args *a, bool send, starpu_data_handle_t order,
                       starpu_data_handle_t v, int worker, const char *name,
                       struct _sf_task_done done)
{
	const struct _sf_comm_ops *ops = a->comm.comm->ops;
	if (!ops->p2p_post && !(a->tag > 0 && ops->p2p_tagged_post)) /* the transfer was whole */
		return SF_OK;
	struct starpu_data_descr d[] = {{order, STARPU_RW}, {v, send ? STARPU_R : STARPU_RW}};
	if (_sf_skip != SF_SKIP_COMM)
		_sf_flight_submit(a->comm.comm->flight, a, name, 0);
	return _sf_task_submit(send ? &_sf_cl_pp_wait_send : &_sf_cl_pp_wait_recv, d, 2, a,
	                       sizeof *a, false, worker, name, done);
}

int _sf_submit_grad_norm(const struct _sf_norm_args *a, starpu_data_handle_t order,
                         starpu_data_handle_t clip, const starpu_data_handle_t *sq,
                         struct starpu_data_descr *descr, int worker, const char *name,
                         struct _sf_task_done done)
{
	descr[0] = (struct starpu_data_descr){order, STARPU_RW};
	descr[1] = (struct starpu_data_descr){clip, STARPU_W};
	for (int u = 0; u < a->nunits; u++)
		descr[2 + u] = (struct starpu_data_descr){sq[u], STARPU_R};
	if (_sf_skip != SF_SKIP_COMM)
		_sf_flight_submit(a->comm->comm->flight, a->comm, name, 0);
	return _sf_task_submit(&_sf_cl_grad_norm, descr, a->nunits + 2, a, sizeof *a, true, worker,
	                       name, done);
}
