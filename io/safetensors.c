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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- export ------------------------------------------------------------------------- */

/* Rank 0: the file at path (io/st_header.c writes it) from params, the model's
 * nparams_whole parameters (converted to little-endian in place). */
static int write_file(const sf_model *m, const char *path, float *params)
{
	int rc = SF_OK;
	char *header = NULL;
	size_t hlen = 0, nt = 0;
	struct _sf_tensor *t = NULL;
	struct _sf_st_tensor *st = NULL;
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	SF_CHECK_GOTO(_sf_model_tensors(m, &t, &nt), out);
	st = calloc(nt + 1, sizeof *st);
	if (!st) {
		rc = SF_ERR(SF_ERR_NOMEM, "safetensors: out of memory");
		goto out;
	}
	for (size_t i = 0; i < nt; i++)
		st[i] = (struct _sf_st_tensor){
		    t[i].name, t[i].ndim, {t[i].shape[0], t[i].shape[1]}, t[i].off, t[i].count};
	SF_CHECK_GOTO(_sf_st_header_build(st, nt, &header, &hlen), out);
	SF_CHECK_GOTO(_sf_st_write(path, header, hlen, params, g.nparams_whole), out);
out:
	free(header);
	free(st);
	free(t);
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
