/*
 * manifest.c — a checkpoint manifest parsed and checked field by field against what
 * the loading model expects (see manifest.h; the format is described in checkpoint.h).
 * Nothing read is trusted: every field is type- and range-checked before it is used,
 * and file names are compared, never used to open anything.
 */
#include "io/manifest.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MF_WHERE_MAX 4200 /* a path and "files[r]" */

void _sf_ckpt_rank_name(char *name, size_t size, int r)
{
	snprintf(name, size, "rank-%05d.bin", r);
}

void _sf_manifest_free(struct _sf_manifest *mf)
{
	free(mf->sizes);
	free(mf->crcs);
	mf->sizes = NULL;
	mf->crcs = NULL;
}

/* "a, b or c" of n names, in buf. */
static const char *alternatives(const char *const *names, int n, char *buf, size_t size)
{
	size_t k = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && k < size; i++)
		k += (size_t)snprintf(buf + k, size - k, "%s%s",
		                      i == 0       ? ""
		                      : i == n - 1 ? " or "
		                                   : ", ",
		                      names[i]);
	return buf;
}

static int bad_field(const char *where, const char *key, const char *want)
{
	return SF_ERR(SF_ERR_IO, "%s: field \"%s\" is missing or is not %s", where, key, want);
}

static int get_int(json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   const char *where)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		return bad_field(where, key, "an integer");
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi)
		return SF_ERR(SF_ERR_IO, "%s: \"%s\" is %lld, expected %lld..%lld", where, key,
		              (long long)x, (long long)lo, (long long)hi);
	*out = (int64_t)x;
	return SF_OK;
}

static int get_str(json_t *o, const char *key, const char **out, const char *where)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v))
		return bad_field(where, key, "a string");
	*out = json_string_value(v);
	return SF_OK;
}

static int pick(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

/* The manifest's identity fields: format, version, world, sharding, dtype, structure
 * hash and optimizer (which must match this model), steps and the caller's info. */
static int parse_identity(const struct _sf_manifest_expect *e_, json_t *root, const char *where,
                          bool has_crc, struct _sf_manifest *mf)
{
	int rc = SF_OK;
	const char *s;
	int64_t x;
	char alt[128];
	SF_CHECK_GOTO(get_str(root, "format", &s, where), out);
	if (strcmp(s, SF_CKPT_FORMAT)) {
		rc = SF_ERR(SF_ERR_IO, "%s: format is \"%s\", expected \"" SF_CKPT_FORMAT "\"",
		            where, s);
		goto out;
	}
	SF_CHECK_GOTO(get_int(root, "version", INT64_MIN, INT64_MAX, &x, where), out);
	if (x < 1 || x > SF_CKPT_VERSION) {
		rc = SF_ERR(SF_ERR_IO,
		            "%s: format version %lld, this shardflow reads versions 1 to %d", where,
		            (long long)x, SF_CKPT_VERSION);
		goto out;
	}
	if (x >= 2 && !has_crc) {
		rc = SF_ERR(SF_ERR_IO,
		            "%s: format version %lld keeps the manifest's CRC-32 in "
		            "manifest.crc32, which is missing",
		            where, (long long)x);
		goto out;
	}
	if (x == 1 && !has_crc)
		_sf_log(SF_LOG_INFO,
		        "%s: format version 1 (an older shardflow): the manifest has no "
		        "checksum; its fields are range-checked only",
		        where);
	SF_CHECK_GOTO(get_int(root, "world_size", 1, SF_CKPT_WORLD_MAX, &x, where), out);
	mf->world_size = (int)x;
	SF_CHECK_GOTO(get_str(root, "sharding", &s, where), out);
	if (pick(s, e_->shardings, e_->nshardings) < 0) {
		rc = SF_ERR(SF_ERR_IO, "%s: sharding \"%s\" is not %s", where, s,
		            alternatives(e_->shardings, e_->nshardings, alt, sizeof alt));
		goto out;
	}
	SF_CHECK_GOTO(get_str(root, "dtype", &s, where), out);
	if (strcmp(s, "f32")) {
		rc = SF_ERR(SF_ERR_IO, "%s: dtype \"%s\", only \"f32\" is supported", where, s);
		goto out;
	}
	SF_CHECK_GOTO(get_str(root, "structure_hash", &s, where), out);
	if (strcmp(s, e_->structure_hash) &&
	    (!e_->structure_hash_legacy[0] || strcmp(s, e_->structure_hash_legacy))) {
		rc = SF_ERR(SF_ERR_INVALID,
		            "%s: checkpoint was written for another model (structure hash %s, "
		            "this model %s)",
		            where, s, e_->structure_hash);
		goto out;
	}
	SF_CHECK_GOTO(get_str(root, "optimizer", &s, where), out);
	int o = pick(s, e_->optimizers, e_->noptimizers);
	if (o < 0) {
		rc = SF_ERR(SF_ERR_IO, "%s: optimizer \"%s\" is not %s", where, s,
		            alternatives(e_->optimizers, e_->noptimizers, alt, sizeof alt));
		goto out;
	}
	if (o != e_->optimizer) {
		rc = SF_ERR(SF_ERR_INVALID,
		            "%s: checkpoint has %s optimizer state, this model uses %s", where, s,
		            e_->optimizers[e_->optimizer]);
		goto out;
	}
	SF_CHECK_GOTO(get_int(root, "model_steps", 0, SF_CKPT_COUNT_MAX, &mf->model_steps, where), out);

	json_t *info = json_object_get(root, "info");
	if (!json_is_object(info)) {
		rc = bad_field(where, "info", "an object");
		goto out;
	}
	SF_CHECK_GOTO(get_int(info, "step", 0, SF_CKPT_COUNT_MAX, &mf->info.step, where), out);
	SF_CHECK_GOTO(get_int(info, "epoch", 0, SF_CKPT_COUNT_MAX, &mf->info.epoch, where), out);
	SF_CHECK_GOTO(get_int(info, "batch", 0, SF_CKPT_COUNT_MAX, &mf->info.batch, where), out);
	SF_CHECK_GOTO(get_str(info, "data_seed", &s, where), out);
	{
		char *end;
		errno = 0;
		unsigned long long seed = strtoull(s, &end, 10);
		if (!*s || *s < '0' || *s > '9' || *end || errno) {
			rc = SF_ERR(SF_ERR_IO,
			            "%s: info.data_seed \"%s\" is not a decimal 64-bit integer",
			            where, s);
			goto out;
		}
		mf->info.data_seed = (uint64_t)seed;
	}
out:
	return rc;
}

/* The vectors per unit and the units, which must be this model's. */
static int parse_layout(const struct _sf_manifest_expect *e_, json_t *root, const char *where)
{
	int rc = SF_OK;
	const char *s;
	int64_t x;
	const char *opt = e_->optimizers[e_->optimizer];
	json_t *vecs = json_object_get(root, "vectors");
	if (!json_is_array(vecs)) {
		rc = bad_field(where, "vectors", "an array");
		goto out;
	}
	if (json_array_size(vecs) != (size_t)e_->nvectors) {
		rc = SF_ERR(SF_ERR_IO, "%s: %zu vectors per unit, %s keeps %d", where,
		            json_array_size(vecs), opt, e_->nvectors);
		goto out;
	}
	for (int v = 0; v < e_->nvectors; v++) {
		json_t *e = json_array_get(vecs, (size_t)v);
		if (!json_is_string(e) || strcmp(json_string_value(e), e_->vectors[v])) {
			rc = SF_ERR(SF_ERR_IO, "%s: vectors should be the %d vectors of %s", where,
			            e_->nvectors, opt);
			goto out;
		}
	}

	json_t *units = json_object_get(root, "units");
	if (!json_is_array(units)) {
		rc = bad_field(where, "units", "an array");
		goto out;
	}
	if (json_array_size(units) != (size_t)e_->nunits) {
		rc = SF_ERR(SF_ERR_INVALID, "%s: %zu units, this model has %d", where,
		            json_array_size(units), e_->nunits);
		goto out;
	}
	for (int u = 0; u < e_->nunits; u++) {
		json_t *e = json_array_get(units, (size_t)u);
		char w[MF_WHERE_MAX];
		snprintf(w, sizeof w, "%s: units[%d]", where, u);
		if (!json_is_object(e)) {
			rc = SF_ERR(SF_ERR_IO, "%s is not an object", w);
			goto out;
		}
		SF_CHECK_GOTO(get_str(e, "name", &s, w), out);
		SF_CHECK_GOTO(get_int(e, "P", 0, INT64_MAX, &x, w), out);
		if (strcmp(s, e_->unit_names[u]) || (uint64_t)x != e_->unit_P[u]) {
			rc = SF_ERR(SF_ERR_INVALID,
			            "%s is \"%s\" with %lld parameters, this model's unit %d is "
			            "\"%s\" with %zu",
			            w, s, (long long)x, u, e_->unit_names[u], e_->unit_P[u]);
			goto out;
		}
	}
out:
	return rc;
}

/* The rank files: names, the size the layout implies, CRC-32s. */
static int parse_files(const struct _sf_manifest_expect *e_, json_t *root, const char *where,
                       struct _sf_manifest *mf)
{
	int rc = SF_OK;
	const char *s;
	int64_t x;
	size_t k = (size_t)e_->nvectors;
	json_t *files = json_object_get(root, "files");
	if (!json_is_array(files)) {
		rc = bad_field(where, "files", "an array");
		goto out;
	}
	if (json_array_size(files) != (size_t)mf->world_size) {
		rc = SF_ERR(SF_ERR_IO, "%s: %zu files for a world of %d ranks", where,
		            json_array_size(files), mf->world_size);
		goto out;
	}
	mf->sizes = calloc((size_t)mf->world_size, sizeof *mf->sizes);
	mf->crcs = calloc((size_t)mf->world_size, sizeof *mf->crcs);
	if (!mf->sizes || !mf->crcs) {
		rc = SF_ERR(SF_ERR_NOMEM, "checkpoint load: out of memory");
		goto out;
	}
	/* the size every file must have, from the units and the saving world size */
	uint64_t want = SF_CKPT_HEADER;
	for (int u = 0; u < e_->nunits; u++)
		want += (uint64_t)_sf_ckpt_shard(e_->unit_P[u], mf->world_size) * k * sizeof(float);
	for (int r = 0; r < mf->world_size; r++) {
		json_t *e = json_array_get(files, (size_t)r);
		char w[MF_WHERE_MAX], name[32];
		snprintf(w, sizeof w, "%s: files[%d]", where, r);
		_sf_ckpt_rank_name(name, sizeof name, r);
		if (!json_is_object(e)) {
			rc = SF_ERR(SF_ERR_IO, "%s is not an object", w);
			goto out;
		}
		/* the name is checked, never used: a manifest cannot make us open
		 * another path */
		SF_CHECK_GOTO(get_str(e, "name", &s, w), out);
		if (strcmp(s, name)) {
			rc = SF_ERR(SF_ERR_IO, "%s: name is \"%s\", expected \"%s\"", w, s, name);
			goto out;
		}
		SF_CHECK_GOTO(get_int(e, "size", 0, INT64_MAX, &x, w), out);
		mf->sizes[r] = (uint64_t)x;
		if (mf->sizes[r] != want) {
			rc = SF_ERR(SF_ERR_IO,
			            "%s: size %llu, but %d units on %d ranks make files of %llu "
			            "bytes",
			            w, (unsigned long long)x, e_->nunits, mf->world_size,
			            (unsigned long long)want);
			goto out;
		}
		SF_CHECK_GOTO(get_int(e, "crc32", 0, UINT32_MAX, &x, w), out);
		mf->crcs[r] = (uint32_t)x;
	}
out:
	return rc;
}

int _sf_manifest_parse(const struct _sf_manifest_expect *e_, const char *text, size_t len,
                       const char *where, bool has_crc, struct _sf_manifest *mf)
{
	int rc = SF_OK;
	json_error_t jerr;
	*mf = (struct _sf_manifest){0};
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return SF_ERR(SF_ERR_IO, "%s: not valid JSON (line %d: %s)", where, jerr.line,
		              jerr.text);
	if (!json_is_object(root)) {
		rc = SF_ERR(SF_ERR_IO, "%s: not a JSON object", where);
		goto out;
	}
	SF_CHECK_GOTO(parse_identity(e_, root, where, has_crc, mf), out);
	SF_CHECK_GOTO(parse_layout(e_, root, where), out);
	SF_CHECK_GOTO(parse_files(e_, root, where, mf), out);
out:
	if (rc < 0)
		_sf_manifest_free(mf);
	json_decref(root);
	return rc;
}
