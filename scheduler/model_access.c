/*
 * model_access.c — io/'s access to a model (scheduler/model_access.h): the model, its
 * units and nodes described, the counters a checkpoint restores, the communicator and
 * the checkpoint locks' hook; and the host's access to its vectors between steps: a
 * unit's parameters and optimizer state read and written, whole or as this rank's
 * slice, wherever this rank keeps them (its shard, its replica, with SHARDFLOW_TP its
 * slices of the whole layers), and sf_model_params_get. io/ (checkpoints,
 * safetensors, parameters by name) reads and writes a model only through it, so that
 * struct sf_model stays opaque there; every access to a vector comes after
 * sf_model_sync, and the collective ones on every rank.
 */
#include "config.h"

#include "scheduler/model.h"
#include "scheduler/model_access.h"
#include "scheduler/model_layout.h"
#include "scheduler/model_storage.h"

#include <string.h>

/* ---- the model described -------------------------------------------------------- */

void _sf_model_describe(const struct sf_model *m, struct _sf_model_geometry *g)
{
	*g = (struct _sf_model_geometry){
	    .rank = m->rank,
	    .nranks = m->nranks,
	    .tp = m->tp,
	    .tp_rank = m->tp_rank,
	    .pp = m->pp_size,
	    .pp_stage = m->pp_stage,
	    .shard_size = m->shard_size,
	    .shard_rank = m->shard_rank,
	    .nunits = m->nunits,
	    .nnodes = m->nnodes,
	    .T = m->T_ctx, /* the graph's context (SHARDFLOW_CP: not a rank's rows) */
	    .sharding = m->cfg.sharding,
	    .optimizer = m->opt.optimizer,
	    .nparams_whole = m->nparams_whole,
	    .largest_P = m->largest_P,
	};
}

void _sf_model_counters_get(const struct sf_model *m, struct _sf_model_counters *c)
{
	*c = (struct _sf_model_counters){m->nsteps, m->nupdates, m->accum_k, m->grad_mean_of};
}

void _sf_model_counters_set(struct sf_model *m, int64_t nsteps, int64_t nupdates)
{
	m->nsteps = nsteps;
	m->nupdates = nupdates;
}

void _sf_unit_describe(const struct sf_model *m, int u, struct _sf_unit_desc *d)
{
	const struct _sf_unit *un = &m->units[u];
	*d = (struct _sf_unit_desc){
	    .name = un->name,
	    .first = un->first,
	    .last = un->last,
	    .frozen = un->frozen,
	    .has_grad = un->gshard != NULL || (un->elsewhere && !un->frozen),
	    .P = un->P,
	    .S = un->S,
	    .off = un->off,
	    .Pw = un->Pw,
	    .woff = un->woff,
	    .stage = un->stage,
	    .held = !un->elsewhere,
	};
	_sf_unit_block(m, u, &d->lo, &d->n);
}

void _sf_node_describe(const struct sf_model *m, int n, struct _sf_node_desc *d)
{
	d->node = &m->gnodes[n];
	d->unit = m->nodes[n].unit;
	d->info = &m->nodes[n].info;
	_sf_node_whole_info(m, n, &d->whole);
	d->wpoff = m->nodes[n].wpoff;
}

struct _sf_comm *_sf_model_comm(const struct sf_model *m)
{
	return m->comm;
}

struct _sf_ckpt_lock **_sf_model_ckpt_locks(struct sf_model *m)
{
	return &m->ckpt_locks;
}

void _sf_model_ckpt_hook_set(struct sf_model *m, void (*unlock)(struct sf_model *m))
{
	m->ckpt_unlock = unlock;
}

struct _sf_ckpt_async **_sf_model_ckpt_async(struct sf_model *m)
{
	return &m->ckpt_async;
}

void _sf_model_ckpt_async_hook_set(struct sf_model *m, void (*end)(struct sf_model *m))
{
	m->ckpt_async_end = end;
}

/* ---- the units' vectors ----------------------------------------------------------- */

bool _sf_vec_exists(const struct sf_model *m, enum _sf_vec which)
{
	return which != SF_VEC_V || _sf_optim_families[m->opt.optimizer].nstate == 2;
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
	if (un->elsewhere) { /* another pipeline stage's: read as zeros, written to nowhere */
		*h = NULL, *base = NULL, *lo = 0, *n = 0;
	} else if (which == SF_VEC_PARAM && m->cfg.sharding == SF_SHARD_NONE) {
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
	if (!h) { /* a frozen unit's optimizer state, another stage's unit */
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
	if (rc < 0 || !h) /* !h: a frozen unit's optimizer state, another stage's unit */
		return rc;
	rc = _sf_data_acquire(h, STARPU_W);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		base[i] = lo + i < un->P ? src[lo + i] : 0.0f;
	starpu_data_release(h);
	/* grad_op also keeps the whole parameters resident */
	if (which == SF_VEC_PARAM && m->cfg.sharding == SF_SHARD_GRAD_OP && un->h_full) {
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

/* Where the ranks holding unit u's shards begin in a world's all-gather of them, in
 * floats: the world's (or the first node's) first rank, or its pipeline stage's (the
 * other stages' ranks keep none of its vectors and send zeros; a stage is dp x tp
 * ranks) */
static size_t holders(const struct sf_model *m, const struct _sf_unit *un)
{
	return (size_t)un->stage * (size_t)m->shard_size * (size_t)m->tp * un->S;
}

int _sf_unit_get_whole(struct sf_model *m, int u, enum _sf_vec which, bool grad, float *whole)
{
	int rc = SF_OK, K = m->tp;
	struct _sf_unit *un = &m->units[u];
	float *mine = NULL, *all = NULL, *loc = NULL;
	SF_CHECK_GOTO(_sf_alloc_floats(&mine, un->S, "a unit's whole vector"), out);
	SF_CHECK_GOTO(_sf_alloc_floats(&all, un->S * (size_t)m->nranks, "a unit's whole vector"), out);
	if (grad && !un->h_gshard) { /* another pipeline stage's unit: its holders' count */
		memset(mine, 0, un->S * sizeof(float));
	} else if (grad) { /* the reduced gradient's shard */
		SF_CHECK_GOTO(_sf_data_acquire(un->h_gshard, STARPU_R), out);
		memcpy(mine, un->gshard, un->S * sizeof(float));
		starpu_data_release(un->h_gshard);
	} else {
		SF_CHECK_GOTO(_sf_unit_get_slice(m, u, which, mine), out);
	}
	SF_CHECK_GOTO(m->comm->ops->allgather_bytes(m->comm, mine, un->S * sizeof(float), all), out);
	if (K == 1) { /* the shard group's slices in order (hybrid: the first node's ranks) */
		memcpy(whole, all + holders(m, un), un->P * sizeof(float));
		goto out;
	}
	SF_CHECK_GOTO(_sf_alloc_floats(&loc, un->S * (size_t)m->shard_size, "a unit's whole vector"), out);
	for (int t = 0; t < K; t++) { /* TP place t: its slices are ranks t, t + K, ... */
		for (int j = 0; j < m->shard_size; j++)
			memcpy(loc + (size_t)j * un->S,
			       all + holders(m, un) + ((size_t)j * K + t) * un->S,
			       un->S * sizeof(float));
		unit_tp_copy(m, u, t, whole, loc, false);
	}
out:
	_sf_free_floats(mine);
	_sf_free_floats(all);
	_sf_free_floats(loc);
	return rc;
}

int _sf_unit_gather(struct sf_model *m, int u, bool grad, float *whole)
{
	int rc = SF_OK;
	struct _sf_unit *un = &m->units[u];
	float *buf = NULL;
	if (m->tp > 1) /* every TP rank's slices */
		return _sf_unit_get_whole(m, u, SF_VEC_PARAM, grad, whole);
	bool sharded = m->cfg.sharding != SF_SHARD_NONE;
	starpu_data_handle_t h = grad ? un->h_gshard : sharded ? un->h_shard : un->h_full;
	const float *v = grad ? un->gshard : sharded ? un->shard : un->full;
	if (sharded)
		SF_CHECK_GOTO(
		    _sf_alloc_floats(&buf, un->S * ((size_t)m->nranks + 1), "a unit's gather"),
		    out);
	if (!h) { /* another pipeline stage's unit (sharded: full): zeros sent, its holders' kept */
		v = buf + un->S * (size_t)m->nranks;
		SF_CHECK_GOTO(m->comm->ops->allgather_bytes(m->comm, v, un->S * sizeof(float), buf),
		              out);
		memcpy(whole, buf + holders(m, un), un->P * sizeof(float));
		goto out;
	}
	SF_CHECK_GOTO(_sf_data_acquire(h, STARPU_R), out);
	if (!sharded) { /* the replica: P floats here */
		memcpy(whole, v, un->P * sizeof(float));
		starpu_data_release(h);
		goto out;
	}
	/* the shard group's shards in order (hybrid: the first node's ranks; the other
	 * nodes hold the same shards again) */
	int grc = m->comm->ops->allgather_bytes(m->comm, v, un->S * sizeof(float), buf);
	starpu_data_release(h);
	SF_CHECK_GOTO(grc, out);
	memcpy(whole, buf + holders(m, un), un->P * sizeof(float));
out:
	_sf_free_floats(buf);
	return rc;
}

int _sf_unit_set_whole(struct sf_model *m, int u, enum _sf_vec which, const float *whole)
{
	int rc = SF_OK;
	struct _sf_unit *un = &m->units[u];
	float *loc = NULL;
	if (m->tp == 1)
		return _sf_unit_set_full(m, u, which, whole);
	SF_CHECK_GOTO(_sf_alloc_floats(&loc, un->P, "a unit's slices"), out);
	unit_tp_copy(m, u, m->tp_rank, (float *)whole, loc, true);
	rc = _sf_unit_set_full(m, u, which, loc);
out:
	_sf_free_floats(loc);
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
	if (!h) /* another pipeline stage's unit: its holders set it */
		return SF_OK;
	if ((rc = _sf_data_acquire(h, STARPU_RW)) < 0)
		return rc;
	copy_range(base, lo, n, off, count, src);
	starpu_data_release(h);
	if (m->cfg.sharding == SF_SHARD_GRAD_OP && un->h_full) { /* the resident copy too */
		if ((rc = _sf_data_acquire(un->h_full, STARPU_RW)) < 0)
			return rc;
		copy_range(un->full, 0, un->P, off, count, src);
		starpu_data_release(un->h_full);
	}
	return SF_OK;
}

int _sf_unit_lr_scale(struct sf_model *m, int u, size_t off, size_t count, float scale)
{
	return _sf_unit_set_lr_scale(m, u, off, count, scale);
}

/* The whole model's parameters a model of SHARDFLOW_TP > 1 holds in slices, unit by
 * unit (_sf_unit_get_whole). Collective. */
static int tp_params_get(struct sf_model *m, float *dst)
{
	for (int i = 0; i < m->nunits; i++)
		SF_CHECK(_sf_unit_get_whole(m, i, SF_VEC_PARAM, false, dst + m->units[i].woff));
	return SF_OK;
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
	SF_CHECK_GOTO(sf_model_sync(m), out);
	if (m->tp > 1)
		return tp_params_get(m, dst);
	/* every rank's shard: the first node's ranks hold the whole vector in order
	 * (hybrid: the other nodes hold the same shards again) */
	size_t smax = m->largest_NS / (size_t)m->shard_size;
	if (m->cfg.sharding != SF_SHARD_NONE) /* the last S_max: another stage's zeros */
		SF_CHECK_GOTO(
		    _sf_alloc_floats(&tmp, smax * ((size_t)m->nranks + 1), "sf_model_params_get"),
		    out);
	for (int i = 0; i < m->nunits; i++) {
		struct _sf_unit *u = &m->units[i];
		if (m->cfg.sharding == SF_SHARD_NONE) {
			SF_CHECK_GOTO(_sf_data_acquire(u->h_full, STARPU_R), out);
			memcpy(dst + u->off, u->full, u->P * sizeof(float));
			starpu_data_release(u->h_full);
			continue;
		}
		const float *mine = u->shard ? u->shard : tmp + smax * (size_t)m->nranks;
		if (u->h_shard)
			SF_CHECK_GOTO(_sf_data_acquire(u->h_shard, STARPU_R), out);
		int grc = m->comm->ops->allgather_bytes(m->comm, mine, u->S * sizeof(float), tmp);
		if (u->h_shard)
			starpu_data_release(u->h_shard);
		SF_CHECK_GOTO(grc, out);
		memcpy(dst + u->off, tmp + holders(m, u), u->P * sizeof(float));
	}
out:
	_sf_free_floats(tmp);
	return rc;
}
