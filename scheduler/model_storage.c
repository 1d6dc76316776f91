/*
 * model_storage.c — a model's storage: every buffer a step touches, allocated and
 * registered with StarPU here, once, at sf_model_create, and released at
 * sf_model_destroy; steps only submit tasks on these handles.
 *
 * Two tables drive it: unit_vecs, a unit's vectors, and model_bufs, the model's shared
 * buffers (gradient slots, gather ring, accumulation buffer, the collectives' scratch).
 * Each row's length function, under the model's configuration, drives the allocation,
 * the release, the memory plan that SHARDFLOW_MEMORY_CHECK checks before anything is
 * allocated, and the floats sf_model_stats counts: a buffer added is a row. Then the
 * nodes' activations (in a simulation, bare address space: alloc_task_only), the
 * units' initial parameters, and the handles of the labels, losses and clipping. The
 * sizes are scheduler/model_layout.c's, which calls nothing here. With a pipeline a
 * rank keeps what scheduler/pipeline.c marked (no vector of a unit `elsewhere`, a
 * node's buffers by its `hold`, the shared buffers sized by the held units) and the
 * plan counts its activation sets (m->act_sets; the inputs pp_micro). Shape letters: N
 * ranks, P parameters of a unit, S = ceil(P / N) its shard, w the planner's width
 * (1 for a chain of units, scheduler/plan.c).
 *
 *   sharding  resident per unit              ring (gather)          grad slots
 *   full      shard S, gshard S, state S     R = depth+w slots, N*S G = 1+w slots, N*S
 *   grad_op   full N*S, shard S, gshard S    -                      G slots, N*S
 *   none      full P, state P                -                      G slots, P
 *
 * A slot holds the N*S (or P) of the largest unit that ever takes it, not S_max: the
 * step's slot order is replayed at planning (scheduler/plan.c, _sf_plan_slots), so a
 * tied embedding far larger than the blocks sizes only the slot it holds.
 */
#include "config.h"

#include "common/memlimit.h"
#include "scheduler/model_layout.h"
#include "scheduler/model_storage.h"
#include "scheduler/vocabdp.h"
#include "sim/comm_sim.h"
#include "tasks/optim.h"

#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int _sf_alloc_floats(float **p, size_t n, const char *what)
{
	/* 64-byte alignment for the vector kernels; zeroed so pads are zero */
	size_t bytes = (n ? n : 1) * sizeof(float);
	bytes = (bytes + 63) & ~(size_t)63;
#ifdef SF_SIMULATION
	/* simulated time computes no values: SMPI folds the large blocks onto shared
	 * pages (tools/shardflow-sim sets the threshold), so a simulated model of any size
	 * fits this machine (docs/scale.md). Only these buffers: the build compiles with
	 * SMPI_NO_OVERRIDE_MALLOC, as SMPI's interception of every malloc would fold the
	 * library's own tables too, where each rank keeps its own handles (configure.ac) */
	*p = smpi_shared_malloc_intercept(bytes, __FILE__, __LINE__);
#else
	*p = aligned_alloc(64, bytes);
#endif
	if (!*p)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: cannot allocate %zu bytes for %s",
		              bytes, what);
#ifndef SF_SIMULATION
	memset(*p, 0, bytes);
#endif
	return SF_OK;
}

/* Releases what _sf_alloc_floats gave */
void _sf_free_floats(float *p)
{
#ifdef SF_SIMULATION
	smpi_shared_free(p);
#else
	free(p);
#endif
}

/* A buffer that only tasks read and write: activations, their gradients and saved
 * buffers (the main thread fills the graph's inputs, which are not of this kind). A
 * simulation runs no task body, so there they get address space that no page backs:
 * an anonymous mapping, never written, which costs the kernel nothing whatever its
 * size, where SMPI's folded memory costs it time in proportion to the bytes folded
 * (Llama 3 8B at context 8192 on 128 simulated GPUs: 10 TB; docs/scale.md).
 *
 * Even unbacked, address space runs out: every simulated rank lives in the one SMPI
 * process, whose 128 TiB Llama 3 70B's activations at 512 ranks exceed. So the
 * buffers of one size class (the power of two at or above their size) share one
 * mapping, counted by its users: a rank maps at most twice its largest buffer. StarPU
 * accepts handles on one address (its pointer lookup keeps the first). */
#ifdef SF_SIMULATION
static struct task_only_class {
	void *base;
	int users;
} task_only_pool[64];
static pthread_mutex_t task_only_lock = PTHREAD_MUTEX_INITIALIZER;

static int task_only_class(size_t bytes)
{
	int c = 12; /* a page at least */
	while (((size_t)1 << c) < bytes)
		c++;
	return c;
}
#endif

static int alloc_task_only(float **p, size_t n, const char *what)
{
#ifdef SF_SIMULATION
	size_t bytes = (n ? n : 1) * sizeof(float);
	int c = task_only_class(bytes);
	struct task_only_class *k = &task_only_pool[c];
	pthread_mutex_lock(&task_only_lock);
	if (!k->base) {
		void *base = mmap(NULL, (size_t)1 << c, PROT_READ | PROT_WRITE,
		                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (base == MAP_FAILED) {
			pthread_mutex_unlock(&task_only_lock);
			return SF_ERR(SF_ERR_NOMEM,
			              "sf_model_create: cannot map %zu bytes of address space "
			              "for %s (simulation: nothing is written there)",
			              (size_t)1 << c, what);
		}
		k->base = base;
	}
	k->users++;
	*p = k->base;
	pthread_mutex_unlock(&task_only_lock);
	return SF_OK;
#else
	return _sf_alloc_floats(p, n, what);
#endif
}

/* The unit vectors and the model's shared buffers (gather ring, gradient slots, the
 * collectives' scratch) are written by tasks and collectives alone, and a simulation
 * initialises no parameter: with the collectives by NCCL's cost model, which moves no
 * byte, nothing writes them (SMPI's rings, --collectives mpi, copy into them). */
static void set_bufs_task_only(struct sf_model *m)
{
#ifdef SF_SIMULATION
	m->bufs_task_only = _sf_comm_sim_modelled();
#else
	m->bufs_task_only = false;
#endif
}

static void free_task_only(float *p)
{
#ifdef SF_SIMULATION
	if (!p)
		return;
	pthread_mutex_lock(&task_only_lock);
	for (int c = 0; c < 64; c++) {
		struct task_only_class *k = &task_only_pool[c];
		if (k->base == p) {
			if (--k->users == 0) {
				munmap(k->base, (size_t)1 << c);
				k->base = NULL;
			}
			break;
		}
	}
	pthread_mutex_unlock(&task_only_lock);
#else
	_sf_free_floats(p); /* alloc_task_only's _sf_alloc_floats */
#endif
}

/* scheduler/pipeline.c's micro-batch sets, whose activations are task-only as the
 * nodes' own */
int _sf_alloc_task_only(float **p, size_t n, const char *what)
{
	return alloc_task_only(p, n, what);
}

void _sf_free_task_only(float *p)
{
	free_task_only(p);
}

/* The unit vectors' and the model's buffers: task-only where set_bufs_task_only said so
 * (m->bufs_task_only, kept so that the release matches the allocation) */
static int alloc_buf(const struct sf_model *m, float **p, size_t n, const char *what)
{
	return m->bufs_task_only ? alloc_task_only(p, n, what) : _sf_alloc_floats(p, n, what);
}

static void free_buf(const struct sf_model *m, float *p)
{
	if (m->bufs_task_only)
		free_task_only(p);
	else
		_sf_free_floats(p);
}

static void reg(starpu_data_handle_t *h, void *ptr, size_t n, size_t elem)
{
	starpu_vector_data_register(h, STARPU_MAIN_RAM, (uintptr_t)ptr, (uint32_t)n, elem);
}

int _sf_data_acquire(starpu_data_handle_t h, enum starpu_data_access_mode mode)
{
	int ret = starpu_data_acquire(h, mode);
	if (ret != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_data_acquire failed (%d)", ret);
	return SF_OK;
}

static void unreg(starpu_data_handle_t *h)
{
	if (*h) {
		starpu_data_unregister(*h);
		*h = NULL;
	}
}

/* --- a unit's vectors, from one table ------------------------------------------------ */

/* Each vector's length in floats under the model's configuration, 0 when it keeps
 * none; `accumulating`: once sf_model_accumulate has been called (its buffers are
 * made then, not for the models that never accumulate). */
static size_t len_shard(const struct sf_model *m, const struct _sf_unit *u, bool acc)
{
	(void)acc;
	return _sf_unit_sharding(m) != SF_SHARD_NONE ? u->S : 0;
}
static size_t len_gshard(const struct sf_model *m, const struct _sf_unit *u, bool acc)
{
	if (u->frozen)
		return 0;
	/* replicated: the optimizer's gradient when it cannot read the slot (clipping:
	 * the slot is reused before the norm; micro-batches: the sum outlives the pass) */
	if (_sf_unit_sharding(m) != SF_SHARD_NONE)
		return u->S;
	return m->opt.max_grad_norm > 0.0f || acc ? u->P : 0;
}
static size_t len_full(const struct sf_model *m, const struct _sf_unit *u, bool acc)
{
	(void)acc;
	enum sf_sharding sh = _sf_unit_sharding(m);
	if (u->vocab_rows) /* never gathered (scheduler/vocabdp.c) */
		return 0;
	return sh == SF_SHARD_FULL ? 0 : sh == SF_SHARD_NONE ? u->P : u->S * (size_t)m->shard_size;
}
static size_t len_m(const struct sf_model *m, const struct _sf_unit *u, bool acc)
{
	(void)m, (void)acc;
	return u->frozen ? 0 : u->opt_n;
}
static size_t len_v(const struct sf_model *m, const struct _sf_unit *u, bool acc)
{
	(void)acc;
	return _sf_optim_families[m->opt.optimizer].nstate == 2 && !u->frozen ? u->opt_n : 0;
}
static size_t len_acc(const struct sf_model *m, const struct _sf_unit *u, bool acc)
{
	if (!acc || m->cfg.accum_mode != SF_ACCUM_LOCAL || u->frozen)
		return 0;
	return _sf_unit_grad_n(u); /* the gradient slot's */
}

/* what sf_model_stats (and the memory plan) counts a vector as */
enum vec_kind { VEC_PARAMS, VEC_GRADS, VEC_OPTIM, VEC_BUFFERS, VEC_KINDS };

static const struct unit_vec {
	size_t buf, handle; /* offsetof(struct _sf_unit, the float * and its handle) */
	size_t (*len)(const struct sf_model *m, const struct _sf_unit *u, bool accumulating);
	enum vec_kind kind; /* what sf_model_stats counts it as */
	const char *what;   /* for the out-of-memory message */
} unit_vecs[] = {
    {offsetof(struct _sf_unit, shard), offsetof(struct _sf_unit, h_shard), len_shard, VEC_PARAMS,
     "a parameter shard"},
    {offsetof(struct _sf_unit, full), offsetof(struct _sf_unit, h_full), len_full, VEC_PARAMS,
     "replicated parameters"},
    {offsetof(struct _sf_unit, gshard), offsetof(struct _sf_unit, h_gshard), len_gshard, VEC_GRADS,
     "a reduced gradient"},
    {offsetof(struct _sf_unit, acc), offsetof(struct _sf_unit, h_acc), len_acc, VEC_GRADS,
     "a gradient accumulation buffer"},
    {offsetof(struct _sf_unit, m), offsetof(struct _sf_unit, h_m), len_m, VEC_OPTIM,
     "optimizer state"},
    {offsetof(struct _sf_unit, v), offsetof(struct _sf_unit, h_v), len_v, VEC_OPTIM,
     "optimizer state"},
};
#define NUNIT_VECS (sizeof unit_vecs / sizeof unit_vecs[0])

/* The member at byte offset `off` (a table's offsetof) of the struct at base */
static void *member(const void *base, size_t off)
{
	return (char *)base + off;
}
static float **vec_buf(struct _sf_unit *u, const struct unit_vec *v)
{
	return member(u, v->buf);
}
static starpu_data_handle_t *vec_handle(struct _sf_unit *u, const struct unit_vec *v)
{
	return member(u, v->handle);
}

/* Allocates and registers every vector the configuration keeps and the unit lacks */
static int unit_vecs_alloc(struct sf_model *m, struct _sf_unit *u, bool accumulating)
{
	if (u->elsewhere) /* another pipeline stage's */
		return SF_OK;
	for (size_t k = 0; k < NUNIT_VECS; k++) {
		const struct unit_vec *v = &unit_vecs[k];
		size_t n = v->len(m, u, accumulating);
		float **buf = vec_buf(u, v);
		if (n == 0 || *buf)
			continue;
		SF_CHECK(alloc_buf(m, buf, n, v->what));
		reg(vec_handle(u, v), *buf, n, sizeof(float));
	}
	return SF_OK;
}

static void unit_vecs_release(const struct sf_model *m, struct _sf_unit *u)
{
	for (size_t k = 0; k < NUNIT_VECS; k++) {
		unreg(vec_handle(u, &unit_vecs[k]));
		free_buf(m, *vec_buf(u, &unit_vecs[k]));
		*vec_buf(u, &unit_vecs[k]) = NULL;
	}
}

/* floats of the unit's vectors of one kind that are allocated now */
static size_t unit_vecs_floats(const struct sf_model *m, struct _sf_unit *u, enum vec_kind kind)
{
	size_t n = 0;
	for (size_t k = 0; k < NUNIT_VECS; k++)
		if (unit_vecs[k].kind == kind && *vec_buf(u, &unit_vecs[k]))
			n += unit_vecs[k].len(m, u, true);
	return n;
}

/* --- the model's shared buffers, from one table ---------------------------------- */

/* The largest N*S (whole: P) of the units this rank keeps (a pipeline: its stage's)
 * and runs collectives of (a vocabulary-parallel unit none, but hybrid's all-reduce
 * across the nodes) */
static size_t held_largest(const struct sf_model *m, bool whole)
{
	size_t n = 0;
	for (int i = 0; i < m->nunits; i++) {
		const struct _sf_unit *u = &m->units[i];
		size_t x = whole ? u->P : u->S * (size_t)m->shard_size;
		if (!u->elsewhere && !(u->vocab_rows && m->nrep == 1) && x > n)
			n = x;
	}
	return n;
}
/* S_max: the largest held unit's shard (every collective buffer is sized for it) */
static size_t s_max(const struct sf_model *m)
{
	return held_largest(m, false) / (size_t)m->shard_size;
}
static int n_one(const struct sf_model *m)
{
	(void)m;
	return 1;
}
static int n_grad(const struct sf_model *m)
{
	return m->G;
}
static int n_ring(const struct sf_model *m)
{
	return m->R;
}
/* Each buffer's floats in slot s under the model's configuration, 0 when it keeps
 * none; the slots' own lengths are the planner's (_sf_plan_slots) */
static size_t len_grad_slot(const struct sf_model *m, int s)
{
	return m->grad_len[s];
}
static size_t len_ring_slot(const struct sf_model *m, int s)
{
	return m->R > 0 ? m->ring_len[s] : 0;
}
static size_t len_rstmp(const struct sf_model *m, int s)
{
	(void)s;
	return m->cfg.sharding != SF_SHARD_NONE ? s_max(m) : 0;
}
static size_t len_scratch(const struct sf_model *m, int s)
{
	(void)s;
	return s_max(m);
}
static size_t len_stage16(const struct sf_model *m, int s) /* floats of two bf16 each */
{
	(void)s;
	return m->cfg.param_dtype == SF_DTYPE_BF16 ? (s_max(m) * (size_t)m->shard_size + 1) / 2
	                                           : 0;
}
static size_t len_rep(const struct sf_model *m, int s) /* the replica ring's copy and block */
{
	(void)s;
	size_t q = (s_max(m) + (size_t)m->nrep - 1) / (size_t)m->nrep;
	return m->nrep > 1 ? ((size_t)m->nrep + 1) * q : 0;
}

static size_t len_sp_in(const struct sf_model *m, int s) /* a linear_col's gathered rows */
{
	(void)s;
	return m->sp_in_n;
}
static size_t len_sp_out(const struct sf_model *m, int s) /* a linear_row's whole rows */
{
	(void)s;
	return m->sp_out_n;
}

static size_t len_tp(const struct sf_model *m, int s) /* the TP ring's copy and block */
{
	(void)s;
	if (m->dpv) /* the shard group's reduce-scatter of rows (scheduler/vocabdp.c) */
		return m->dpv_scratch_n;
	size_t q = (m->tp_max + (size_t)m->tp - 1) / (size_t)m->tp;
	return m->tp > 1 && m->tp_max ? ((size_t)m->tp + 1) * q : 0;
}

/* context parallelism's ring: two packed key/value blocks, two of their gradients, two
 * of a part's share of one, the backward's row sums */
static int n_two(const struct sf_model *m)
{
	(void)m;
	return 2;
}
static size_t len_cp_kv(const struct sf_model *m, int s)
{
	(void)s;
	return m->cp_kv_n;
}
static size_t len_cp_dsum(const struct sf_model *m, int s)
{
	(void)s;
	return m->cp_dsum_n;
}

#define NO_HANDLES SIZE_MAX
#define NO_KEY SIZE_MAX
static const struct model_buf {
	size_t buf;     /* offsetof(struct sf_model, the float *) */
	size_t handles; /* offsetof(struct sf_model, a handle per slot), or NO_HANDLES */
	size_t key; /* offsetof(struct sf_model, the struct _sf_footprint_as its slots' handles
	               carry: the largest slot's length, so that a task's performance-model
	               key does not depend on which slot it uses), or NO_KEY */
	int (*slots)(const struct sf_model *m);
	size_t (*len)(const struct sf_model *m, int slot); /* floats of a slot */
	enum vec_kind kind;
	const char *what; /* for the out-of-memory message */
} model_bufs[] = {
    {offsetof(struct sf_model, grad), offsetof(struct sf_model, h_grad),
     offsetof(struct sf_model, grad_fp), n_grad, len_grad_slot, VEC_GRADS, "gradient slots"},
    {offsetof(struct sf_model, ring), offsetof(struct sf_model, h_ring),
     offsetof(struct sf_model, ring_fp), n_ring, len_ring_slot, VEC_PARAMS, "the gather ring"},
    {offsetof(struct sf_model, rstmp), offsetof(struct sf_model, h_rstmp), NO_KEY, n_one,
     len_rstmp, VEC_GRADS, "the accumulation buffer"},
    {offsetof(struct sf_model, comm_scratch), NO_HANDLES, NO_KEY, n_one, len_scratch,
     VEC_BUFFERS, "the reduce-scatter buffer"},
    {offsetof(struct sf_model, stage16), NO_HANDLES, NO_KEY, n_one, len_stage16, VEC_BUFFERS,
     "the bf16 gather buffer"},
    {offsetof(struct sf_model, rep_scratch), NO_HANDLES, NO_KEY, n_one, len_rep, VEC_BUFFERS,
     "the all-reduce buffer across nodes"},
    {offsetof(struct sf_model, tp_scratch), NO_HANDLES, NO_KEY, n_one, len_tp, VEC_BUFFERS,
     "the tensor-parallel all-reduce buffer"},
    {offsetof(struct sf_model, sp_in), offsetof(struct sf_model, h_sp_in), NO_KEY, n_one, len_sp_in,
     VEC_BUFFERS, "the sequence-parallel input gather buffer"},
    {offsetof(struct sf_model, sp_out), offsetof(struct sf_model, h_sp_out), NO_KEY, n_one,
     len_sp_out, VEC_BUFFERS, "the sequence-parallel output buffer"},
    {offsetof(struct sf_model, cp_kv), offsetof(struct sf_model, h_cp_kv), NO_KEY, n_two,
     len_cp_kv, VEC_BUFFERS, "the context-parallel ring's key/value blocks"},
    {offsetof(struct sf_model, cp_dkv), offsetof(struct sf_model, h_cp_dkv), NO_KEY, n_two,
     len_cp_kv, VEC_BUFFERS, "the context-parallel ring's key/value gradients"},
    {offsetof(struct sf_model, cp_dloc), offsetof(struct sf_model, h_cp_dloc), NO_KEY, n_two,
     len_cp_kv, VEC_BUFFERS, "the context-parallel parts' key/value gradients"},
    {offsetof(struct sf_model, cp_dsum), offsetof(struct sf_model, h_cp_dsum), NO_KEY, n_one,
     len_cp_dsum, VEC_BUFFERS, "the context-parallel backward's row sums"},
};
#define NMODEL_BUFS (sizeof model_bufs / sizeof model_bufs[0])

/* Floats of every slot of buffer b */
static size_t model_buf_len(const struct sf_model *m, const struct model_buf *b)
{
	size_t n = 0;
	for (int s = 0; s < b->slots(m); s++)
		n += b->len(m, s);
	return n;
}

/* Floats of the whole gather ring */
static size_t ring_floats(const struct sf_model *m)
{
	size_t n = 0;
	for (int s = 0; s < n_ring(m); s++)
		n += len_ring_slot(m, s);
	return n;
}

/* Allocates every buffer the configuration keeps, its slots one after the other,
 * registering a handle per slot */
static int model_bufs_alloc(struct sf_model *m)
{
	set_bufs_task_only(m);
	for (size_t k = 0; k < NMODEL_BUFS; k++) {
		const struct model_buf *b = &model_bufs[k];
		float **buf = member(m, b->buf);
		starpu_data_handle_t *h = b->handles != NO_HANDLES ? member(m, b->handles) : NULL;
		size_t len = model_buf_len(m, b), off = 0;
		if (len == 0)
			continue;
		SF_CHECK(alloc_buf(m, buf, len, b->what));
		struct _sf_footprint_as *key = b->key != NO_KEY ? member(m, b->key) : NULL;
		for (int s = 0; key && s < b->slots(m); s++)
			key->nx = b->len(m, s) > key->nx ? b->len(m, s) : key->nx;
		for (int s = 0; h && s < b->slots(m); off += b->len(m, s), s++) {
			reg(&h[s], *buf + off, b->len(m, s), sizeof(float));
			if (key)
				starpu_data_set_user_data(h[s], key);
		}
	}
	return SF_OK;
}

static void model_bufs_release(struct sf_model *m)
{
	for (size_t k = 0; k < NMODEL_BUFS; k++) {
		const struct model_buf *b = &model_bufs[k];
		float **buf = member(m, b->buf);
		starpu_data_handle_t *h = b->handles != NO_HANDLES ? member(m, b->handles) : NULL;
		for (int s = 0; h && s < b->slots(m); s++)
			unreg(&h[s]);
		free_buf(m, *buf);
		*buf = NULL;
	}
}

/* floats of the buffers of one kind: planned (all the configuration keeps), or only
 * those allocated now */
static size_t model_bufs_floats(const struct sf_model *m, enum vec_kind kind, bool planned)
{
	size_t n = 0;
	for (size_t k = 0; k < NMODEL_BUFS; k++) {
		const struct model_buf *b = &model_bufs[k];
		bool held = *(float **)member(m, b->buf) != NULL;
		if (b->kind == kind && (planned || held))
			n += model_buf_len(m, b);
	}
	return n;
}

/* --- the units' storage, the nodes', the model-wide state -------------------------- */

/* The handle of each unit's squared gradient sums (clipping): its one double, or with
 * SHARDFLOW_TP one per run of its gradient this rank counts (model_layout.c) */
int _sf_sq_register(struct sf_model *m)
{
	for (int k = 0; k < m->nunits; k++) {
		struct _sf_unit *u = &m->units[k];
		if (m->tp > 1) {
			u->sqv = calloc((size_t)u->nsq_segs, sizeof *u->sqv);
			if (!u->sqv)
				return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
			reg(&u->h_sq, u->sqv, (size_t)u->nsq_segs, sizeof(double));
		} else {
			reg(&u->h_sq, &u->sq, 1, sizeof(double));
		}
	}
	return SF_OK;
}

/* Parameters of unit u, initialised identically on every rank and world size: each
 * node's slice from a stream named by the seed and the node's index. */
static int init_unit(struct sf_model *m, int u)
{
	struct _sf_unit *un = &m->units[u];
	/* mapped, not malloc'ed: freeing a block this large would raise glibc's dynamic
	 * mmap threshold to its size, and the model's later buffers below it would then
	 * come from the heap, fragmented (measured: 72 MiB more resident on a 25M-parameter
	 * model, one run in three) */
	size_t bytes = (un->P ? un->P : 1) * sizeof(float);
	float *full = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (full == MAP_FAILED)
		return SF_ERR(SF_ERR_NOMEM,
		              "sf_model_create: cannot map %zu bytes for the initial parameters "
		              "of unit \"%s\"",
		              bytes, un->name);
	for (int n = un->first; n <= un->last; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		if (m->nodes[n].unit != u || nd->tied_to >= 0 || !nd->type->type.init)
			continue;
		struct sf_rng rng = {m->opt.seed * 0x9E3779B97F4A7C15ull ^
		                     (0xD1B54A32D192ED03ull * (uint64_t)(n + 1))};
		float *mine = full + m->nodes[n].info.param_offset;
		if (m->tp == 1 || nd->nparams == m->nodes[n].whole_nparams) {
			nd->type->type.init(&m->nodes[n].info, &rng, mine);
			continue;
		}
		/* a TP slice: the whole layer drawn as on one rank, this rank's slice kept */
		struct sf_layer_info whole;
		_sf_node_whole_info(m, n, &whole);
		float *w = malloc(whole.nparams * sizeof(float));
		if (!w) {
			munmap(full, bytes);
			return SF_ERR(SF_ERR_NOMEM,
			              "sf_model_create: out of memory for node \"%s\"'s %zu "
			              "initial parameters",
			              nd->name, whole.nparams);
		}
		nd->type->type.init(&whole, &rng, w);
		_sf_tp_params(nd, &whole, m->tp, m->tp_rank, w, mine, true);
		free(w);
	}
	if (un->full)
		memcpy(un->full, full, un->P * sizeof(float));
	if (un->shard) {
		size_t lo, n;
		_sf_unit_block(m, u, &lo, &n);
		memcpy(un->shard, full + lo, n * sizeof(float));
	}
	munmap(full, bytes);
	return SF_OK;
}

/* Every unit's storage, then its initial parameters (one unit's full vector at a
 * time), then its weight-decay runs */
int _sf_build_units(struct sf_model *m)
{
	set_bufs_task_only(m);
	for (int k = 0; k < m->nunits; k++)
		SF_CHECK(unit_vecs_alloc(m, &m->units[k], false));
	for (int k = 0; k < m->nunits && !SF_SIMULATED; k++) /* no values in simulated time */
		if (!m->units[k].elsewhere)
			SF_CHECK(init_unit(m, k));
	for (int k = 0; k < m->nunits; k++)
		SF_CHECK(_sf_unit_opt_runs(m, k));
	return SF_OK;
}

int _sf_model_accum_buffers(struct sf_model *m)
{
	for (int i = 0; i < m->nunits; i++)
		SF_CHECK(unit_vecs_alloc(m, &m->units[i], true));
	return SF_OK;
}

size_t _sf_node_set_floats(const struct sf_model *m, int n)
{
	const struct _sf_node *nd = &m->gnodes[n];
	const struct _sf_node_state *s = &m->nodes[n];
	size_t cnt = s->act_rows * (size_t)nd->dim;
	if (s->recomp_buf >= 0 || s->hold == SF_HOLD_NONE)
		return 0;
	if (nd->kind == SF_NODE_INT_INPUT)
		return m->rows_local;
	if (nd->kind == SF_NODE_INPUT)
		return cnt;
	if (nd->kind != SF_NODE_LAYER)
		return 0;
	return 2 * cnt + (s->hold == SF_HOLD_ALL ? s->info.nsaved : 0);
}

/* Floats of a node's sequence-parallel copy (and of its gradient): its rows for
 * row-split readers, or all rows for whole ones */
static size_t sp_floats(const struct sf_model *m, int n)
{
	const struct _sf_node_state *s = &m->nodes[n];
	size_t rows = s->sp_scatter  ? m->rows_local / (size_t)m->tp
	              : s->sp_gather ? m->rows_local
	                             : 0;
	return rows * (size_t)s->info.out_dim;
}

/* Floats alloc_node gives node n: its set (_sf_node_set_floats: none for a recomputed
 * node, whose shared buffers are counted once, as alloc_recomp_bufs makes them) and
 * its tensor-parallel buffers (its own, recomputed or not). */
static size_t node_floats(const struct sf_model *m, int n)
{
	const struct _sf_node_state *s = &m->nodes[n];
	if (s->hold != SF_HOLD_ALL)
		return _sf_node_set_floats(m, n);
	size_t tp = (s->tp_bwd_ar ? s->act_rows * (size_t)s->info.in_dim[0] : 0) +
	            (s->tp_gather ? 2 * m->rows_local * (size_t)s->info.out_dim : 0);
	return _sf_node_set_floats(m, n) + tp + 2 * sp_floats(m, n);
}

/* The buffers recomputed activations share (SHARDFLOW_RECOMPUTE=units). */
static int alloc_recomp_bufs(struct sf_model *m)
{
	for (int b = 0; b < m->nrecomp_bufs; b++) {
		struct _sf_recomp_buf *r = &m->recomp_bufs[b];
		if (!r->nact) /* another pipeline stage's segments' (scheduler/pipeline.c) */
			continue;
		SF_CHECK(alloc_task_only(&r->act, r->nact, "recomputed activations"));
		SF_CHECK(alloc_task_only(&r->dact, r->nact, "recomputed activation gradients"));
		reg(&r->h_act, r->act, r->nact, sizeof(float));
		reg(&r->h_dact, r->dact, r->nact, sizeof(float));
		m->act_bytes += 2 * r->nact * sizeof(float);
		if (r->nsaved) {
			SF_CHECK(alloc_task_only(&r->saved, r->nsaved, "recomputed saved buffers"));
			reg(&r->h_saved, r->saved, r->nsaved, sizeof(float));
			m->act_bytes += r->nsaved * sizeof(float);
		}
	}
	return SF_OK;
}

/* A node's activation (and gradient, and saved buffer) of this rank's rows: its own,
 * or a recomputed node's shared ones. */
static int alloc_node(struct sf_model *m, int n)
{
	int rc = SF_OK;
	const struct _sf_node *nd = &m->gnodes[n];
	struct _sf_node_state *s = &m->nodes[n];
	size_t cnt = s->act_rows * (size_t)nd->dim;
	if (s->hold == SF_HOLD_NONE) /* another pipeline stage's */
		goto out;
	bool own = s->hold == SF_HOLD_ALL; /* not a pipeline's boundary alone */
	if (s->recomp_buf >= 0) { /* the shared buffers; its TP buffers are its own */
		struct _sf_recomp_buf *r = &m->recomp_bufs[s->recomp_buf];
		s->act = r->act, s->dact = r->dact, s->saved = r->saved;
		s->h_act = r->h_act, s->h_dact = r->h_dact, s->h_saved = r->h_saved;
		goto tp;
	}
	if (nd->kind == SF_NODE_INT_INPUT) {
		SF_CHECK_GOTO(_sf_alloc_floats(&s->act, m->rows_local, "integer inputs"), out);
		reg(&s->h_act, s->act, m->rows_local, sizeof(int32_t));
	}
	if (nd->kind == SF_NODE_INPUT) { /* the main thread writes the batch there */
		SF_CHECK_GOTO(_sf_alloc_floats(&s->act, cnt, "inputs"), out);
		reg(&s->h_act, s->act, cnt, sizeof(float));
	}
	if (nd->kind == SF_NODE_LAYER) {
		SF_CHECK_GOTO(alloc_task_only(&s->act, cnt, "activations"), out);
		reg(&s->h_act, s->act, cnt, sizeof(float));
		SF_CHECK_GOTO(alloc_task_only(&s->dact, cnt, "activation gradients"), out);
		reg(&s->h_dact, s->dact, cnt, sizeof(float));
	}
	/* the stage before's output (a pipeline's boundary): its activation and gradient */
	if (nd->kind == SF_NODE_LAYER && s->info.nsaved && own) {
		SF_CHECK_GOTO(alloc_task_only(&s->saved, s->info.nsaved, "a saved buffer"), out);
		reg(&s->h_saved, s->saved, s->info.nsaved, sizeof(float));
	}
tp:
	if (s->tp_gather && own) { /* gather_output: the kernel's columns and their gradient */
		size_t nl = m->rows_local * (size_t)s->info.out_dim;
		SF_CHECK_GOTO(alloc_task_only(&s->tpbuf_o, nl, "a tensor-parallel output slice"), out);
		reg(&s->h_tpbuf_o, s->tpbuf_o, nl, sizeof(float));
		SF_CHECK_GOTO(alloc_task_only(&s->tpbuf_do, nl, "a tensor-parallel output slice"), out);
		reg(&s->h_tpbuf_do, s->tpbuf_do, nl, sizeof(float));
	}
	if (s->tp_bwd_ar && own) { /* a linear_col's partial input gradient */
		size_t nt = s->act_rows * (size_t)s->info.in_dim[0];
		SF_CHECK_GOTO(alloc_task_only(&s->tpbuf, nt, "a tensor-parallel input gradient"), out);
		reg(&s->h_tpbuf, s->tpbuf, nt, sizeof(float));
	}
	if ((s->sp_scatter || s->sp_gather) && own) { /* the copy its readers take */
		size_t nr = sp_floats(m, n);
		SF_CHECK_GOTO(alloc_task_only(&s->sp_act, nr, "a sequence-parallel slice"), out);
		reg(&s->h_sp_act, s->sp_act, nr, sizeof(float));
		SF_CHECK_GOTO(alloc_task_only(&s->sp_dact, nr, "a sequence-parallel slice"), out);
		reg(&s->h_sp_dact, s->sp_dact, nr, sizeof(float));
	}
	m->act_bytes += node_floats(m, n) * sizeof(float);
out:
	return rc;
}

int _sf_alloc_nodes(struct sf_model *m)
{
	SF_CHECK(alloc_recomp_bufs(m));
	for (int n = 0; n < m->nnodes; n++)
		SF_CHECK(alloc_node(m, n));
	return SF_OK;
}

/* The vocabulary-parallel loss's partials, this rank's and the TP group's, and the
 * all-gather that moves them (tp_gather's, one run a TP rank: rank t's partials are
 * block t of vp_all) */
static int vp_buffers(struct sf_model *m)
{
	int k, rank;
	size_t rows;
	_sf_vp_group(m, &k, &rank, &rows);
	size_t n = rows * SF_XENT_VP_STATS, K = (size_t)k;
	m->vp_stats = calloc(n, sizeof(float));
	m->vp_all = calloc(K * n, sizeof(float));
	m->vp_runs = calloc(K * SF_MAX_PARAM_TENSORS, sizeof *m->vp_runs);
	if (!m->vp_stats || !m->vp_all || !m->vp_runs)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	for (size_t t = 0; t < K; t++)
		m->vp_runs[t * SF_MAX_PARAM_TENSORS] = (struct _sf_tp_run){0, t * n, n};
	reg(&m->h_vp_stats, m->vp_stats, n, sizeof(float));
	reg(&m->h_vp_all, m->vp_all, K * n, sizeof(float));
	/* this rank's classes: the whole vocabulary's slice (padded where K does not divide) */
	struct _sf_vocab_slice v =
	    _sf_tp_vocab_slice(m->nodes[m->gnodes[m->loss_node].in[0]].whole_dim, k, rank);
	m->vp_args = (struct _sf_xent_vp_args){
	    .rows = (int)rows,
	    .classes = v.rows,
	    .valid = v.valid,
	    .first = v.first,
	    .tp = k,
	    .ignore = m->loss_args.ignore,
	    .scale = m->loss_args.scale,
	};
	m->vp_comm = (struct _sf_comm_args){
	    .comm = m->comm,
	    .unit = "loss",
	    .acct = &m->comm_acct,
	    .P = n,
	    .tp_scratch = m->tp_scratch,
	    .tp_runs = m->vp_runs,
	    .tp_nruns = 1,
	    .tp_rows = 1,
	    .tp_cols = K * n,
	    .tp_lcols = n,
	};
	snprintf(m->vp_fwd_name, sizeof m->vp_fwd_name, "fwd loss (xent_vp L%d)", m->loss_node);
	snprintf(m->vp_ag_name, sizeof m->vp_ag_name, "tp_ag loss (xent_vp L%d)", m->loss_node);
	return SF_OK;
}

/* The model-wide state: the shared buffers (model_bufs), the collectives' view of
 * them, comm order, labels, losses, clipping. */
int _sf_build_buffers(struct sf_model *m)
{
	SF_CHECK(model_bufs_alloc(m));
	for (int i = 0; i < m->nunits; i++) {
		m->units[i].comm.rep_scratch = m->rep_scratch;
		m->units[i].comm.scratch = m->comm_scratch;
		bool fp32 = m->units[i].keep_fp32;
		m->units[i].comm.param16 = m->cfg.param_dtype == SF_DTYPE_BF16 && !fp32;
		m->units[i].comm.reduce16 = m->cfg.reduce_dtype == SF_DTYPE_BF16 && !fp32;
		m->units[i].comm.stage16 = (uint16_t *)m->stage16;
	}
	for (int n = 0; n < m->nnodes; n++) {
		struct _sf_node_state *ns = &m->nodes[n];
		bool acc = ns->tp_comm.tp_acc;
		ns->tp_comm = (struct _sf_comm_args){
		    .comm = m->comm,
		    .unit = m->gnodes[n].name,
		    .acct = &m->comm_acct,
		    .P = m->rows_local *
		         (size_t)(ns->tp_fwd_ar ? ns->info.out_dim : ns->info.in_dim[0]),
		    .tp_scratch = m->tp_scratch,
		    .tp_acc = acc,
		};
		ns->tp_gcomm = (struct _sf_comm_args){
		    .comm = m->comm,
		    .unit = m->gnodes[n].name,
		    .acct = &m->comm_acct,
		    .P = m->rows_local * (size_t)ns->info.out_dim,
		    .tp_scratch = m->tp_scratch,
		    .tp_runs = ns->tp_runs,
		    .tp_nruns = ns->tp_gcomm.tp_nruns,
		    .tp_rows = m->rows_local,
		    .tp_cols = (size_t)ns->whole_dim,
		    .tp_lcols = (size_t)ns->info.out_dim,
		};
	}
	starpu_void_data_register(&m->h_order);
	reg(&m->h_noparams, &m->noparams, 1, sizeof(float));
	/* FSDP's vocabulary-parallel tied unit: the shard group's labels and ids */
	size_t nlab = m->dpv ? (size_t)m->shard_size * m->rows_local : m->rows_local;
	m->labels = calloc(nlab, sizeof(int32_t));
	if (!m->labels)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	reg(&m->h_labels, m->labels, nlab, sizeof(int32_t));
	if (m->dpv) {
		m->dpv_ids = calloc(nlab, sizeof(int32_t));
		if (!m->dpv_ids)
			return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
		reg(&m->h_dpv_ids, m->dpv_ids, nlab, sizeof(int32_t));
	}
	const struct _sf_node *loss = &m->gnodes[m->loss_node];
	const struct sf_loss_config *lc = loss->config;
	int width = m->gnodes[loss->in[0]].dim;
	m->loss_kind = lc ? (int)lc->kind : SF_LOSS_CROSS_ENTROPY;
	m->loss_args = (struct _sf_loss_args){
	    .rows = (int)m->rows_local,
	    .classes = m->labels_node >= 0 ? m->gnodes[m->labels_node].dim : width,
	    .ignore = lc ? lc->ignore_index : SF_LOSS_IGNORE_INDEX,
	    .scale = 1.0f / (float)((double)m->B_global * m->T_ctx), /* each step sets it */
	};
	m->reg_loss_args = (struct _sf_reg_loss_args){
	    .rows = (int)m->rows_local,
	    .width = width,
	    .kind = m->loss_kind,
	    .delta = lc ? lc->delta : 1.0f,
	    .scale = (float)(1.0 / ((double)m->B_global * m->T_ctx * width)),
	};
	m->loss_comm = (struct _sf_comm_args){.comm = m->comm, .acct = &m->comm_acct};
	if (m->vp)
		SF_CHECK(vp_buffers(m));
	for (int s = 0; s < SF_LOSS_SLOTS; s++) {
		reg(&m->h_loss[s], &m->loss_val[s], 1, sizeof(double));
		reg(&m->h_clip[s], m->clip_val[s], 2, sizeof(double));
		m->clip_ticket[s] = -1;
	}
	m->one[1] = 1.0;
	reg(&m->h_one, m->one, 2, sizeof(double));
	m->h_sqs = calloc((size_t)m->nunits, sizeof *m->h_sqs);
	m->norm_descr = calloc((size_t)m->nunits + 2, sizeof *m->norm_descr);
	if (!m->h_sqs || !m->norm_descr)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	for (int u = 0; u < m->nunits; u++)
		m->h_sqs[u] = m->units[u].h_sq;
	return SF_OK;
}

/* --- the memory plan, the floats held, the release ---------------------------------- */

/* What a rank will hold, in floats, planned from the units' geometry and the nodes
 * before anything is allocated: the parts of struct sf_model_stats, and `init`, the
 * one unit's full vector initialisation holds for a moment. */
struct mem_plan {
	size_t params, grads, optim, acts, buffers, init;
};

static void plan_memory(const struct sf_model *m, struct mem_plan *p)
{
	/* a pipeline of micro-batches accumulates from its first step */
	bool acc = m->cfg.grad_accum > 1 || m->pp_micro > 1;
	size_t *kind[VEC_KINDS] = {[VEC_PARAMS] = &p->params, [VEC_GRADS] = &p->grads,
	                           [VEC_OPTIM] = &p->optim, [VEC_BUFFERS] = &p->buffers};
	memset(p, 0, sizeof *p);
	for (int i = 0; i < m->nunits; i++)
		for (size_t k = 0; !m->units[i].elsewhere && k < NUNIT_VECS; k++)
			*kind[unit_vecs[k].kind] += unit_vecs[k].len(m, &m->units[i], acc);
	for (int k = 0; k < VEC_KINDS; k++)
		*kind[k] += model_bufs_floats(m, (enum vec_kind)k, true);
	for (int b = 0; b < m->nrecomp_bufs; b++)
		p->acts += 2 * m->recomp_bufs[b].nact + m->recomp_bufs[b].nsaved;
	/* a pipeline's other micro-batches (scheduler/pipeline.c): pp_micro sets of the
	 * inputs, act_sets of the layers' buffers, the nodes' own the first of each */
	for (int n = 0; n < m->nnodes; n++)
		p->acts += node_floats(m, n) + (size_t)(_sf_node_sets(m, n) - 1) *
		                                   _sf_node_set_floats(m, n);
	p->init = held_largest(m, true);
}

/* SHARDFLOW_MEMORY_CHECK: the plan against the limit the kernel enforces, before any
 * allocation (a cgroup's limit kills the process, it does not fail a malloc) */
int _sf_check_memory(const struct sf_model *m)
{
	const double mib = 1024.0 * 1024.0, f = sizeof(float) / mib;
	struct mem_plan p;
	struct _sf_memlimit lim;
	if (!m->cfg.memory_check)
		return SF_OK;
	plan_memory(m, &p);
	uint64_t need = (uint64_t)(p.params + p.grads + p.optim + p.acts + p.buffers + p.init) *
	                sizeof(float);
	const size_t F = sizeof(float);
	/* each part in bytes, as sf_model_stats counts them once the model holds them */
	_sf_log(SF_LOG_INFO,
	        "memory: rank %d (pipeline stage %d of %d) plans %.1f MiB: param_bytes %zu "
	        "grad_bytes %zu optimizer_bytes %zu activation_bytes %zu buffer_bytes %zu "
	        "init_bytes %zu; activation sets %d of %d micro-batches",
	        m->rank, m->pp_stage, m->pp_size, (double)need / mib, p.params * F, p.grads * F,
	        p.optim * F, p.acts * F, p.buffers * F, p.init * F, m->act_sets, m->pp_micro);
	_sf_memlimit_get(&lim);
	if (!lim.found)
		return SF_OK;
	uint64_t avail = lim.limit > lim.used ? lim.limit - lim.used : 0;
	_sf_log(SF_LOG_INFO, "memory: rank %d: %s: %.1f MiB, %.1f MiB in use", m->rank,
	        lim.what, (double)lim.limit / mib, (double)lim.used / mib);
	if (need <= avail)
		return SF_OK;
	return SF_ERR(
	    SF_ERR_NOMEM,
	    "sf_model_create: rank %d needs %.1f MiB for this model (parameters %.1f MiB: its "
	    "shards and %d ring slots of %zu floats in all; gradients %.1f MiB; optimizer state %.1f MiB; "
	    "activations %.1f MiB of %d samples; collective buffers %.1f MiB; and while "
	    "initialising, one unit's %.1f MiB) but its memory limit, %s, is %.1f MiB with "
	    "%.1f MiB in use: %.1f MiB left. Shard it over more ranks (sharding %s over %d), "
	    "cut it into more pipeline stages (SHARDFLOW_PP, now %d), lower the batch, set SHARDFLOW_RECOMPUTE=units, or SHARDFLOW_MEMORY_CHECK=off to "
	    "try anyway",
	    m->rank, (double)need / mib, (double)p.params * f, m->R,
	    ring_floats(m),
	    (double)p.grads * f, (double)p.optim * f, (double)p.acts * f, m->B_local,
	    (double)p.buffers * f, (double)p.init * f, lim.what, (double)lim.limit / mib,
	    (double)lim.used / mib, (double)avail / mib, _sf_sharding_names[m->cfg.sharding],
	    m->shard_size, m->pp_size);
}

void _sf_model_held_floats(const struct sf_model *m, struct _sf_held_floats *h)
{
	size_t floats[VEC_KINDS];
	for (int k = 0; k < VEC_KINDS; k++) {
		floats[k] = model_bufs_floats(m, (enum vec_kind)k, false);
		for (int i = 0; i < m->nunits; i++)
			floats[k] += unit_vecs_floats(m, &m->units[i], (enum vec_kind)k);
	}
	h->params = floats[VEC_PARAMS];
	h->grads = floats[VEC_GRADS];
	h->optim = floats[VEC_OPTIM];
	h->buffers = floats[VEC_BUFFERS];
}

void _sf_storage_release(struct sf_model *m)
{
	for (int b = 0; m->recomp_bufs && b < m->nrecomp_bufs; b++) {
		struct _sf_recomp_buf *r = &m->recomp_bufs[b];
		unreg(&r->h_act);
		unreg(&r->h_dact);
		unreg(&r->h_saved);
		free_task_only(r->act);
		free_task_only(r->dact);
		free_task_only(r->saved);
	}
	for (int n = 0; m->nodes && n < m->nnodes; n++) {
		if (m->nodes[n].recomp_buf >= 0)
			continue; /* the shared buffers, released above */
		unreg(&m->nodes[n].h_act);
		unreg(&m->nodes[n].h_dact);
		unreg(&m->nodes[n].h_saved);
		unreg(&m->nodes[n].h_tpbuf);
		free_task_only(m->nodes[n].tpbuf);
		unreg(&m->nodes[n].h_tpbuf_o);
		free_task_only(m->nodes[n].tpbuf_o);
		unreg(&m->nodes[n].h_tpbuf_do);
		free_task_only(m->nodes[n].tpbuf_do);
		unreg(&m->nodes[n].h_sp_act);
		free_task_only(m->nodes[n].sp_act);
		unreg(&m->nodes[n].h_sp_dact);
		free_task_only(m->nodes[n].sp_dact);
		if (m->gnodes[n].kind == SF_NODE_LAYER) {
			free_task_only(m->nodes[n].act);
			free_task_only(m->nodes[n].dact);
			free_task_only(m->nodes[n].saved);
		} else {
			_sf_free_floats(m->nodes[n].act);
		}
	}
	for (int i = 0; m->units && i < m->nunits; i++) {
		struct _sf_unit *u = &m->units[i];
		unit_vecs_release(m, u);
		unreg(&u->h_sq);
		free(u->sqv);
	}
	model_bufs_release(m);
	for (int s = 0; s < SF_LOSS_SLOTS; s++) {
		unreg(&m->h_loss[s]);
		unreg(&m->h_clip[s]);
	}
	unreg(&m->h_one);
	unreg(&m->h_labels);
	unreg(&m->h_dpv_ids);
	free(m->dpv_ids);
	unreg(&m->h_vp_stats);
	unreg(&m->h_vp_all);
	free(m->vp_stats);
	free(m->vp_all);
	free(m->vp_runs);
	unreg(&m->h_order);
	unreg(&m->h_noparams);
	free(m->labels);
	free(m->h_sqs);
	free(m->norm_descr);
}
