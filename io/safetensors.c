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
 * Import is all-or-nothing: the header is validated entirely (every tensor in range, the
 * tensors tiling the data area, the file size matching) and every tensor read on every
 * rank before a parameter is set; the ranks agree on the outcome.
 */
#include "io/bytes.h"
#include "io/fileio.h"
#include "scheduler/model.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_HEADER_MAX ((uint64_t)100 << 20) /* the limit of the reference implementation */
#define ST_NAME_MAX (SF_NAME_MAX + 32)

/* How a unit is stored: the named tensors of each of its nodes with parameters of
 * their own (struct sf_layer_type::param_tensors: a linear node "fc1" gives
 * "fc1.weight" and "fc1.bias"; a type without names, "<node>.params"). */
struct st_tensor {
	char name[ST_NAME_MAX];
	int ndim;
	int64_t shape[2];
	size_t off, count; /* floats, in the model's flat parameter vector */
};
#define ST_UNIT_MAX 64 /* tensors of one unit */

/* The tensors of unit u (at most ST_UNIT_MAX; more is an error). */
static int unit_tensors(const struct sf_model *m, int u, struct st_tensor *t)
{
	const struct _sf_unit *un = &m->units[u];
	int k = 0;
	for (int n = un->first; n <= un->last; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		if (m->nodes[n].unit != u || nd->tied_to >= 0)
			continue;
		const struct sf_layer_info *li = &m->nodes[n].info;
		struct sf_param_tensor pt[SF_MAX_PARAM_TENSORS];
		int np = _sf_node_param_tensors(nd, li, pt);
		for (int i = 0; i < np; i++) {
			if (k == ST_UNIT_MAX)
				return SF_ERR(SF_ERR_INVALID,
				              "unit \"%s\" has more than %d named tensors",
				              un->name, ST_UNIT_MAX);
			size_t count = pt[i].shape[0] * (pt[i].ndim == 2 ? pt[i].shape[1] : 1);
			t[k] = (struct st_tensor){
			    .ndim = pt[i].ndim,
			    .shape = {(int64_t)pt[i].shape[0], (int64_t)pt[i].shape[1]},
			    .off = un->off + li->param_offset + pt[i].offset,
			    .count = count};
			snprintf(t[k].name, sizeof t[k].name, "%.63s.%.23s", nd->name,
			         pt[i].suffix);
			k++;
		}
	}
	return k;
}

/* ---- export ------------------------------------------------------------------------- */

/* The header text, padded with spaces to a multiple of 8. */
static int build_header(const struct sf_model *m, char **out, size_t *len)
{
	json_t *root = json_object();
	char *text = NULL;
	if (!root)
		return SF_ERR(SF_ERR_NOMEM, "safetensors: out of memory");
	json_object_set_new(root, "__metadata__",
	                    json_pack("{s:s, s:s}", "format", "pt", "producer", "shardflow"));
	for (int u = 0; u < m->nunits; u++) {
		struct st_tensor t[ST_UNIT_MAX];
		int nt = unit_tensors(m, u, t);
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
 * place) holds the model's nparams_total parameters. */
static int write_file(const sf_model *m, const char *path, float *params)
{
	int rc = SF_OK, fd = -1;
	char *header = NULL, tmp[4096], dir[4096];
	size_t hlen = 0;
	uint8_t len8[8];
	dir_of(path, dir, sizeof dir);
	SF_CHECK(build_header(m, &header, &hlen));
	_sf_put_le(len8, (uint64_t)hlen, 8);
	SF_CHECK(_sf_create_tmp(path, tmp, sizeof tmp, &fd));
	_sf_floats_le(params, m->nparams_total);
	SF_CHECK(_sf_write_all(fd, len8, 8, tmp));
	SF_CHECK(_sf_write_all(fd, header, hlen, tmp));
	SF_CHECK(_sf_write_all(fd, params, m->nparams_total * sizeof(float), tmp));
	rc = _sf_commit_file(fd, tmp, path, dir);
	fd = -1;
fail:
	if (fd >= 0)
		_sf_abandon_file(fd, tmp);
	free(header);
	return rc;
}

/* Floats of a shard gathered at a time: bounds rank 0's receive buffer (N pieces) and
 * keeps each message within what the communicator takes. */
#define ST_PIECE ((size_t)1 << 24)

/* Collects every unit's parameters on rank 0 into params (nparams_total floats; NULL
 * on the other ranks, which only send their shards). With sharding none rank 0 holds
 * every unit already. recv (rank 0): N * min(ST_PIECE, largest S) floats; shard:
 * largest S floats. Collective but for sharding none. */
static int gather_params(struct sf_model *m, float *params, float *shard, float *recv)
{
	int rc = SF_OK;
	for (int u = 0; u < m->nunits; u++) {
		struct _sf_unit *un = &m->units[u];
		if (m->cfg.sharding == SF_SHARD_NONE) {
			if (m->rank != 0)
				continue;
			starpu_data_acquire(un->h_full, STARPU_R);
			memcpy(params + un->off, un->full, un->P * sizeof(float));
			starpu_data_release(un->h_full);
			continue;
		}
		SF_CHECK(_sf_unit_get_slice(m, u, SF_VEC_PARAM, shard));
		for (size_t k = 0; k < un->S; k += ST_PIECE) {
			size_t n = un->S - k < ST_PIECE ? un->S - k : ST_PIECE;
			SF_CHECK(
			    m->comm->ops->gather(m->comm, shard + k, n * sizeof(float), recv, 0));
			/* rank r's piece holds elements r S + k .. r S + k + n, those below P */
			for (int r = 0; m->rank == 0 && r < m->nranks; r++) {
				size_t first = (size_t)r * un->S + k;
				if (first < un->P)
					memcpy(params + un->off + first, recv + (size_t)r * n,
					       (un->P - first < n ? un->P - first : n) *
					           sizeof(float));
			}
		}
	}
fail:
	return rc;
}

SF_API int sf_model_export_safetensors(sf_model *m, const char *path)
{
	int rc = SF_OK, lrc = SF_OK;
	float *params = NULL, *shard = NULL, *recv = NULL;
	size_t smax = 0;
	if (!m || !path || !*path)
		return SF_ERR(SF_ERR_INVALID, "sf_model_export_safetensors: NULL model or path");
	for (int u = 0; u < m->nunits; u++)
		smax = m->units[u].S > smax ? m->units[u].S : smax;
	size_t piece = smax < ST_PIECE ? smax : ST_PIECE;
	bool sharded = m->cfg.sharding != SF_SHARD_NONE;
	lrc = sf_model_sync(m);
	if (m->rank == 0)
		params = malloc(m->nparams_total * sizeof(float) + 1);
	if (sharded)
		shard = malloc(smax * sizeof(float) + 1);
	if (sharded && m->rank == 0)
		recv = malloc(piece * (size_t)m->nranks * sizeof(float) + 1);
	if (lrc >= 0 && ((m->rank == 0 && !params) || (sharded && !shard) ||
	                 (sharded && m->rank == 0 && !recv)))
		lrc = SF_ERR(SF_ERR_NOMEM, "sf_model_export_safetensors: out of memory");
	SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_model_export_safetensors"));
	/* rank 0 receives every unit, the others send their shards */
	lrc = gather_params(m, params, shard, recv);
	if (lrc >= 0 && m->rank == 0)
		lrc = write_file(m, path, params);
	SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_model_export_safetensors"));
fail:
	free(params);
	free(shard);
	free(recv);
	return rc;
}

/* ---- import ------------------------------------------------------------------------- */

/* Bytes per element of the dtypes of the format (extra tensors we do not read). */
static int dtype_size(const char *d)
{
	static const struct {
		const char *name;
		int size;
	} t[] = {{"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2},    {"I64", 8},
	         {"I32", 4}, {"I16", 2}, {"I8", 1},   {"U64", 8},     {"U32", 4},
	         {"U16", 2}, {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(d, t[i].name))
			return t[i].size;
	return 0;
}

struct range {
	uint64_t begin, end;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

/* Checks one tensor entry: dtype known, shape of non-negative integers whose product
 * times the dtype size is the length of data_offsets [b, e), inside the data area. */
static int check_entry(const char *path, const char *name, json_t *e, uint64_t data_len,
                       struct range *r, const char **dtype, json_t **shape)
{
	json_t *d = json_object_get(e, "dtype"), *s = json_object_get(e, "shape"),
	       *o = json_object_get(e, "data_offsets");
	if (!json_is_object(e) || !json_is_string(d) || !json_is_array(s) || !json_is_array(o) ||
	    json_array_size(o) != 2 || !json_is_integer(json_array_get(o, 0)) ||
	    !json_is_integer(json_array_get(o, 1)))
		return SF_ERR(SF_ERR_IO,
		              "%s: tensor \"%s\" is not {\"dtype\": string, \"shape\": [...], "
		              "\"data_offsets\": [begin, end]}",
		              path, name);
	int es = dtype_size(json_string_value(d));
	if (!es)
		return SF_ERR(SF_ERR_IO, "%s: tensor \"%s\" has unknown dtype \"%s\"", path, name,
		              json_string_value(d));
	uint64_t count = 1;
	for (size_t i = 0; i < json_array_size(s); i++) {
		json_t *x = json_array_get(s, i);
		if (!json_is_integer(x) || json_integer_value(x) < 0 ||
		    (uint64_t)json_integer_value(x) > (UINT64_MAX >> 8) / (count ? count : 1))
			return SF_ERR(SF_ERR_IO, "%s: tensor \"%s\" has a bad shape", path, name);
		count *= (uint64_t)json_integer_value(x);
	}
	json_int_t b = json_integer_value(json_array_get(o, 0)),
	           en = json_integer_value(json_array_get(o, 1));
	if (b < 0 || en < b || (uint64_t)en > data_len)
		return SF_ERR(SF_ERR_IO,
		              "%s: tensor \"%s\" has data_offsets [%lld, %lld) outside the %llu "
		              "bytes of data",
		              path, name, (long long)b, (long long)en,
		              (unsigned long long)data_len);
	if ((uint64_t)(en - b) != count * (uint64_t)es)
		return SF_ERR(SF_ERR_IO, "%s: tensor \"%s\" has %lld bytes for %llu elements of %s",
		              path, name, (long long)(en - b), (unsigned long long)count,
		              json_string_value(d));
	r->begin = (uint64_t)b;
	r->end = (uint64_t)en;
	*dtype = json_string_value(d);
	*shape = s;
	return SF_OK;
}

/* Checks the tensors this model needs (present, F32, its shapes, in range) and, when
 * params is not NULL, reads them into params (the model's flat parameter vector). */
static int check_wanted(const sf_model *m, const char *path, json_t *root, uint64_t data_len,
                        int fd, uint64_t data0, float *params)
{
	int rc = SF_OK;
	for (int u = 0; u < m->nunits; u++) {
		struct st_tensor t[ST_UNIT_MAX];
		int ntu = unit_tensors(m, u, t);
		if (ntu < 0)
			return ntu;
		for (int i = 0; i < ntu; i++) {
			json_t *e = json_object_get(root, t[i].name), *shape;
			struct range r;
			const char *dt;
			if (!e) {
				rc = SF_ERR(SF_ERR_IO, "%s: tensor \"%s\" is missing", path,
				            t[i].name);
				goto fail;
			}
			dt = json_string_value(json_object_get(e, "dtype"));
			if (dt && strcmp(dt, "F32")) {
				rc = SF_ERR(SF_ERR_IO, "%s: tensor \"%s\" is %s, expected F32",
				            path, t[i].name, dt);
				goto fail;
			}
			SF_CHECK(check_entry(path, t[i].name, e, data_len, &r, &dt, &shape));
			bool same = json_array_size(shape) == (size_t)t[i].ndim;
			for (int d = 0; same && d < t[i].ndim; d++)
				same = json_integer_value(json_array_get(shape, (size_t)d)) ==
				       t[i].shape[d];
			if (!same) {
				char *got = json_dumps(shape, JSON_COMPACT);
				if (t[i].ndim == 2)
					rc = SF_ERR(SF_ERR_IO,
					            "%s: tensor \"%s\" has shape %s, this model "
					            "needs [%lld,%lld]",
					            path, t[i].name, got ? got : "?",
					            (long long)t[i].shape[0],
					            (long long)t[i].shape[1]);
				else
					rc = SF_ERR(SF_ERR_IO,
					            "%s: tensor \"%s\" has shape %s, this model "
					            "needs [%lld]",
					            path, t[i].name, got ? got : "?",
					            (long long)t[i].shape[0]);
				free(got);
				goto fail;
			}
			if (!params)
				continue;
			SF_CHECK(_sf_read_at(fd, params + t[i].off, t[i].count * sizeof(float),
			                     (off_t)(data0 + r.begin), path));
			_sf_floats_le(params + t[i].off, t[i].count);
		}
	}
fail:
	return rc;
}

/* Every entry of the header: __metadata__ an object of strings, each tensor
 * well-formed and in range, the tensors together tiling the data area. */
static int check_all_entries(const char *path, json_t *root, uint64_t data_len)
{
	int rc = SF_OK;
	size_t nt = json_object_size(root), k = 0;
	struct range *ranges = calloc(nt + 1, sizeof *ranges);
	if (!ranges)
		return SF_ERR(SF_ERR_NOMEM, "%s: out of memory", path);
	const char *key;
	json_t *val;
	json_object_foreach(root, key, val)
	{
		const char *dt;
		json_t *shape;
		if (!strcmp(key, "__metadata__")) {
			const char *mk;
			json_t *mv;
			if (!json_is_object(val)) {
				rc = SF_ERR(SF_ERR_IO, "%s: __metadata__ is not an object", path);
				goto fail;
			}
			json_object_foreach(val, mk, mv)
			{
				if (!json_is_string(mv)) {
					rc = SF_ERR(SF_ERR_IO,
					            "%s: __metadata__ value \"%s\" is not a string",
					            path, mk);
					goto fail;
				}
			}
			continue;
		}
		SF_CHECK(check_entry(path, key, val, data_len, &ranges[k++], &dt, &shape));
	}
	qsort(ranges, k, sizeof *ranges, cmp_range);
	uint64_t end = 0;
	for (size_t i = 0; i < k; i++) {
		if (ranges[i].begin != end) {
			rc =
			    SF_ERR(SF_ERR_IO,
			           "%s: tensor data %s at byte %llu of the data area (tensors must "
			           "be contiguous and not overlap)",
			           path, ranges[i].begin < end ? "overlaps" : "leaves a hole",
			           (unsigned long long)end);
			goto fail;
		}
		end = ranges[i].end;
	}
	if (end != data_len)
		rc = SF_ERR(SF_ERR_IO,
		            "%s: the tensors hold %llu bytes but the file has %llu after the "
		            "header (truncated or trailing bytes)",
		            path, (unsigned long long)end, (unsigned long long)data_len);
fail:
	free(ranges);
	return rc;
}

/* Reads and validates the file; params (nparams_total floats) receives every unit. */
static int read_file(const sf_model *m, const char *path, float *params)
{
	int rc = SF_OK, fd = -1;
	char *header = NULL;
	json_t *root = NULL;
	struct stat st;
	SF_CHECK(_sf_open_read(path, &fd, &st));
	uint64_t fsize = (uint64_t)st.st_size;
	uint8_t len8[8];
	if (fsize < 8) {
		rc = SF_ERR(SF_ERR_IO, "%s: %llu bytes, too short for a safetensors file", path,
		            (unsigned long long)fsize);
		goto fail;
	}
	SF_CHECK(_sf_read_at(fd, len8, 8, 0, path));
	uint64_t hlen = _sf_get_le(len8, 8);
	if (hlen < 2 || hlen > ST_HEADER_MAX || hlen > fsize - 8) {
		rc = SF_ERR(SF_ERR_IO,
		            "%s: header length %llu is impossible for a file of %llu bytes (not "
		            "a safetensors file?)",
		            path, (unsigned long long)hlen, (unsigned long long)fsize);
		goto fail;
	}
	header = malloc(hlen + 1);
	if (!header) {
		rc = SF_ERR(SF_ERR_NOMEM, "%s: cannot allocate the header", path);
		goto fail;
	}
	SF_CHECK(_sf_read_at(fd, header, hlen, 8, path));
	header[hlen] = '\0';
	json_error_t jerr;
	root = json_loadb(header, hlen, JSON_REJECT_DUPLICATES, &jerr);
	if (!root || !json_is_object(root)) {
		rc = SF_ERR(SF_ERR_IO, "%s: the header is not a JSON object (%s)", path,
		            root ? "another JSON value" : jerr.text);
		goto fail;
	}
	uint64_t data0 = 8 + hlen, data_len = fsize - data0;

	/* the tensors this model needs, then every entry */
	SF_CHECK(check_wanted(m, path, root, data_len, -1, data0, NULL));
	SF_CHECK(check_all_entries(path, root, data_len));

	/* every check passed: read */
	SF_CHECK(check_wanted(m, path, root, data_len, fd, data0, params));
fail:
	json_decref(root);
	free(header);
	if (fd >= 0)
		close(fd);
	return rc;
}

SF_API int sf_model_import_safetensors(sf_model *m, const char *path)
{
	int rc = SF_OK, lrc = SF_OK;
	float *params = NULL, *zeros = NULL;
	if (!m || !path || !*path)
		return SF_ERR(SF_ERR_INVALID, "sf_model_import_safetensors: NULL model or path");
	lrc = sf_model_sync(m);
	params = malloc(m->nparams_total * sizeof(float) + 1);
	zeros = calloc(m->largest_P + 1, sizeof(float));
	if (lrc >= 0 && (!params || !zeros))
		lrc = SF_ERR(SF_ERR_NOMEM, "sf_model_import_safetensors: out of memory");
	if (lrc >= 0)
		lrc = read_file(m, path, params);
	SF_CHECK(_sf_comm_agree(m->comm, lrc, "sf_model_import_safetensors"));

	/* every rank has every tensor: set the parameters, reset the optimizer */
	for (int u = 0; u < m->nunits; u++) {
		SF_CHECK(_sf_unit_set_full(m, u, SF_VEC_PARAM, params + m->units[u].off));
		for (int v = SF_VEC_M; v <= SF_VEC_V; v++)
			if (_sf_vec_exists(m, (enum _sf_vec)v))
				SF_CHECK(_sf_unit_set_full(m, u, (enum _sf_vec)v, zeros));
	}
	/* AdamW's bias correction restarts with its moments */
	m->nsteps = 0;
fail:
	free(params);
	free(zeros);
	return rc;
}
