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

/* Whether tensor t is stored transposed in layout l (NULL: never) */
static bool is_transposed(const struct sf_safetensors_layout *l, const struct _sf_tensor *t)
{
	size_t n = strlen(t->name);
	for (int i = 0; l && t->ndim == 2 && i < l->ntransposed; i++) {
		size_t k = strlen(l->transposed[i]);
		if (k <= n && !strcmp(t->name + n - k, l->transposed[i]))
			return true;
	}
	return false;
}

/* Transposes the (r, c) matrix at a in place into (c, r), through scratch (r c floats) */
static void transpose(float *a, size_t r, size_t c, float *scratch)
{
	for (size_t i = 0; i < r; i++)
		for (size_t j = 0; j < c; j++)
			scratch[j * r + i] = a[i * c + j];
	memcpy(a, scratch, r * c * sizeof *a);
}

/* Each tensor of l's in params (nparams_whole floats) transposed: from the model's
 * (O, I) to the file's (I, O) when to_file, else back */
static int transpose_all(const sf_model *m, const struct sf_safetensors_layout *l, float *params,
                         bool to_file)
{
	struct _sf_tensor *t = NULL;
	size_t nt = 0, big = 0;
	float *scratch = NULL;
	if (!l || !l->ntransposed)
		return SF_OK;
	SF_CHECK(_sf_model_tensors(m, &t, &nt));
	for (size_t i = 0; i < nt; i++)
		big = is_transposed(l, &t[i]) && t[i].count > big ? t[i].count : big;
	scratch = malloc(big * sizeof(float) + 1);
	if (!scratch) {
		free(t);
		return SF_ERR(SF_ERR_NOMEM, "safetensors: out of memory");
	}
	for (size_t i = 0; i < nt; i++) {
		if (!is_transposed(l, &t[i]))
			continue;
		size_t r = (size_t)t[i].shape[0], c = (size_t)t[i].shape[1];
		if (to_file)
			transpose(params + t[i].off, r, c, scratch);
		else
			transpose(params + t[i].off, c, r, scratch);
	}
	free(scratch);
	free(t);
	return SF_OK;
}

/* ---- export ------------------------------------------------------------------------- */

/* Rank 0: the file at path (io/st_header.c writes it) from params, the model's
 * nparams_whole parameters (in the layout l: its transposed tensors stored (in, out);
 * converted to little-endian in place). */
static int write_file(const sf_model *m, const char *path, const struct sf_safetensors_layout *l,
                      float *params)
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
	for (size_t i = 0; i < nt; i++) {
		int tr = t[i].ndim == 2 && is_transposed(l, &t[i]);
		st[i] = (struct _sf_st_tensor){t[i].name,
		                               t[i].ndim,
		                               {t[i].shape[tr], t[i].shape[!tr]},
		                               t[i].off,
		                               t[i].count};
	}
	SF_CHECK_GOTO(_sf_st_header_build(st, nt, &header, &hlen), out);
	SF_CHECK_GOTO(transpose_all(m, l, params, true), out);
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
	return sf_model_export_safetensors_layout(m, path, NULL);
}

SF_API int sf_model_export_safetensors_layout(sf_model *m, const char *path,
                                              const struct sf_safetensors_layout *l)
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
		lrc = write_file(m, path, l, params);
	SF_CHECK_GOTO(_sf_comm_agree(_sf_model_comm(m), lrc, "sf_model_export_safetensors"), out);
out:
	free(params);
	free(shard);
	free(recv);
	return rc;
}

/* ---- import ------------------------------------------------------------------------- */

/* Reads and validates the file at path; params (nparams_whole floats) receives the
 * tensors t[sel[k]], k < nsel (sel NULL: every one of t's nt), as the file keeps them
 * (layout l's transposed). The header is checked entirely (io/st_header.c) before a
 * tensor is read. */
static int read_part(const char *path, const struct _sf_tensor *t, size_t nt, const size_t *sel,
                     size_t nsel, const struct sf_safetensors_layout *l, float *params)
{
	int rc = SF_OK, fd = -1;
	char *header = NULL;
	struct _sf_st_want *want = NULL;
	uint64_t *begin = NULL, hlen = 0;
	struct stat st;
	uint8_t len8[8] = {0};
	size_t n = sel ? nsel : nt;
	want = calloc(n + 1, sizeof *want);
	begin = calloc(n + 1, sizeof *begin);
	if (!want || !begin) {
		rc = SF_ERR(SF_ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		const struct _sf_tensor *ti = &t[sel ? sel[k] : k];
		int tr = is_transposed(l, ti);
		want[k] = (struct _sf_st_want){ti->name, ti->ndim, {ti->shape[tr], ti->shape[!tr]}};
	}
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
	SF_CHECK_GOTO(_sf_st_header_check(path, header, hlen, fsize - data0, want, n, begin), out);

	/* every check passed: read */
	for (size_t k = 0; k < n; k++) {
		const struct _sf_tensor *ti = &t[sel ? sel[k] : k];
		SF_CHECK_GOTO(_sf_read_at(fd, params + ti->off, ti->count * sizeof(float),
		                          (off_t)(data0 + begin[k]), path),
		              out);
		_sf_floats_le(params + ti->off, ti->count);
	}
out:
	free(header);
	free(want);
	free(begin);
	if (fd >= 0)
		close(fd);
	return rc;
}

static int read_file(const sf_model *m, const char *path, const struct sf_safetensors_layout *l,
                     float *params)
{
	struct _sf_tensor *t = NULL;
	size_t nt = 0;
	SF_CHECK(_sf_model_tensors(m, &t, &nt));
	int rc = read_part(path, t, nt, NULL, 0, l, params);
	free(t);
	return rc < 0 ? rc : transpose_all(m, l, params, false);
}

/* ---- a Hugging Face directory ------------------------------------------------------- */

#define HF_INDEX "model.safetensors.index.json"
#define HF_SINGLE "model.safetensors"
#define HF_INDEX_MAX ((size_t)64 << 20)

/* file[i]: the shard (a name in dir, pointing into index) holding t[i], from the
 * index's weight_map; every one of the model's tensors must be there, and every entry
 * of the map a tensor of the model's */
static int map_shards(const char *ipath, json_t *index, const struct _sf_tensor *t, size_t nt,
                      const char **file)
{
	json_t *map = json_is_object(index) ? json_object_get(index, "weight_map") : NULL;
	const char *key;
	json_t *v;
	if (!json_is_object(map))
		return SF_ERR(SF_ERR_IO, "%s: no \"weight_map\" object (tensor name -> file)",
		              ipath);
	json_object_foreach(map, key, v)
	{
		size_t i = 0;
		while (i < nt && strcmp(t[i].name, key))
			i++;
		const char *f = json_string_value(v);
		if (!f || !*f || strchr(f, '/'))
			return SF_ERR(SF_ERR_IO,
			              "%s: weight_map[\"%s\"] must be a file name in the directory",
			              ipath, key);
		if (i == nt)
			return SF_ERR(
			    SF_ERR_INVALID,
			    "%s: weight_map names tensor \"%s\", which the model does not "
			    "have (the model's first is \"%s\")",
			    ipath, key, nt ? t[0].name : "");
		file[i] = f;
	}
	for (size_t i = 0; i < nt; i++)
		if (!file[i])
			return SF_ERR(SF_ERR_INVALID,
			              "%s: weight_map has no \"%s\", a tensor of the model", ipath,
			              t[i].name);
	return SF_OK;
}

/* Every tensor of the model from dir's shards (or its one file) into params */
static int read_hf(const sf_model *m, const char *dir, const struct sf_safetensors_layout *l,
                   float *params)
{
	int rc = SF_OK;
	struct _sf_tensor *t = NULL;
	size_t nt = 0, *sel = NULL;
	const char **file = NULL;
	char ipath[SF_PATH_MAX], fpath[SF_PATH_MAX], *text = NULL;
	size_t tlen = 0;
	json_t *index = NULL;
	SF_CHECK_GOTO(_sf_model_tensors(m, &t, &nt), out);
	if (!_sf_path_exists(dir, HF_INDEX)) { /* one file */
		SF_CHECK_GOTO(_sf_path_join(fpath, sizeof fpath, dir, HF_SINGLE), out);
		SF_CHECK_GOTO(read_part(fpath, t, nt, NULL, 0, l, params), out);
		goto out;
	}
	SF_CHECK_GOTO(_sf_path_join(ipath, sizeof ipath, dir, HF_INDEX), out);
	SF_CHECK_GOTO(_sf_read_small_file(ipath, HF_INDEX_MAX, &text, &tlen), out);
	json_error_t err;
	index = json_loadb(text, tlen, JSON_REJECT_DUPLICATES, &err);
	if (!index) {
		rc = SF_ERR(SF_ERR_IO, "%s: not JSON: %s (line %d)", ipath, err.text, err.line);
		goto out;
	}
	file = calloc(nt + 1, sizeof *file);
	sel = calloc(nt + 1, sizeof *sel);
	if (!file || !sel) {
		rc = SF_ERR(SF_ERR_NOMEM, "%s: out of memory", ipath);
		goto out;
	}
	SF_CHECK_GOTO(map_shards(ipath, index, t, nt, file), out);
	/* each shard once, in the order the model first needs it */
	for (size_t i = 0; i < nt; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(file[j], file[i]);
		if (seen)
			continue;
		size_t n = 0;
		for (size_t j = i; j < nt; j++)
			if (!strcmp(file[j], file[i]))
				sel[n++] = j;
		SF_CHECK_GOTO(_sf_path_join(fpath, sizeof fpath, dir, file[i]), out);
		SF_CHECK_GOTO(read_part(fpath, t, nt, sel, n, l, params), out);
	}
out:
	if (rc >= 0)
		rc = transpose_all(m, l, params, false);
	json_decref(index);
	free(text);
	free(file);
	free(sel);
	free(t);
	return rc;
}

SF_API int sf_model_import_hf(sf_model *m, const char *dir, const struct sf_safetensors_layout *l)
{
	int rc = SF_OK, lrc = SF_OK;
	float *params = NULL;
	struct _sf_model_geometry g;
	if (!m || !dir || !*dir)
		return SF_ERR(SF_ERR_INVALID, "sf_model_import_hf: NULL model or directory");
	_sf_model_describe(m, &g);
	SF_CHECK_GOTO(_sf_model_load_check(m, "sf_model_import_hf"), out);
	lrc = sf_model_sync(m);
	params = malloc(g.nparams_whole * sizeof(float) + 1);
	if (lrc >= 0 && !params)
		lrc = SF_ERR(SF_ERR_NOMEM, "sf_model_import_hf: out of memory");
	if (lrc >= 0)
		lrc = read_hf(m, dir, l, params);
	SF_CHECK_GOTO(_sf_comm_agree(_sf_model_comm(m), lrc, "sf_model_import_hf"), out);
	SF_CHECK_GOTO(_sf_model_load(m, params), out);
out:
	free(params);
	return rc;
}

SF_API int sf_model_import_safetensors(sf_model *m, const char *path)
{
	return sf_model_import_safetensors_layout(m, path, NULL);
}

SF_API int sf_model_import_safetensors_layout(sf_model *m, const char *path,
                                              const struct sf_safetensors_layout *l)
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
		lrc = read_file(m, path, l, params);
	SF_CHECK_GOTO(_sf_comm_agree(_sf_model_comm(m), lrc, "sf_model_import_safetensors"), out);
	SF_CHECK_GOTO(_sf_model_load(m, params), out);
out:
	free(params);
	return rc;
}
