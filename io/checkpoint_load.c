/*
 * checkpoint_load.c — sf_checkpoint_load and sf_checkpoint_latest: rank 0 resolves the
 * step and reads its manifest, every rank parses the same bytes, reads and verifies the
 * rank files holding what it keeps (resharding), and only then sets the model. The
 * format: io/checkpoint.h.
 */
#include "io/bytes.h"
#include "io/checkpoint.h"
#include "io/manifest.h"
#include "scheduler/model_access.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Broadcasts a NUL-terminated string of rank 0 (allocating it on the others). */
static int bcast_string(struct sf_model *m, char **s, size_t *len)
{
	struct _sf_comm *comm = _sf_model_comm(m);
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	uint64_t n = g.rank == 0 ? *len : 0;
	SF_CHECK(comm->ops->bcast(comm, &n, sizeof n, 0));
	int arc = SF_OK;
	if (g.rank != 0) {
		*s = malloc(n + 1);
		if (!*s)
			arc = SF_ERR(SF_ERR_NOMEM, "cannot allocate %llu bytes",
			             (unsigned long long)n);
		*len = *s ? n : 0;
	}
	/* every rank learns that one could not allocate, so none waits in the bcast */
	SF_CHECK(_sf_comm_agree(comm, arc, "sf_checkpoint_load"));
	for (uint64_t off = 0; off < n;) {
		int k = n - off > (1u << 30) ? (1 << 30) : (int)(n - off);
		SF_CHECK(comm->ops->bcast(comm, *s + off, (size_t)k, 0));
		off += (uint64_t)k;
	}
	(*s)[n] = '\0';
	return SF_OK;
}

/* What this model expects of a manifest (io/manifest.h). */
static int expect_init(const struct sf_model *m, struct _sf_manifest_expect *e)
{
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	*e = (struct _sf_manifest_expect){
	    .shardings = _sf_sharding_names,
	    .nshardings = SF_SHARD_COUNT,
	    .optimizers = _sf_optimizer_names,
	    .noptimizers = SF_OPT_COUNT,
	    .optimizer = (int)g.optimizer,
	    /* the vectors a model keeps are always a prefix of param, m, v */
	    .vectors = _sf_ckpt_vec_names,
	    .nvectors = _sf_ckpt_nvectors(m),
	    .nunits = g.nunits,
	};
	_sf_ckpt_structure_hash(m, false, e->structure_hash);
	_sf_ckpt_structure_hash(m, true, e->structure_hash_legacy);
	const char **names = calloc((size_t)g.nunits + 1, sizeof *names);
	size_t *P = calloc((size_t)g.nunits + 1, sizeof *P);
	if (!names || !P) {
		free(names);
		free(P);
		return SF_ERR(SF_ERR_NOMEM, "checkpoint load: out of memory");
	}
	for (int u = 0; u < g.nunits; u++) {
		struct _sf_unit_desc d;
		_sf_unit_describe(m, u, &d);
		names[u] = _sf_ckpt_unit_name(m, u);
		P[u] = d.Pw; /* the whole model's (any TP layout wrote it so) */
	}
	e->unit_names = names;
	e->unit_P = P;
	return SF_OK;
}

static void expect_free(struct _sf_manifest_expect *e)
{
	free((void *)e->unit_names);
	free((void *)e->unit_P);
}

/* The manifest of stepdir (every rank knows the path), read by rank 0, for every rank
 * (each parses the same bytes, so they agree on what the manifest says); *mf checked
 * against the model. */
static int load_manifest(struct sf_model *m, const char *stepdir, struct _sf_manifest *mf)
{
	int rc = SF_OK, lrc = SF_OK;
	char where[SF_PATH_MAX + 16], *text = NULL;
	size_t len = 0;
	bool has_crc = false;
	struct _sf_comm *comm = _sf_model_comm(m);
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	if (g.rank == 0)
		lrc = _sf_ckpt_read_manifest(stepdir, &text, &len, &has_crc);
	SF_CHECK_GOTO(_sf_comm_agree(comm, lrc, "sf_checkpoint_load"), out);
	struct _sf_manifest_expect e;
	SF_CHECK_GOTO(bcast_string(m, &text, &len), out);
	uint8_t crc_flag = has_crc;
	SF_CHECK_GOTO(comm->ops->bcast(comm, &crc_flag, 1, 0), out);
	snprintf(where, sizeof where, "%s/manifest.json", stepdir);
	lrc = expect_init(m, &e);
	if (lrc >= 0)
		lrc = _sf_manifest_parse(&e, text, len, where, crc_flag != 0, mf);
	expect_free(&e);
	SF_CHECK_GOTO(_sf_comm_agree(comm, lrc, "sf_checkpoint_load"), out);
out:
	free(text);
	return rc;
}

/* What this rank keeps of a checkpoint: elements [lo[u], hi[u]) of every vector of unit
 * u — its slice [rank S_u, (rank+1) S_u) when sharded, the whole unit with sharding
 * none — read into vec[u * 3 + v]. With grad_op every rank also keeps all parameters
 * resident: whole[u] receives unit u's whole parameter vector (N S_u floats), every
 * rank's slice all-gathered from `send`. scratch (largest_P floats) gives a slice its
 * place in a whole vector for _sf_unit_set_full. */
struct need {
	size_t *lo, *hi;
	float **vec;
	float **whole; /* grad_op only */
	float *send, *scratch;
};

static void need_free(const struct sf_model *m, struct need *nd)
{
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	for (int i = 0; nd->vec && i < g.nunits * 3; i++)
		free(nd->vec[i]);
	for (int u = 0; nd->whole && u < g.nunits; u++)
		free(nd->whole[u]);
	free(nd->lo);
	free(nd->hi);
	free(nd->vec);
	free(nd->whole);
	free(nd->send);
	free(nd->scratch);
}

static int need_init(const struct sf_model *m, struct need *nd)
{
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	size_t nu = (size_t)g.nunits, smax = 0;
	/* with TP, set_whole keeps grad_op's resident copy from each rank's own slices */
	bool grad_op = g.sharding == SF_SHARD_GRAD_OP && g.tp == 1, ok = true;
	nd->lo = calloc(nu, sizeof *nd->lo);
	nd->hi = calloc(nu, sizeof *nd->hi);
	nd->vec = calloc(nu * 3, sizeof *nd->vec);
	nd->scratch = malloc(g.largest_P * sizeof(float) + 1);
	if (grad_op)
		nd->whole = calloc(nu, sizeof *nd->whole);
	if (!nd->lo || !nd->hi || !nd->vec || !nd->scratch || (grad_op && !nd->whole))
		return SF_ERR(SF_ERR_NOMEM, "sf_checkpoint_load: out of memory");
	for (int u = 0; u < g.nunits; u++) {
		struct _sf_unit_desc d;
		_sf_unit_describe(m, u, &d);
		size_t S = d.S;
		/* with TP a rank's slices lie all over the whole layout: it reads every unit */
		bool none = g.sharding == SF_SHARD_NONE || g.tp > 1;
		nd->lo[u] = none ? 0 : d.lo;
		nd->hi[u] = none ? d.Pw : d.lo + d.n;
		if (!d.held) /* another pipeline stage's: its ranks load it */
			nd->lo[u] = nd->hi[u] = 0;
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++)
			if (_sf_vec_exists(m, (enum _sf_vec)v)) {
				nd->vec[u * 3 + v] =
				    malloc((nd->hi[u] - nd->lo[u]) * sizeof(float) + 1);
				ok = ok && nd->vec[u * 3 + v];
			}
		if (grad_op) {
			nd->whole[u] = malloc(S * (size_t)g.nranks * sizeof(float) + 1);
			ok = ok && nd->whole[u];
		}
		smax = S > smax ? S : smax;
	}
	if (grad_op) {
		nd->send = malloc(smax * sizeof(float) + 1);
		ok = ok && nd->send;
	}
	return ok ? SF_OK : SF_ERR(SF_ERR_NOMEM, "sf_checkpoint_load: out of memory");
}

/* The stretches of rank file w of mf that this rank keeps, in file order: the header
 * (into hdr), then its part of every vector of the units the file holds (all, or its
 * pipeline stage's: the manifest's layout, whatever this model's). Returns whether the
 * file holds any of what this rank keeps. ex: room for 1 + 3 * nunits. */
static bool file_extents(const struct sf_model *m, const struct _sf_manifest *mf,
                         const struct need *nd, int w, uint8_t *hdr, struct _sf_ckpt_extent *ex,
                         size_t *nex)
{
	size_t k = 0;
	bool needed = false;
	uint64_t off = SF_CKPT_HEADER;
	int nf = _sf_ckpt_stage_files(mf);
	ex[k++] = (struct _sf_ckpt_extent){0, SF_CKPT_HEADER, hdr};
	for (int u = 0; u < mf->nunits; u++) {
		if (mf->units[u].stage != w / nf) /* another stage's files hold it */
			continue;
		size_t P = mf->units[u].P, S = _sf_ckpt_shard(P, nf);
		size_t first = (size_t)(w % nf) * S; /* its place in the stage's files */
		/* [a, b): the elements of unit u both in this file and kept here */
		size_t a = first > nd->lo[u] ? first : nd->lo[u];
		size_t b = first + S < nd->hi[u] ? first + S : nd->hi[u];
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++) {
			if (!_sf_vec_exists(m, (enum _sf_vec)v))
				continue;
			if (a < b) {
				uint8_t *dst = (uint8_t *)nd->vec[u * 3 + v];
				ex[k++] = (struct _sf_ckpt_extent){
				    off + (a - first) * sizeof(float), (b - a) * sizeof(float),
				    dst + (a - nd->lo[u]) * sizeof(float)};
				needed = true;
			}
			off += S * sizeof(float);
		}
	}
	*nex = k;
	return needed;
}

/* Reads what this rank keeps from the rank files holding it, each verified, and brings
 * it to the host's byte order; rank 0 also checks every file's size. */
static int read_needed(const struct sf_model *m, const char *stepdir, const struct _sf_manifest *mf,
                       struct need *nd)
{
	int rc = SF_OK, nread = 0;
	uint8_t hdr[SF_CKPT_HEADER];
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	struct _sf_ckpt_extent *ex = calloc(1 + 3 * (size_t)g.nunits, sizeof *ex);
	if (!ex)
		return SF_ERR(SF_ERR_NOMEM, "sf_checkpoint_load: out of memory");
	if (g.rank == 0)
		SF_CHECK_GOTO(_sf_ckpt_check_sizes(stepdir, mf), out);
	for (int w = 0; w < mf->world_size; w++) {
		size_t nex = 0;
		if (!file_extents(m, mf, nd, w, hdr, ex, &nex))
			continue;
		SF_CHECK_GOTO(_sf_ckpt_read_file(stepdir, mf, w, ex, nex), out);
		nread++;
	}
	for (int u = 0; u < g.nunits; u++)
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++)
			if (_sf_vec_exists(m, (enum _sf_vec)v))
				_sf_floats_le(nd->vec[u * 3 + v], nd->hi[u] - nd->lo[u]);
	_sf_log(SF_LOG_DEBUG, "checkpoint: read %d of %d rank files", nread, mf->world_size);
out:
	free(ex);
	return rc;
}

/* grad_op: every rank's parameter slice, all-gathered into whole vectors. Collective. */
static int gather_whole(struct sf_model *m, struct need *nd)
{
	struct _sf_comm *comm = _sf_model_comm(m);
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	for (int u = 0; u < g.nunits; u++) {
		struct _sf_unit_desc d;
		_sf_unit_describe(m, u, &d);
		size_t S = d.S, n = nd->hi[u] - nd->lo[u];
		memcpy(nd->send, nd->vec[u * 3 + SF_VEC_PARAM], n * sizeof(float));
		memset(nd->send + n, 0, (S - n) * sizeof(float));
		SF_CHECK(
		    comm->ops->allgather_bytes(comm, nd->send, S * sizeof(float), nd->whole[u]));
	}
	return SF_OK;
}

/* Sets the model's vectors from what was read (and verified on every rank). A sharded
 * vector's slice goes to its place in scratch: _sf_unit_set_full reads no more of it. */
static int apply(struct sf_model *m, struct need *nd)
{
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	for (int u = 0; u < g.nunits; u++)
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++) {
			struct _sf_unit_desc d;
			_sf_unit_describe(m, u, &d);
			size_t lo = nd->lo[u], hi = nd->hi[u];
			const float *src = nd->vec[u * 3 + v];
			if (!_sf_vec_exists(m, (enum _sf_vec)v))
				continue;
			if (!d.held) /* another pipeline stage's: nothing read */
				continue;
			if (g.tp > 1) { /* the whole layout read: this rank's slices of it */
				SF_CHECK(_sf_unit_set_whole(m, u, (enum _sf_vec)v, src));
				continue;
			}
			if (nd->whole && v == SF_VEC_PARAM) {
				/* the world's slices side by side: this stage's ranks' are the
				 * unit's (a pipeline shards a unit over its stage's ranks) */
				src = nd->whole[u] + (size_t)g.pp_stage * (size_t)(g.nranks / g.pp) * d.S;
			} else if (lo > 0 || hi < d.P) {
				memcpy(nd->scratch + lo, src, (hi - lo) * sizeof(float));
				src = nd->scratch;
			}
			SF_CHECK(_sf_unit_set_full(m, u, (enum _sf_vec)v, src));
		}
	return SF_OK;
}

SF_API int sf_checkpoint_latest(sf_model *m, const char *dir, int *found, char *path, size_t size)
{
	int rc = SF_OK, lrc = SF_OK;
	char stepdir[SF_PATH_MAX] = "", *sd = stepdir;
	if (!m || !dir || !*dir || !found || (path && !size))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_checkpoint_latest: NULL model, directory or found, or a path of "
		              "0 bytes");
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	if (g.rank == 0)
		lrc = _sf_ckpt_lock_dir(m, dir, SF_CHECKPOINT_READ);
	if (g.rank == 0 && lrc >= 0)
		lrc = _sf_ckpt_resolve(dir, stepdir, sizeof stepdir);
	SF_CHECK(_sf_comm_agree(_sf_model_comm(m), lrc, "sf_checkpoint_latest"));
	size_t n = strlen(stepdir);
	SF_CHECK(bcast_string(m, &sd, &n));
	if (g.rank != 0) {
		snprintf(stepdir, sizeof stepdir, "%s", sd);
		free(sd);
	}
	*found = *stepdir != '\0';
	if (path && snprintf(path, size, "%s", stepdir) >= (int)size)
		rc = SF_ERR(SF_ERR_INVALID, "sf_checkpoint_latest: %s does not fit in %zu bytes",
		            stepdir, size);
	return rc;
}

/* One step directory (every rank knows the path) read and verified on every rank into
 * *mf and nd, the model untouched. Collective; the status is the same on every rank. */
static int try_step(struct sf_model *m, const char *stepdir, struct _sf_manifest *mf,
                    struct need *nd)
{
	struct _sf_comm *comm = _sf_model_comm(m);
	_sf_manifest_free(mf);
	SF_CHECK(load_manifest(m, stepdir, mf));
	/* this rank's slices, from the files holding them, each file verified */
	SF_CHECK(_sf_comm_agree(comm, read_needed(m, stepdir, mf, nd), "sf_checkpoint_load"));
	if (nd->whole)
		SF_CHECK(_sf_comm_agree(comm, gather_whole(m, nd), "sf_checkpoint_load"));
	return SF_OK;
}

/* "; step-N: <fault>" appended to faults (`size` bytes, cut short when full). */
static void add_fault(char *faults, size_t size, const char *stepdir, const char *msg)
{
	const char *base = strrchr(stepdir, '/');
	size_t k = strlen(faults);
	if (k + 1 < size && snprintf(faults + k, size - k, "%s%s: %s", k ? "; " : "",
	                             base ? base + 1 : stepdir, msg) < 0)
		faults[k] = '\0';
}

/* Rank 0: the steps `dir` offers (checkpoint_steps.c) into *steps, locking it first;
 * none is SF_ERR_NOT_FOUND. */
static int list_steps(struct sf_model *m, const char *dir, char ***steps, int *n)
{
	int rc = SF_OK;
	SF_CHECK(_sf_ckpt_lock_dir(m, dir, SF_CHECKPOINT_READ));
	SF_CHECK(_sf_ckpt_candidates(dir, steps, n));
	if (*n == 0)
		rc = SF_ERR(SF_ERR_NOT_FOUND,
		            "no checkpoint in %s yet: no such directory, or neither manifest.json "
		            "(a step directory), latest nor a complete step-* directory in it",
		            dir);
	return rc;
}

/* Tries the steps rank 0 listed, in order, until one passes every check (*tried: how
 * many were tried). A damaged step (SF_ERR_IO) is skipped with a warning naming its
 * fault; another status ends the tries at once. Collective, and every rank takes the
 * same turns: rank 0 broadcasts each path ("" when none is left) and every rank gets
 * the same status for it. Errors raised while a step is tried are held and told once
 * here: in the warning, or in the refusal (a lone step's fault as it was raised). */
/* A held error (message msg) raised again, once: by the rank that failed, while a rank
 * that relays another's failure (peer >= 0) says only that it stops. */
static int raise_again(int status, int peer, const char *msg)
{
	if (peer >= 0)
		return _sf_err_peer(status, peer, "sf_checkpoint_load", "%s", msg);
	return _sf_err(status, NULL, 0, "%s", msg);
}

static int try_steps(struct sf_model *m, const char *dir, char **steps, int nsteps, char *stepdir,
                     struct _sf_manifest *mf, struct need *nd, int *tried)
{
	int rc = SF_OK;
	char faults[1024] = "", msg[1024];
	int peer = -1;
	struct _sf_comm *comm = _sf_model_comm(m);
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	for (int i = 0;; i++) {
		if (g.rank == 0)
			snprintf(stepdir, SF_PATH_MAX, "%s", i < nsteps ? steps[i] : "");
		SF_CHECK(comm->ops->bcast(comm, stepdir, SF_PATH_MAX, 0));
		stepdir[SF_PATH_MAX - 1] = '\0';
		if (!*stepdir)
			break;
		*tried = i + 1;
		_sf_err_hold();
		int trc = try_step(m, stepdir, mf, nd);
		_sf_err_release();
		if (trc >= 0)
			return SF_OK;
		snprintf(msg, sizeof msg, "%s", sf_last_error());
		peer = sf_last_error_peer();
		if (trc != SF_ERR_IO)
			return raise_again(trc, peer, msg); /* as it was raised */
		add_fault(faults, sizeof faults, stepdir, msg);
		if (g.rank == 0 && i + 1 < nsteps)
			_sf_log(SF_LOG_WARN,
			        "checkpoint %s is damaged, trying the next complete step, %s: %s",
			        stepdir, steps[i + 1], msg);
	}
	if (*tried == 1)
		return raise_again(SF_ERR_IO, peer, msg);
	rc = SF_ERR(SF_ERR_IO,
	            "sf_checkpoint_load: no valid checkpoint in %s: each of its %d complete "
	            "steps failed its checks: %s",
	            dir, *tried, faults);
	return rc;
}

SF_API int sf_checkpoint_load(sf_model *m, const char *dir, struct sf_checkpoint_info *info)
{
	int rc = SF_OK, lrc = SF_OK, nsteps = 0, tried = 0;
	char stepdir[SF_PATH_MAX] = "", **steps = NULL;
	struct _sf_manifest mf = {0};
	struct need nd = {0};
	if (!m || !dir || !*dir)
		return SF_ERR(SF_ERR_INVALID, "sf_checkpoint_load: NULL model or empty directory");
	struct _sf_comm *comm = _sf_model_comm(m);
	struct _sf_model_geometry g;
	struct _sf_model_counters c;
	_sf_model_describe(m, &g);
	_sf_model_counters_get(m, &c);
	_sf_flight_set_dir(comm->flight, dir); /* a failed job's records go here */
	SF_CHECK(sf_checkpoint_wait(m));       /* a pending save of this model first */
	if (c.accum_k > 0)
		return SF_ERR(SF_ERR_STATE,
		              "sf_checkpoint_load: %d micro-batches are accumulated; load before "
		              "sf_model_accumulate or after sf_model_step",
		              c.accum_k);
	lrc = sf_model_sync(m);
	if (g.rank == 0 && lrc >= 0)
		lrc = list_steps(m, dir, &steps, &nsteps);
	SF_CHECK_GOTO(_sf_comm_agree(comm, lrc, "sf_checkpoint_load"), out);
	SF_CHECK_GOTO(_sf_comm_agree(comm, need_init(m, &nd), "sf_checkpoint_load"), out);
	SF_CHECK_GOTO(try_steps(m, dir, steps, nsteps, stepdir, &mf, &nd, &tried), out);

	/* everything is read and verified on every rank: only now touch the model */
	SF_CHECK_GOTO(apply(m, &nd), out);
	_sf_model_counters_set(m, mf.model_steps, mf.model_steps);
	if (info)
		*info = mf.info;
	_sf_log(SF_LOG_INFO, "checkpoint %s loaded (written by %d ranks, step %lld)", stepdir,
	        mf.world_size, (long long)mf.info.step);
out:
	_sf_ckpt_candidates_free(steps, nsteps);
	need_free(m, &nd);
	_sf_manifest_free(&mf);
	return rc;
}
