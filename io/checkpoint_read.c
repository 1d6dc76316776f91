/*
 * checkpoint_read.c — a checkpoint's files read without a model: the manifest (and
 * its CRC-32), the rank files streamed and verified, and what tools/shardflow-ckpt
 * does with them (verify every file, export the weights). sf_checkpoint_load
 * (checkpoint_load.c) reads through the same functions, so a tool and a loader agree
 * on what a good checkpoint is. Rank 0's or a tool's: no communication. The format:
 * io/checkpoint.h.
 */
#include "io/bytes.h"
#include "io/checkpoint.h"
#include "io/manifest.h"
#include "io/st_header.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MANIFEST_MAX ((size_t)64 << 20)
#define CKPT_PIECE ((size_t)4 << 20) /* bytes a reader reads at a time */

int _sf_ckpt_rank_path(char *out, size_t size, const char *stepdir, int r)
{
	char name[32];
	_sf_ckpt_rank_name(name, sizeof name, r);
	return _sf_path_join(out, size, stepdir, name);
}

int _sf_ckpt_read_manifest(const char *stepdir, char **text, size_t *len, bool *has_crc)
{
	int rc = SF_OK;
	char path[SF_PATH_MAX], *line = NULL;
	size_t n;
	*text = NULL;
	SF_CHECK_GOTO(_sf_path_join(path, sizeof path, stepdir, "manifest.json"), out);
	SF_CHECK_GOTO(_sf_read_small_file(path, CKPT_MANIFEST_MAX, text, len), out);
	*has_crc = _sf_path_exists(stepdir, "manifest.crc32");
	if (!*has_crc)
		return SF_OK;
	SF_CHECK_GOTO(_sf_path_join(path, sizeof path, stepdir, "manifest.crc32"), out);
	SF_CHECK_GOTO(_sf_read_small_file(path, 64, &line, &n), out);
	unsigned want = 0;
	char tail[2];
	if (strspn(line, "0123456789abcdef") != 8 || sscanf(line, "%8x%1s", &want, tail) != 1) {
		rc = SF_ERR(SF_ERR_IO, "%s should hold 8 hex digits, it holds \"%.16s\"", path,
		            line);
		goto out;
	}
	uint32_t got = _sf_crc32(0, *text, *len);
	if (got != want) {
		rc = SF_ERR(SF_ERR_IO,
		            "%s/manifest.json: CRC-32 is %08x, manifest.crc32 says %08x "
		            "(corrupted or edited)",
		            stepdir, got, want);
		goto out;
	}
out:
	if (rc < 0) {
		free(*text);
		*text = NULL;
	}
	free(line);
	return rc;
}

int _sf_ckpt_open(const char *stepdir, struct _sf_manifest *mf)
{
	int rc = SF_OK;
	char where[SF_PATH_MAX + 16], *text = NULL;
	size_t len = 0;
	bool has_crc = false;
	*mf = (struct _sf_manifest){0};
	SF_CHECK_GOTO(_sf_ckpt_read_manifest(stepdir, &text, &len, &has_crc), out);
	snprintf(where, sizeof where, "%s/manifest.json", stepdir);
	SF_CHECK_GOTO(_sf_manifest_parse(NULL, text, len, where, has_crc, mf), out);
out:
	free(text);
	return rc;
}

/* Reads a file of `size` bytes from start to end in pieces, returning its CRC-32 in
 * *crc and copying the extents (sorted, disjoint) where they go. */
static int stream_file(int fd, const char *path, uint64_t size, const struct _sf_ckpt_extent *ex,
                       size_t nex, uint32_t *crc)
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
		SF_CHECK_GOTO(_sf_read_at(fd, buf, k, (off_t)off, path), out);
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
out:
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

int _sf_ckpt_check_sizes(const char *stepdir, const struct _sf_manifest *mf)
{
	char path[SF_PATH_MAX];
	for (int w = 0; w < mf->world_size; w++) {
		struct stat st;
		SF_CHECK(_sf_ckpt_rank_path(path, sizeof path, stepdir, w));
		if (stat(path, &st) != 0)
			return SF_ERR(SF_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
		SF_CHECK(check_size(path, &st, mf->sizes[w]));
	}
	return SF_OK;
}

int _sf_ckpt_read_file(const char *stepdir, const struct _sf_manifest *mf, int w,
                       const struct _sf_ckpt_extent *ex, size_t nex)
{
	int rc = SF_OK, fd = -1;
	char path[SF_PATH_MAX];
	struct stat st;
	uint32_t crc = 0;
	const uint8_t *hdr = ex[0].dst;
	SF_CHECK_GOTO(_sf_ckpt_rank_path(path, sizeof path, stepdir, w), out);
	_sf_log(SF_LOG_DEBUG, "checkpoint: reading %s", path);
	SF_CHECK_GOTO(_sf_open_read(path, &fd, &st), out);
	SF_CHECK_GOTO(check_size(path, &st, mf->sizes[w]), out);
	SF_CHECK_GOTO(stream_file(fd, path, mf->sizes[w], ex, nex, &crc), out);
	if (crc != mf->crcs[w]) {
		rc = SF_ERR(SF_ERR_IO, "%s: CRC-32 is %08x, the manifest says %08x (corrupted)",
		            path, crc, mf->crcs[w]);
		goto out;
	}
	if (memcmp(hdr, CKPT_MAGIC, 8) || _sf_get_le(hdr + 8, 4) != (uint32_t)w ||
	    _sf_get_le(hdr + 12, 4) != (uint32_t)mf->world_size ||
	    _sf_get_le(hdr + 16, 4) != (uint32_t)mf->nunits ||
	    _sf_get_le(hdr + 20, 4) != (uint32_t)mf->nvectors) {
		rc = SF_ERR(SF_ERR_IO,
		            "%s: bad header (expected \"" CKPT_MAGIC "\", rank %d of %d, %d units, "
		            "%d vectors)",
		            path, w, mf->world_size, mf->nunits, mf->nvectors);
		goto out;
	}
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

int _sf_ckpt_verify(const char *stepdir, const struct _sf_manifest *mf)
{
	uint8_t hdr[SF_CKPT_HEADER];
	struct _sf_ckpt_extent ex = {0, SF_CKPT_HEADER, hdr};
	SF_CHECK(_sf_ckpt_check_sizes(stepdir, mf));
	for (int w = 0; w < mf->world_size; w++)
		SF_CHECK(_sf_ckpt_read_file(stepdir, mf, w, &ex, 1));
	return SF_OK;
}

/* Every unit's parameters, the first vector of each, from every rank file (each
 * verified) into params (mf->nparams floats, the units end to end), host order. */
static int read_params(const char *stepdir, const struct _sf_manifest *mf, float *params)
{
	int rc = SF_OK;
	uint8_t hdr[SF_CKPT_HEADER];
	struct _sf_ckpt_extent *ex = calloc((size_t)mf->nunits + 1, sizeof *ex);
	if (!ex)
		return SF_ERR(SF_ERR_NOMEM, "checkpoint: out of memory");
	SF_CHECK_GOTO(_sf_ckpt_check_sizes(stepdir, mf), out);
	int nf = _sf_ckpt_stage_files(mf);
	for (int w = 0; w < mf->world_size; w++) {
		uint64_t off = SF_CKPT_HEADER, woff = 0;
		size_t k = 0;
		ex[k++] = (struct _sf_ckpt_extent){0, SF_CKPT_HEADER, hdr};
		for (int u = 0; u < mf->nunits; u++) {
			uint64_t P = mf->units[u].P, S = _sf_ckpt_shard(P, nf);
			uint64_t first = (uint64_t)(w % nf) * S;
			woff += P;
			if (mf->units[u].stage != w / nf) /* another stage's files hold it */
				continue;
			/* file w holds elements [j S, (j+1) S) of each vector of its stage's
			 * units (j: its place in the stage's files), zeros past P */
			if (first < P)
				ex[k++] = (struct _sf_ckpt_extent){
				    off, (P - first < S ? P - first : S) * sizeof(float),
				    (uint8_t *)(params + woff - P + first)};
			off += S * (uint64_t)mf->nvectors * sizeof(float);
		}
		SF_CHECK_GOTO(_sf_ckpt_read_file(stepdir, mf, w, ex, k), out);
	}
	_sf_floats_le(params, mf->nparams);
out:
	free(ex);
	return rc;
}

int _sf_ckpt_export(const char *stepdir, const struct _sf_manifest *mf, const char *path)
{
	int rc = SF_OK;
	char *header = NULL;
	size_t hlen = 0;
	float *params = NULL;
	if (!mf->tensors)
		return SF_ERR(SF_ERR_INVALID,
		              "%s/manifest.json names no tensors (written by a shardflow before "
		              "2026-11-28): export it with its model (examples/gpt --resume "
		              "--export)",
		              stepdir);
	params = malloc(mf->nparams * sizeof(float) + 1);
	if (!params)
		return SF_ERR(SF_ERR_NOMEM, "cannot allocate %llu parameters",
		              (unsigned long long)mf->nparams);
	SF_CHECK_GOTO(read_params(stepdir, mf, params), out);
	SF_CHECK_GOTO(_sf_st_header_build(mf->tensors, (size_t)mf->ntensors, &header, &hlen), out);
	SF_CHECK_GOTO(_sf_st_write(path, header, hlen, params, mf->nparams), out);
out:
	free(header);
	free(params);
	return rc;
}
