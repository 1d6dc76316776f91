/*
 * safetensors.c — parameters in and out as safetensors, the format other frameworks read.
 *
 * A safetensors file is: u64 little-endian header length n, n bytes of JSON (an object:
 * tensor name -> {"dtype", "shape", "data_offsets": [begin, end)} relative to the data
 * area, plus an optional "__metadata__" object of strings), then the data area. We pad
 * the header with spaces to a multiple of 8 so the tensors are aligned.
 *
 * Tensor names follow PyTorch's conventions for the layers that have them: a linear unit
 * "fc1" is "fc1.weight" (O, I) then "fc1.bias" (O) — which is exactly the order of its
 * flat parameter vector, so the data area is the model's parameters in
 * sf_model_params_get() order. Any other layer type is one tensor "<name>.params" (P).
 *
 * Export gathers the parameters on rank 0 alone, unit by unit (the other ranks send
 * their shards; with sharding none rank 0 has them all), and rank 0 writes the file.
 * Import is all-or-nothing: the header is validated entirely (io/st_header.c, fuzzed:
 * every tensor in range, the tensors tiling the data area, the file size matching) and
 * every tensor read on every rank before a parameter is set; the ranks agree on the
 * outcome.
 */
#include "io/bytes.h"
#include "io/fileio.h"
#include "io/st_header.h"
#include "io/tensors.h"
#include "scheduler/model_access.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- export ------------------------------------------------------------------------- */

/* The header text, padded with spaces to a multiple of 8. */
static int build_header(const struct sf_model *m, char **out, size_t *len)
{
	json_t *root = json_object();
	char *text = NULL;
	struct _sf_model_geometry g;
	if (!root)
		return SF_ERR(SF_ERR_NOMEM, "safetensors: out of memory");
	_sf_model_describe(m, &g);
	json_object_set_new(root, "__metadata__",
	                    json_pack("{s:s, s:s}", "format", "pt", "producer", "shardflow"));
	for (int u = 0; u < g.nunits; u++) {
		struct _sf_tensor t[SF_UNIT_TENSORS_MAX];
		int nt = _sf_unit_tensors(m, u, t);
		if (nt < 0) {
			json_decref(root);
			return nt;
		}
		for (int i = 0; i < nt; i++) {
			if (json_object_get(root, t[i].name)) {
				json_decref(root);
				return SF_ERR(
				    SF_ERR_INVALID,
				    "safetensors: two tensors would be named \"%s\"; rename "
				    "a layer",
				    t[i].name);
			}
			json_t *shape = t[i].ndim == 2
			                    ? json_pack("[I, I]", (json_int_t)t[i].shape[0],
			                                (json_int_t)t[i].shape[1])
			                    : json_pack("[I]", (json_int_t)t[i].shape[0]);
			json_object_set_new(
			    root, t[i].name,
			    json_pack("{s:s, s:o, s:[I, I]}", "dtype", "F32", "shape", shape,
			              "data_offsets", (json_int_t)(t[i].off * sizeof(float)),
			              (json_int_t)((t[i].off + t[i].count) * sizeof(float))));
		}
	}
	text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text)
		return SF_ERR(SF_ERR_NOMEM, "safetensors: cannot serialise the header");
	size_t n = strlen(text), padded = (n + 7) & ~(size_t)7;
	char *t2 = realloc(text, padded + 1);
	if (!t2) {
		free(text);
		return SF_ERR(SF_ERR_NOMEM, "safetensors: out of memory");
	}
	memset(t2 + n, ' ', padded - n);
	t2[padded] = '\0';
	*out = t2;
	*len = padded;
	return SF_OK;
}

/* The directory holding path (for its sync after the rename); dir: 4096 bytes. */
static void dir_of(const char *path, char *dir, size_t size)
{
	snprintf(dir, size, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, size, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
}

/* Rank 0: path.tmp, synced, renamed to path. params (converted to little-endian in
 * place) holds the model's nparams_whole parameters. */
static int write_file(const sf_model *m, const char *path, float *params)
{
	int rc = SF_OK, fd = -1;
	char *header = NULL, tmp[4096], dir[4096];
	size_t hlen = 0;
	uint8_t len8[8];
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	dir_of(path, dir, sizeof dir);
	SF_CHECK_GOTO(build_header(m, &header, &hlen), out);
	_sf_put_le(len8, (uint64_t)hlen, 8);
	SF_CHECK_GOTO(_sf_create_tmp(path, tmp, sizeof tmp, &fd), out);
	_sf_floats_le(params, g.nparams_whole);
	SF_CHECK_GOTO(_sf_write_all(fd, len8, 8, tmp), out);
	SF_CHECK_GOTO(_sf_write_all(fd, header, hlen, tmp), out);
	SF_CHECK_GOTO(_sf_write_all(fd, params, g.nparams_whole * sizeof(float), tmp), out);
	rc = _sf_commit_file(fd, tmp, path, dir);
	fd = -1;
out:
	if (fd >= 0)
		_sf_abandon_file(fd, tmp);
	free(header);
	return rc;
}

/* Floats of a shard gathered at a time: bounds rank 0's receive buffer (N pieces) and
 * keeps each message within what the communicator takes. */
#define ST_PIECE ((size_t)1 << 24)

/* Collects every unit's parameters on rank 0 into params (nparams_whole floats; NULL
 * on the other ranks, which only send their shards). With sharding none rank 0 holds
 * every unit already. recv (rank 0): N * min(ST_PIECE, largest S) floats; shard:
 * largest S floats. Collective but for sharding none. */
static int gather_params(struct sf_model *m, float *params, float *shard, float *recv)
{
	struct _sf_comm *comm = _sf_model_comm(m);
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	for (int u = 0; u < g.nunits; u++) {
		struct _sf_unit_desc un;
		_sf_unit_describe(m, u, &un);
		if (g.tp > 1) { /* every TP rank's slices, put together on every rank */
			float *w =
			    g.rank == 0 ? params + un.woff : malloc(un.Pw * sizeof(float) + 1);
			int grc = w ? _sf_unit_get_whole(m, u, SF_VEC_PARAM, false, w)
			            : SF_ERR(SF_ERR_NOMEM, "safetensors: out of memory");
			if (g.rank != 0)
				free(w);
			SF_CHECK(grc);
			continue;
		}
		if (g.sharding == SF_SHARD_NONE) { /* rank 0's replica: no communication */
			if (g.rank != 0)
				continue;
			SF_CHECK(_sf_unit_gather(m, u, false, params + un.off));
			continue;
		}
		SF_CHECK(_sf_unit_get_slice(m, u, SF_VEC_PARAM, shard));
		for (size_t k = 0; k < un.S; k += ST_PIECE) {
			size_t n = un.S - k < ST_PIECE ? un.S - k : ST_PIECE;
			SF_CHECK(
			    comm->ops->gather_bytes(comm, shard + k, n * sizeof(float), recv, 0));
			/* rank r's piece holds elements r S + k .. r S + k + n, those below P
			 * (hybrid: the first node's ranks are the shard group's, in order) */
			for (int r = 0; g.rank == 0 && r < g.shard_size; r++) {
				size_t first = (size_t)r * un.S + k;
				if (first < un.P)
					memcpy(params + un.off + first, recv + (size_t)r * n,
					       (un.P - first < n ? un.P - first : n) *
					           sizeof(float));
			}
		}
	}
	return SF_OK;
}

SF_API int sf_model_export_safetensors(sf_model *m, const char *path)
{
	int rc = SF_OK, lrc = SF_OK;
	float *params = NULL, *shard = NULL, *recv = NULL;
	size_t smax = 0;
	struct _sf_model_geometry g;
	if (!m || !path || !*path)
		return SF_ERR(SF_ERR_INVALID, "sf_model_export_safetensors: NULL model or path");
	_sf_model_describe(m, &g);
	for (int u = 0; u < g.nunits; u++) {
		struct _sf_unit_desc d;
		_sf_unit_describe(m, u, &d);
		smax = d.S > smax ? d.S : smax;
	}
	size_t piece = smax < ST_PIECE ? smax : ST_PIECE;
	bool sharded = g.sharding != SF_SHARD_NONE;
	lrc = sf_model_sync(m);
	if (g.rank == 0)
		params = malloc(g.nparams_whole * sizeof(float) + 1);
	if (sharded)
		shard = malloc(smax * sizeof(float) + 1);
	if (sharded && g.rank == 0)
		recv = malloc(piece * (size_t)g.nranks * sizeof(float) + 1);
	if (lrc >= 0 && ((g.rank == 0 && !params) || (sharded && !shard) ||
	                 (sharded && g.rank == 0 && !recv)))
		lrc = SF_ERR(SF_ERR_NOMEM, "sf_model_export_safetensors: out of memory");
	SF_CHECK_GOTO(_sf_comm_agree(_sf_model_comm(m), lrc, "sf_model_export_safetensors"), out);
	/* rank 0 receives every unit, the others send their shards */
	lrc = gather_params(m, params, shard, recv);
	if (lrc >= 0 && g.rank == 0)
		lrc = write_file(m, path, params);
	SF_CHECK_GOTO(_sf_comm_agree(_sf_model_comm(m), lrc, "sf_model_export_safetensors"), out);
out:
	free(params);
	free(shard);
	free(recv);
	return rc;
}

/* ---- import ------------------------------------------------------------------------- */

/* Reads and validates the file; params (nparams_whole floats) receives every unit.
 * The header is checked entirely (io/st_header.c) before a tensor is read. */
static int read_file(const sf_model *m, const char *path, float *params)
{
	int rc = SF_OK, fd = -1;
	char *header = NULL;
	struct _sf_tensor *t = NULL;
	struct _sf_st_want *want = NULL;
	uint64_t *begin = NULL, hlen = 0;
	size_t nt = 0;
	struct stat st;
	uint8_t len8[8] = {0};
	SF_CHECK_GOTO(_sf_model_tensors(m, &t, &nt), out);
	want = calloc(nt + 1, sizeof *want);
	begin = calloc(nt + 1, sizeof *begin);
	if (!want || !begin) {
		rc = SF_ERR(SF_ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	for (size_t i = 0; i < nt; i++)
		want[i] =
		    (struct _sf_st_want){t[i].name, t[i].ndim, {t[i].shape[0], t[i].shape[1]}};
	SF_CHECK_GOTO(_sf_open_read(path, &fd, &st), out);
	uint64_t fsize = (uint64_t)st.st_size;
	if (fsize >= 8)
		SF_CHECK_GOTO(_sf_read_at(fd, len8, 8, 0, path), out);
	SF_CHECK_GOTO(_sf_st_header_length(path, len8, fsize, &hlen), out);
	header = malloc(hlen + 1);
	if (!header) {
		rc = SF_ERR(SF_ERR_NOMEM, "%s: cannot allocate the header", path);
		goto out;
	}
	SF_CHECK_GOTO(_sf_read_at(fd, header, hlen, 8, path), out);
	header[hlen] = '\0';
	uint64_t data0 = 8 + hlen;
	SF_CHECK_GOTO(_sf_st_header_check(path, header, hlen, fsize - data0, want, nt, begin), out);

	/* every check passed: read */
	for (size_t i = 0; i < nt; i++) {
		SF_CHECK_GOTO(_sf_read_at(fd, params + t[i].off, t[i].count * sizeof(float),
		                     (off_t)(data0 + begin[i]), path), out);
		_sf_floats_le(params + t[i].off, t[i].count);
	}
out:
	free(header);
	free(t);
	free(want);
	free(begin);
	if (fd >= 0)
		close(fd);
	return rc;
}

SF_API int sf_model_import_safetensors(sf_model *m, const char *path)
{
	int rc = SF_OK, lrc = SF_OK;
	float *params = NULL;
	struct _sf_model_geometry g;
	if (!m || !path || !*path)
		return SF_ERR(SF_ERR_INVALID, "sf_model_import_safetensors: NULL model or path");
	_sf_model_describe(m, &g);
	SF_CHECK_GOTO(_sf_model_load_check(m, "sf_model_import_safetensors"), out);
	lrc = sf_model_sync(m);
	params = malloc(g.nparams_whole * sizeof(float) + 1);
	if (lrc >= 0 && !params)
		lrc = SF_ERR(SF_ERR_NOMEM, "sf_model_import_safetensors: out of memory");
	if (lrc >= 0)
		lrc = read_file(m, path, params);
	SF_CHECK_GOTO(_sf_comm_agree(_sf_model_comm(m), lrc, "sf_model_import_safetensors"), out);
	SF_CHECK_GOTO(_sf_model_load(m, params), out);
out:
	free(params);
	return rc;
}
