/*
 * checkpoint_save.c — sf_checkpoint_save: every rank writes its file into the staging
 * directory, rank 0 (holding the directory's lock for the model's life:
 * checkpoint_lock.c) writes the manifest and switches the step into place. The format
 * and its crash safety: io/checkpoint.h.
 */
#include "io/bytes.h"
#include "io/checkpoint.h"
#include "io/manifest.h"
#include "io/tensors.h"
#include "scheduler/model_access.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
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
	if (mg.tp == 1)
		return _sf_unit_get_slice(m, u, v, buf);
	_sf_unit_describe(m, u, &un);
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
	scratch = g.tp > 1 ? malloc(pmax * sizeof(float) + 1) : NULL;
	if (!buf || (g.tp > 1 && !scratch)) {
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
	SF_CHECK_GOTO(_sf_ckpt_rank_path(path, sizeof path, stepdir, g.shard_rank), out);
	SF_CHECK_GOTO(_sf_create_tmp(path, tmp, sizeof tmp, &fd), out);

	uint8_t hdr[SF_CKPT_HEADER];
	memcpy(hdr, CKPT_MAGIC, 8);
	_sf_put_le(hdr + 8, (uint32_t)g.shard_rank, 4);
	_sf_put_le(hdr + 12, (uint32_t)g.shard_size, 4);
	_sf_put_le(hdr + 16, (uint32_t)g.nunits, 4);
	_sf_put_le(hdr + 20, (uint32_t)_sf_ckpt_nvectors(m), 4);
	uint32_t c = _sf_crc32(0, hdr, sizeof hdr);
	uint64_t total = sizeof hdr;
	SF_CHECK_GOTO(_sf_write_all(fd, hdr, sizeof hdr, tmp), out);
	for (int u = 0; u < g.nunits; u++) {
		size_t S = _sf_ckpt_shard(unit_Pw(m, u), g.shard_size);
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++) {
			if (!_sf_vec_exists(m, (enum _sf_vec)v))
				continue;
			/* with TP a collective: made even after a failed write */
			SF_CHECK_GOTO(unit_slice(m, u, (enum _sf_vec)v, S, buf, scratch), out);
			if (wrc < 0)
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

static json_t *manifest_build(struct sf_model *m, const struct sf_checkpoint_info *info,
                              const uint64_t *sizes, const uint32_t *crcs)
{
	char hash[17], seed[32];
	struct _sf_model_geometry g;
	struct _sf_model_counters c;
	_sf_model_describe(m, &g);
	_sf_model_counters_get(m, &c);
	_sf_ckpt_structure_hash(m, false, hash);
	snprintf(seed, sizeof seed, "%" PRIu64, info->data_seed);
	json_t *vecs = json_array(), *units = json_array(), *files = json_array();
	for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++)
		if (_sf_vec_exists(m, (enum _sf_vec)v))
			json_array_append_new(vecs, json_string(_sf_ckpt_vec_names[v]));
	for (int u = 0; u < g.nunits; u++)
		json_array_append_new(units,
		                      json_pack("{s:s, s:I}", "name", _sf_ckpt_unit_name(m, u), "P",
		                                (json_int_t)unit_Pw(m, u)));
	for (int r = 0; r < g.shard_size; r++) {
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
	/* the layout it was written at (ranks, SHARDFLOW_TP); the files hold the whole
	 * model's vectors whatever it was, so any layout loads them */
	return json_pack(
	    "{s:s, s:i, s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:I, s:{s:I, s:I, s:I, s:s}, "
	    "s:o, s:o, s:o, s:o}",
	    "format", SF_CKPT_FORMAT, "version", SF_CKPT_VERSION, "world_size", g.shard_size,
	    "ranks", g.nranks, "tp", g.tp, "sharding", _sf_sharding_names[g.sharding], "optimizer",
	    _sf_optimizer_names[g.optimizer], "structure_hash", hash, "dtype", "f32",
	    "model_steps", (json_int_t)c.nupdates, "info", "step", (json_int_t)info->step, "epoch",
	    (json_int_t)info->epoch, "batch", (json_int_t)info->batch, "data_seed", seed, "vectors",
	    vecs, "units", units, "tensors", tensors, "files", files);
}

/* The paths of one save: the step directory, where it is staged, and where a copy it
 * replaces waits for its removal. */
struct save_paths {
	char name[32]; /* step-<9 digits> */
	char step[SF_PATH_MAX], stage[SF_PATH_MAX + 8], old[SF_PATH_MAX + 8];
};

/* Rank 0, holding the lock: a save of step N killed between moving the old step-N
 * aside and renaming its staging directory into place left step-N.tmp as the only
 * complete copy — finish that switch; then drop what earlier saves of N left over. */
static int prepare_stage(const char *dir, const struct save_paths *sp)
{
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
	json_t *root = manifest_build(m, info, sizes, crcs);
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

static int save_paths_init(const char *dir, int64_t step, struct save_paths *sp)
{
	snprintf(sp->name, sizeof sp->name, "step-%09lld", (long long)step);
	SF_CHECK(_sf_path_join(sp->step, sizeof sp->step, dir, sp->name));
	snprintf(sp->stage, sizeof sp->stage, "%s.tmp", sp->step);
	snprintf(sp->old, sizeof sp->old, "%s.old", sp->step);
	return SF_OK;
}

SF_API int sf_checkpoint_save(sf_model *m, const char *dir, const struct sf_checkpoint_info *info)
{
	int rc = SF_OK;
	struct save_paths sp;
	uint64_t *all = NULL, *sizes = NULL;
	uint32_t *crcs = NULL;
	struct sf_checkpoint_info none = {0};
	if (!m || !dir || !*dir)
		return SF_ERR(SF_ERR_INVALID, "sf_checkpoint_save: NULL model or empty directory");
	struct _sf_comm *comm = _sf_model_comm(m);
	struct _sf_model_geometry g;
	struct _sf_model_counters c;
	_sf_model_describe(m, &g);
	_sf_model_counters_get(m, &c);
	_sf_flight_set_dir(comm->flight, dir); /* a failed job's records go here */
	if (c.accum_k > 0)
		return SF_ERR(SF_ERR_STATE,
		              "sf_checkpoint_save: %d micro-batches are accumulated and a checkpoint "
		              "does not keep them; save after sf_model_step",
		              c.accum_k);
	if (!info) {
		none.step = c.nupdates;
		info = &none;
	}
	SF_CHECK_GOTO(check_count("info->step", info->step), out);
	SF_CHECK_GOTO(check_count("info->epoch", info->epoch), out);
	SF_CHECK_GOTO(check_count("info->batch", info->batch), out);
	SF_CHECK_GOTO(check_count("the model's step count", c.nupdates), out);
	int lrc = save_paths_init(dir, info->step, &sp);
	if (lrc >= 0)
		lrc = sf_model_sync(m);

	/* rank 0 makes the directory, locks it (or holds it already: until the model is
	 * destroyed) and makes the staging directory dir/step-N.tmp, where every rank
	 * writes */
	if (g.rank == 0 && lrc >= 0) {
		lrc = _sf_ckpt_lock_dir(m, dir, SF_CHECKPOINT_WRITE);
		if (lrc >= 0)
			lrc = prepare_stage(dir, &sp);
		all = calloc((size_t)g.nranks * 2, sizeof *all);
		sizes = calloc((size_t)g.nranks, sizeof *sizes);
		crcs = calloc((size_t)g.nranks, sizeof *crcs);
		if ((!all || !sizes || !crcs) && lrc >= 0)
			lrc = SF_ERR(SF_ERR_NOMEM, "sf_checkpoint_save: out of memory");
	}
	SF_CHECK_GOTO(_sf_comm_agree(comm, lrc, "sf_checkpoint_save"), out);

	uint64_t mine[2] = {0, 0};
	uint32_t crc = 0;
	/* hybrid: the first node's ranks hold every shard once (the files of a checkpoint
	 * written by shard_size ranks); the other nodes' are the same again and write nothing */
	/* with TP the ranks of TP place 0 hold every slice's file (and every rank joins the
	 * collectives that put the slices together) */
	bool writer = g.tp > 1 ? g.tp_rank == 0 : g.rank < g.shard_size;
	lrc = writer || g.tp > 1 ? write_rank_file(m, sp.stage, writer, &mine[0], &crc) : SF_OK;
	mine[1] = crc;
	/* every rank reaches the gather, failed or not, so collectives stay matched */
	SF_CHECK_GOTO(comm->ops->gather_bytes(comm, mine, sizeof mine, all, 0), out);
	/* the all-reduce inside agree() is also the barrier: no manifest before every
	 * rank has renamed its file */
	SF_CHECK_GOTO(_sf_comm_agree(comm, lrc, "sf_checkpoint_save"), out);

	lrc = SF_OK;
	if (g.rank == 0) {
		for (int r = 0; r < g.shard_size; r++) { /* file r: world rank r tp */
			sizes[r] = all[2 * r * g.tp];
			crcs[r] = (uint32_t)all[2 * r * g.tp + 1];
		}
		lrc = publish(m, dir, &sp, info, sizes, crcs);
	}
	SF_CHECK_GOTO(_sf_comm_agree(comm, lrc, "sf_checkpoint_save"), out);
	_sf_log(SF_LOG_INFO, "checkpoint %s written (%d ranks)", sp.step, g.shard_size);
out:
	free(all);
	free(sizes);
	free(crcs);
	return rc;
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
	if (g.rank == 0)
		lrc = _sf_ckpt_lock_dir(m, dir, SF_CHECKPOINT_WRITE);
	if (g.rank == 0 && lrc >= 0)
		lrc = _sf_ckpt_prune(dir, keep, &n);
	SF_CHECK(_sf_comm_agree(_sf_model_comm(m), lrc, "sf_checkpoint_prune"));
	if (removed)
		*removed = n; /* rank 0's count; 0 elsewhere */
	return SF_OK;
}
