/*
 * checkpoint_save.c — sf_checkpoint_save: every rank writes its file into the staging
 * directory, rank 0 (holding the directory's lock for the model's life:
 * checkpoint_lock.c) writes the manifest and switches the step into place. The format
 * and its crash safety: io/checkpoint.h. sf_checkpoint_save_async is the same save
 * cut in three: the rank files' contents copied to host buffers at the step boundary,
 * written by a thread while the steps go on, then (sf_checkpoint_poll or
 * sf_checkpoint_wait, on the caller's thread: the collectives) the manifest and the
 * switch, in the same order, so a kill at any moment leaves what a synchronous save
 * would.
 */
#include "io/bytes.h"
#include "io/checkpoint.h"
#include "io/manifest.h"
#include "io/tensors.h"
#include "scheduler/model_access.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- save --------------------------------------------------------------------------- */

/* A unit's slice in the checkpoint: this rank's block of S floats of each vector's
 * whole layout (with SHARDFLOW_TP, every TP rank's slices of it put together first:
 * a collective, which every rank makes, writing or not; scratch: Pw floats). */
static int unit_slice(struct sf_model *m, int u, enum _sf_vec v, size_t S, float *buf,
                      float *scratch)
{
	struct _sf_model_geometry mg;
	struct _sf_unit_desc un;
	_sf_model_describe(m, &mg);
	_sf_unit_describe(m, u, &un);
	if (mg.tp == 1 && un.S == S) /* the file's shard is this rank's */
		return _sf_unit_get_slice(m, u, v, buf);
	/* TP's slices, or shards of another length (a vocabulary-parallel unit's whole
	 * rows): the file's from the whole vector (a collective) */
	if (v != SF_VEC_PARAM && un.frozen) { /* no optimizer state: zeros */
		memset(buf, 0, S * sizeof(float));
		return SF_OK;
	}
	int rc = _sf_unit_get_whole(m, u, v, false, scratch);
	for (size_t i = 0, g = (size_t)mg.shard_rank * S; rc >= 0 && i < S; i++, g++)
		buf[i] = g < un.Pw ? scratch[g] : 0.0f;
	return rc;
}

/* Unit u's whole-layout length Pw (the checkpoint's P of it). */
static size_t unit_Pw(const struct sf_model *m, int u)
{
	struct _sf_unit_desc d;
	_sf_unit_describe(m, u, &d);
	return d.Pw;
}

/* Whether unit_slice goes through whole vectors (its scratch needed): with TP, or a
 * unit whose shards are not the file's (scheduler/vocabdp.c's whole rows) */
static bool through_whole(const struct sf_model *m, const struct _sf_model_geometry *g)
{
	for (int u = 0; u < g->nunits; u++) {
		struct _sf_unit_desc d;
		_sf_unit_describe(m, u, &d);
		if (g->tp > 1 || d.S != _sf_ckpt_shard(d.Pw, g->shard_size))
			return true;
	}
	return false;
}

/* Whether this rank's file holds unit u: every unit, or with a pipeline its stage's
 * (the other stages' ranks write theirs). */
static bool unit_here(const struct sf_model *m, const struct _sf_model_geometry *g, int u)
{
	struct _sf_unit_desc d;
	_sf_unit_describe(m, u, &d);
	return d.stage == g->pp_stage;
}

/* The rank files: shard_size (a stage's ranks) for each pipeline stage; this rank's
 * is number pp_stage x shard_size + shard_rank (the world rank with a pipeline). */
static int nfiles(const struct _sf_model_geometry *g)
{
	return g->shard_size * g->pp;
}

static int file_number(const struct _sf_model_geometry *g)
{
	return g->pp_stage * g->shard_size + g->shard_rank;
}

/* The 24 bytes that open this rank's file. */
static void rank_header(const struct sf_model *m, uint8_t hdr[SF_CKPT_HEADER])
{
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	memcpy(hdr, CKPT_MAGIC, 8);
	_sf_put_le(hdr + 8, (uint32_t)file_number(&g), 4);
	_sf_put_le(hdr + 12, (uint32_t)nfiles(&g), 4);
	_sf_put_le(hdr + 16, (uint32_t)g.nunits, 4);
	_sf_put_le(hdr + 20, (uint32_t)_sf_ckpt_nvectors(m), 4);
}

/* Writes this rank's file and commits it atomically; *size and *crc describe what was
 * written. With TP every rank comes here (its slices go into the whole vectors, a
 * collective) and the ranks of TP place 0 write (`write`). */
static int write_rank_file(struct sf_model *m, const char *stepdir, bool write, uint64_t *size,
                           uint32_t *crc)
{
	int rc = SF_OK, fd = -1, wrc = SF_OK;
	char path[SF_PATH_MAX], tmp[SF_PATH_MAX + 8];
	float *buf = NULL, *scratch = NULL;
	size_t smax = 0, pmax = 0;
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	for (int u = 0; u < g.nunits; u++) {
		size_t Pw = unit_Pw(m, u), S = _sf_ckpt_shard(Pw, g.shard_size);
		smax = S > smax ? S : smax;
		pmax = Pw > pmax ? Pw : pmax;
	}
	buf = malloc(smax * sizeof(float) + 1);
	bool whole = through_whole(m, &g);
	scratch = whole ? malloc(pmax * sizeof(float) + 1) : NULL;
	if (!buf || (whole && !scratch)) {
		rc = SF_ERR(SF_ERR_NOMEM, "checkpoint: cannot allocate %zu bytes",
		            (smax + pmax) * 4);
		goto out;
	}
	if (!write) { /* TP: the collectives only */
		for (int u = 0; u < g.nunits; u++)
			for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++)
				if (_sf_vec_exists(m, (enum _sf_vec)v))
					SF_CHECK_GOTO(
					    unit_slice(m, u, (enum _sf_vec)v,
					               _sf_ckpt_shard(unit_Pw(m, u), g.shard_size),
					               buf, scratch), out);
		goto out;
	}
	SF_CHECK_GOTO(_sf_ckpt_rank_path(path, sizeof path, stepdir, file_number(&g)), out);
	SF_CHECK_GOTO(_sf_create_tmp(path, tmp, sizeof tmp, &fd), out);

	uint8_t hdr[SF_CKPT_HEADER];
	rank_header(m, hdr);
	uint32_t c = _sf_crc32(0, hdr, sizeof hdr);
	uint64_t total = sizeof hdr;
	SF_CHECK_GOTO(_sf_write_all(fd, hdr, sizeof hdr, tmp), out);
	for (int u = 0; u < g.nunits; u++) {
		size_t S = _sf_ckpt_shard(unit_Pw(m, u), g.shard_size);
		bool here = unit_here(m, &g, u);
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V && (here || g.tp > 1); v++) {
			if (!_sf_vec_exists(m, (enum _sf_vec)v))
				continue;
			/* with TP a collective over the world: made even after a failed write,
			 * and for another pipeline stage's units, which this file skips */
			SF_CHECK_GOTO(unit_slice(m, u, (enum _sf_vec)v, S, buf, scratch), out);
			if (wrc < 0 || !here)
				continue;
			_sf_floats_le(buf, S);
			c = _sf_crc32(c, buf, S * sizeof(float));
			total += S * sizeof(float);
			wrc = _sf_write_all(fd, buf, S * sizeof(float), tmp);
			if (wrc < 0 && g.tp == 1)
				SF_CHECK_GOTO(wrc, out);
		}
	}
	SF_CHECK_GOTO(wrc, out);
	rc = _sf_commit_file(fd, tmp, path, stepdir);
	fd = -1;
	SF_CHECK_GOTO(rc, out);
	*size = total;
	*crc = c;
out:
	if (fd >= 0)
		_sf_abandon_file(fd, tmp);
	free(buf);
	free(scratch);
	return rc;
}

/* One save: the step directory, where it is staged, where a copy it replaces waits
 * for its removal, and the model's update count when it began (an asynchronous save
 * is published steps later), with how info.step relates to it (the manifest's
 * info_steps_per_update; 0: the caller's step counts something else). */
struct save_paths {
	char name[32]; /* step-<9 digits> */
	char step[SF_PATH_MAX], stage[SF_PATH_MAX + 8], old[SF_PATH_MAX + 8];
	int64_t model_steps, steps_per_update;
};

/* The model's named tensors as the manifest lists them (a loader has its own; a tool
 * without the model reads these: tools/shardflow-ckpt), or NULL. */
static json_t *tensors_build(const struct sf_model *m)
{
	struct _sf_tensor *t = NULL;
	size_t n = 0;
	if (_sf_model_tensors(m, &t, &n) < 0)
		return NULL;
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		json_t *shape = t[i].ndim == 2 ? json_pack("[I, I]", (json_int_t)t[i].shape[0],
		                                           (json_int_t)t[i].shape[1])
		                               : json_pack("[I]", (json_int_t)t[i].shape[0]);
		json_array_append_new(a, json_pack("{s:s, s:o, s:I}", "name", t[i].name, "shape",
		                                   shape, "offset", (json_int_t)t[i].off));
	}
	free(t);
	return a;
}

static json_t *manifest_build(struct sf_model *m, const struct save_paths *sp,
                              const struct sf_checkpoint_info *info, const uint64_t *sizes,
                              const uint32_t *crcs)
{
	char hash[17], seed[32];
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	_sf_ckpt_structure_hash(m, false, hash);
	snprintf(seed, sizeof seed, "%" PRIu64, info->data_seed);
	json_t *vecs = json_array(), *units = json_array(), *files = json_array();
	for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++)
		if (_sf_vec_exists(m, (enum _sf_vec)v))
			json_array_append_new(vecs, json_string(_sf_ckpt_vec_names[v]));
	for (int u = 0; u < g.nunits; u++) {
		struct _sf_unit_desc d;
		_sf_unit_describe(m, u, &d);
		json_t *e = json_pack("{s:s, s:I}", "name", _sf_ckpt_unit_name(m, u), "P",
		                      (json_int_t)unit_Pw(m, u));
		if (e && g.pp > 1) /* the stage whose files hold it */
			json_object_set_new(e, "stage", json_integer(d.stage));
		json_array_append_new(units, e);
	}
	for (int r = 0; r < nfiles(&g); r++) {
		char name[32];
		_sf_ckpt_rank_name(name, sizeof name, r);
		json_array_append_new(files, json_pack("{s:s, s:I, s:I}", "name", name, "size",
		                                       (json_int_t)sizes[r], "crc32",
		                                       (json_int_t)crcs[r]));
	}
	json_t *tensors = tensors_build(m);
	if (!tensors) {
		json_decref(vecs);
		json_decref(units);
		json_decref(files);
		return NULL;
	}
	/* the layout it was written at (ranks, SHARDFLOW_TP, SHARDFLOW_PP); the files hold
	 * the whole model's vectors whatever it was, so any layout loads them. Version 3
	 * only for a pipeline's (its files a stage's units each), which older readers
	 * refuse by the version */
	json_t *root = json_pack(
	    "{s:s, s:i, s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:{s:I, s:I, s:I, s:s}, "
	    "s:o, s:o, s:o, s:o}",
	    "format", SF_CKPT_FORMAT, "version", g.pp > 1 ? 3 : 2, "world_size", nfiles(&g),
	    "ranks", g.nranks, "tp", g.tp, "sharding", _sf_sharding_names[g.sharding], "optimizer",
	    _sf_optimizer_names[g.optimizer], "structure_hash", hash, "dtype", "f32", "model_steps",
	    (json_int_t)sp->model_steps, "info_steps_per_update", (json_int_t)sp->steps_per_update,
	    "info", "step", (json_int_t)info->step, "epoch", (json_int_t)info->epoch, "batch",
	    (json_int_t)info->batch, "data_seed", seed, "vectors", vecs, "units", units, "tensors",
	    tensors, "files", files);
	if (root && g.pp > 1) /* the stages (last: the rest as without a pipeline) */
		json_object_set_new(root, "pp", json_integer(g.pp));
	/* only where the counters determine each other (the loader checks it then) */
	if (root && sp->steps_per_update == 0)
		json_object_del(root, "info_steps_per_update");
	return root;
}

/* Rank 0, holding the lock: what would stop the save after its switch is cleared
 * before it starts — a file where step-N (a directory) goes, and a directory where
 * latest or latest.tmp (files) go — so that a save fails, if it does, before it
 * touches a step. step-N.old and step-N.tmp go whatever they hold. */
static int clear_in_way(const char *dir, const struct save_paths *sp)
{
	char path[SF_PATH_MAX + 8];
	struct stat st;
	if (lstat(sp->step, &st) == 0 && !S_ISDIR(st.st_mode)) {
		_sf_log(SF_LOG_WARN, "checkpoint: %s is not a directory; removing it", sp->step);
		SF_CHECK(_sf_remove_dir(sp->step));
	}
	SF_CHECK(_sf_path_join(path, sizeof path, dir, "latest"));
	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		_sf_log(SF_LOG_WARN, "checkpoint: %s is a directory, not a file; removing it",
		        path);
		SF_CHECK(_sf_remove_dir(path));
	}
	SF_CHECK(_sf_path_join(path, sizeof path, dir, "latest.tmp"));
	return _sf_remove_dir(path);
}

/* Rank 0, holding the lock: a save of step N killed between moving the old step-N
 * aside and renaming its staging directory into place left step-N.tmp as the only
 * complete copy — finish that switch; then drop what earlier saves of N left over,
 * and anything else in the save's way (clear_in_way). */
static int prepare_stage(const char *dir, const struct save_paths *sp)
{
	SF_CHECK(clear_in_way(dir, sp));
	if (!_sf_is_dir(sp->step) && _sf_path_exists(sp->stage, "manifest.json")) {
		if (rename(sp->stage, sp->step) != 0)
			return SF_ERR(SF_ERR_IO, "cannot rename %s to %s: %s", sp->stage, sp->step,
			              strerror(errno));
		SF_CHECK(_sf_fsync_dir(dir));
	}
	SF_CHECK(_sf_remove_dir(sp->stage));
	SF_CHECK(_sf_remove_dir(sp->old));
	if (mkdir(sp->stage, 0777) != 0)
		return SF_ERR(SF_ERR_IO, "cannot create directory %s: %s", sp->stage,
		              strerror(errno));
	return SF_OK;
}

/* Rank 0, every rank file in the staging directory: manifest.crc32 and manifest.json
 * there, then the switch — the staging directory renamed to step-N (a step-N already
 * there, which latest may name, is first renamed aside; between the two renames the
 * staging directory is complete and a loader takes it) — then dir/latest, then the
 * old copy removed. */
static int publish(struct sf_model *m, const char *dir, const struct save_paths *sp,
                   const struct sf_checkpoint_info *info, const uint64_t *sizes,
                   const uint32_t *crcs)
{
	int rc = SF_OK;
	char path[SF_PATH_MAX + 32], line[64];
	char *text = NULL;
	json_t *root = manifest_build(m, sp, info, sizes, crcs);
	if (!root)
		return SF_ERR(SF_ERR_NOMEM, "checkpoint: cannot build the manifest");
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text)
		return SF_ERR(SF_ERR_NOMEM, "checkpoint: cannot serialise the manifest");
	size_t n = strlen(text);
	int k = snprintf(line, sizeof line, "%08x\n", (unsigned)_sf_crc32(0, text, n));
	SF_CHECK_GOTO(_sf_path_join(path, sizeof path, sp->stage, "manifest.crc32"), out);
	SF_CHECK_GOTO(_sf_write_file_atomic(path, sp->stage, line, (size_t)k), out);
	SF_CHECK_GOTO(_sf_path_join(path, sizeof path, sp->stage, "manifest.json"), out);
	SF_CHECK_GOTO(_sf_write_file_atomic(path, sp->stage, text, n), out);

	bool replacing = _sf_is_dir(sp->step);
	if (replacing && rename(sp->step, sp->old) != 0) {
		rc = SF_ERR(SF_ERR_IO, "cannot rename %s to %s: %s", sp->step, sp->old,
		            strerror(errno));
		goto out;
	}
	if (rename(sp->stage, sp->step) != 0) {
		rc = SF_ERR(SF_ERR_IO, "cannot rename %s to %s: %s", sp->stage, sp->step,
		            strerror(errno));
		goto out;
	}
	SF_CHECK_GOTO(_sf_fsync_dir(dir), out);
	SF_CHECK_GOTO(_sf_path_join(path, sizeof path, dir, "latest"), out);
	k = snprintf(line, sizeof line, "%s\n", sp->name);
	SF_CHECK_GOTO(_sf_write_file_atomic(path, dir, line, (size_t)k), out);
	if (replacing)
		SF_CHECK_GOTO(_sf_remove_dir(sp->old), out);
out:
	free(text);
	return rc;
}

static int check_count(const char *what, int64_t x)
{
	if (x < 0 || x > SF_CKPT_COUNT_MAX)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_checkpoint_save: %s is %lld, must be in 0..2^53-1", what,
		              (long long)x);
	return SF_OK;
}

/* How info.step relates to the model's update count, for the manifest: 1 when they are
 * equal (it counts updates), the last update's micro-batches k when it is k times the
 * updates (it counts micro-batches), else 0 (it counts something of the caller's). */
static int64_t steps_per_update(int64_t step, const struct _sf_model_counters *c)
{
	int64_t k = c->grad_mean_of;
	if (step == c->nupdates)
		return 1;
	if (k > 1 && step % k == 0 && step / k == c->nupdates)
		return k;
	return 0;
}

static int save_paths_init(const char *dir, int64_t step, struct save_paths *sp)
{
	snprintf(sp->name, sizeof sp->name, "step-%09lld", (long long)step);
	SF_CHECK(_sf_path_join(sp->step, sizeof sp->step, dir, sp->name));
	snprintf(sp->stage, sizeof sp->stage, "%s.tmp", sp->step);
	snprintf(sp->old, sizeof sp->old, "%s.old", sp->step);
	return SF_OK;
}

/* The first part of every save, collective: the model's state checked (no
 * accumulated micro-batches, counts in range), *info defaulted (none: the model's step
 * count, in *none), the paths, the model synchronised, and on rank 0 the directory
 * locked and dir/step-N.tmp made, where every rank writes. */
static int save_begin(struct sf_model *m, const char *dir, const char *fn,
                      const struct sf_checkpoint_info **info, struct sf_checkpoint_info *none,
                      struct save_paths *sp)
{
	struct _sf_comm *comm = _sf_model_comm(m);
	struct _sf_model_geometry g;
	struct _sf_model_counters c;
	_sf_model_describe(m, &g);
	_sf_model_counters_get(m, &c);
	_sf_flight_set_dir(comm->flight, dir); /* a failed job's records go here */
	if (c.accum_k > 0)
		return SF_ERR(SF_ERR_STATE,
		              "%s: %d micro-batches are accumulated and a checkpoint does not keep "
		              "them; save after sf_model_step",
		              fn, c.accum_k);
	if (!*info) {
		*none = (struct sf_checkpoint_info){.step = c.nupdates};
		*info = none;
	}
	SF_CHECK(check_count("info->step", (*info)->step));
	SF_CHECK(check_count("info->epoch", (*info)->epoch));
	SF_CHECK(check_count("info->batch", (*info)->batch));
	SF_CHECK(check_count("the model's step count", c.nupdates));
	int lrc = save_paths_init(dir, (*info)->step, sp);
	sp->model_steps = c.nupdates;
	sp->steps_per_update = steps_per_update((*info)->step, &c);
	if (lrc >= 0)
		lrc = sf_model_sync(m);
	/* rank 0 makes the directory, locks it (or holds it already: until the model is
	 * destroyed) and makes the staging directory */
	if (g.rank == 0 && lrc >= 0) {
		lrc = _sf_ckpt_lock_dir(m, dir, SF_CHECKPOINT_WRITE);
		if (lrc >= 0)
			lrc = prepare_stage(dir, sp);
	}
	return _sf_comm_agree(comm, lrc, fn);
}

/* The last part of every save, collective, once this rank's file is written (lrc its
 * status; size and crc what it wrote): rank 0 gathers every file's size and CRC-32
 * and, every rank having renamed its file, publishes the step. */
static int save_end(struct sf_model *m, const char *dir, const char *fn,
                    const struct save_paths *sp, const struct sf_checkpoint_info *info, int lrc,
                    uint64_t size, uint32_t crc)
{
	int rc = SF_OK, arc = SF_OK;
	uint64_t *all = NULL, *sizes = NULL, mine[2] = {size, crc};
	uint32_t *crcs = NULL;
	struct _sf_comm *comm = _sf_model_comm(m);
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	if (g.rank == 0) {
		all = calloc((size_t)g.nranks * 2, sizeof *all);
		sizes = calloc((size_t)g.nranks, sizeof *sizes);
		crcs = calloc((size_t)g.nranks, sizeof *crcs);
		if (!all || !sizes || !crcs)
			arc = SF_ERR(SF_ERR_NOMEM, "%s: out of memory", fn);
	}
	SF_CHECK_GOTO(_sf_comm_agree(comm, arc, fn), out);
	/* every rank reaches the gather, failed or not, so collectives stay matched */
	SF_CHECK_GOTO(comm->ops->gather_bytes(comm, mine, sizeof mine, all, 0), out);
	/* the all-reduce inside agree() is also the barrier: no manifest before every
	 * rank has renamed its file */
	SF_CHECK_GOTO(_sf_comm_agree(comm, lrc, fn), out);
	lrc = SF_OK;
	if (g.rank == 0) {
		for (int r = 0; r < nfiles(&g); r++) { /* file r: world rank r tp */
			sizes[r] = all[2 * r * g.tp];
			crcs[r] = (uint32_t)all[2 * r * g.tp + 1];
		}
		lrc = publish(m, dir, sp, info, sizes, crcs);
	}
	SF_CHECK_GOTO(_sf_comm_agree(comm, lrc, fn), out);
	_sf_log(SF_LOG_INFO, "checkpoint %s written (%d ranks)", sp->step, nfiles(&g));
out:
	free(all);
	free(sizes);
	free(crcs);
	return rc;
}

/* Whether this rank writes a file: hybrid's first node's ranks hold every shard once
 * (the other nodes' are the same again); with TP the ranks of TP place 0 hold every
 * slice's file (and every rank joins the collectives that put the slices together);
 * with a pipeline every rank, its stage's units (world = pp x shard_size). */
static bool is_writer(const struct _sf_model_geometry *g)
{
	return g->tp > 1 ? g->tp_rank == 0 : g->rank < nfiles(g);
}

SF_API int sf_checkpoint_save(sf_model *m, const char *dir, const struct sf_checkpoint_info *info)
{
	struct save_paths sp;
	struct sf_checkpoint_info none;
	if (!m || !dir || !*dir)
		return SF_ERR(SF_ERR_INVALID, "sf_checkpoint_save: NULL model or empty directory");
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	SF_CHECK(sf_checkpoint_wait(m)); /* an asynchronous save first */
	SF_CHECK(save_begin(m, dir, "sf_checkpoint_save", &info, &none, &sp));
	uint64_t size = 0;
	uint32_t crc = 0;
	bool writer = is_writer(&g);
	int lrc = writer || g.tp > 1 ? write_rank_file(m, sp.stage, writer, &size, &crc) : SF_OK;
	return save_end(m, dir, "sf_checkpoint_save", &sp, info, lrc, size, crc);
}

/* ---- asynchronous save -------------------------------------------------------------- */

/* A save in the background (sf_checkpoint_save_async): this rank's file, its header
 * and its pieces (each unit's vectors' slices, little-endian) copied at the step
 * boundary into host buffers that stay for the next save, then written by a thread
 * while the steps go on; the manifest and the switch (save_end: collectives) wait
 * for sf_checkpoint_poll or sf_checkpoint_wait on the caller's thread. */
struct _sf_ckpt_async {
	float *snap, *scratch; /* the pieces (cap floats); TP's whole unit (Pmax) */
	size_t cap, n;
	uint8_t hdr[SF_CKPT_HEADER];
	bool pending; /* a save begun and not yet ended (the same on every rank) */
	bool writing; /* this rank's writer thread was started and not joined */
	pthread_t thread;
	atomic_bool done; /* the writer has finished: rc, msg, size, crc are set */
	int rc;
	char msg[1024];
	uint64_t size;
	uint32_t crc;
	int file; /* this rank's file number */
	char dir[SF_PATH_MAX];
	struct save_paths sp;
	struct sf_checkpoint_info info;
};

/* The writer thread: the snapshot to stage/rank-r.bin.tmp, synced and renamed (the
 * crash safety of a synchronous save); errors held, for the caller's thread to raise. */
static void *async_write(void *arg)
{
	struct _sf_ckpt_async *a = arg;
	int rc = SF_OK, fd = -1;
	char path[SF_PATH_MAX], tmp[SF_PATH_MAX + 8];
	_sf_err_hold();
	uint32_t c = _sf_crc32(0, a->hdr, sizeof a->hdr);
	c = _sf_crc32(c, a->snap, a->n * sizeof(float));
	SF_CHECK_GOTO(_sf_ckpt_rank_path(path, sizeof path, a->sp.stage, a->file), out);
	SF_CHECK_GOTO(_sf_create_tmp(path, tmp, sizeof tmp, &fd), out);
	SF_CHECK_GOTO(_sf_write_all(fd, a->hdr, sizeof a->hdr, tmp), out);
	SF_CHECK_GOTO(_sf_write_all(fd, a->snap, a->n * sizeof(float), tmp), out);
	rc = _sf_commit_file(fd, tmp, path, a->sp.stage);
	fd = -1;
	SF_CHECK_GOTO(rc, out);
	a->size = sizeof a->hdr + a->n * sizeof(float);
	a->crc = c;
out:
	if (fd >= 0)
		_sf_abandon_file(fd, tmp);
	a->rc = rc;
	if (rc < 0)
		snprintf(a->msg, sizeof a->msg, "%s", sf_last_error());
	_sf_err_release();
	atomic_store(&a->done, true);
	return NULL;
}

static void async_join(struct _sf_ckpt_async *a)
{
	if (a->writing)
		pthread_join(a->thread, NULL);
	a->writing = false;
}

/* sf_model_destroy's hook: a save still pending is abandoned — its writer joined, its
 * staging directory left without manifest, which no load takes — and the buffers go. */
static void async_end(struct sf_model *m)
{
	struct _sf_ckpt_async **pa = _sf_model_ckpt_async(m), *a = *pa;
	if (!a)
		return;
	async_join(a);
	if (a->pending)
		_sf_log(SF_LOG_WARN,
		        "checkpoint %s: the model was destroyed before its asynchronous save "
		        "was finished (sf_checkpoint_wait); it is left incomplete, and loads "
		        "take the previous step",
		        a->sp.step);
	free(a->snap);
	free(a->scratch);
	free(a);
	*pa = NULL;
}

/* The state, made at the first asynchronous save, with buffers for this model's
 * pieces (the same for every save of it). */
static int async_state(struct sf_model *m, struct _sf_ckpt_async **out)
{
	struct _sf_ckpt_async **pa = _sf_model_ckpt_async(m);
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	if (!*pa) {
		size_t n = 0, pmax = 0;
		for (int u = 0; u < g.nunits; u++) {
			size_t Pw = unit_Pw(m, u);
			if (unit_here(m, &g, u))
				n +=
				    _sf_ckpt_shard(Pw, g.shard_size) * (size_t)_sf_ckpt_nvectors(m);
			pmax = Pw > pmax ? Pw : pmax;
		}
		struct _sf_ckpt_async *a = calloc(1, sizeof *a);
		if (a) {
			a->snap = malloc(n * sizeof(float) + 1);
			a->scratch = through_whole(m, &g) ? malloc(pmax * sizeof(float) + 1) : NULL;
			a->cap = n;
		}
		if (!a || !a->snap || (a->scratch == NULL && through_whole(m, &g))) {
			if (a) {
				free(a->snap);
				free(a->scratch);
			}
			free(a);
			return SF_ERR(SF_ERR_NOMEM,
			              "sf_checkpoint_save_async: cannot allocate %zu bytes of host "
			              "buffers",
			              (n + pmax) * sizeof(float));
		}
		*pa = a;
		_sf_model_ckpt_async_hook_set(m, async_end);
	}
	*out = *pa;
	return SF_OK;
}

/* The snapshot: every piece of this rank's file in a->snap, in file order (with TP a
 * collective that every rank makes, writing or not). */
static int async_snapshot(struct sf_model *m, struct _sf_ckpt_async *a)
{
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	a->n = 0;
	rank_header(m, a->hdr);
	for (int u = 0; u < g.nunits; u++) {
		size_t S = _sf_ckpt_shard(unit_Pw(m, u), g.shard_size);
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V && unit_here(m, &g, u); v++) {
			if (!_sf_vec_exists(m, (enum _sf_vec)v))
				continue;
			SF_CHECK(unit_slice(m, u, (enum _sf_vec)v, S, a->snap + a->n, a->scratch));
			_sf_floats_le(a->snap + a->n, S);
			a->n += S;
		}
	}
	return SF_OK;
}

SF_API int sf_checkpoint_save_async(sf_model *m, const char *dir,
                                    const struct sf_checkpoint_info *info)
{
	const char *fn = "sf_checkpoint_save_async";
	struct _sf_ckpt_async *a = NULL;
	struct save_paths sp;
	struct sf_checkpoint_info none;
	if (!m || !dir || !*dir)
		return SF_ERR(SF_ERR_INVALID, "%s: NULL model or empty directory", fn);
	if (strlen(dir) >= SF_PATH_MAX)
		return SF_ERR(SF_ERR_INVALID, "%s: directory %.64s... is too long", fn, dir);
	struct _sf_comm *comm = _sf_model_comm(m);
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	SF_CHECK(sf_checkpoint_wait(m)); /* one save at a time */
	SF_CHECK(_sf_comm_agree(comm, async_state(m, &a), fn));
	SF_CHECK(save_begin(m, dir, fn, &info, &none, &sp));
	bool writer = is_writer(&g);
	int lrc = writer || g.tp > 1 ? async_snapshot(m, a) : SF_OK;
	a->sp = sp;
	a->info = *info;
	snprintf(a->dir, sizeof a->dir, "%s", dir);
	a->file = file_number(&g);
	a->rc = SF_OK;
	a->size = 0;
	a->crc = 0;
	atomic_store(&a->done, !writer);
	if (lrc >= 0 && writer) {
		int e = pthread_create(&a->thread, NULL, async_write, a);
		if (e != 0)
			lrc = SF_ERR(SF_ERR_IO, "%s: cannot start the writer thread: %s", fn,
			             strerror(e));
		a->writing = e == 0;
	}
	int rc = _sf_comm_agree(comm, lrc, fn);
	if (rc < 0) { /* the staging directory stays without manifest: no load takes it */
		async_join(a);
		return rc;
	}
	a->pending = true;
	return SF_OK;
}

/* Ends the pending save if every rank's writer has finished (block: waiting for this
 * rank's first). *pending: whether it is still running. Collective. */
static int async_finish(struct sf_model *m, bool block, const char *fn, int *pending)
{
	struct _sf_ckpt_async *a = *_sf_model_ckpt_async(m);
	*pending = 0;
	if (!a || !a->pending)
		return SF_OK;
	if (block)
		async_join(a);
	bool done = atomic_load(&a->done);
	int64_t busy = done ? 0 : 1;
	int lrc = SF_OK;
	if (done && a->rc < 0)
		lrc = SF_ERR(a->rc, "asynchronous checkpoint %s: %s", a->sp.step, a->msg);
	int rc = _sf_comm_agree_sum(_sf_model_comm(m), lrc, fn, &busy);
	if (rc < 0) { /* a writer failed: the save is over, its step never published */
		async_join(a);
		a->pending = false;
		return rc;
	}
	if (busy > 0) {
		*pending = 1;
		return SF_OK;
	}
	async_join(a);
	a->pending = false;
	return save_end(m, a->dir, fn, &a->sp, &a->info, SF_OK, a->size, a->crc);
}

SF_API int sf_checkpoint_poll(sf_model *m, int *pending)
{
	int p = 0;
	if (!m)
		return SF_ERR(SF_ERR_INVALID, "sf_checkpoint_poll: NULL model");
	SF_CHECK(async_finish(m, false, "sf_checkpoint_poll", &p));
	if (pending)
		*pending = p;
	return SF_OK;
}

SF_API int sf_checkpoint_wait(sf_model *m)
{
	int p = 0;
	if (!m)
		return SF_ERR(SF_ERR_INVALID, "sf_checkpoint_wait: NULL model");
	return async_finish(m, true, "sf_checkpoint_wait", &p);
}

SF_API int sf_checkpoint_prune(sf_model *m, const char *dir, int keep, int *removed)
{
	int lrc = SF_OK, n = 0;
	if (!m || !dir || !*dir)
		return SF_ERR(SF_ERR_INVALID, "sf_checkpoint_prune: NULL model or empty directory");
	if (keep < 1)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_checkpoint_prune: keep is %d; at least 1 checkpoint is kept", keep);
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	SF_CHECK(sf_checkpoint_wait(m)); /* the newest step is the pending save's */
	if (g.rank == 0)
		lrc = _sf_ckpt_lock_dir(m, dir, SF_CHECKPOINT_WRITE);
	if (g.rank == 0 && lrc >= 0)
		lrc = _sf_ckpt_prune(dir, keep, &n);
	SF_CHECK(_sf_comm_agree(_sf_model_comm(m), lrc, "sf_checkpoint_prune"));
	if (removed)
		*removed = n; /* rank 0's count; 0 elsewhere */
	return SF_OK;
}
