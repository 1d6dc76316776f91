/*
 * checkpoint.c — sharded checkpoints that do not depend on the world size or sharding.
 *
 * A checkpoint of N ranks is a directory dir/step-<9 digits>/ holding rank-<5 digits>.bin
 * for r < N and manifest.json. Every unit u has logical vectors of P_u floats (the
 * parameters, then the optimizer's first moment, then AdamW's second moment); rank-r.bin
 * holds slice [r S_u, (r+1) S_u) of each, S_u = ceil(P_u / N), zeros past P_u:
 *
 *   header (24 bytes, little-endian): "SFCKPT1\0", u32 rank, u32 nranks, u32 nunits,
 *                                     u32 vectors per unit
 *   for u in units, for each vector: S_u float32, little-endian
 *
 * The file layout only depends on (P_u, N), which the manifest records, so a loader on M
 * ranks finds any element i of a unit in file i / S_u at i % S_u: that is resharding.
 * Each loading rank reads only the files holding what it keeps — its own slice of every
 * unit (the whole unit with sharding none) — so a checkpoint loaded on as many ranks as
 * wrote it costs every rank one file. A CRC-32 covers a whole file: a rank reads every
 * file it needs from start to end (in pieces) to verify it, and keeps its slices of it.
 * Rank 0 also checks the size of every file, so a truncated checkpoint is refused even
 * where no rank reads the truncated file.
 *
 * Crash safety is by ordering, and a save never touches a complete step before its
 * replacement is: the step is written into a staging directory dir/step-N.tmp, each
 * file to <name>.tmp, fsync'ed and renamed (and the directory fsync'ed); the manifest
 * (which carries every rank file's size and CRC-32; its own CRC-32 is in
 * manifest.crc32, written just before it) comes only after every rank has renamed its
 * file. Then the switch: an existing step-N is renamed to step-N.old, step-N.tmp to
 * step-N, dir/latest is rewritten, step-N.old removed. A loader given dir takes the
 * step latest names, or — latest missing, or naming a step without manifest, as a kill
 * between these renames leaves it — the newest step-N or step-N.tmp holding a
 * manifest. A step directory without manifest.json is half-written and refused.
 *
 * One writer per directory: rank 0 holds flock(dir/.lock) from before the staging
 * directory is made until latest is switched; a second job is refused (SF_ERR_BUSY).
 * The manifest's counts (steps, epoch, batch) are range-checked to 0..2^53-1, so no
 * later arithmetic on them overflows.
 *
 * Every failure of one rank becomes the same status on every rank (_sf_comm_agree), and
 * every check happens before the first byte of the model is touched.
 */
#include "io/bytes.h"
#include "io/fileio.h"
#include "io/manifest.h"
#include "scheduler/model.h"

#include <errno.h>
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define CKPT_MAGIC "SFCKPT1" /* and its NUL: 8 bytes */
#define CKPT_MANIFEST_MAX ((size_t)64 << 20)
#define CKPT_PATH_MAX SF_PATH_MAX
#define CKPT_PIECE ((size_t)4 << 20) /* bytes a loader reads at a time */

static const char *const vec_names[] = {"param", "m", "v"};

/* ---- small helpers ------------------------------------------------------------- */

static int nvectors(const struct sf_model *m)
{
	int k = 0;
	for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++)
		k += _sf_vec_exists(m, (enum _sf_vec)v);
	return k;
}

static const char *unit_name(const struct sf_model *m, int u)
{
	return m->units[u].name;
}

/* FNV-1a 64 over what makes two models interchangeable: per node its kind, type,
 * name, output width, parameter count and inputs. */
static void fnv(uint64_t *h, const void *data, size_t n)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < n; i++) {
		*h ^= p[i];
		*h *= 0x100000001b3ull;
	}
}

static void fnv_u64(uint64_t *h, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	fnv(h, b, 8);
}

static void fnv_str(uint64_t *h, const char *s)
{
	fnv(h, s, strlen(s) + 1);
}

static void structure_hash(const struct sf_model *m, char out[17])
{
	uint64_t h = 0xcbf29ce484222325ull;
	fnv_u64(&h, (uint64_t)m->nnodes);
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		fnv_u64(&h, (uint64_t)nd->kind);
		fnv_str(&h, nd->kind == SF_NODE_LAYER && nd->type ? nd->type->name : "");
		fnv_str(&h, nd->name);
		fnv_u64(&h, (uint64_t)(int64_t)nd->dim);
		fnv_u64(&h, (uint64_t)nd->nparams);
		fnv_u64(&h, (uint64_t)nd->nin);
		for (int i = 0; i < nd->nin; i++)
			fnv_u64(&h, (uint64_t)(int64_t)nd->in[i]);
		/* units and tied parameters (absent from older graphs: their hash holds) */
		if (nd->group >= 0 || nd->tied_to >= 0) {
			fnv_u64(&h, (uint64_t)(int64_t)nd->group);
			fnv_u64(&h, (uint64_t)(int64_t)nd->tied_to);
		}
	}
	if (m->T != 1)
		fnv_u64(&h, (uint64_t)m->T);
	snprintf(out, 17, "%016" PRIx64, h);
}

/* "rank-<5 digits>.bin", the name of rank r's file (32 bytes are enough). */
static int rank_path(char *out, size_t size, const char *stepdir, int r)
{
	char name[32];
	_sf_ckpt_rank_name(name, sizeof name, r);
	return _sf_path_join(out, size, stepdir, name);
}

/* Rank 0: takes dir/.lock (flock, not waiting) and records "<pid> <host>" in it, so
 * that a second job saving into the same directory is refused naming the holder. The
 * lock goes with the descriptor (*fd, closed by unlock_dir) — also when the process
 * dies. */
static int lock_dir(const char *dir, int *fd)
{
	char path[CKPT_PATH_MAX], who[128] = "";
	int rc = _sf_path_join(path, sizeof path, dir, ".lock");
	if (rc < 0)
		return rc;
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (*fd < 0)
		return SF_ERR(SF_ERR_IO, "cannot open the lock %s: %s", path, strerror(errno));
	if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		ssize_t n = pread(*fd, who, sizeof who - 1, 0);
		who[n > 0 ? n : 0] = '\0';
		who[strcspn(who, "\n")] = '\0';
		close(*fd);
		*fd = -1;
		if (e != EWOULDBLOCK)
			return SF_ERR(SF_ERR_IO, "cannot lock %s: %s", path, strerror(e));
		char pid[32] = "", host[96] = "";
		if (sscanf(who, "%31[0-9] %95s", pid, host) < 1)
			pid[0] = '\0';
		return SF_ERR(SF_ERR_BUSY,
		              "checkpoint directory %s is being written by another job (%s%s%s%s "
		              "holds %s): two jobs must not save into one directory",
		              dir, *pid ? "pid " : "another process", pid, *host ? " on " : "",
		              host, path);
	}
	char host[64] = "?";
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "?");
	host[sizeof host - 1] = '\0';
	int k = snprintf(who, sizeof who, "%ld %s\n", (long)getpid(), host);
	if (ftruncate(*fd, 0) != 0 || pwrite(*fd, who, (size_t)k, 0) != k) {
		int e = errno;
		close(*fd);
		*fd = -1;
		return SF_ERR(SF_ERR_IO, "cannot write %s: %s", path, strerror(e));
	}
	return SF_OK;
}

static void unlock_dir(int fd)
{
	if (fd < 0)
		return;
	/* (a stale pid left in the file is harmless: it is read only while locked) */
	if (ftruncate(fd, 0) != 0)
		_sf_log(SF_LOG_DEBUG, "checkpoint: cannot empty the lock file: %s",
		        strerror(errno));
	close(fd); /* releases the flock */
}

/* ---- save --------------------------------------------------------------------------- */

/* Writes this rank's file and commits it atomically; *size and *crc describe what was
 * written. */
static int write_rank_file(struct sf_model *m, const char *stepdir, uint64_t *size, uint32_t *crc)
{
	int rc = SF_OK, fd = -1;
	char path[CKPT_PATH_MAX], tmp[CKPT_PATH_MAX + 8];
	float *buf = NULL;
	size_t smax = 0;
	for (int u = 0; u < m->nunits; u++)
		if (m->units[u].S > smax)
			smax = m->units[u].S;
	buf = malloc(smax * sizeof(float) + 1);
	if (!buf)
		return SF_ERR(SF_ERR_NOMEM, "checkpoint: cannot allocate %zu bytes", smax * 4);
	SF_CHECK(rank_path(path, sizeof path, stepdir, m->sr));
	SF_CHECK(_sf_create_tmp(path, tmp, sizeof tmp, &fd));

	uint8_t hdr[SF_CKPT_HEADER];
	memcpy(hdr, CKPT_MAGIC, 8);
	_sf_put_le(hdr + 8, (uint32_t)m->sr, 4);
	_sf_put_le(hdr + 12, (uint32_t)m->sn, 4);
	_sf_put_le(hdr + 16, (uint32_t)m->nunits, 4);
	_sf_put_le(hdr + 20, (uint32_t)nvectors(m), 4);
	uint32_t c = _sf_crc32(0, hdr, sizeof hdr);
	uint64_t total = sizeof hdr;
	SF_CHECK(_sf_write_all(fd, hdr, sizeof hdr, tmp));
	for (int u = 0; u < m->nunits; u++) {
		size_t S = m->units[u].S;
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++) {
			if (!_sf_vec_exists(m, (enum _sf_vec)v))
				continue;
			SF_CHECK(_sf_unit_get_slice(m, u, (enum _sf_vec)v, buf));
			_sf_floats_le(buf, S);
			c = _sf_crc32(c, buf, S * sizeof(float));
			total += S * sizeof(float);
			SF_CHECK(_sf_write_all(fd, buf, S * sizeof(float), tmp));
		}
	}
	rc = _sf_commit_file(fd, tmp, path, stepdir);
	fd = -1;
	SF_CHECK(rc);
	*size = total;
	*crc = c;
fail:
	if (fd >= 0)
		_sf_abandon_file(fd, tmp);
	free(buf);
	return rc;
}

static json_t *manifest_build(struct sf_model *m, const struct sf_checkpoint_info *info,
                              const uint64_t *sizes, const uint32_t *crcs)
{
	char hash[17], seed[32];
	structure_hash(m, hash);
	snprintf(seed, sizeof seed, "%" PRIu64, info->data_seed);
	json_t *vecs = json_array(), *units = json_array(), *files = json_array();
	for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++)
		if (_sf_vec_exists(m, (enum _sf_vec)v))
			json_array_append_new(vecs, json_string(vec_names[v]));
	for (int u = 0; u < m->nunits; u++)
		json_array_append_new(units, json_pack("{s:s, s:I}", "name", unit_name(m, u), "P",
		                                       (json_int_t)m->units[u].P));
	for (int r = 0; r < m->sn; r++) {
		char name[32];
		_sf_ckpt_rank_name(name, sizeof name, r);
		json_array_append_new(files, json_pack("{s:s, s:I, s:I}", "name", name, "size",
		                                       (json_int_t)sizes[r], "crc32",
		                                       (json_int_t)crcs[r]));
	}
	return json_pack("{s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:I, s:{s:I, s:I, s:I, s:s}, "
	                 "s:o, s:o, s:o}",
	                 "format", SF_CKPT_FORMAT, "version", SF_CKPT_VERSION, "world_size",
	                 m->sn, "sharding", _sf_sharding_names[m->cfg.sharding], "optimizer",
	                 _sf_optimizer_names[m->opt.optimizer], "structure_hash", hash, "dtype",
	                 "f32", "model_steps", (json_int_t)m->nupdates, "info", "step",
	                 (json_int_t)info->step, "epoch", (json_int_t)info->epoch, "batch",
	                 (json_int_t)info->batch, "data_seed", seed, "vectors", vecs, "units",
	                 units, "files", files);
}

/* The paths of one save: the step directory, where it is staged, and where a copy it
 * replaces waits for its removal. */
struct save_paths {
	char name[32]; /* step-<9 digits> */
	char step[CKPT_PATH_MAX], stage[CKPT_PATH_MAX + 8], old[CKPT_PATH_MAX + 8];
};

/* Rank 0, holding the lock: a save of step N killed between moving the old step-N
 * aside and renaming its staging directory into place left step-N.tmp as the only
 * complete copy — finish that switch; then drop what earlier saves of N left over. */
static int prepare_stage(const char *dir, const struct save_paths *sp)
{
	int rc = SF_OK;
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
fail:
	return rc;
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
	char path[CKPT_PATH_MAX + 32], line[64];
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
	SF_CHECK(_sf_path_join(path, sizeof path, sp->stage, "manifest.crc32"));
	SF_CHECK(_sf_write_file_atomic(path, sp->stage, line, (size_t)k));
	SF_CHECK(_sf_path_join(path, sizeof path, sp->stage, "manifest.json"));
	SF_CHECK(_sf_write_file_atomic(path, sp->stage, text, n));

	bool replacing = _sf_is_dir(sp->step);
	if (replacing && rename(sp->step, sp->old) != 0) {
		rc = SF_ERR(SF_ERR_IO, "cannot rename %s to %s: %s", sp->step, sp->old,
		            strerror(errno));
		goto fail;
	}
	if (rename(sp->stage, sp->step) != 0) {
		rc = SF_ERR(SF_ERR_IO, "cannot rename %s to %s: %s", sp->stage, sp->step,
		            strerror(errno));
		goto fail;
	}
	SF_CHECK(_sf_fsync_dir(dir));
	SF_CHECK(_sf_path_join(path, sizeof path, dir, "latest"));
	k = snprintf(line, sizeof line, "%s\n", sp->name);
	SF_CHECK(_sf_write_file_atomic(path, dir, line, (size_t)k));
	if (replacing)
		SF_CHECK(_sf_remove_dir(sp->old));
fail:
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
	int rc = SF_OK;
	snprintf(sp->name, sizeof sp->name, "step-%09lld", (long long)step);
	SF_CHECK(_sf_path_join(sp->step, sizeof sp->step, dir, sp->name));
	snprintf(sp->stage, sizeof sp->stage, "%s.tmp", sp->step);
	snprintf(sp->old, sizeof sp->old, "%s.old", sp->step);
fail:
	return rc;
}

SF_API int sf_checkpoint_save(sf_model *m, const char *dir, const struct sf_checkpoint_info *info)
{
	int rc = SF_OK, lock = -1;
	struct save_paths sp;
	uint64_t *all = NULL, *sizes = NULL;
	uint32_t *crcs = NULL;
	struct sf_checkpoint_info none = {0};
	if (!m || !dir || !*dir)
		return SF_ERR(SF_ERR_INVALID, "sf_checkpoint_save: NULL model or empty directory");
	if (m->accum_k > 0)
		return SF_ERR(SF_ERR_STATE,
		              "sf_checkpoint_save: %d micro-batches are accumulated and a checkpoint "
		              "does not keep them; save after sf_model_step",
		              m->accum_k);
	if (!info) {
		none.step = m->nupdates;
		info = &none;
	}
	SF_CHECK(check_count("info->step", info->step));
	SF_CHECK(check_count("info->epoch", info->epoch));
	SF_CHECK(check_count("info->batch", info->batch));
	SF_CHECK(check_count("the model's step count", m->nupdates));
	int lrc = save_paths_init(dir, info->step, &sp);
	if (lrc >= 0)
		lrc = sf_model_sync(m);

	/* rank 0 makes the directory, takes its lock (held until latest is switched) and
	 * the staging directory dir/step-N.tmp, where every rank writes */
	if (m->rank == 0 && lrc >= 0) {
		lrc = _sf_make_dirs(dir);
		if (lrc >= 0)
			lrc = lock_dir(dir, &lock);
		if (lrc >= 0)
			lrc = prepare_stage(dir, &sp);
		all = calloc((size_t)m->nranks * 2, sizeof *all);
		sizes = calloc((size_t)m->nranks, sizeof *sizes);
		crcs = calloc((size_t)m->nranks, sizeof *crcs);
		if ((!all || !sizes || !crcs) && lrc >= 0)
			lrc = SF_ERR(SF_ERR_NOMEM, "sf_checkpoint_save: out of memory");
	}
	SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_checkpoint_save"));

	uint64_t mine[2] = {0, 0};
	uint32_t crc = 0;
	/* hybrid: the first node's ranks hold every shard once (the files of a checkpoint
	 * written by sn ranks); the other nodes' are the same again and write nothing */
	lrc = m->rank < m->sn ? write_rank_file(m, sp.stage, &mine[0], &crc) : SF_OK;
	mine[1] = crc;
	/* every rank reaches the gather, failed or not, so collectives stay matched */
	SF_CHECK(m->comm->ops->gather(m->comm, mine, sizeof mine, all, 0));
	/* the all-reduce inside agree() is also the barrier: no manifest before every
	 * rank has renamed its file */
	SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_checkpoint_save"));

	lrc = SF_OK;
	if (m->rank == 0) {
		for (int r = 0; r < m->sn; r++) {
			sizes[r] = all[2 * r];
			crcs[r] = (uint32_t)all[2 * r + 1];
		}
		lrc = publish(m, dir, &sp, info, sizes, crcs);
	}
	SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_checkpoint_save"));
	_sf_log(SF_LOG_INFO, "checkpoint %s written (%d ranks)", sp.step, m->sn);
fail:
	unlock_dir(lock);
	free(all);
	free(sizes);
	free(crcs);
	return rc;
}

/* ---- load --------------------------------------------------------------------------- */

/* A step directory whose writer stopped before the manifest: named step-*, or holding
 * rank files or a temporary manifest. */
static bool half_written(const char *dir)
{
	const char *base = dir;
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	for (size_t i = 0; i + 1 < n; i++)
		if (dir[i] == '/')
			base = dir + i + 1;
	if (!strncmp(base, "step-", 5))
		return true;
	DIR *d = opendir(dir);
	bool found = false;
	if (!d)
		return false;
	for (struct dirent *e; !found && (e = readdir(d));)
		found = !strncmp(e->d_name, "rank-", 5) || !strcmp(e->d_name, "manifest.json.tmp");
	closedir(d);
	return found;
}

/* The step number of a directory entry named step-<digits> or step-<digits>.tmp (a
 * staging directory), or -1; *staged says which. */
static int64_t step_of(const char *name, bool *staged)
{
	if (strncmp(name, "step-", 5))
		return -1;
	size_t d = strspn(name + 5, "0123456789");
	if (d == 0 || d > 15)
		return -1;
	*staged = !strcmp(name + 5 + d, ".tmp");
	if (name[5 + d] && !*staged)
		return -1;
	return strtoll(name + 5, NULL, 10);
}

/* Rank 0: the newest complete step directory of `dir` (holding manifest.json): a
 * step-N, or a staging step-N.tmp whose save was killed after its manifest (step-N
 * wins a tie). Returns whether there is one, its path in stepdir. */
static bool newest_complete(const char *dir, char *stepdir, size_t size)
{
	int64_t best = -1;
	bool best_staged = false;
	char path[CKPT_PATH_MAX];
	DIR *d = opendir(dir);
	if (!d)
		return false;
	for (struct dirent *e; (e = readdir(d));) {
		bool staged = false;
		int64_t k = step_of(e->d_name, &staged);
		if (k < 0 || k < best || (k == best && (staged || !best_staged)))
			continue;
		if (_sf_path_join(path, sizeof path, dir, e->d_name) < 0 ||
		    !_sf_path_exists(path, "manifest.json"))
			continue;
		if (snprintf(stepdir, size, "%s", path) >= (int)size)
			continue;
		best = k;
		best_staged = staged;
	}
	closedir(d);
	return best >= 0;
}

/* Rank 0: reads the manifest of stepdir and checks it against manifest.crc32 when there
 * is one (*has_crc; checkpoints of format version 1 have none). */
static int read_manifest(const char *stepdir, char **text, size_t *len, bool *has_crc)
{
	int rc = SF_OK;
	char path[CKPT_PATH_MAX], *line = NULL;
	size_t n;
	SF_CHECK(_sf_path_join(path, sizeof path, stepdir, "manifest.json"));
	SF_CHECK(_sf_read_small_file(path, CKPT_MANIFEST_MAX, text, len));
	*has_crc = _sf_path_exists(stepdir, "manifest.crc32");
	if (!*has_crc)
		return SF_OK;
	SF_CHECK(_sf_path_join(path, sizeof path, stepdir, "manifest.crc32"));
	SF_CHECK(_sf_read_small_file(path, 64, &line, &n));
	unsigned want = 0;
	char tail[2];
	if (strspn(line, "0123456789abcdef") != 8 || sscanf(line, "%8x%1s", &want, tail) != 1) {
		rc = SF_ERR(SF_ERR_IO, "%s should hold 8 hex digits, it holds \"%.16s\"", path,
		            line);
		goto fail;
	}
	uint32_t got = _sf_crc32(0, *text, *len);
	if (got != want) {
		rc = SF_ERR(SF_ERR_IO,
		            "%s/manifest.json: CRC-32 is %08x, manifest.crc32 says %08x "
		            "(corrupted or edited)",
		            stepdir, got, want);
		goto fail;
	}
fail:
	if (rc < 0) {
		free(*text);
		*text = NULL;
	}
	free(line);
	return rc;
}

/* Rank 0: which step directory `dir` means: dir itself when it holds a manifest, else
 * the step dir/latest names, else (latest missing, or naming a step without a manifest:
 * a save killed before latest was switched) the newest complete step directory. An
 * empty stepdir when dir holds no checkpoint at all (missing, empty, or only saves
 * killed before their manifest): not an error here. */
static int resolve(const char *dir, char *stepdir, size_t size)
{
	int rc = SF_OK;
	char path[CKPT_PATH_MAX], named[CKPT_PATH_MAX] = "";
	char *latest = NULL;
	size_t n;
	struct stat st;
	stepdir[0] = '\0';
	if (stat(dir, &st) != 0) {
		if (errno == ENOENT)
			return SF_OK;
		return SF_ERR(SF_ERR_IO, "checkpoint directory %s: %s", dir, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return SF_ERR(SF_ERR_IO, "checkpoint %s is not a directory", dir);
	if (_sf_path_exists(dir, "manifest.json")) {
		if (snprintf(stepdir, size, "%s", dir) >= (int)size)
			return SF_ERR(SF_ERR_INVALID, "path %s is too long", dir);
		return SF_OK;
	}
	if (_sf_path_exists(dir, "latest")) {
		SF_CHECK(_sf_path_join(path, sizeof path, dir, "latest"));
		SF_CHECK(_sf_read_small_file(path, 256, &latest, &n));
		while (n > 0 && (latest[n - 1] == '\n' || latest[n - 1] == '\r'))
			latest[--n] = '\0';
		size_t digits = n > 5 ? strspn(latest + 5, "0123456789") : 0;
		if (n < 6 || strncmp(latest, "step-", 5) != 0 || digits != n - 5) {
			rc = SF_ERR(SF_ERR_IO,
			            "%s should hold \"step-<digits>\", it holds \"%.64s\" "
			            "(not a shardflow checkpoint directory?)",
			            path, latest);
			goto fail;
		}
		SF_CHECK(_sf_path_join(named, sizeof named, dir, latest));
		if (_sf_path_exists(named, "manifest.json")) {
			free(latest);
			if (snprintf(stepdir, size, "%s", named) >= (int)size)
				return SF_ERR(SF_ERR_INVALID, "path %s is too long", named);
			return SF_OK;
		}
	}
	if (newest_complete(dir, stepdir, size)) {
		_sf_log(SF_LOG_WARN, "checkpoint %s: %s%s%s; loading the newest complete step, %s",
		        dir, *named ? "latest names " : "latest is missing", named,
		        *named ? ", which has no manifest.json" : "", stepdir);
	} else if (*named) {
		rc = SF_ERR(SF_ERR_IO,
		            "%s names %s, which has no manifest.json (a half-written or removed "
		            "checkpoint), and no other step directory is complete",
		            path, named);
	} else if (half_written(dir)) {
		rc = SF_ERR(
		    SF_ERR_IO,
		    "%s is a step directory without manifest.json: a half-written checkpoint "
		    "(its writer stopped before the manifest); load a complete step or "
		    "the checkpoint directory's latest",
		    dir);
	}
fail:
	free(latest);
	return rc;
}

/* Broadcasts a NUL-terminated string of rank 0 (allocating it on the others). */
static int bcast_string(struct sf_model *m, char **s, size_t *len)
{
	int rc = SF_OK;
	uint64_t n = m->rank == 0 ? *len : 0;
	SF_CHECK(m->comm->ops->bcast(m->comm, &n, sizeof n, 0));
	int arc = SF_OK;
	if (m->rank != 0) {
		*s = malloc(n + 1);
		if (!*s)
			arc = SF_ERR(SF_ERR_NOMEM, "cannot allocate %llu bytes",
			             (unsigned long long)n);
		*len = *s ? n : 0;
	}
	/* every rank learns that one could not allocate, so none waits in the bcast */
	SF_CHECK(_sf_comm_agree(m->comm, arc, "sf_checkpoint_load"));
	for (uint64_t off = 0; off < n;) {
		int k = n - off > (1u << 30) ? (1 << 30) : (int)(n - off);
		SF_CHECK(m->comm->ops->bcast(m->comm, *s + off, (size_t)k, 0));
		off += (uint64_t)k;
	}
	(*s)[n] = '\0';
fail:
	return rc;
}

/* What this model expects of a manifest (io/manifest.h). */
static int expect_init(const struct sf_model *m, struct _sf_manifest_expect *e)
{
	*e = (struct _sf_manifest_expect){
	    .shardings = _sf_sharding_names,
	    .nshardings = SF_SHARD_COUNT,
	    .optimizers = _sf_optimizer_names,
	    .noptimizers = SF_OPT_COUNT,
	    .optimizer = (int)m->opt.optimizer,
	    /* the vectors a model keeps are always a prefix of param, m, v */
	    .vectors = vec_names,
	    .nvectors = nvectors(m),
	    .nunits = m->nunits,
	};
	structure_hash(m, e->structure_hash);
	const char **names = calloc((size_t)m->nunits + 1, sizeof *names);
	size_t *P = calloc((size_t)m->nunits + 1, sizeof *P);
	if (!names || !P) {
		free(names);
		free(P);
		return SF_ERR(SF_ERR_NOMEM, "checkpoint load: out of memory");
	}
	for (int u = 0; u < m->nunits; u++) {
		names[u] = unit_name(m, u);
		P[u] = m->units[u].P;
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

/* Rank 0: which step directory `dir` means and its manifest, for every rank (each
 * parses the same bytes, so they agree on what the manifest says); *mf checked against
 * the model. stepdir: CKPT_PATH_MAX bytes. */
static int load_manifest(struct sf_model *m, const char *dir, char *stepdir,
                         struct _sf_manifest *mf)
{
	int rc = SF_OK, lrc = sf_model_sync(m);
	char where[CKPT_PATH_MAX + 16], *text = NULL, *sd = stepdir;
	size_t len = 0;
	bool has_crc = false;
	if (m->rank == 0 && lrc >= 0)
		lrc = resolve(dir, stepdir, CKPT_PATH_MAX);
	if (m->rank == 0 && lrc >= 0 && !*stepdir)
		lrc = SF_ERR(SF_ERR_NOT_FOUND,
		             "no checkpoint in %s yet: no such directory, or neither manifest.json "
		             "(a step directory), latest nor a complete step-* directory in it",
		             dir);
	if (m->rank == 0 && lrc >= 0)
		lrc = read_manifest(stepdir, &text, &len, &has_crc);
	SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_checkpoint_load"));
	struct _sf_manifest_expect e;
	size_t sdlen = strlen(stepdir);
	SF_CHECK(bcast_string(m, &sd, &sdlen));
	if (m->rank != 0) {
		snprintf(stepdir, CKPT_PATH_MAX, "%s", sd);
		free(sd);
	}
	SF_CHECK(bcast_string(m, &text, &len));
	uint8_t crc_flag = has_crc;
	SF_CHECK(m->comm->ops->bcast(m->comm, &crc_flag, 1, 0));
	snprintf(where, sizeof where, "%s/manifest.json", stepdir);
	lrc = expect_init(m, &e);
	if (lrc >= 0)
		lrc = _sf_manifest_parse(&e, text, len, where, crc_flag != 0, mf);
	expect_free(&e);
	SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_checkpoint_load"));
fail:
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
	for (int i = 0; nd->vec && i < m->nunits * 3; i++)
		free(nd->vec[i]);
	for (int u = 0; nd->whole && u < m->nunits; u++)
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
	size_t nu = (size_t)m->nunits, smax = 0;
	bool grad_op = m->cfg.sharding == SF_SHARD_GRAD_OP, ok = true;
	nd->lo = calloc(nu, sizeof *nd->lo);
	nd->hi = calloc(nu, sizeof *nd->hi);
	nd->vec = calloc(nu * 3, sizeof *nd->vec);
	nd->scratch = malloc(m->largest_P * sizeof(float) + 1);
	if (grad_op)
		nd->whole = calloc(nu, sizeof *nd->whole);
	if (!nd->lo || !nd->hi || !nd->vec || !nd->scratch || (grad_op && !nd->whole))
		return SF_ERR(SF_ERR_NOMEM, "sf_checkpoint_load: out of memory");
	for (int u = 0; u < m->nunits; u++) {
		size_t P = m->units[u].P, S = m->units[u].S;
		size_t lo = (size_t)m->sr * S < P ? (size_t)m->sr * S : P;
		bool none = m->cfg.sharding == SF_SHARD_NONE;
		nd->lo[u] = none ? 0 : lo;
		nd->hi[u] = none ? P : (P - lo < S ? P : lo + S);
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++)
			if (_sf_vec_exists(m, (enum _sf_vec)v)) {
				nd->vec[u * 3 + v] =
				    malloc((nd->hi[u] - nd->lo[u]) * sizeof(float) + 1);
				ok = ok && nd->vec[u * 3 + v];
			}
		if (grad_op) {
			nd->whole[u] = malloc(S * (size_t)m->nranks * sizeof(float) + 1);
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

/* One stretch of a rank file that this rank keeps: bytes [off, off + len) go to dst. */
struct extent {
	uint64_t off, len;
	uint8_t *dst;
};

/* The stretches of rank file w (of a world of W) that this rank keeps, in file order:
 * the header (into hdr), then its part of every vector. Returns whether the file holds
 * any of what this rank keeps. ex: room for 1 + 3 * nunits. */
static bool file_extents(const struct sf_model *m, int W, const struct need *nd, int w,
                         uint8_t *hdr, struct extent *ex, size_t *nex)
{
	size_t k = 0;
	bool needed = false;
	uint64_t off = SF_CKPT_HEADER;
	ex[k++] = (struct extent){0, SF_CKPT_HEADER, hdr};
	for (int u = 0; u < m->nunits; u++) {
		size_t P = m->units[u].P, S = _sf_ckpt_shard(P, W), first = (size_t)w * S;
		/* [a, b): the elements of unit u both in this file and kept here */
		size_t a = first > nd->lo[u] ? first : nd->lo[u];
		size_t b = first + S < nd->hi[u] ? first + S : nd->hi[u];
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++) {
			if (!_sf_vec_exists(m, (enum _sf_vec)v))
				continue;
			if (a < b) {
				uint8_t *dst = (uint8_t *)nd->vec[u * 3 + v];
				ex[k++] = (struct extent){off + (a - first) * sizeof(float),
				                          (b - a) * sizeof(float),
				                          dst + (a - nd->lo[u]) * sizeof(float)};
				needed = true;
			}
			off += S * sizeof(float);
		}
	}
	*nex = k;
	return needed;
}

/* Reads a file of `size` bytes from start to end in pieces, returning its CRC-32 in
 * *crc and copying the extents (sorted, disjoint) where they go. */
static int stream_file(int fd, const char *path, uint64_t size, const struct extent *ex, size_t nex,
                       uint32_t *crc)
{
	int rc = SF_OK;
	size_t piece = size < CKPT_PIECE ? (size_t)size : CKPT_PIECE, e = 0;
	uint8_t *buf = malloc(piece + 1);
	uint32_t c = 0;
	if (!buf)
		return SF_ERR(SF_ERR_NOMEM, "cannot allocate %zu bytes to read %s", piece, path);
	for (uint64_t off = 0; off < size;) {
		size_t k = size - off < piece ? (size_t)(size - off) : piece;
		uint64_t end = off + k;
		SF_CHECK(_sf_read_at(fd, buf, k, (off_t)off, path));
		c = _sf_crc32(c, buf, k);
		for (size_t i = e; i < nex && ex[i].off < end; i++) {
			uint64_t a = ex[i].off > off ? ex[i].off : off;
			uint64_t b = ex[i].off + ex[i].len < end ? ex[i].off + ex[i].len : end;
			if (a < b)
				memcpy(ex[i].dst + (a - ex[i].off), buf + (a - off),
				       (size_t)(b - a));
		}
		while (e < nex && ex[e].off + ex[e].len <= end)
			e++;
		off = end;
	}
	*crc = c;
fail:
	free(buf);
	return rc;
}

static int check_size(const char *path, const struct stat *st, uint64_t want)
{
	if ((uint64_t)st->st_size != want)
		return SF_ERR(SF_ERR_IO,
		              "%s is %lld bytes, the manifest says %llu (truncated or "
		              "replaced?)",
		              path, (long long)st->st_size, (unsigned long long)want);
	return SF_OK;
}

/* Rank 0: every rank file has the size the manifest gives — also the files no rank
 * reads, so that a truncated checkpoint is refused whatever each rank keeps. */
static int check_all_sizes(const char *stepdir, const struct _sf_manifest *mf)
{
	int rc = SF_OK;
	char path[CKPT_PATH_MAX];
	for (int w = 0; w < mf->world_size; w++) {
		struct stat st;
		SF_CHECK(rank_path(path, sizeof path, stepdir, w));
		if (stat(path, &st) != 0)
			return SF_ERR(SF_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
		SF_CHECK(check_size(path, &st, mf->sizes[w]));
	}
fail:
	return rc;
}

/* Reads rank file w entirely, checks its size, CRC-32 and header, and copies the
 * extents ex (hdr, the first, is where the header goes) where they go. */
static int read_rank_file(const struct sf_model *m, const char *stepdir,
                          const struct _sf_manifest *mf, int w, const struct extent *ex, size_t nex,
                          const uint8_t *hdr)
{
	int rc = SF_OK, fd = -1, nv = nvectors(m);
	char path[CKPT_PATH_MAX];
	struct stat st;
	uint32_t crc = 0;
	SF_CHECK(rank_path(path, sizeof path, stepdir, w));
	_sf_log(SF_LOG_DEBUG, "checkpoint: reading %s", path);
	SF_CHECK(_sf_open_read(path, &fd, &st));
	SF_CHECK(check_size(path, &st, mf->sizes[w]));
	SF_CHECK(stream_file(fd, path, mf->sizes[w], ex, nex, &crc));
	if (crc != mf->crcs[w]) {
		rc = SF_ERR(SF_ERR_IO, "%s: CRC-32 is %08x, the manifest says %08x (corrupted)",
		            path, crc, mf->crcs[w]);
		goto fail;
	}
	if (memcmp(hdr, CKPT_MAGIC, 8) || _sf_get_le(hdr + 8, 4) != (uint32_t)w ||
	    _sf_get_le(hdr + 12, 4) != (uint32_t)mf->world_size ||
	    _sf_get_le(hdr + 16, 4) != (uint32_t)m->nunits ||
	    _sf_get_le(hdr + 20, 4) != (uint32_t)nv) {
		rc = SF_ERR(SF_ERR_IO,
		            "%s: bad header (expected \"" CKPT_MAGIC "\", rank %d of %d, %d units, "
		            "%d vectors)",
		            path, w, mf->world_size, m->nunits, nv);
		goto fail;
	}
fail:
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Reads what this rank keeps from the rank files holding it, each verified, and brings
 * it to the host's byte order; rank 0 also checks every file's size. */
static int read_needed(const struct sf_model *m, const char *stepdir, const struct _sf_manifest *mf,
                       struct need *nd)
{
	int rc = SF_OK, nread = 0;
	uint8_t hdr[SF_CKPT_HEADER];
	struct extent *ex = calloc(1 + 3 * (size_t)m->nunits, sizeof *ex);
	if (!ex)
		return SF_ERR(SF_ERR_NOMEM, "sf_checkpoint_load: out of memory");
	if (m->rank == 0)
		SF_CHECK(check_all_sizes(stepdir, mf));
	for (int w = 0; w < mf->world_size; w++) {
		size_t nex = 0;
		if (!file_extents(m, mf->world_size, nd, w, hdr, ex, &nex))
			continue;
		SF_CHECK(read_rank_file(m, stepdir, mf, w, ex, nex, hdr));
		nread++;
	}
	for (int u = 0; u < m->nunits; u++)
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++)
			if (_sf_vec_exists(m, (enum _sf_vec)v))
				_sf_floats_le(nd->vec[u * 3 + v], nd->hi[u] - nd->lo[u]);
	_sf_log(SF_LOG_DEBUG, "checkpoint: read %d of %d rank files", nread, mf->world_size);
fail:
	free(ex);
	return rc;
}

/* grad_op: every rank's parameter slice, all-gathered into whole vectors. Collective. */
static int gather_whole(struct sf_model *m, struct need *nd)
{
	int rc = SF_OK;
	for (int u = 0; u < m->nunits; u++) {
		size_t S = m->units[u].S, n = nd->hi[u] - nd->lo[u];
		memcpy(nd->send, nd->vec[u * 3 + SF_VEC_PARAM], n * sizeof(float));
		memset(nd->send + n, 0, (S - n) * sizeof(float));
		SF_CHECK(
		    m->comm->ops->allgather(m->comm, nd->send, S * sizeof(float), nd->whole[u]));
	}
fail:
	return rc;
}

/* Sets the model's vectors from what was read (and verified on every rank). A sharded
 * vector's slice goes to its place in scratch: _sf_unit_set_full reads no more of it. */
static int apply(struct sf_model *m, struct need *nd)
{
	int rc = SF_OK;
	for (int u = 0; u < m->nunits; u++)
		for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++) {
			size_t lo = nd->lo[u], hi = nd->hi[u];
			const float *src = nd->vec[u * 3 + v];
			if (!_sf_vec_exists(m, (enum _sf_vec)v))
				continue;
			if (nd->whole && v == SF_VEC_PARAM) {
				src = nd->whole[u];
			} else if (lo > 0 || hi < m->units[u].P) {
				memcpy(nd->scratch + lo, src, (hi - lo) * sizeof(float));
				src = nd->scratch;
			}
			SF_CHECK(_sf_unit_set_full(m, u, (enum _sf_vec)v, src));
		}
fail:
	return rc;
}

SF_API int sf_checkpoint_latest(sf_model *m, const char *dir, int *found, char *path, size_t size)
{
	int rc = SF_OK, lrc = SF_OK;
	char stepdir[CKPT_PATH_MAX] = "", *sd = stepdir;
	if (!m || !dir || !*dir || !found || (path && !size))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_checkpoint_latest: NULL model, directory or found, or a path of "
		              "0 bytes");
	if (m->rank == 0)
		lrc = resolve(dir, stepdir, sizeof stepdir);
	SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_checkpoint_latest"));
	size_t n = strlen(stepdir);
	SF_CHECK(bcast_string(m, &sd, &n));
	if (m->rank != 0) {
		snprintf(stepdir, sizeof stepdir, "%s", sd);
		free(sd);
	}
	*found = *stepdir != '\0';
	if (path && snprintf(path, size, "%s", stepdir) >= (int)size)
		rc = SF_ERR(SF_ERR_INVALID, "sf_checkpoint_latest: %s does not fit in %zu bytes",
		            stepdir, size);
fail:
	return rc;
}

SF_API int sf_checkpoint_load(sf_model *m, const char *dir, struct sf_checkpoint_info *info)
{
	int rc = SF_OK, lrc = SF_OK;
	char stepdir[CKPT_PATH_MAX] = "";
	struct _sf_manifest mf = {0};
	struct need nd = {0};
	if (!m || !dir || !*dir)
		return SF_ERR(SF_ERR_INVALID, "sf_checkpoint_load: NULL model or empty directory");
	if (m->accum_k > 0)
		return SF_ERR(SF_ERR_STATE,
		              "sf_checkpoint_load: %d micro-batches are accumulated; load before "
		              "sf_model_accumulate or after sf_model_step",
		              m->accum_k);
	SF_CHECK(load_manifest(m, dir, stepdir, &mf));

	/* this rank's slices, from the files holding them, each file verified */
	lrc = need_init(m, &nd);
	if (lrc >= 0)
		lrc = read_needed(m, stepdir, &mf, &nd);
	SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_checkpoint_load"));
	if (nd.whole) {
		lrc = gather_whole(m, &nd);
		SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_checkpoint_load"));
	}

	/* everything is read and verified on every rank: only now touch the model */
	SF_CHECK(apply(m, &nd));
	m->nsteps = m->nupdates = mf.model_steps;
	if (info)
		*info = mf.info;
	_sf_log(SF_LOG_INFO, "checkpoint %s loaded (written by %d ranks, step %lld)", stepdir,
	        mf.world_size, (long long)mf.info.step);
fail:
	need_free(m, &nd);
	_sf_manifest_free(&mf);
	return rc;
}
