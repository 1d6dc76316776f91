/*
 * model.c — turning a graph into a model: units, shards, buffers and handles.
 *
 * Everything a step touches is allocated and registered with StarPU here, once;
 * steps only submit tasks on these handles. Shape letters: B local samples, T rows per
 * sample, N ranks, P parameters of a unit, S = ceil(P / N) its shard, w the planner's
 * width (1 for a chain of units, scheduler/plan.c).
 *
 *   sharding  resident per unit              ring (gather)          grad slots
 *   full      shard S, gshard S, state S     R = depth+w x N*S_max  G = 1+w x N*S_max
 *   grad_op   full N*S, shard S, gshard S    -                      G x N*S_max
 *   none      full P, state P                -                      G x P_max
 */
#include "config.h"

#include "common/memlimit.h"
#include "scheduler/model.h"
#include "layers/gemm_bf16.h"
#include "sim/comm_sim.h"
#include "tasks/optim.h"
#include "tasks/worker.h"
#include "trace/recorder.h"

#include <math.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

SF_API int sf_model_options_init(struct sf_model_options *o)
{
	if (!o)
		return SF_ERR(SF_ERR_INVALID, "sf_model_options_init: o is NULL");
	*o = (struct sf_model_options){
	    .batch = 64,
	    .seed = 1,
	    .optimizer = SF_OPT_SGD,
	    .lr = 0.01f,
	    .momentum = 0.9f,
	    .weight_decay = 0.0f,
	    .beta1 = 0.9f,
	    .beta2 = 0.999f,
	    .eps = 1e-8f,
	    .max_grad_norm = 0.0f,
	    .no_decay = SF_NO_DECAY_DEFAULT,
	};
	return SF_OK;
}

static int check_options(const struct sf_model_options *o, int nranks)
{
	if (o->batch < nranks)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: batch %d is smaller than the %d data-parallel "
		              "ranks; every rank needs at least one row",
		              o->batch, nranks);
	if ((int)o->optimizer < 0 || o->optimizer >= SF_OPT_COUNT)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: optimizer %d is not SF_OPT_SGD, SF_OPT_ADAMW or "
		              "SF_OPT_LION",
		              (int)o->optimizer);
	if (!(o->lr > 0.0f) || !isfinite(o->lr))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: lr must be a finite number > 0 (got "
		              "%g)",
		              (double)o->lr);
	if (!(o->momentum >= 0.0f && o->momentum < 1.0f))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: momentum must be in [0, 1) (got %g)",
		              (double)o->momentum);
	if (!(o->weight_decay >= 0.0f) || !isfinite(o->weight_decay))
		return SF_ERR(SF_ERR_INVALID, "sf_model_create: weight_decay must be >= 0 (got %g)",
		              (double)o->weight_decay);
	if (!(o->beta1 >= 0.0f && o->beta1 < 1.0f && o->beta2 >= 0.0f && o->beta2 < 1.0f))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: beta1 and beta2 must be in [0, 1) (got "
		              "%g, %g)",
		              (double)o->beta1, (double)o->beta2);
	if (!(o->eps > 0.0f))
		return SF_ERR(SF_ERR_INVALID, "sf_model_create: eps must be > 0 (got %g)",
		              (double)o->eps);
	if (!(o->max_grad_norm >= 0.0f))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: max_grad_norm must be >= 0 (0: no clipping; "
		              "INFINITY: the norm without clipping) (got %g)",
		              (double)o->max_grad_norm);
	if (o->no_decay & ~SF_NO_DECAY_DEFAULT)
		return SF_ERR(
		    SF_ERR_INVALID,
		    "sf_model_create: no_decay 0x%x has bits other than SF_NO_DECAY_BIAS, "
		    "SF_NO_DECAY_NORM and SF_NO_DECAY_EMBED (0x%x)",
		    o->no_decay, SF_NO_DECAY_DEFAULT);
	return SF_OK;
}

/* Mixed precision needs collectives that move bf16: gathers and reduce-scatters of a
 * backend that has them. */
static int check_dtypes(const sf_context *ctx, const struct sf_config *c)
{
	const char *var = c->param_dtype == SF_DTYPE_BF16    ? "SHARDFLOW_PARAM_DTYPE"
	                  : c->reduce_dtype == SF_DTYPE_BF16 ? "SHARDFLOW_REDUCE_DTYPE"
	                                                     : NULL;
	if (!var)
		return SF_OK;
	if (c->sharding == SF_SHARD_NONE)
		return SF_ERR(
		    SF_ERR_CONFIG,
		    "sf_model_create: %s=bf16 changes what gathers and reduce-scatters "
		    "move, and SHARDFLOW_SHARDING=none has neither (it all-reduces fp32); "
		    "use sharding full or grad_op, or %s=fp32",
		    var, var);
	const struct _sf_comm_ops *ops = ctx->comm->ops;
	if (!ops->all_gather16 || !ops->reduce_scatter16)
		return SF_ERR(
		    SF_ERR_CONFIG,
		    "sf_model_create: %s=bf16: the %s backend (SHARDFLOW_COMM) has no bf16 "
		    "collectives yet; use SHARDFLOW_COMM=mpi or %s=fp32",
		    var, ops->name, var);
	return SF_OK;
}

static int alloc_floats(float **p, size_t n, const char *what)
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

/* Releases what alloc_floats gave */
static void free_floats(float *p)
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
	return alloc_floats(p, n, what);
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
	free_floats(p); /* alloc_task_only's alloc_floats */
#endif
}

/* The unit vectors' and the model's buffers: task-only where set_bufs_task_only said so
 * (m->bufs_task_only, kept so that the release matches the allocation) */
static int alloc_buf(const struct sf_model *m, float **p, size_t n, const char *what)
{
	return m->bufs_task_only ? alloc_task_only(p, n, what) : alloc_floats(p, n, what);
}

static void free_buf(const struct sf_model *m, float *p)
{
	if (m->bufs_task_only)
		free_task_only(p);
	else
		free_floats(p);
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

/* The sharding a unit's storage follows: hybrid shards as full does, inside a node */
static enum sf_sharding unit_sharding(const struct sf_model *m)
{
	return m->cfg.sharding == SF_SHARD_HYBRID ? SF_SHARD_FULL : m->cfg.sharding;
}

/* Each vector's length in floats under the model's configuration, 0 when it keeps
 * none; `accumulating`: once sf_model_accumulate has been called (its buffers are
 * made then, not for the models that never accumulate). */
static size_t len_shard(const struct sf_model *m, const struct _sf_unit *u, bool acc)
{
	(void)acc;
	return unit_sharding(m) != SF_SHARD_NONE ? u->S : 0;
}
static size_t len_gshard(const struct sf_model *m, const struct _sf_unit *u, bool acc)
{
	if (u->frozen)
		return 0;
	/* replicated: the optimizer's gradient when it cannot read the slot (clipping:
	 * the slot is reused before the norm; micro-batches: the sum outlives the pass) */
	if (unit_sharding(m) != SF_SHARD_NONE)
		return u->S;
	return m->opt.max_grad_norm > 0.0f || acc ? u->P : 0;
}
static size_t len_full(const struct sf_model *m, const struct _sf_unit *u, bool acc)
{
	(void)acc;
	enum sf_sharding sh = unit_sharding(m);
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
	return acc && m->cfg.accum_mode == SF_ACCUM_LOCAL && !u->frozen ? u->P : 0;
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
	int rc = SF_OK;
	for (size_t k = 0; k < NUNIT_VECS; k++) {
		const struct unit_vec *v = &unit_vecs[k];
		size_t n = v->len(m, u, accumulating);
		float **buf = vec_buf(u, v);
		if (n == 0 || *buf)
			continue;
		SF_CHECK(alloc_buf(m, buf, n, v->what));
		reg(vec_handle(u, v), *buf, n, sizeof(float));
	}
fail:
	return rc;
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

/* S_max: the largest unit's shard (every collective buffer is sized for it) */
static size_t s_max(const struct sf_model *m)
{
	return m->largest_NS / (size_t)m->shard_size;
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
/* Each buffer's floats a slot under the model's configuration, 0 when it keeps none */
static size_t len_grad_slot(const struct sf_model *m)
{
	return m->cfg.sharding == SF_SHARD_NONE ? m->largest_P : m->largest_NS;
}
static size_t len_ring_slot(const struct sf_model *m)
{
	return m->R > 0 ? m->largest_NS : 0;
}
static size_t len_rstmp(const struct sf_model *m)
{
	return m->cfg.sharding != SF_SHARD_NONE ? s_max(m) : 0;
}
static size_t len_scratch(const struct sf_model *m)
{
	return s_max(m);
}
static size_t len_stage16(const struct sf_model *m) /* floats of two bf16 each */
{
	return m->cfg.param_dtype == SF_DTYPE_BF16 ? (s_max(m) * (size_t)m->shard_size + 1) / 2
	                                           : 0;
}
static size_t len_rep(const struct sf_model *m) /* the replica ring's copy and block */
{
	size_t q = (s_max(m) + (size_t)m->nrep - 1) / (size_t)m->nrep;
	return m->nrep > 1 ? ((size_t)m->nrep + 1) * q : 0;
}

static size_t len_tp(const struct sf_model *m) /* the TP ring's copy and block */
{
	size_t q = (m->tp_max + (size_t)m->tp - 1) / (size_t)m->tp;
	return m->tp > 1 && m->tp_max ? ((size_t)m->tp + 1) * q : 0;
}

#define NO_HANDLES SIZE_MAX
static const struct model_buf {
	size_t buf;     /* offsetof(struct sf_model, the float *) */
	size_t handles; /* offsetof(struct sf_model, a handle per slot), or NO_HANDLES */
	int (*slots)(const struct sf_model *m);
	size_t (*len)(const struct sf_model *m); /* floats a slot */
	enum vec_kind kind;
	const char *what; /* for the out-of-memory message */
} model_bufs[] = {
    {offsetof(struct sf_model, grad), offsetof(struct sf_model, h_grad), n_grad, len_grad_slot,
     VEC_GRADS, "gradient slots"},
    {offsetof(struct sf_model, ring), offsetof(struct sf_model, h_ring), n_ring, len_ring_slot,
     VEC_PARAMS, "the gather ring"},
    {offsetof(struct sf_model, rstmp), offsetof(struct sf_model, h_rstmp), n_one, len_rstmp,
     VEC_GRADS, "the accumulation buffer"},
    {offsetof(struct sf_model, comm_scratch), NO_HANDLES, n_one, len_scratch, VEC_BUFFERS,
     "the reduce-scatter buffer"},
    {offsetof(struct sf_model, stage16), NO_HANDLES, n_one, len_stage16, VEC_BUFFERS,
     "the bf16 gather buffer"},
    {offsetof(struct sf_model, rep_scratch), NO_HANDLES, n_one, len_rep, VEC_BUFFERS,
     "the all-reduce buffer across nodes"},
    {offsetof(struct sf_model, tp_scratch), NO_HANDLES, n_one, len_tp, VEC_BUFFERS,
     "the tensor-parallel all-reduce buffer"},
};
#define NMODEL_BUFS (sizeof model_bufs / sizeof model_bufs[0])

/* Allocates every buffer the configuration keeps, registering a handle per slot */
static int model_bufs_alloc(struct sf_model *m)
{
	int rc = SF_OK;
	set_bufs_task_only(m);
	for (size_t k = 0; k < NMODEL_BUFS; k++) {
		const struct model_buf *b = &model_bufs[k];
		float **buf = member(m, b->buf);
		starpu_data_handle_t *h = b->handles != NO_HANDLES ? member(m, b->handles) : NULL;
		size_t len = b->len(m);
		int slots = b->slots(m);
		if (len == 0 || slots == 0)
			continue;
		SF_CHECK(alloc_buf(m, buf, len * (size_t)slots, b->what));
		for (int s = 0; h && s < slots; s++)
			reg(&h[s], *buf + (size_t)s * len, len, sizeof(float));
	}
fail:
	return rc;
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
			n += b->len(m) * (size_t)b->slots(m);
	}
	return n;
}

/* A task's name, as trace/event.h reads it: the graph's own names, and the index of the
 * node (for a unit, its first reader) that pairs a unit's gather with the forward
 * waiting for it. A line break of a user's name becomes a blank: FxT's tasks.rec holds
 * a field a line. */
static void task_name(char *buf, size_t len, const char *kind, const char *name, const char *type,
                      int index)
{
	if (type)
		snprintf(buf, len, "%s %s (%s L%d)", kind, name, type, index);
	else
		snprintf(buf, len, "%s %s (L%d)", kind, name, index);
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

static void unit_names(struct _sf_unit *u)
{
	task_name(u->gather_name, sizeof u->gather_name, "gather", u->name, NULL, u->first);
	task_name(u->rs_name, sizeof u->rs_name, "rs", u->name, NULL, u->first);
	task_name(u->opt_name, sizeof u->opt_name, "opt", u->name, NULL, u->first);
	task_name(u->free_name, sizeof u->free_name, "free", u->name, NULL, u->first);
	task_name(u->ag_name, sizeof u->ag_name, "ag", u->name, NULL, u->first);
	task_name(u->acc_name, sizeof u->acc_name, "acc", u->name, NULL, u->first);
	task_name(u->sq_name, sizeof u->sq_name, "sqnorm", u->name, NULL, u->first);
	task_name(u->ar_name, sizeof u->ar_name, "ar", u->name, NULL, u->first);
}

/* The parameter-group kind of a node's tensor (SF_NO_DECAY_*), 0: it decays. */
static unsigned tensor_kind(const struct _sf_node *nd, const struct sf_param_tensor *t)
{
	const char *type = nd->type->name;
	if (!strcmp(type, "layernorm") || !strcmp(type, "rmsnorm"))
		return SF_NO_DECAY_NORM;
	if (!strcmp(type, "embedding") || !strcmp(type, "pos_embedding"))
		return SF_NO_DECAY_EMBED;
	if (nd->type->type.param_tensors && t->ndim == 1)
		return SF_NO_DECAY_BIAS;
	return 0;
}

/* A tensor's run of a unit's optimizer vector, before the runs are tiled */
struct group_run {
	size_t b, e;
	float lr_scale;
	int decay;
};

static int cmp_run(const void *a, const void *b)
{
	const struct group_run *x = a, *y = b;
	return x->b < y->b ? -1 : x->b > y->b;
}

static float lr_scale_of(const struct _sf_unit *un, size_t off)
{
	for (int i = 0; i < un->nlr; i++)
		if (un->lr[i].off == off)
			return un->lr[i].scale;
	return 1.0f;
}

/* Appends [b, e) with its attributes to the runs (merged with the last when alike) */
static void push_run(struct _sf_unit *un, size_t e, float lr_scale, int decay)
{
	struct _sf_opt_run *last = un->nruns ? &un->runs[un->nruns - 1] : NULL;
	if (last && last->lr_scale == lr_scale && last->decay == decay)
		last->end = e;
	else
		un->runs[un->nruns++] = (struct _sf_opt_run){e, lr_scale, decay};
}

/* Unit u's optimizer runs (struct _sf_opt_run) over its optimizer vector (its shard,
 * or all of it when replicated): each tensor's weight decay (sf_model_options::no_decay)
 * and learning-rate scale, the rest (padding) decayed at scale 1; alike runs merged. */
static int opt_runs(struct sf_model *m, int u)
{
	struct _sf_unit *un = &m->units[u];
	size_t lo = m->cfg.sharding == SF_SHARD_NONE ? 0 : (size_t)m->shard_rank * un->S;
	size_t hi = lo + un->opt_n, cap = 1;
	int nr = 0;
	for (int n = un->first; n <= un->last; n++)
		cap += SF_MAX_PARAM_TENSORS;
	struct group_run *r = malloc(cap * sizeof *r);
	free(un->runs);
	un->nruns = 0;
	un->runs = malloc(2 * cap * sizeof *un->runs);
	if (!r || !un->runs) {
		free(r);
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	}
	for (int n = un->first; n <= un->last; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		const struct sf_layer_info *li = &m->nodes[n].info;
		if (m->nodes[n].unit != u || nd->tied_to >= 0 || nd->kind != SF_NODE_LAYER)
			continue;
		struct sf_param_tensor t[SF_MAX_PARAM_TENSORS];
		int nt = _sf_node_param_tensors(nd, li, t);
		for (int i = 0; i < nt; i++) {
			size_t b = li->param_offset + t[i].offset;
			size_t e = b + t[i].shape[0] * (t[i].ndim == 2 ? t[i].shape[1] : 1);
			float scale = lr_scale_of(un, b);
			b = b > lo ? b : lo;
			e = e < hi ? e : hi;
			if (e > b)
				r[nr++] = (struct group_run){b - lo, e - lo, scale,
				                             !(tensor_kind(nd, &t[i]) & m->opt.no_decay)};
		}
	}
	qsort(r, (size_t)nr, sizeof *r, cmp_run);
	size_t at = 0;
	for (int i = 0; i < nr; i++) {
		if (r[i].b > at) /* not a named tensor's (a type without names tiles it all) */
			push_run(un, r[i].b, 1.0f, 1);
		push_run(un, r[i].e, r[i].lr_scale, r[i].decay);
		at = r[i].e;
	}
	push_run(un, un->opt_n, 1.0f, 1); /* the padding, or all of an empty vector */
	free(r);
	return SF_OK;
}

int _sf_unit_set_lr_scale(struct sf_model *m, int u, size_t off, size_t count, float scale)
{
	struct _sf_unit *un = &m->units[u];
	int i = 0;
	while (i < un->nlr && un->lr[i].off != off)
		i++;
	if (i == un->nlr) {
		struct _sf_lr_range *l = realloc(un->lr, (size_t)(un->nlr + 1) * sizeof *l);
		if (!l)
			return SF_ERR(SF_ERR_NOMEM, "sf_model_tensor_lr_scale: out of memory");
		un->lr = l;
		un->nlr++;
	}
	un->lr[i] = (struct _sf_lr_range){off, count, scale};
	return opt_runs(m, u);
}

/* Node n's info with the whole layer's shapes (its graph's), for its initialisation
 * and its tensors' whole names and shapes */
void _sf_node_whole_info(const struct sf_model *m, int n, struct sf_layer_info *li)
{
	const struct _sf_node *nd = &m->gnodes[n];
	*li = m->nodes[n].info;
	for (int i = 0; i < li->nin; i++)
		if (!li->in_int[i])
			li->in_dim[i] = m->nodes[nd->in[i]].whole_dim;
	li->out_dim = m->nodes[n].whole_dim;
	li->nparams = m->nodes[n].whole_nparams;
	li->tp_split = 0;
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

/* Appends [lo, hi) of the unit's vector, within the window [wlo, whi) this rank
 * counts, to its runs, as runs of the buffer the norm reads (element `base` of the
 * vector at its element 0); an empty intersection adds nothing, and a run touching
 * the previous one joins it. */
static void tp_seg_add(struct _sf_unit *u, size_t lo, size_t hi, size_t wlo, size_t whi,
                       size_t base)
{
	lo = lo > wlo ? lo : wlo;
	hi = hi < whi ? hi : whi;
	if (lo >= hi)
		return;
	struct _sf_seg *last = u->nsq_segs ? &u->sq_segs[u->nsq_segs - 1] : NULL;
	if (last && last->off + last->n == lo - base) {
		last->n += hi - lo;
		return;
	}
	u->sq_segs[u->nsq_segs++] = (struct _sf_seg){lo - base, hi - lo};
}

/* Clipping with TP: the runs of unit k's gradient this rank counts in the global norm.
 * A linear_col's parameters and a linear_row's weight are this TP rank's slice (each
 * counted by its own rank); the rest (a row's bias, the norms, embeddings) every TP
 * rank holds alike, and only TP rank 0 counts it. Within this rank's shard, or its
 * block of the unit (sharding none), as the sqnorm task reads it. */
static int tp_norm_segs(struct sf_model *m, int k)
{
	struct _sf_unit *u = &m->units[k];
	size_t wlo, wn, base = 0; /* sharding none: the unit's whole gradient is read */
	if (m->cfg.sharding == SF_SHARD_NONE)
		_sf_unit_block(m, k, &wlo, &wn);
	else
		wlo = base = (size_t)m->shard_rank * u->S, wn = u->S;
	size_t whi = wlo + wn, nodes = (size_t)(u->last - u->first + 1);
	u->sq_segs = calloc(2 * nodes + 1, sizeof *u->sq_segs);
	if (!u->sq_segs)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	for (int n = u->first; n <= u->last; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		const struct sf_layer_info *li = &m->nodes[n].info;
		if (m->nodes[n].unit != k || nd->tied_to >= 0 || !nd->nparams)
			continue;
		size_t lo = li->param_offset, hi = lo + nd->nparams, mine = lo;
		enum _sf_tp_kind kind = nd->type->tp;
		if (kind == SF_TP_COL)
			mine = hi;
		else if (kind == SF_TP_ROW)
			mine = lo + (size_t)li->out_dim * (size_t)li->in_dim[0];
		tp_seg_add(u, lo, mine, wlo, whi, base);
		if (m->tp_rank == 0)
			tp_seg_add(u, mine, hi, wlo, whi, base);
	}
	if (u->nsq_segs == 0) /* nothing counted here: one empty run, sum 0 */
		u->sq_segs[u->nsq_segs++] = (struct _sf_seg){0, 0};
	u->sqv = calloc((size_t)u->nsq_segs, sizeof *u->sqv);
	if (!u->sqv)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	reg(&u->h_sq, u->sqv, (size_t)u->nsq_segs, sizeof(double));
	return SF_OK;
}

/* The geometry, names and collective arguments of unit u (its P and nodes were
 * planned by plan.c); its storage comes after the memory check (build_units). */
static int size_unit(struct sf_model *m, int k, size_t *off)
{
	enum sf_sharding sh = unit_sharding(m);
	size_t N = (size_t)m->shard_size;
	struct _sf_unit *u = &m->units[k];
	u->S = (u->P + N - 1) / N;
	u->off = *off;
	*off += u->P;
	if (u->P > m->largest_P)
		m->largest_P = u->P;
	if (u->S * N > m->largest_NS)
		m->largest_NS = u->S * N;
	if ((uint64_t)u->S * N > INT32_MAX)
		return SF_ERR(SF_ERR_INVALID,
		              "unit \"%s\": %zu parameters is more than one collective can carry",
		              u->name, u->P);
	u->opt_n = sh == SF_SHARD_NONE ? u->P : u->S;
	u->comm = (struct _sf_comm_args){
	    .comm = m->comm,
	    .unit = u->name,
	    .acct = &m->comm_acct,
	    .P = u->P,
	    .S = u->S,
	    .resident = sh == SF_SHARD_FULL ? &m->resident : NULL,
	    .max_resident = &m->max_resident,
	};
	unit_names(u);
	if (m->tp > 1)
		return tp_norm_segs(m, k);
	reg(&u->h_sq, &u->sq, 1, sizeof(double));
	return SF_OK;
}

static int size_units(struct sf_model *m)
{
	int rc = SF_OK;
	size_t off = 0;
	for (int k = 0; k < m->nunits; k++)
		SF_CHECK(size_unit(m, k, &off));
	m->nparams_total = off;
	m->nparams_whole = 0; /* with TP, every rank's slices together */
	for (int k = 0; k < m->nunits; k++) {
		struct _sf_unit *u = &m->units[k];
		u->woff = m->nparams_whole, u->Pw = 0;
		for (int n = u->first; n <= u->last; n++) {
			if (m->nodes[n].unit != k || m->gnodes[n].tied_to >= 0)
				continue;
			m->nodes[n].wpoff = u->Pw;
			u->Pw += m->nodes[n].whole_nparams;
		}
		m->nparams_whole += u->Pw;
	}
	for (int n = 0; n < m->nnodes; n++) /* a tied node reads its owner's */
		if (m->gnodes[n].tied_to >= 0)
			m->nodes[n].wpoff = m->nodes[_sf_node_param_owner(m->gnodes, n)].wpoff;
fail:
	return rc;
}

/* Every unit's storage, then its initial parameters (one unit's full vector at a
 * time), then its weight-decay runs */
static int build_units(struct sf_model *m)
{
	int rc = SF_OK;
	set_bufs_task_only(m);
	for (int k = 0; k < m->nunits; k++)
		SF_CHECK(unit_vecs_alloc(m, &m->units[k], false));
	for (int k = 0; k < m->nunits && !SF_SIMULATED; k++) /* no values in simulated time */
		SF_CHECK(init_unit(m, k));
	for (int k = 0; k < m->nunits; k++)
		SF_CHECK(opt_runs(m, k));
fail:
	return rc;
}

static int copy_nodes(struct sf_model *m, const sf_graph *g)
{
	m->nnodes = g->n;
	m->gnodes = calloc((size_t)g->n, sizeof *m->gnodes);
	m->nodes = calloc((size_t)g->n, sizeof *m->nodes);
	m->input_nodes = calloc((size_t)(g->ninputs ? g->ninputs : 1), sizeof(int));
	m->int_input_nodes = calloc((size_t)(g->nint_inputs ? g->nint_inputs : 1), sizeof(int));
	if (!m->gnodes || !m->nodes || !m->input_nodes || !m->int_input_nodes)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	for (int n = 0; n < g->n; n++) {
		m->gnodes[n] = g->nodes[n];
		m->gnodes[n].config = NULL;
		if (g->nodes[n].config_size) {
			m->gnodes[n].config = malloc(g->nodes[n].config_size);
			if (!m->gnodes[n].config)
				return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
			memcpy(m->gnodes[n].config, g->nodes[n].config, g->nodes[n].config_size);
		}
	}
	return SF_OK;
}

/* Tensor parallelism: node n's shapes on this rank (layers/tp.c), its gnodes entry
 * made this rank's (dim, nparams), the whole ones kept; which all-reduces it has. */
static int tp_shapes(struct sf_model *m, int n)
{
	struct _sf_node *nd = &m->gnodes[n];
	struct _sf_node_state *s = &m->nodes[n];
	bool in_split[SF_MAX_INPUTS] = {false};
	int in_local[SF_MAX_INPUTS], out_local;
	size_t np_local;
	int nin = nd->kind == SF_NODE_LAYER || nd->kind == SF_NODE_LOSS ? nd->nin : 0;
	s->whole_dim = nd->dim;
	s->whole_nparams = nd->nparams;
	for (int i = 0; i < nin; i++) { /* the inputs' whole widths (their gnodes hold ours) */
		in_split[i] = m->nodes[nd->in[i]].tp_out_split;
		in_local[i] = m->nodes[nd->in[i]].whole_dim;
	}
	int rc = _sf_tp_local(m->gnodes, n, m->tp, in_split, in_local, &out_local, &np_local,
	                      &s->tp_out_split);
	if (rc < 0)
		return rc; /* tp.c's message names the node */
	nd->dim = out_local;
	if (nd->tied_to < 0)
		nd->nparams = np_local;
	enum _sf_tp_kind kind = nd->kind == SF_NODE_LAYER ? nd->type->tp : SF_TP_NONE;
	s->tp_fwd_ar = m->tp > 1 && kind == SF_TP_ROW;
	s->tp_bwd_ar = m->tp > 1 && kind == SF_TP_COL; /* if its input gradient is wanted */
	s->tp_gather = m->tp > 1 && kind == SF_TP_COL &&
	               ((const struct sf_linear_tp_config *)nd->config)->gather_output;
	if (s->tp_gather) { /* every TP rank's columns */
		s->tp_runs = calloc((size_t)m->tp * SF_MAX_PARAM_TENSORS, sizeof *s->tp_runs);
		if (!s->tp_runs)
			return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
		int nr = 0;
		for (int t = 0; t < m->tp; t++)
			nr = _sf_tp_col_runs(nd, m->tp, t, s->tp_runs + (size_t)t * SF_MAX_PARAM_TENSORS);
		s->tp_gcomm.tp_nruns = nr;
	}
	return SF_OK;
}

/* SHARDFLOW_TP > 1 on a graph without tensor-parallel layers: every TP rank computes
 * the whole model (correct, but the TP ranks only repeat each other): say so. */
static void tp_warn_unsplit(const struct sf_model *m, const char *graph)
{
	bool any = false;
	for (int n = 0; n < m->nnodes; n++)
		any |= m->nodes[n].tp_out_split;
	if (m->tp > 1 && !any && m->rank == 0)
		_sf_log(SF_LOG_WARN,
		        "model \"%s\": SHARDFLOW_TP=%d but the graph has no linear_col: every TP "
		        "rank computes the whole model, and the batch is split over %d ranks only "
		        "(sf_gpt_config.tensor_parallel = 1 splits the GPT's blocks)",
		        graph, m->tp, m->dp_size);
}

/* Tensor parallelism, once the gradients are planned: a linear_col whose input
 * gradient is wanted writes it (a partial sum) into its own buffer, overwriting; its
 * all-reduce then writes or adds it where the plan said the node would. */
static void tp_plan(struct sf_model *m)
{
	for (int n = 0; n < m->nnodes && m->tp > 1; n++) {
		struct _sf_node_state *s = &m->nodes[n];
		if (s->tp_bwd_ar && !s->bwd_info.need_dinput[0])
			s->tp_bwd_ar = false;
		if (s->tp_bwd_ar) {
			s->tp_comm.tp_acc = s->bwd_info.accumulate[0];
			s->bwd_info.accumulate[0] = 0;
		}
		size_t n_ar = s->tp_fwd_ar   ? (size_t)s->info.out_dim
		              : s->tp_bwd_ar ? (size_t)s->info.in_dim[0]
		                             : 0;
		if (n_ar * m->rows_local > m->tp_max)
			m->tp_max = n_ar * m->rows_local;
		/* a gather's K local outputs, side by side in the scratch */
		if (s->tp_gather && (size_t)s->whole_dim * m->rows_local > m->tp_max)
			m->tp_max = (size_t)s->whole_dim * m->rows_local;
	}
}

static void fill_info(struct sf_model *m, int n)
{
	const struct _sf_node *nd = &m->gnodes[n];
	struct sf_layer_info *li = &m->nodes[n].info;
	li->rows = (int)m->rows_local;
	li->samples = m->B_local;
	li->seq_len = m->T;
	li->nin = nd->kind == SF_NODE_LAYER ? nd->nin : 0;
	for (int i = 0; i < li->nin; i++) {
		const struct _sf_node *x = &m->gnodes[nd->in[i]];
		li->in_int[i] = x->kind == SF_NODE_INT_INPUT;
		li->in_dim[i] = li->in_int[i] ? 1 : x->dim;
		li->in_range[i] = li->in_int[i] ? x->dim : 0;
	}
	li->out_dim = nd->dim;
	li->nparams = nd->nparams;
	li->config = nd->config;
	li->config_size = nd->config_size;
	li->layer_index = n;
	li->tp_size = m->tp;
	li->tp_rank = m->tp_rank;
	li->tp_split = m->nodes[n].tp_out_split;
	for (int i = 0; i < li->nin; i++)
		li->tp_split |= m->nodes[nd->in[i]].tp_out_split;
	if (nd->kind == SF_NODE_LAYER && nd->type->type.saved_floats)
		li->nsaved = nd->type->type.saved_floats(li);
}

/* A node's shape, names and place among the inputs (its buffers: alloc_node). */
static int build_node(struct sf_model *m, int n)
{
	struct _sf_node *nd = &m->gnodes[n];
	struct _sf_node_state *s = &m->nodes[n];
	int rc = tp_shapes(m, n);
	if (rc < 0)
		return rc;
	fill_info(m, n);
	if (s->tp_gather) /* its activation is whole; its kernels compute O / K columns */
		s->info.out_dim = s->whole_dim / m->tp;
	if (nd->kind == SF_NODE_INPUT)
		m->input_nodes[m->ninputs++] = n;
	if (nd->kind == SF_NODE_INT_INPUT)
		m->int_input_nodes[m->nint_inputs++] = n;
	const char *type = nd->kind == SF_NODE_LAYER ? nd->type->name : "input";
	task_name(s->fwd_name, sizeof s->fwd_name, "fwd", nd->name, type, n);
	task_name(s->bwd_name, sizeof s->bwd_name, "bwd", nd->name, type, n);
	task_name(s->rc_name, sizeof s->rc_name, "recompute", nd->name, type, n);
	/* a split backward's weight-gradient half (scheduler/plan.c): "bwd <name>.dW (...)" */
	char dw[SF_NAME_MAX + 4];
	snprintf(dw, sizeof dw, "%s.dW", nd->name);
	task_name(s->dw_name, sizeof s->dw_name, "bwd", dw, type, n);
	task_name(s->tp_name, sizeof s->tp_name, "tp_ar", nd->name, type, n);
	task_name(s->tp_ag_name, sizeof s->tp_ag_name, "tp_ag", nd->name, type, n);
	task_name(s->tp_sl_name, sizeof s->tp_sl_name, "tp_slice", nd->name, type, n);
	return SF_OK;
}

static int build_nodes(struct sf_model *m, const sf_graph *g)
{
	int rc = SF_OK;
	SF_CHECK(copy_nodes(m, g));
	for (int n = 0; n < g->n; n++)
		SF_CHECK(build_node(m, n));
fail:
	return rc;
}

/* Floats alloc_node gives node n: its activation (ids for an integer input), and for
 * a layer its gradient and saved buffer; 0 for a recomputed node (its shared buffers
 * are counted once, as alloc_recomp_bufs makes them). */
static size_t node_floats(const struct sf_model *m, int n)
{
	const struct _sf_node *nd = &m->gnodes[n];
	const struct _sf_node_state *s = &m->nodes[n];
	size_t cnt = m->rows_local * (size_t)nd->dim;
	if (s->recomp_buf >= 0)
		return 0;
	if (nd->kind == SF_NODE_INT_INPUT)
		return m->rows_local;
	if (nd->kind == SF_NODE_INPUT)
		return cnt;
	size_t tp = (s->tp_bwd_ar ? m->rows_local * (size_t)s->info.in_dim[0] : 0) +
	            (s->tp_gather ? 2 * m->rows_local * (size_t)s->info.out_dim : 0);
	return nd->kind == SF_NODE_LAYER ? 2 * cnt + s->info.nsaved + tp : 0;
}

/* The buffers recomputed activations share (SHARDFLOW_RECOMPUTE=units). */
static int alloc_recomp_bufs(struct sf_model *m)
{
	int rc = SF_OK;
	for (int b = 0; b < m->nrecomp_bufs; b++) {
		struct _sf_recomp_buf *r = &m->recomp_bufs[b];
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
fail:
	return rc;
}

/* A node's activation (and gradient, and saved buffer) of this rank's rows: its own,
 * or a recomputed node's shared ones. */
static int alloc_node(struct sf_model *m, int n)
{
	int rc = SF_OK;
	const struct _sf_node *nd = &m->gnodes[n];
	struct _sf_node_state *s = &m->nodes[n];
	size_t cnt = m->rows_local * (size_t)nd->dim;
	if (s->recomp_buf >= 0) {
		struct _sf_recomp_buf *r = &m->recomp_bufs[s->recomp_buf];
		s->act = r->act, s->dact = r->dact, s->saved = r->saved;
		s->h_act = r->h_act, s->h_dact = r->h_dact, s->h_saved = r->h_saved;
		goto fail;
	}
	if (nd->kind == SF_NODE_INT_INPUT) {
		SF_CHECK(alloc_floats(&s->act, m->rows_local, "integer inputs"));
		reg(&s->h_act, s->act, m->rows_local, sizeof(int32_t));
	}
	if (nd->kind == SF_NODE_INPUT) { /* the main thread writes the batch there */
		SF_CHECK(alloc_floats(&s->act, cnt, "inputs"));
		reg(&s->h_act, s->act, cnt, sizeof(float));
	}
	if (nd->kind == SF_NODE_LAYER) {
		SF_CHECK(alloc_task_only(&s->act, cnt, "activations"));
		reg(&s->h_act, s->act, cnt, sizeof(float));
		SF_CHECK(alloc_task_only(&s->dact, cnt, "activation gradients"));
		reg(&s->h_dact, s->dact, cnt, sizeof(float));
	}
	if (nd->kind == SF_NODE_LAYER && s->info.nsaved) {
		SF_CHECK(alloc_task_only(&s->saved, s->info.nsaved, "a saved buffer"));
		reg(&s->h_saved, s->saved, s->info.nsaved, sizeof(float));
	}
	if (s->tp_gather) { /* gather_output: the kernel's columns and their gradient */
		size_t nl = m->rows_local * (size_t)s->info.out_dim;
		SF_CHECK(alloc_task_only(&s->tpbuf_o, nl, "a tensor-parallel output slice"));
		reg(&s->h_tpbuf_o, s->tpbuf_o, nl, sizeof(float));
		SF_CHECK(alloc_task_only(&s->tpbuf_do, nl, "a tensor-parallel output slice"));
		reg(&s->h_tpbuf_do, s->tpbuf_do, nl, sizeof(float));
	}
	if (s->tp_bwd_ar) { /* a linear_col's partial input gradient */
		size_t nt = m->rows_local * (size_t)s->info.in_dim[0];
		SF_CHECK(alloc_task_only(&s->tpbuf, nt, "a tensor-parallel input gradient"));
		reg(&s->h_tpbuf, s->tpbuf, nt, sizeof(float));
	}
	m->act_bytes += node_floats(m, n) * sizeof(float);
fail:
	return rc;
}

static int alloc_nodes(struct sf_model *m)
{
	int rc = SF_OK;
	SF_CHECK(alloc_recomp_bufs(m));
	for (int n = 0; n < m->nnodes; n++)
		SF_CHECK(alloc_node(m, n));
fail:
	return rc;
}

static int check_graph(const sf_graph *g)
{
	if (!g)
		return SF_ERR(SF_ERR_INVALID, "sf_model_create: graph is NULL");
	if (g->loss < 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: graph \"%s\" has no loss (end it with "
		              "sf_graph_softmax_cross_entropy)",
		              g->name);
	if (g->open_group >= 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: unit \"%s\" of graph \"%s\" is still open "
		              "(sf_graph_unit_end)",
		              g->group_names[g->open_group], g->name);
	return SF_OK;
}

/* The model-wide state: the shared buffers (model_bufs), the collectives' view of
 * them, comm order, labels, losses, clipping. */
static int build_buffers(struct sf_model *m)
{
	int rc = SF_OK;
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
	m->labels = calloc(m->rows_local, sizeof(int32_t));
	if (!m->labels)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	reg(&m->h_labels, m->labels, m->rows_local, sizeof(int32_t));
	const struct _sf_node *loss = &m->gnodes[m->loss_node];
	const struct sf_loss_config *lc = loss->config;
	int width = m->gnodes[loss->in[0]].dim;
	m->loss_kind = lc ? (int)lc->kind : SF_LOSS_CROSS_ENTROPY;
	m->loss_args = (struct _sf_loss_args){
	    .rows = (int)m->rows_local,
	    .classes = m->labels_node >= 0 ? m->gnodes[m->labels_node].dim : width,
	    .ignore = lc ? lc->ignore_index : SF_LOSS_IGNORE_INDEX,
	    .scale = 1.0f / (float)((double)m->B_global * m->T), /* each step sets it */
	};
	m->reg_loss_args = (struct _sf_reg_loss_args){
	    .rows = (int)m->rows_local,
	    .width = width,
	    .kind = m->loss_kind,
	    .delta = lc ? lc->delta : 1.0f,
	    .scale = (float)(1.0 / ((double)m->B_global * m->T * width)),
	};
	m->loss_comm = (struct _sf_comm_args){.comm = m->comm, .acct = &m->comm_acct};
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
fail:
	return rc;
}

/* What a rank will hold, in floats, planned from the units' geometry and the nodes
 * before anything is allocated: the parts of struct sf_model_stats, and `init`, the
 * one unit's full vector initialisation holds for a moment. */
struct mem_plan {
	size_t params, grads, optim, acts, buffers, init;
};

static void plan_memory(const struct sf_model *m, struct mem_plan *p)
{
	bool acc = m->cfg.grad_accum > 1;
	size_t *kind[VEC_KINDS] = {[VEC_PARAMS] = &p->params, [VEC_GRADS] = &p->grads,
	                           [VEC_OPTIM] = &p->optim, [VEC_BUFFERS] = &p->buffers};
	memset(p, 0, sizeof *p);
	for (int i = 0; i < m->nunits; i++)
		for (size_t k = 0; k < NUNIT_VECS; k++)
			*kind[unit_vecs[k].kind] += unit_vecs[k].len(m, &m->units[i], acc);
	for (int k = 0; k < VEC_KINDS; k++)
		*kind[k] += model_bufs_floats(m, (enum vec_kind)k, true);
	for (int b = 0; b < m->nrecomp_bufs; b++)
		p->acts += 2 * m->recomp_bufs[b].nact + m->recomp_bufs[b].nsaved;
	for (int n = 0; n < m->nnodes; n++)
		p->acts += node_floats(m, n);
	p->init = m->largest_P;
}

/* SHARDFLOW_MEMORY_CHECK: the plan against the limit the kernel enforces, before any
 * allocation (a cgroup's limit kills the process, it does not fail a malloc) */
static int check_memory(const struct sf_model *m)
{
	const double mib = 1024.0 * 1024.0, f = sizeof(float) / mib;
	struct mem_plan p;
	struct _sf_memlimit lim;
	if (!m->cfg.memory_check)
		return SF_OK;
	plan_memory(m, &p);
	uint64_t need = (uint64_t)(p.params + p.grads + p.optim + p.acts + p.buffers + p.init) *
	                sizeof(float);
	_sf_memlimit_get(&lim);
	if (!lim.found)
		return SF_OK;
	uint64_t avail = lim.limit > lim.used ? lim.limit - lim.used : 0;
	_sf_log(SF_LOG_INFO, "memory: rank %d plans %.1f MiB; %s: %.1f MiB, %.1f MiB in use",
	        m->rank, (double)need / mib, lim.what, (double)lim.limit / mib,
	        (double)lim.used / mib);
	if (need <= avail)
		return SF_OK;
	return SF_ERR(
	    SF_ERR_NOMEM,
	    "sf_model_create: rank %d needs %.1f MiB for this model (parameters %.1f MiB: its "
	    "shards and %d ring slots of %zu; gradients %.1f MiB; optimizer state %.1f MiB; "
	    "activations %.1f MiB of %d samples; collective buffers %.1f MiB; and while "
	    "initialising, one unit's %.1f MiB) but its memory limit, %s, is %.1f MiB with "
	    "%.1f MiB in use: %.1f MiB left. Shard it over more ranks (sharding %s over %d), "
	    "lower the batch, set SHARDFLOW_RECOMPUTE=units, or SHARDFLOW_MEMORY_CHECK=off to "
	    "try anyway",
	    m->rank, (double)need / mib, (double)p.params * f, m->R, m->largest_NS,
	    (double)p.grads * f, (double)p.optim * f, (double)p.acts * f, m->B_local,
	    (double)p.buffers * f, (double)p.init * f, lim.what, (double)lim.limit / mib,
	    (double)lim.used / mib, (double)avail / mib, _sf_sharding_names[m->cfg.sharding],
	    m->shard_size);
}

/* What mixed precision does in this model (the log, at info) */
static void log_precision(const struct sf_model *m, const char *name)
{
	int kept = 0;
	if (m->cfg.param_dtype != SF_DTYPE_BF16 && m->cfg.reduce_dtype != SF_DTYPE_BF16)
		return;
	for (int u = 0; u < m->nunits; u++)
		kept += m->units[u].keep_fp32;
	int ngpu = (int)starpu_cuda_worker_get_count() - (m->comm->ops->device ? 1 : 0);
	if (m->cfg.param_dtype == SF_DTYPE_BF16)
		_sf_log(SF_LOG_INFO,
		        "model \"%s\": param_dtype bf16: gathers move bf16; the linear layers' "
		        "products %s",
		        name,
		        ngpu > 0 ? "in fp32 through cuBLAS on the GPU (bf16 only on the wire)"
		        : _sf_gemm_bf16_available() ? "in bf16 through oneDNN (fp32 sums)"
		                                    : "in fp32 (this build has no oneDNN)");
	if (kept)
		_sf_log(SF_LOG_INFO, "model \"%s\": %d of %d units kept in fp32 (keep_fp32)", name,
		        kept, m->nunits);
}

SF_API int sf_model_create(sf_context *ctx, const sf_graph *g, const struct sf_model_options *o,
                           sf_model **out)
{
	int rc = SF_OK;
	struct sf_model *m = NULL;
	struct sf_model_options defaults;

	if (!out)
		return SF_ERR(SF_ERR_INVALID, "sf_model_create: out is NULL");
	*out = NULL;
	if (!ctx || !_sf_runtime_active())
		return SF_ERR(SF_ERR_STATE, "sf_model_create: no runtime; call sf_init first");
	SF_CHECK(check_graph(g));
	if (!o) {
		sf_model_options_init(&defaults);
		o = &defaults;
	}
	SF_CHECK(check_options(o, ctx->size / ctx->comm->tp_size));
	struct sf_config cfg;
	SF_CHECK(_sf_config_for_model(ctx, o->config, &cfg));
	SF_CHECK(check_dtypes(ctx, &cfg));
	if (o->config && ctx->rank == 0)
		_sf_config_log(o->config, &cfg, ctx->cfg_from_env, g->name);

	m = calloc(1, sizeof *m);
	if (!m)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	m->ctx = ctx;
	m->comm = ctx->comm;
	m->cfg = cfg;
	m->opt = *o;
	m->lr = o->lr;
	m->nranks = ctx->size;
	m->rank = ctx->rank;
	m->tp = ctx->comm->tp_size;
	m->tp_rank = ctx->comm->tp_rank;
	m->dp_size = m->nranks / m->tp;
	m->dp_rank = m->rank / m->tp;
	m->shard_size = ctx->comm->shard_size;
	m->shard_rank = ctx->comm->shard_rank;
	m->nrep = ctx->comm->rep_size;
	m->loss_node = g->loss;
	m->labels_node = g->labels;
	m->T = g->seq_len;
	m->B_global = o->batch;
	int base = o->batch / m->dp_size, extra = o->batch % m->dp_size, r = m->dp_rank;
	m->B_local = base + (r < extra);
	m->row0 = r * base + (r < extra ? r : extra);
	m->rows_local = (size_t)m->B_local * (size_t)m->T;
	atomic_init(&m->resident, 0);
	atomic_init(&m->max_resident, 0);
	ctx->nmodels++; /* sf_model_destroy below undoes it */

	SF_CHECK(build_nodes(m, g));
	tp_warn_unsplit(m, g->name);
	SF_CHECK(_sf_plan_units(m, g));
	if (m->nunits == 0) {
		rc = SF_ERR(SF_ERR_INVALID,
		            "sf_model_create: graph \"%s\" has no layer with parameters; there "
		            "is nothing to train",
		            g->name);
		goto fail;
	}
	SF_CHECK(_sf_plan_gradients(m));
	SF_CHECK(_sf_plan_recompute(m));
	_sf_plan_split_backward(m);
	tp_plan(m);
	SF_CHECK(size_units(m));
	SF_CHECK(check_memory(m));
	SF_CHECK(alloc_nodes(m));
	SF_CHECK(build_units(m));
	if (m->cfg.grad_accum > 1) /* micro-batches announced: their buffers now too */
		SF_CHECK(_sf_model_accum_buffers(m));
	SF_CHECK(build_buffers(m));
	log_precision(m, g->name);
	m->comm_worker_cpu0 = _sf_clock_seconds(ctx->comm_clock);
	if (m->cfg.trace[0]) {
		SF_CHECK(m->comm->ops->barrier(m->comm, false));
		SF_CHECK(_sf_recorder_create(m->rank, &m->trace));
	}
	_sf_log(SF_LOG_INFO,
	        "model \"%s\": %d units, %zu parameters, batch %d (%d local samples of %d "
	        "rows), sharding %s, ring %d",
	        g->name, m->nunits, m->nparams_whole, m->B_global, m->B_local, m->T,
	        _sf_sharding_names[m->cfg.sharding], m->R);
	*out = m;
	return SF_OK;
fail:
	if (m)
		sf_model_destroy(m);
	return rc;
}

SF_API int sf_model_destroy(sf_model *m)
{
	int rc = SF_OK;
	if (!m)
		return SF_OK;
	if (m->trace && m->trace_written != m->nsteps)
		rc = sf_model_trace_write(m);
	starpu_task_wait_for_all();
	_sf_recorder_destroy(m->trace);
	for (int b = 0; m->recomp_bufs && b < m->nrecomp_bufs; b++) {
		struct _sf_recomp_buf *r = &m->recomp_bufs[b];
		unreg(&r->h_act);
		unreg(&r->h_dact);
		unreg(&r->h_saved);
		free_task_only(r->act);
		free_task_only(r->dact);
		free_task_only(r->saved);
	}
	free(m->recomp_bufs);
	free(m->seg_of);
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
		free(m->nodes[n].tp_runs);
		if (m->gnodes[n].kind == SF_NODE_LAYER) {
			free_task_only(m->nodes[n].act);
			free_task_only(m->nodes[n].dact);
			free_task_only(m->nodes[n].saved);
		} else {
			free_floats(m->nodes[n].act);
		}
	}
	for (int i = 0; m->units && i < m->nunits; i++) {
		struct _sf_unit *u = &m->units[i];
		unit_vecs_release(m, u);
		unreg(&u->h_sq);
		free(u->sq_segs);
		free(u->sqv);
		free(u->runs);
		free(u->lr);
	}
	model_bufs_release(m);
	for (int s = 0; s < SF_LOSS_SLOTS; s++) {
		unreg(&m->h_loss[s]);
		unreg(&m->h_clip[s]);
	}
	unreg(&m->h_one);
	unreg(&m->h_labels);
	unreg(&m->h_order);
	unreg(&m->h_noparams);
	free(m->labels);
	free(m->h_sqs);
	free(m->norm_descr);
	for (int n = 0; m->gnodes && n < m->nnodes; n++)
		free(m->gnodes[n].config);
	free(m->gnodes);
	free(m->nodes);
	free(m->input_nodes);
	free(m->int_input_nodes);
	free(m->units);
	free(m->bwd_order);
	if (m->ckpt_unlock)
		m->ckpt_unlock(m);
	m->ctx->nmodels--;
	free(m);
	return rc;
}

SF_API int sf_model_local_rows(const sf_model *m, int *first, int *rows)
{
	if (!m || (!first && !rows))
		return SF_ERR(SF_ERR_INVALID, "sf_model_local_rows: NULL model or outputs");
	if (first)
		*first = m->row0;
	if (rows)
		*rows = m->B_local;
	return SF_OK;
}

SF_API int sf_model_param_count(const sf_model *m, size_t *n)
{
	if (!m || !n)
		return SF_ERR(SF_ERR_INVALID, "sf_model_param_count: NULL model or output");
	*n = m->nparams_whole;
	return SF_OK;
}

SF_API int sf_model_set_lr(sf_model *m, float lr)
{
	if (!m)
		return SF_ERR(SF_ERR_INVALID, "sf_model_set_lr: model is NULL");
	if (!(lr > 0.0f) || !isfinite(lr))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_set_lr: lr must be a finite number > 0 (got "
		              "%g)",
		              (double)lr);
	m->lr = lr;
	return SF_OK;
}

/* The whole model's parameters a model of SHARDFLOW_TP > 1 holds in slices, unit by
 * unit (_sf_unit_get_whole). Collective. */
static int tp_params_get(struct sf_model *m, float *dst)
{
	int rc = SF_OK;
	for (int i = 0; i < m->nunits; i++)
		SF_CHECK(_sf_unit_get_whole(m, i, SF_VEC_PARAM, false, dst + m->units[i].woff));
fail:
	return rc;
}

SF_API int sf_model_params_get(sf_model *m, float *dst, size_t n)
{
	int rc = SF_OK;
	float *tmp = NULL;
	if (!m || !dst)
		return SF_ERR(SF_ERR_INVALID, "sf_model_params_get: NULL model or destination");
	if (n != m->nparams_whole)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_params_get: n is %zu, the model has %zu "
		              "parameters (sf_model_param_count)",
		              n, m->nparams_whole);
	SF_CHECK(sf_model_sync(m));
	if (m->tp > 1)
		return tp_params_get(m, dst);
	/* every rank's shard: the first node's ranks hold the whole vector in order
	 * (hybrid: the other nodes hold the same shards again) */
	if (m->cfg.sharding != SF_SHARD_NONE)
		SF_CHECK(alloc_floats(&tmp,
		                      m->largest_NS / (size_t)m->shard_size * (size_t)m->nranks,
		                      "sf_model_params_get"));
	for (int i = 0; i < m->nunits; i++) {
		struct _sf_unit *u = &m->units[i];
		if (m->cfg.sharding == SF_SHARD_NONE) {
			SF_CHECK(_sf_data_acquire(u->h_full, STARPU_R));
			memcpy(dst + u->off, u->full, u->P * sizeof(float));
			starpu_data_release(u->h_full);
			continue;
		}
		SF_CHECK(_sf_data_acquire(u->h_shard, STARPU_R));
		int grc =
		    m->comm->ops->allgather_bytes(m->comm, u->shard, u->S * sizeof(float), tmp);
		starpu_data_release(u->h_shard);
		SF_CHECK(grc);
		memcpy(dst + u->off, tmp, u->P * sizeof(float));
	}
fail:
	free_floats(tmp);
	return rc;
}

SF_API int sf_model_stats(sf_model *m, struct sf_model_stats *out)
{
	int rc = SF_OK;
	if (!m || !out)
		return SF_ERR(SF_ERR_INVALID, "sf_model_stats: NULL model or output");
	SF_CHECK(sf_model_sync(m));
	out->nunits = m->nunits;
	out->largest_unit = m->largest_P;
	out->steps = m->nsteps;
	out->updates = m->nupdates;
	out->accumulated = m->accum_k;
	out->max_resident_units = atomic_load(&m->max_resident);
	out->ring_slots = m->R;
	size_t floats[VEC_KINDS];
	for (int k = 0; k < VEC_KINDS; k++) {
		floats[k] = model_bufs_floats(m, (enum vec_kind)k, false);
		for (int i = 0; i < m->nunits; i++)
			floats[k] += unit_vecs_floats(m, &m->units[i], (enum vec_kind)k);
	}
	out->param_bytes = floats[VEC_PARAMS] * sizeof(float);
	out->grad_bytes = floats[VEC_GRADS] * sizeof(float);
	out->optimizer_bytes = floats[VEC_OPTIM] * sizeof(float);
	out->activation_bytes = m->act_bytes;
	out->buffer_bytes = floats[VEC_BUFFERS] * sizeof(float);
	out->comm_seconds = m->comm_acct.wall;
	out->comm_cpu_seconds = m->comm_acct.cpu;
	out->comm_bytes = m->comm_acct.bytes;
	out->comm_bytes_inter = m->comm_acct.bytes_inter;
	out->tp = m->tp;
	out->dp = m->dp_size;
	out->model_bytes = m->nparams_whole * sizeof(float);
	out->tp_slice_bytes = m->nparams_total * sizeof(float);
	out->tp_comm_bytes = m->comm_acct.bytes_tp;
	out->comm_worker_cpu_seconds = _sf_clock_seconds(m->ctx->comm_clock) - m->comm_worker_cpu0;
fail:
	return rc;
}

int _sf_model_accum_buffers(struct sf_model *m)
{
	int rc = SF_OK;
	for (int i = 0; i < m->nunits; i++)
		SF_CHECK(unit_vecs_alloc(m, &m->units[i], true));
fail:
	return rc;
}

bool _sf_vec_exists(const struct sf_model *m, enum _sf_vec which)
{
	return which != SF_VEC_V || _sf_optim_families[m->opt.optimizer].nstate == 2;
}

void _sf_unit_block(const struct sf_model *m, int u, size_t *lo, size_t *n)
{
	const struct _sf_unit *un = &m->units[u];
	size_t b = (size_t)m->shard_rank * un->S;
	*lo = b < un->P ? b : un->P;
	*n = un->P - *lo < un->S ? un->P - *lo : un->S;
}

/* Where this rank keeps vector `which` of unit u, and how it is laid out:
 * *base holds elements [*lo, *lo + *n) of the logical vector. Fails when the
 * optimizer keeps no such vector. */
static int locate(struct sf_model *m, int u, enum _sf_vec which, starpu_data_handle_t *h,
                  float **base, size_t *lo, size_t *n)
{
	struct _sf_unit *un = &m->units[u];
	if (!_sf_vec_exists(m, which))
		return SF_ERR(SF_ERR_INVALID, "unit %d has no optimizer vector %d", u, (int)which);
	if (which == SF_VEC_PARAM && m->cfg.sharding == SF_SHARD_NONE) {
		*h = un->h_full, *base = un->full, *lo = 0, *n = un->P;
	} else if (which == SF_VEC_PARAM) {
		*h = un->h_shard, *base = un->shard, *lo = (size_t)m->shard_rank * un->S,
		*n = un->S;
	} else if (un->frozen) { /* no optimizer state: read as zeros, written to nowhere */
		*h = NULL, *base = NULL, *lo = 0, *n = 0;
	} else {
		*h = which == SF_VEC_M ? un->h_m : un->h_v;
		*base = which == SF_VEC_M ? un->m : un->v;
		*lo = m->cfg.sharding != SF_SHARD_NONE ? (size_t)m->shard_rank * un->S : 0;
		*n = un->opt_n;
	}
	return SF_OK;
}

int _sf_unit_get_slice(struct sf_model *m, int u, enum _sf_vec which, float *dst)
{
	struct _sf_unit *un = &m->units[u];
	starpu_data_handle_t h;
	float *base;
	size_t lo, n;
	int rc = locate(m, u, which, &h, &base, &lo, &n);
	if (rc < 0)
		return rc;
	size_t want = (size_t)m->shard_rank * un->S;
	if (!h) { /* a frozen unit's optimizer state */
		memset(dst, 0, un->S * sizeof(float));
		return SF_OK;
	}
	rc = _sf_data_acquire(h, STARPU_R);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < un->S; i++) {
		size_t g = want + i; /* logical index */
		dst[i] = g < un->P && g >= lo && g < lo + n ? base[g - lo] : 0.0f;
	}
	starpu_data_release(h);
	return SF_OK;
}

int _sf_unit_set_full(struct sf_model *m, int u, enum _sf_vec which, const float *src)
{
	struct _sf_unit *un = &m->units[u];
	starpu_data_handle_t h;
	float *base;
	size_t lo, n;
	int rc = locate(m, u, which, &h, &base, &lo, &n);
	if (rc < 0 || !h) /* !h: a frozen unit keeps no optimizer state */
		return rc;
	rc = _sf_data_acquire(h, STARPU_W);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		base[i] = lo + i < un->P ? src[lo + i] : 0.0f;
	starpu_data_release(h);
	/* grad_op also keeps the whole parameters resident */
	if (which == SF_VEC_PARAM && m->cfg.sharding == SF_SHARD_GRAD_OP) {
		size_t nf = un->S * (size_t)m->shard_size;
		rc = _sf_data_acquire(un->h_full, STARPU_W);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < nf; i++)
			un->full[i] = i < un->P ? src[i] : 0.0f;
		starpu_data_release(un->h_full);
	}
	return SF_OK;
}

/* Between unit u's whole vector and TP place t's slices of it (loc: the unit's vector
 * as that place holds it): each node's parameters, to_local or back (layers/tp.c) */
static void unit_tp_copy(const struct sf_model *m, int u, int t, float *whole, float *loc,
                         bool to_local)
{
	const struct _sf_unit *un = &m->units[u];
	for (int n = un->first; n <= un->last; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		if (m->nodes[n].unit != u || nd->tied_to >= 0 || !nd->nparams)
			continue;
		struct sf_layer_info wi;
		_sf_node_whole_info(m, n, &wi);
		_sf_tp_params(nd, &wi, m->tp, t, whole + m->nodes[n].wpoff,
		              loc + m->nodes[n].info.param_offset, to_local);
	}
}

int _sf_unit_get_whole(struct sf_model *m, int u, enum _sf_vec which, bool grad, float *whole)
{
	int rc = SF_OK, K = m->tp;
	struct _sf_unit *un = &m->units[u];
	float *mine = NULL, *all = NULL, *loc = NULL;
	SF_CHECK(alloc_floats(&mine, un->S, "a unit's whole vector"));
	SF_CHECK(alloc_floats(&all, un->S * (size_t)m->nranks, "a unit's whole vector"));
	if (grad) { /* the reduced gradient's shard */
		SF_CHECK(_sf_data_acquire(un->h_gshard, STARPU_R));
		memcpy(mine, un->gshard, un->S * sizeof(float));
		starpu_data_release(un->h_gshard);
	} else {
		SF_CHECK(_sf_unit_get_slice(m, u, which, mine));
	}
	SF_CHECK(m->comm->ops->allgather_bytes(m->comm, mine, un->S * sizeof(float), all));
	if (K == 1) { /* the shard group's slices in order (hybrid: the first node's ranks) */
		memcpy(whole, all, un->P * sizeof(float));
		goto fail;
	}
	SF_CHECK(alloc_floats(&loc, un->S * (size_t)m->shard_size, "a unit's whole vector"));
	for (int t = 0; t < K; t++) { /* TP place t: its slices are ranks t, t + K, ... */
		for (int j = 0; j < m->shard_size; j++)
			memcpy(loc + (size_t)j * un->S, all + ((size_t)j * K + t) * un->S,
			       un->S * sizeof(float));
		unit_tp_copy(m, u, t, whole, loc, false);
	}
fail:
	free_floats(mine);
	free_floats(all);
	free_floats(loc);
	return rc;
}

int _sf_unit_set_whole(struct sf_model *m, int u, enum _sf_vec which, const float *whole)
{
	int rc = SF_OK;
	struct _sf_unit *un = &m->units[u];
	float *loc = NULL;
	if (m->tp == 1)
		return _sf_unit_set_full(m, u, which, whole);
	SF_CHECK(alloc_floats(&loc, un->P, "a unit's slices"));
	unit_tp_copy(m, u, m->tp_rank, (float *)whole, loc, true);
	rc = _sf_unit_set_full(m, u, which, loc);
fail:
	free_floats(loc);
	return rc;
}

/* Copies src's elements that fall in [lo, lo + n) of the unit's logical vector, of
 * those in [off, off + count), into base (which holds [lo, lo + n)) */
static void copy_range(float *base, size_t lo, size_t n, size_t off, size_t count,
                       const float *src)
{
	size_t a = off > lo ? off : lo, b = off + count < lo + n ? off + count : lo + n;
	for (size_t g = a; g < b; g++)
		base[g - lo] = src[g - off];
}

int _sf_unit_set_params(struct sf_model *m, int u, size_t off, size_t count, const float *src)
{
	struct _sf_unit *un = &m->units[u];
	starpu_data_handle_t h;
	float *base;
	size_t lo, n;
	int rc = locate(m, u, SF_VEC_PARAM, &h, &base, &lo, &n);
	if (rc < 0)
		return rc;
	if ((rc = _sf_data_acquire(h, STARPU_RW)) < 0)
		return rc;
	copy_range(base, lo, n, off, count, src);
	starpu_data_release(h);
	if (m->cfg.sharding == SF_SHARD_GRAD_OP) { /* the resident whole copy too */
		if ((rc = _sf_data_acquire(un->h_full, STARPU_RW)) < 0)
			return rc;
		copy_range(un->full, 0, un->P, off, count, src);
		starpu_data_release(un->h_full);
	}
	return SF_OK;
}
