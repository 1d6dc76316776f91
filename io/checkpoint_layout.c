/*
 * checkpoint_layout.c — what a checkpoint's writer and reader agree on about a model:
 * its vectors per unit and their names, its units' names, the structure hash that says
 * two models are interchangeable, and where rank r's file is. Both sides call it; it
 * calls neither (the format: io/checkpoint.h).
 */
#include "io/checkpoint.h"
#include "io/manifest.h"
#include "scheduler/model_access.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int _sf_ckpt_nvectors(const struct sf_model *m)
{
	int k = 0;
	for (int v = SF_VEC_PARAM; v <= SF_VEC_V; v++)
		k += _sf_vec_exists(m, (enum _sf_vec)v);
	return k;
}

const char *_sf_ckpt_unit_name(const struct sf_model *m, int u)
{
	struct _sf_unit_desc d;
	_sf_unit_describe(m, u, &d);
	return d.name;
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

void _sf_ckpt_structure_hash(const struct sf_model *m, bool legacy, char out[17])
{
	uint64_t h = 0xcbf29ce484222325ull;
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	fnv_u64(&h, (uint64_t)g.nnodes);
	for (int n = 0; n < g.nnodes; n++) {
		struct _sf_node_desc d;
		_sf_node_describe(m, n, &d);
		const struct _sf_node *nd = d.node;
		fnv_u64(&h, (uint64_t)nd->kind);
		/* the parameters' layout, not the type: the linear types are one (layers/layer.h,
		 * layout); checkpoints before 2026-11-28 hashed the type's own name (legacy) */
		const char *tn = "";
		if (nd->kind == SF_NODE_LAYER && nd->type)
			tn = legacy ? nd->type->name : nd->type->layout;
		fnv_str(&h, tn);
		fnv_str(&h, nd->name);
		/* the whole layer's (with SHARDFLOW_TP the node holds this rank's slice) */
		fnv_u64(&h, (uint64_t)(int64_t)d.whole.out_dim);
		fnv_u64(&h, (uint64_t)d.whole.nparams);
		fnv_u64(&h, (uint64_t)nd->nin);
		for (int i = 0; i < nd->nin; i++)
			fnv_u64(&h, (uint64_t)(int64_t)nd->in[i]);
		/* units and tied parameters (absent from older graphs: their hash holds) */
		if (nd->group >= 0 || nd->tied_to >= 0) {
			fnv_u64(&h, (uint64_t)(int64_t)nd->group);
			fnv_u64(&h, (uint64_t)(int64_t)nd->tied_to);
		}
	}
	if (g.T != 1)
		fnv_u64(&h, (uint64_t)g.T);
	snprintf(out, 17, "%016" PRIx64, h);
}
