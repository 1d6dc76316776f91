/*
 * st_header.c — the safetensors header without a model (see st_header.h): built and
 * written from a list of tensors (export, from a model or from a checkpoint's
 * manifest: tools/shardflow-ckpt), and validated against the tensors a caller needs
 * (import). Nothing read is trusted: every length, offset and shape is checked before
 * it is used, and a success guarantees that each wanted tensor lies inside the data
 * area.
 */
#include "io/bytes.h"
#include "io/fileio.h"
#include "io/st_header.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int _sf_st_header_build(const struct _sf_st_tensor *t, size_t nt, char **out, size_t *len)
{
	json_t *root = json_object();
	char *text = NULL;
	if (!root)
		return SF_ERR(SF_ERR_NOMEM, "safetensors: out of memory");
	json_object_set_new(root, "__metadata__",
	                    json_pack("{s:s, s:s}", "format", "pt", "producer", "shardflow"));
	for (size_t i = 0; i < nt; i++) {
		if (json_object_get(root, t[i].name)) {
			json_decref(root);
			return SF_ERR(SF_ERR_INVALID,
			              "safetensors: two tensors would be named \"%s\"; rename a "
			              "layer",
			              t[i].name);
		}
		json_t *shape = t[i].ndim == 2 ? json_pack("[I, I]", (json_int_t)t[i].shape[0],
		                                           (json_int_t)t[i].shape[1])
		                               : json_pack("[I]", (json_int_t)t[i].shape[0]);
		json_object_set_new(
		    root, t[i].name,
		    json_pack("{s:s, s:o, s:[I, I]}", "dtype", "F32", "shape", shape,
		              "data_offsets", (json_int_t)(t[i].off * sizeof(float)),
		              (json_int_t)((t[i].off + t[i].count) * sizeof(float))));
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


int _sf_st_write(const char *path, const char *header, size_t hlen, float *params, size_t n)
{
	int rc = SF_OK, fd = -1;
	char tmp[4096], dir[4096];
	uint8_t len8[8];
	_sf_dir_of(path, dir, sizeof dir); /* for its sync after the rename */
	_sf_put_le(len8, (uint64_t)hlen, 8);
	SF_CHECK_GOTO(_sf_create_tmp(path, tmp, sizeof tmp, &fd), out);
	_sf_floats_le(params, n);
	SF_CHECK_GOTO(_sf_write_all(fd, len8, 8, tmp), out);
	SF_CHECK_GOTO(_sf_write_all(fd, header, hlen, tmp), out);
	SF_CHECK_GOTO(_sf_write_all(fd, params, n * sizeof(float), tmp), out);
	rc = _sf_commit_file(fd, tmp, path, dir);
	fd = -1;
out:
	if (fd >= 0)
		_sf_abandon_file(fd, tmp);
	return rc;
}

int _sf_st_header_length(const char *path, const uint8_t len8[8], uint64_t fsize, uint64_t *hlen)
{
	uint64_t n = _sf_get_le(len8, 8);
	if (fsize < 8 || n < 2 || n > SF_ST_HEADER_MAX || n > fsize - 8)
		return SF_ERR(SF_ERR_IO,
		              "%s: header length %llu is impossible for a file of %llu bytes (not "
		              "a safetensors file?)",
		              path, (unsigned long long)n, (unsigned long long)fsize);
	*hlen = n;
	return SF_OK;
}

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

/* Each wanted tensor: present, F32, of the wanted shape (well-formed and in range is
 * check_entry's); its begin offset into begin[i]. */
static int check_wanted(const char *path, json_t *root, uint64_t data_len,
                        const struct _sf_st_want *want, size_t nwant, uint64_t *begin)
{
	for (size_t i = 0; i < nwant; i++) {
		const struct _sf_st_want *t = &want[i];
		json_t *e = json_object_get(root, t->name), *shape;
		struct range r;
		const char *dt;
		if (!e)
			return SF_ERR(SF_ERR_IO, "%s: tensor \"%s\" is missing", path, t->name);
		dt = json_string_value(json_object_get(e, "dtype"));
		if (dt && strcmp(dt, "F32"))
			return SF_ERR(SF_ERR_IO, "%s: tensor \"%s\" is %s, expected F32", path,
			              t->name, dt);
		int rc = check_entry(path, t->name, e, data_len, &r, &dt, &shape);
		if (rc < 0)
			return rc;
		bool same = json_array_size(shape) == (size_t)t->ndim;
		for (int d = 0; same && d < t->ndim; d++)
			same = json_integer_value(json_array_get(shape, (size_t)d)) == t->shape[d];
		if (!same) {
			char *got = json_dumps(shape, JSON_COMPACT), need[64];
			if (t->ndim == 2)
				snprintf(need, sizeof need, "[%lld,%lld]", (long long)t->shape[0],
				         (long long)t->shape[1]);
			else
				snprintf(need, sizeof need, "[%lld]", (long long)t->shape[0]);
			rc =
			    SF_ERR(SF_ERR_IO, "%s: tensor \"%s\" has shape %s, this model needs %s",
			           path, t->name, got ? got : "?", need);
			free(got);
			return rc;
		}
		begin[i] = r.begin;
	}
	return SF_OK;
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
				goto out;
			}
			json_object_foreach(val, mk, mv)
			{
				if (!json_is_string(mv)) {
					rc = SF_ERR(SF_ERR_IO,
					            "%s: __metadata__ value \"%s\" is not a string",
					            path, mk);
					goto out;
				}
			}
			continue;
		}
		SF_CHECK_GOTO(check_entry(path, key, val, data_len, &ranges[k++], &dt, &shape), out);
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
			goto out;
		}
		end = ranges[i].end;
	}
	if (end != data_len)
		rc = SF_ERR(SF_ERR_IO,
		            "%s: the tensors hold %llu bytes but the file has %llu after the "
		            "header (truncated or trailing bytes)",
		            path, (unsigned long long)end, (unsigned long long)data_len);
out:
	free(ranges);
	return rc;
}

int _sf_st_header_check(const char *path, const char *header, size_t hlen, uint64_t data_len,
                        const struct _sf_st_want *want, size_t nwant, uint64_t *begin)
{
	int rc = SF_OK;
	json_error_t jerr;
	json_t *root = json_loadb(header, hlen, JSON_REJECT_DUPLICATES, &jerr);
	if (!root || !json_is_object(root)) {
		rc = SF_ERR(SF_ERR_IO, "%s: the header is not a JSON object (%s)", path,
		            root ? "another JSON value" : jerr.text);
		goto out;
	}
	/* the tensors the caller needs (the clearer message first), then every entry */
	SF_CHECK_GOTO(check_wanted(path, root, data_len, want, nwant, begin), out);
	SF_CHECK_GOTO(check_all_entries(path, root, data_len), out);
out:
	json_decref(root);
	return rc;
}
