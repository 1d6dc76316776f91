/*
 * tensors.c — a model's parameters by name (include/shardflow.h): the named tensors
 * (the safetensors files' names and shapes), one tensor gathered or set, every
 * parameter set from memory, the gradient the last update applied, and a tensor's
 * learning-rate scale (a parameter group's lr; 0 freezes its values).
 *
 * A tensor lies in one unit's flat vector (struct _sf_tensor). Reading gathers that
 * unit on every rank (the world's all-gather of its shards, as sf_model_params_get
 * does) and copies the tensor out; setting needs no communication (every rank is given
 * the whole tensor and writes the part it keeps).
 */
#include "io/tensors.h"
#include "scheduler/model_access.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int _sf_unit_tensors(const struct sf_model *m, int u, struct _sf_tensor *t)
{
	struct _sf_unit_desc un;
	_sf_unit_describe(m, u, &un);
	int k = 0;
	for (int n = un.first; n <= un.last; n++) {
		struct _sf_node_desc d;
		_sf_node_describe(m, n, &d);
		const struct _sf_node *nd = d.node;
		if (d.unit != u || nd->tied_to >= 0)
			continue;
		const struct sf_layer_info *li = d.info;
		const struct sf_layer_info *wi = &d.whole; /* with TP; else li's shapes */
		struct sf_param_tensor pt[SF_MAX_PARAM_TENSORS], wt[SF_MAX_PARAM_TENSORS];
		int np = _sf_node_param_tensors(nd, li, pt);
		if (_sf_node_param_tensors(nd, wi, wt) != np)
			return SF_ERR(SF_ERR_INVALID,
			              "node \"%s\": its slice and its whole layer "
			              "name different tensors",
			              nd->name);
		for (int i = 0; i < np; i++) {
			if (k == SF_UNIT_TENSORS_MAX)
				return SF_ERR(SF_ERR_INVALID,
				              "unit \"%s\" has more than %d named tensors", un.name,
				              SF_UNIT_TENSORS_MAX);
			size_t count = wt[i].shape[0] * (wt[i].ndim == 2 ? wt[i].shape[1] : 1);
			size_t lcount = pt[i].shape[0] * (pt[i].ndim == 2 ? pt[i].shape[1] : 1);
			t[k] = (struct _sf_tensor){
			    .ndim = wt[i].ndim,
			    .shape = {(int64_t)wt[i].shape[0], (int64_t)wt[i].shape[1]},
			    .off = un.woff + d.wpoff + wt[i].offset,
			    .count = count,
			    .loff = un.off + li->param_offset + pt[i].offset,
			    .lcount = lcount,
			    .unit = u};
			snprintf(t[k].name, sizeof t[k].name, "%.63s.%.23s", nd->name,
			         pt[i].suffix);
			k++;
		}
	}
	return k;
}

int _sf_model_tensors(const struct sf_model *m, struct _sf_tensor **out, size_t *n)
{
	size_t cap = 0, k = 0;
	struct _sf_tensor *all = NULL;
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	for (int u = 0; u < g.nunits; u++) {
		struct _sf_tensor t[SF_UNIT_TENSORS_MAX];
		int ntu = _sf_unit_tensors(m, u, t);
		if (ntu < 0) {
			free(all);
			return ntu;
		}
		if (k + (size_t)ntu > cap) {
			cap = 2 * (k + (size_t)ntu);
			struct _sf_tensor *a = realloc(all, cap * sizeof *a);
			if (!a) {
				free(all);
				return SF_ERR(SF_ERR_NOMEM, "safetensors: out of memory");
			}
			all = a;
		}
		memcpy(all + k, t, (size_t)ntu * sizeof *t);
		k += (size_t)ntu;
	}
	*out = all;
	*n = k;
	return SF_OK;
}

/* Tensor `name` of the model into *t, or SF_ERR_NOT_FOUND naming a few of its tensors;
 * with n_given != (size_t)-1, also SF_ERR_INVALID unless it is the tensor's size. */
static int find(const struct sf_model *m, const char *fn, const char *name, size_t n_given,
                struct _sf_tensor *out)
{
	int rc = SF_OK;
	struct _sf_tensor *all = NULL;
	size_t n = 0;
	if (!m || !name)
		return SF_ERR(SF_ERR_INVALID, "%s: NULL model or name", fn);
	SF_CHECK_GOTO(_sf_model_tensors(m, &all, &n), out);
	for (size_t i = 0; i < n; i++)
		if (strcmp(all[i].name, name) == 0) {
			*out = all[i];
			if (n_given != (size_t)-1 && n_given != all[i].count)
				rc = SF_ERR(SF_ERR_INVALID,
				            "%s: tensor \"%s\" has %zu floats, n is %zu", fn, name,
				            all[i].count, n_given);
			goto out;
		}
	char some[512] = "";
	for (size_t i = 0; i < n && strlen(some) + SF_TENSOR_NAME_MAX + 8 < sizeof some; i++)
		snprintf(some + strlen(some), sizeof some - strlen(some), "%s\"%s\"", i ? ", " : "",
		         all[i].name);
	rc = SF_ERR(SF_ERR_NOT_FOUND, "%s: the model has no tensor \"%s\" (its %zu tensors: %s%s)",
	            fn, name, n, some, strlen(some) + SF_TENSOR_NAME_MAX + 8 >= sizeof some ? ", ..." : "");
out:
	free(all);
	return rc;
}

SF_API int sf_model_tensor_count(sf_model *m, int *count)
{
	int rc = SF_OK;
	struct _sf_tensor *all = NULL;
	size_t n = 0;
	if (!m || !count)
		return SF_ERR(SF_ERR_INVALID, "sf_model_tensor_count: NULL model or output");
	SF_CHECK_GOTO(_sf_model_tensors(m, &all, &n), out);
	*count = (int)n;
out:
	free(all);
	return rc;
}

SF_API int sf_model_tensor_info(sf_model *m, int i, struct sf_tensor_info *out)
{
	int rc = SF_OK;
	struct _sf_tensor *all = NULL;
	size_t n = 0;
	if (!m || !out)
		return SF_ERR(SF_ERR_INVALID, "sf_model_tensor_info: NULL model or output");
	SF_CHECK_GOTO(_sf_model_tensors(m, &all, &n), out);
	if (i < 0 || (size_t)i >= n) {
		rc = SF_ERR(SF_ERR_INVALID, "sf_model_tensor_info: index %d is not in [0, %zu)", i, n);
		goto out;
	}
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "%s", all[i].name);
	out->ndim = all[i].ndim;
	out->shape[0] = (size_t)all[i].shape[0];
	out->shape[1] = all[i].ndim == 2 ? (size_t)all[i].shape[1] : 0;
	out->numel = all[i].count;
	struct _sf_unit_desc d;
	_sf_unit_describe(m, all[i].unit, &d);
	out->unit = d.name;
out:
	free(all);
	return rc;
}

/* get: the tensor (grad: its gradient) into dst, on every rank */
static int get(sf_model *m, const char *fn, const char *name, bool grad, float *dst, size_t n)
{
	int rc = SF_OK;
	struct _sf_tensor t;
	struct _sf_unit_desc un;
	struct _sf_model_counters c;
	float *full = NULL;
	if (!dst)
		return SF_ERR(SF_ERR_INVALID, "%s: dst is NULL", fn);
	SF_CHECK_GOTO(find(m, fn, name, n, &t), out);
	_sf_unit_describe(m, t.unit, &un);
	_sf_model_counters_get(m, &c);
	if (grad && un.frozen)
		return SF_ERR(SF_ERR_STATE,
		              "%s: tensor \"%s\" is in unit \"%s\", which is frozen "
		              "(sf_unit_options::frozen): it has no gradient",
		              fn, name, un.name);
	if (grad && !un.has_grad)
		return SF_ERR(SF_ERR_STATE,
		              "%s: this model keeps no reduced gradient: with sharding none the "
		              "optimizer applies it from a slot the next unit reuses; gradients "
		              "are kept with sharding full, grad_op or hybrid, or with clipping "
		              "(max_grad_norm > 0) or micro-batches",
		              fn);
	if (grad && c.grad_mean_of == 0)
		return SF_ERR(SF_ERR_STATE, "%s: no step has run yet (sf_model_step)", fn);
	SF_CHECK_GOTO(sf_model_sync(m), out);
	full = malloc(un.Pw * sizeof(float) + 1);
	if (!full) {
		rc = SF_ERR(SF_ERR_NOMEM, "%s: out of memory", fn);
		goto out;
	}
	SF_CHECK_GOTO(_sf_unit_gather(m, t.unit, grad, full), out);
	float scale = grad ? 1.0f / (float)c.grad_mean_of : 1.0f;
	for (size_t i = 0; i < t.count; i++)
		dst[i] = full[t.off - un.woff + i] * scale;
out:
	free(full);
	return rc;
}

SF_API int sf_model_tensor_get(sf_model *m, const char *name, float *dst, size_t n)
{
	return get(m, "sf_model_tensor_get", name, false, dst, n);
}

SF_API int sf_model_grad_get(sf_model *m, const char *name, float *dst, size_t n)
{
	return get(m, "sf_model_grad_get", name, true, dst, n);
}

SF_API int sf_model_tensor_set(sf_model *m, const char *name, const float *src, size_t n)
{
	int rc = SF_OK;
	struct _sf_tensor t;
	struct _sf_model_geometry g;
	struct _sf_unit_desc un;
	float *whole = NULL;
	if (!src)
		return SF_ERR(SF_ERR_INVALID, "sf_model_tensor_set: src is NULL");
	SF_CHECK_GOTO(find(m, "sf_model_tensor_set", name, n, &t), out);
	SF_CHECK_GOTO(sf_model_sync(m), out);
	_sf_model_describe(m, &g);
	_sf_unit_describe(m, t.unit, &un);
	if (g.tp == 1) {
		SF_CHECK_GOTO(_sf_unit_set_params(m, t.unit, t.off - un.off, t.count, src), out);
		goto out;
	}
	/* with TP: the unit whole, the tensor replaced, every rank's slices taken again */
	whole = malloc(un.Pw * sizeof(float) + 1);
	if (!whole) {
		rc = SF_ERR(SF_ERR_NOMEM, "sf_model_tensor_set: out of memory");
		goto out;
	}
	SF_CHECK_GOTO(_sf_unit_get_whole(m, t.unit, SF_VEC_PARAM, false, whole), out);
	memcpy(whole + (t.off - un.woff), src, t.count * sizeof(float));
	SF_CHECK_GOTO(_sf_unit_set_whole(m, t.unit, SF_VEC_PARAM, whole), out);
out:
	free(whole);
	return rc;
}

int _sf_model_load_check(const struct sf_model *m, const char *fn)
{
	struct _sf_model_counters c;
	_sf_model_counters_get(m, &c);
	if (c.accum_k > 0)
		return SF_ERR(SF_ERR_STATE,
		              "%s: %d micro-batches are accumulated; replace the parameters before "
		              "sf_model_accumulate or after sf_model_step",
		              fn, c.accum_k);
	return SF_OK;
}

int _sf_model_load(struct sf_model *m, const float *params)
{
	int rc = SF_OK;
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	float *zeros = calloc(g.largest_P + 1, sizeof(float));
	if (!zeros)
		return SF_ERR(SF_ERR_NOMEM, "loading parameters: out of memory");
	for (int u = 0; u < g.nunits; u++) {
		struct _sf_unit_desc d;
		_sf_unit_describe(m, u, &d);
		SF_CHECK_GOTO(_sf_unit_set_whole(m, u, SF_VEC_PARAM, params + d.woff), out);
		for (int v = SF_VEC_M; v <= SF_VEC_V; v++)
			if (_sf_vec_exists(m, (enum _sf_vec)v))
				SF_CHECK_GOTO(_sf_unit_set_full(m, u, (enum _sf_vec)v, zeros), out);
	}
	/* AdamW's bias correction restarts with its moments */
	_sf_model_counters_set(m, 0, 0);
out:
	free(zeros);
	return rc;
}

SF_API int sf_model_params_set(sf_model *m, const float *src, size_t n)
{
	struct _sf_model_geometry g;
	if (!m || !src)
		return SF_ERR(SF_ERR_INVALID, "sf_model_params_set: NULL model or source");
	_sf_model_describe(m, &g);
	if (n != g.nparams_whole)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_params_set: n is %zu, the model has %zu parameters "
		              "(sf_model_param_count)",
		              n, g.nparams_whole);
	SF_CHECK(_sf_model_load_check(m, "sf_model_params_set"));
	SF_CHECK(sf_model_sync(m));
	SF_CHECK(_sf_model_load(m, src));
	return SF_OK;
}

SF_API int sf_model_tensor_lr_scale(sf_model *m, const char *name, float scale)
{
	struct _sf_tensor t;
	if (!(scale >= 0.0f) || !isfinite(scale))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_tensor_lr_scale: scale must be a finite number >= 0 (got %g)",
		              (double)scale);
	SF_CHECK(find(m, "sf_model_tensor_lr_scale", name, (size_t)-1, &t));
	SF_CHECK(sf_model_sync(m)); /* the optimizer tasks in flight read the runs */
	/* this rank's part of it (with TP, its slice) */
	struct _sf_unit_desc d;
	_sf_unit_describe(m, t.unit, &d);
	SF_CHECK(_sf_unit_lr_scale(m, t.unit, t.loff - d.off, t.lcount, scale));
	return SF_OK;
}
