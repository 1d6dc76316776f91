/*
 * manifest.c — a checkpoint manifest parsed and checked field by field against what
 * the loading model expects, or without a model for tools/shardflow-ckpt (see
 * manifest.h; the format is described in checkpoint.h).
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

const char *const _sf_ckpt_vec_names[] = {"param", "m", "v"};

void _sf_ckpt_rank_name(char *name, size_t size, int r)
{
	snprintf(name, size, "rank-%05d.bin", r);
}

void _sf_manifest_free(struct _sf_manifest *mf)
{
	free(mf->sizes);
	free(mf->crcs);
	free(mf->units);
	free(mf->tensors);
	json_decref(mf->json);
	*mf = (struct _sf_manifest){0};
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

/* The counters checked against each other where the writer said how they relate
 * (written since 2026-11-29; an older manifest, or a caller whose info.step counts
 * something else, has no "info_steps_per_update"): info.step = model_steps x f, f 1
 * (info.step counts optimizer updates) or the updates' micro-batches (it counts them).
 * A mismatch is damage (SF_ERR_IO): loading it would resume AdamW's bias correction, or
 * the caller's position, at another step than the weights were trained to. */
static int check_counters(json_t *root, const char *where, struct _sf_manifest *mf)
{
	int64_t f;
	mf->steps_per_update = 0;
	if (!json_object_get(root, "info_steps_per_update"))
		return SF_OK;
	SF_CHECK(get_int(root, "info_steps_per_update", 1, SF_CKPT_WORLD_MAX, &f, where));
	mf->steps_per_update = f;
	if (mf->info.step % f != 0 || mf->info.step / f != mf->model_steps)
		return SF_ERR(SF_ERR_IO,
		              "%s: the counters disagree: info.step is %lld, but model_steps %lld "
		              "x info_steps_per_update %lld does not make it",
		              where, (long long)mf->info.step, (long long)mf->model_steps,
		              (long long)f);
	return SF_OK;
}

/* The format, its version (*version) and the CRC's presence it implies */
static int parse_format(json_t *root, const char *where, bool has_crc, int64_t *version)
{
	const char *s;
	int64_t x;
	SF_CHECK(get_str(root, "format", &s, where));
	if (strcmp(s, SF_CKPT_FORMAT))
		return SF_ERR(SF_ERR_IO, "%s: format is \"%s\", expected \"" SF_CKPT_FORMAT "\"",
		              where, s);
	SF_CHECK(get_int(root, "version", INT64_MIN, INT64_MAX, &x, where));
	if (x < 1 || x > SF_CKPT_VERSION)
		return SF_ERR(SF_ERR_IO,
		              "%s: format version %lld, this shardflow reads versions 1 to %d", where,
		              (long long)x, SF_CKPT_VERSION);
	if (x >= 2 && !has_crc)
		return SF_ERR(SF_ERR_IO,
		              "%s: format version %lld keeps the manifest's CRC-32 in "
		              "manifest.crc32, which is missing",
		              where, (long long)x);
	if (x == 1 && !has_crc)
		_sf_log(SF_LOG_INFO,
		        "%s: format version 1 (an older shardflow): the manifest has no "
		        "checksum; its fields are range-checked only",
		        where);
	*version = x;
	return SF_OK;
}

/* The writer's layout: world_size, the pipeline's stages (version 3: each stage's
 * units in world_size / pp files), and its ranks and TP degree (recorded since
 * 2026-11-28) */
static int parse_world(json_t *root, const char *where, int64_t version, struct _sf_manifest *mf)
{
	int64_t x;
	SF_CHECK(get_int(root, "world_size", 1, SF_CKPT_WORLD_MAX, &x, where));
	mf->world_size = (int)x;
	mf->pp = 1;
	if (json_object_get(root, "pp")) {
		SF_CHECK(get_int(root, "pp", 1, mf->world_size, &x, where));
		mf->pp = (int)x;
	}
	if (mf->world_size % mf->pp)
		return SF_ERR(SF_ERR_IO, "%s: pp %d does not divide world_size %d", where, mf->pp,
		              mf->world_size);
	if (mf->pp > 1 && version < 3)
		return SF_ERR(SF_ERR_IO,
		              "%s: pp %d in a format version %lld manifest (a pipeline's "
		              "checkpoint is version 3)",
		              where, mf->pp, (long long)version);
	mf->ranks = 0;
	mf->tp = 1;
	if (json_object_get(root, "ranks")) {
		SF_CHECK(get_int(root, "ranks", 1, SF_CKPT_WORLD_MAX, &x, where));
		mf->ranks = (int)x;
	}
	if (json_object_get(root, "tp")) {
		SF_CHECK(get_int(root, "tp", 1, SF_CKPT_WORLD_MAX, &x, where));
		mf->tp = (int)x;
	}
	return SF_OK;
}

/* What the state is: sharding, dtype, structure hash and optimizer, each this model's
 * (when there is one: e_) */
static int parse_state(const struct _sf_manifest_expect *e_, json_t *root, const char *where,
                       struct _sf_manifest *mf)
{
	const char *s;
	char alt[128];
	SF_CHECK(get_str(root, "sharding", &s, where));
	mf->sharding = s;
	if (e_ && pick(s, e_->shardings, e_->nshardings) < 0)
		return SF_ERR(SF_ERR_IO, "%s: sharding \"%s\" is not %s", where, s,
		              alternatives(e_->shardings, e_->nshardings, alt, sizeof alt));
	SF_CHECK(get_str(root, "dtype", &s, where));
	mf->dtype = s;
	if (strcmp(s, "f32"))
		return SF_ERR(SF_ERR_IO, "%s: dtype \"%s\", only \"f32\" is supported", where, s);
	SF_CHECK(get_str(root, "structure_hash", &s, where));
	mf->structure_hash = s;
	if (e_ && strcmp(s, e_->structure_hash) &&
	    (!e_->structure_hash_legacy[0] || strcmp(s, e_->structure_hash_legacy)))
		return SF_ERR(SF_ERR_INVALID,
		              "%s: checkpoint was written for another model (structure hash %s, "
		              "this model %s)",
		              where, s, e_->structure_hash);
	SF_CHECK(get_str(root, "optimizer", &s, where));
	mf->optimizer = s;
	int o = e_ ? pick(s, e_->optimizers, e_->noptimizers) : 0;
	if (o < 0)
		return SF_ERR(SF_ERR_IO, "%s: optimizer \"%s\" is not %s", where, s,
		              alternatives(e_->optimizers, e_->noptimizers, alt, sizeof alt));
	if (e_ && o != e_->optimizer)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: checkpoint has %s optimizer state, this model uses %s", where, s,
		              e_->optimizers[e_->optimizer]);
	return SF_OK;
}

/* The steps and the caller's info (step, epoch, batch, data seed), checked against
 * each other (check_counters) */
static int parse_info(json_t *root, const char *where, struct _sf_manifest *mf)
{
	const char *s;
	SF_CHECK(get_int(root, "model_steps", 0, SF_CKPT_COUNT_MAX, &mf->model_steps, where));
	json_t *info = json_object_get(root, "info");
	if (!json_is_object(info))
		return bad_field(where, "info", "an object");
	SF_CHECK(get_int(info, "step", 0, SF_CKPT_COUNT_MAX, &mf->info.step, where));
	SF_CHECK(get_int(info, "epoch", 0, SF_CKPT_COUNT_MAX, &mf->info.epoch, where));
	SF_CHECK(get_int(info, "batch", 0, SF_CKPT_COUNT_MAX, &mf->info.batch, where));
	SF_CHECK(get_str(info, "data_seed", &s, where));
	char *end;
	errno = 0;
	unsigned long long seed = strtoull(s, &end, 10);
	if (!*s || *s < '0' || *s > '9' || *end || errno)
		return SF_ERR(SF_ERR_IO, "%s: info.data_seed \"%s\" is not a decimal 64-bit integer",
		              where, s);
	mf->info.data_seed = (uint64_t)seed;
	return check_counters(root, where, mf);
}

/* The manifest's identity fields: format, version, world, sharding, dtype, structure
 * hash and optimizer (which must match this model, when there is one: e_), steps and
 * the caller's info. */
static int parse_identity(const struct _sf_manifest_expect *e_, json_t *root, const char *where,
                          bool has_crc, struct _sf_manifest *mf)
{
	int64_t version = 0;
	SF_CHECK(parse_format(root, where, has_crc, &version));
	SF_CHECK(parse_world(root, where, version, mf));
	SF_CHECK(parse_state(e_, root, where, mf));
	return parse_info(root, where, mf);
}

/* The vectors per unit (a prefix of param, m, v: the model's optimizer's) and the
 * units, which must be this model's (e_; any, without a model), into mf. */
static int parse_layout(const struct _sf_manifest_expect *e_, json_t *root, const char *where,
                        struct _sf_manifest *mf)
{
	int rc = SF_OK;
	const char *s;
	int64_t x;
	const char *opt = e_ ? e_->optimizers[e_->optimizer] : mf->optimizer;
	json_t *vecs = json_object_get(root, "vectors");
	if (!json_is_array(vecs)) {
		rc = bad_field(where, "vectors", "an array");
		goto out;
	}
	size_t nv = json_array_size(vecs);
	if (e_ ? nv != (size_t)e_->nvectors : nv < 1 || nv > SF_CKPT_VECTORS_MAX) {
		rc = SF_ERR(SF_ERR_IO, "%s: %zu vectors per unit, %s keeps %d", where, nv, opt,
		            e_ ? e_->nvectors : SF_CKPT_VECTORS_MAX);
		goto out;
	}
	mf->nvectors = (int)nv;
	for (int v = 0; v < mf->nvectors; v++) {
		json_t *e = json_array_get(vecs, (size_t)v);
		const char *want = e_ ? e_->vectors[v] : _sf_ckpt_vec_names[v];
		if (!json_is_string(e) || strcmp(json_string_value(e), want)) {
			rc = SF_ERR(SF_ERR_IO, "%s: vectors should be the %d vectors of %s", where,
			            mf->nvectors, opt);
			goto out;
		}
	}

	json_t *units = json_object_get(root, "units");
	if (!json_is_array(units)) {
		rc = bad_field(where, "units", "an array");
		goto out;
	}
	size_t nu = json_array_size(units);
	if (e_ && nu != (size_t)e_->nunits) {
		rc = SF_ERR(SF_ERR_INVALID, "%s: %zu units, this model has %d", where, nu,
		            e_->nunits);
		goto out;
	}
	if (nu > INT32_MAX) {
		rc = SF_ERR(SF_ERR_IO, "%s: %zu units", where, nu);
		goto out;
	}
	mf->nunits = (int)nu;
	mf->units = calloc(nu + 1, sizeof *mf->units);
	if (!mf->units) {
		rc = SF_ERR(SF_ERR_NOMEM, "checkpoint load: out of memory");
		goto out;
	}
	for (int u = 0; u < mf->nunits; u++) {
		json_t *e = json_array_get(units, (size_t)u);
		char w[MF_WHERE_MAX];
		snprintf(w, sizeof w, "%s: units[%d]", where, u);
		if (!json_is_object(e)) {
			rc = SF_ERR(SF_ERR_IO, "%s is not an object", w);
			goto out;
		}
		SF_CHECK_GOTO(get_str(e, "name", &s, w), out);
		/* below 2^53 in all, as counts are: no sum of them overflows */
		SF_CHECK_GOTO(get_int(e, "P", 0, SF_CKPT_COUNT_MAX - (int64_t)mf->nparams, &x, w),
		              out);
		if (e_ && (strcmp(s, e_->unit_names[u]) || (uint64_t)x != e_->unit_P[u])) {
			rc = SF_ERR(SF_ERR_INVALID,
			            "%s is \"%s\" with %lld parameters, this model's unit %d is "
			            "\"%s\" with %zu",
			            w, s, (long long)x, u, e_->unit_names[u], e_->unit_P[u]);
			goto out;
		}
		mf->units[u] = (struct _sf_manifest_unit){s, (uint64_t)x, 0};
		mf->nparams += (uint64_t)x;
		if (mf->pp > 1) { /* a pipeline's (interleaved: the stages in turn, not in order) */
			SF_CHECK_GOTO(get_int(e, "stage", 0, mf->pp - 1, &x, w), out);
			mf->units[u].stage = (int)x;
		}
	}
out:
	return rc;
}

/* The named tensors (recorded since 2026-11-28; without them mf->tensors stays NULL):
 * each a name, a shape of 1 or 2 dimensions and an offset, lying in the parameters. */
static int parse_tensors(json_t *root, const char *where, struct _sf_manifest *mf)
{
	int rc = SF_OK;
	const char *s;
	int64_t x;
	json_t *ts = json_object_get(root, "tensors");
	if (!ts)
		return SF_OK;
	if (!json_is_array(ts) || json_array_size(ts) > (size_t)INT32_MAX)
		return bad_field(where, "tensors", "an array");
	size_t nt = json_array_size(ts);
	mf->tensors = calloc(nt + 1, sizeof *mf->tensors);
	if (!mf->tensors)
		return SF_ERR(SF_ERR_NOMEM, "checkpoint: out of memory");
	mf->ntensors = (int)nt;
	for (size_t i = 0; i < nt; i++) {
		json_t *e = json_array_get(ts, i), *shape;
		struct _sf_st_tensor *t = &mf->tensors[i];
		char w[MF_WHERE_MAX];
		snprintf(w, sizeof w, "%s: tensors[%zu]", where, i);
		if (!json_is_object(e)) {
			rc = SF_ERR(SF_ERR_IO, "%s is not an object", w);
			goto out;
		}
		SF_CHECK_GOTO(get_str(e, "name", &s, w), out);
		t->name = s;
		shape = json_object_get(e, "shape");
		if (!json_is_array(shape) || json_array_size(shape) < 1 ||
		    json_array_size(shape) > 2) {
			rc = bad_field(w, "shape", "an array of 1 or 2 integers");
			goto out;
		}
		t->ndim = (int)json_array_size(shape);
		t->count = 1;
		for (int d = 0; d < t->ndim; d++) {
			json_t *k = json_array_get(shape, (size_t)d);
			json_int_t v = json_is_integer(k) ? json_integer_value(k) : -1;
			if (v < 0 || (uint64_t)v > mf->nparams) {
				rc = SF_ERR(SF_ERR_IO, "%s: shape[%d] is not an integer in 0..%llu",
				            w, d, (unsigned long long)mf->nparams);
				goto out;
			}
			t->shape[d] = (int64_t)v;
			t->count *= (size_t)v; /* both <= nparams < 2^53: no overflow */
		}
		SF_CHECK_GOTO(get_int(e, "offset", 0, (int64_t)mf->nparams, &x, w), out);
		t->off = (size_t)x;
		if (t->count > mf->nparams - t->off) {
			rc =
			    SF_ERR(SF_ERR_IO,
			           "%s: %zu elements from %zu run past the model's %llu parameters",
			           w, t->count, t->off, (unsigned long long)mf->nparams);
			goto out;
		}
	}
out:
	return rc;
}

/* The rank files: names, the size the layout implies, CRC-32s. */
static int parse_files(json_t *root, const char *where, struct _sf_manifest *mf)
{
	int rc = SF_OK;
	const char *s;
	int64_t x;
	size_t k = (size_t)mf->nvectors;
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
	/* the size every file must have, from its stage's units and the files a stage has */
	int nf = _sf_ckpt_stage_files(mf);
	for (int r = 0; r < mf->world_size; r++) {
		uint64_t want = SF_CKPT_HEADER;
		for (int u = 0; u < mf->nunits; u++)
			if (mf->units[u].stage == r / nf)
				want += (uint64_t)_sf_ckpt_shard(mf->units[u].P, nf) * k *
				        sizeof(float);
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
			            "%s: size %llu, but %d units on %d ranks (%d stages) make it "
			            "%llu bytes",
			            w, (unsigned long long)x, mf->nunits, mf->world_size, mf->pp,
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
	mf->json = root; /* the strings *mf points to are its */
	if (!json_is_object(root)) {
		rc = SF_ERR(SF_ERR_IO, "%s: not a JSON object", where);
		goto fail;
	}
	SF_CHECK_GOTO(parse_identity(e_, root, where, has_crc, mf), fail);
	SF_CHECK_GOTO(parse_layout(e_, root, where, mf), fail);
	if (!e_)
		SF_CHECK_GOTO(parse_tensors(root, where, mf), fail);
	SF_CHECK_GOTO(parse_files(root, where, mf), fail);
	return SF_OK;
fail:
	_sf_manifest_free(mf);
	return rc;
}
