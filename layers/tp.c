/*
 * tp.c — tensor parallelism's shapes: what a node's kernels see on one rank of a TP
 * group of K, and its slice of the whole layer's parameters.
 *
 * An activation is whole (every TP rank holds all its columns) or split (rank r holds
 * its slice: the columns of its output rows of a linear_col, each of the layer's
 * nparts blocks in turn). linear_col takes a whole input and splits; the ops that act
 * on columns independently (element-wise ones, attention and rope on whole heads)
 * keep the split; linear_row takes it back to whole (its partial outputs summed over the
 * group); embedding_vp holds a slice of W's rows and its partial lookups are summed
 * as a linear_row's outputs, and a linear_nobias head tied to it reads those rows as a
 * linear_col would (its output split); the cross-entropy loss takes split logits as
 * they are (the vocabulary-parallel loss, layers/xent_vp.h: each rank holds ceil(V / K)
 * classes, _sf_tp_vocab_slice; a vocabulary K does not divide is padded, the padding
 * internal to these three). Every other op needs whole inputs, and a split width that
 * divides by K. The graph holds whole widths; these rules run at sf_model_create,
 * once per node in creation (topological) order.
 */
#include "config.h"

#include "layers/layer.h"
#include "shardflow.h"

#include <string.h>

/* The blocks of linear_col's rows: its config's nparts (at least 1) */
static int col_parts(const struct _sf_node *nd)
{
	const struct sf_linear_tp_config *c = nd->config;
	return c->nparts > 1 ? c->nparts : 1;
}

/* Block k's rows in the whole layer: its part_rows, or an equal share */
static size_t col_block(const struct _sf_node *nd, int k)
{
	const struct sf_linear_tp_config *c = nd->config;
	return (size_t)(c->part_rows[0] ? c->part_rows[k] : c->out_dim / col_parts(nd));
}

static int heads_split(const struct _sf_node *nd, int K)
{
	int h, kv;
	if (nd->config_size == sizeof(int)) {
		h = kv = *(const int *)nd->config;
	} else {
		const struct sf_attention_config *c = nd->config;
		h = c->heads, kv = c->kv_heads;
	}
	if (h % K != 0 || kv % K != 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: node \"%s\" (%s): its %d heads and %d key/value "
		              "heads must be "
		              "divisible by SHARDFLOW_TP=%d (each TP rank computes whole heads)",
		              nd->name, nd->type->name, h, kv, K);
	return SF_OK;
}

/* the node whose parameters n reads (registry.c's _sf_node_param_owner; here so that
 * this file's rules stand alone, as tests/test_tp links them) */
static int owner_of(const struct _sf_node *nodes, int n)
{
	return nodes[n].tied_to >= 0 ? nodes[n].tied_to : n;
}

struct _sf_vocab_slice _sf_tp_vocab_slice(int V, int K, int r)
{
	struct _sf_vocab_slice s = {.rows = (V + K - 1) / K};
	s.first = r * s.rows;
	s.valid = V - s.first < s.rows ? V - s.first : s.rows;
	if (s.valid < 0)
		s.valid = 0;
	return s;
}

bool _sf_tp_tied_vocab(const struct _sf_node *nodes, int n)
{
	const struct _sf_node *nd = &nodes[n];
	if (nd->kind != SF_NODE_LAYER || nd->tied_to < 0)
		return false;
	const struct _sf_node *own = &nodes[owner_of(nodes, n)];
	return own->kind == SF_NODE_LAYER && own->type->tp == SF_TP_VOCAB;
}

bool _sf_tp_vocab_parallel_loss(const struct _sf_node *nodes, int n)
{
	const struct _sf_node *nd = &nodes[n];
	return nd->kind == SF_NODE_LOSS && nd->nin == 2 && nodes[nd->in[1]].kind == SF_NODE_LABELS;
}

/* The refusals every kind shares: a split input where the node needs it whole, a
 * tied TP layer, a split width that does not divide by K */
static int check_inputs(const struct _sf_node *nodes, int n, int K, enum _sf_tp_kind kind,
                        const bool *in_split, const int *in_local)
{
	const struct _sf_node *nd = &nodes[n];
	int nin = nd->kind == SF_NODE_LAYER || nd->kind == SF_NODE_LOSS ? nd->nin : 0;
	const char *type = nd->kind == SF_NODE_LAYER ? nd->type->name : "loss";
	for (int i = 0; i < nin; i++)
		if (in_split[i] && kind != SF_TP_ELEMENTWISE && kind != SF_TP_HEADS &&
		    kind != SF_TP_ROPE && kind != SF_TP_ROW &&
		    !(i == 0 && _sf_tp_vocab_parallel_loss(nodes, n)))
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_model_create: node \"%s\" (%s) reads \"%s\", which is split "
			    "over the %d TP ranks "
			    "(a linear_col's output, or an op after it); a %s needs it "
			    "whole: end the split with a linear_row first",
			    nd->name, type, nodes[nd->in[i]].name, K, type);
	if (nd->tied_to >= 0 &&
	    (kind == SF_TP_COL || kind == SF_TP_ROW || kind == SF_TP_VOCAB))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: node \"%s\" (%s): a tensor-parallel layer cannot "
		              "share another "
		              "node's parameters (tied)",
		              nd->name, type);
	if (_sf_tp_tied_vocab(nodes, n) && strcmp(type, "linear_nobias") != 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: node \"%s\" (%s) is tied to \"%s\" (embedding_vp), "
		              "whose rows are split over the %d TP ranks: only a linear_nobias "
		              "head may read them (its columns of the logits)",
		              nd->name, type, nodes[owner_of(nodes, n)].name, K);
	for (int i = 0; i < nin; i++) /* a vocabulary-parallel loss's logits may be padded */
		if (in_split[i] && in_local[i] % K != 0 &&
		    !(i == 0 && _sf_tp_vocab_parallel_loss(nodes, n)))
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_model_create: node \"%s\": input width %d is not divisible "
			    "by SHARDFLOW_TP=%d",
			    nd->name, in_local[i], K);
	return SF_OK;
}

int _sf_tp_local(const struct _sf_node *nodes, int n, int K, const bool *in_split, int *in_local,
                 int *out_local, size_t *np_local, bool *out_split)
{
	const struct _sf_node *nd = &nodes[n];
	int nin = nd->kind == SF_NODE_LAYER || nd->kind == SF_NODE_LOSS ? nd->nin : 0;
	bool any = false, all = true;
	for (int i = 0; i < nin; i++)
		any |= in_split[i], all &= in_split[i];
	*out_local = nd->dim;
	*np_local = nd->nparams;
	*out_split = false;
	if (K == 1)
		return SF_OK;
	enum _sf_tp_kind kind = nd->kind == SF_NODE_LAYER ? nd->type->tp : SF_TP_NONE;
	const char *type = nd->kind == SF_NODE_LAYER ? nd->type->name : "loss";
	if (check_inputs(nodes, n, K, kind, in_split, in_local) < 0)
		return SF_ERR_INVALID;
	for (int i = 0; i < nin; i++) /* ceil: a padded vocabulary's; the rest divide */
		if (in_split[i])
			in_local[i] = (in_local[i] + K - 1) / K;
	if (_sf_tp_tied_vocab(nodes, n)) { /* the embedding's rows: as a linear_col */
		*out_split = true;
		*out_local = _sf_tp_vocab_slice(nd->dim, K, 0).rows;
		*np_local = (size_t)*out_local * (size_t)in_local[0];
		return SF_OK;
	}
	switch (kind) {
	case SF_TP_NONE: return SF_OK;
	case SF_TP_ELEMENTWISE:
		if (any && !all)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_model_create: node \"%s\" (%s) joins inputs split over "
			              "the %d TP ranks with "
			              "whole ones; its inputs must all be split or all whole",
			              nd->name, type, K);
		*out_split = any;
		*out_local = any ? nd->dim / K : nd->dim;
		return SF_OK;
	case SF_TP_ROPE: {
		if (!any)
			return SF_OK;
		const struct sf_rope_config *c = nd->config;
		if (c->rotated % (c->head_dim * K) != 0)
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_model_create: node \"%s\" (rope): its %d rotated heads of %d "
			    "must be divisible by SHARDFLOW_TP=%d (each TP rank rotates whole "
			    "heads)",
			    nd->name, c->rotated / c->head_dim, c->head_dim, K);
		*out_split = true;
		*out_local = nd->dim / K;
		return SF_OK;
	}
	case SF_TP_HEADS:
		if (!any)
			return SF_OK;
		if (heads_split(nd, K) < 0)
			return SF_ERR_INVALID;
		*out_split = true;
		*out_local = nd->dim / K;
		return SF_OK;
	case SF_TP_COL: {
		const struct sf_linear_tp_config *c = nd->config;
		int parts = col_parts(nd);
		for (int k = 0; k < parts; k++)
			if (col_block(nd, k) % (size_t)K != 0)
				return SF_ERR(
				    SF_ERR_INVALID,
				    "sf_model_create: node \"%s\" (linear_col): out_dim %d in "
				    "%d block(s) does not split over SHARDFLOW_TP=%d ranks (block "
				    "%d's %zu rows: each block's rows must be divisible by it)",
				    nd->name, c->out_dim, parts, K, k, col_block(nd, k));
		/* gather_output: the activation whole (the kernel's own width stays O / K) */
		int L = c->out_dim / K;
		*out_split = !c->gather_output;
		*out_local = c->gather_output ? c->out_dim : L;
		*np_local = (size_t)L * (size_t)in_local[0] + (c->bias ? (size_t)L : 0);
		return SF_OK;
	}
	case SF_TP_VOCAB: /* in_local[0]: the id range V, padded to K ceil(V / K) rows */
		*np_local = (size_t)_sf_tp_vocab_slice(in_local[0], K, 0).rows * (size_t)nd->dim;
		return SF_OK;
	case SF_TP_ROW: {
		const struct sf_linear_tp_config *c = nd->config;
		if (!in_split[0])
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_model_create: node \"%s\" (linear_row) reads \"%s\", which is "
			    "whole; a "
			    "linear_row takes a split input (a linear_col's output, or an "
			    "op after it)",
			    nd->name, nodes[nd->in[0]].name);
		*np_local =
		    (size_t)c->out_dim * (size_t)in_local[0] + (c->bias ? (size_t)c->out_dim : 0);
		return SF_OK;
	}
	}
	return SF_OK;
}

int _sf_tp_col_runs(const struct _sf_node *nd, int K, int r, struct _sf_tp_run *runs)
{
	size_t first = 0, local = 0;
	int n = col_parts(nd);
	for (int k = 0; k < n; k++) {
		size_t q = col_block(nd, k) / (size_t)K;
		runs[k] = (struct _sf_tp_run){local, first + (size_t)r * q, q};
		local += q;
		first += col_block(nd, k);
	}
	return n;
}

void _sf_tp_params(const struct _sf_node *nd, const struct sf_layer_info *whole_info, int K, int r,
                   float *whole, float *local, bool to_local)
{
	size_t I = (size_t)whole_info->in_dim[0], O = (size_t)whole_info->out_dim;
	enum _sf_tp_kind kind = nd->kind == SF_NODE_LAYER ? nd->type->tp : SF_TP_NONE;
	if (kind == SF_TP_VOCAB && K > 1) { /* rank r's rows of W; its padding held at 0 */
		struct _sf_vocab_slice v = _sf_tp_vocab_slice(whole_info->in_range[0], K, r);
		size_t row = (size_t)whole_info->out_dim, n = (size_t)v.valid * row;
		float *w = whole + (size_t)v.first * row;
		memcpy(to_local ? local : w, to_local ? w : local, n * sizeof(float));
		if (to_local)
			memset(local + n, 0, (size_t)(v.rows - v.valid) * row * sizeof(float));
		return;
	}
	if (K == 1 || (kind != SF_TP_COL && kind != SF_TP_ROW)) {
		if (to_local)
			memcpy(local, whole, whole_info->nparams * sizeof(float));
		else
			memcpy(whole, local, whole_info->nparams * sizeof(float));
		return;
	}
	bool bias = whole_info->nparams > O * I;
	if (kind == SF_TP_COL) { /* block k's q = rows / K local rows: its rows r q .. */
		size_t rows = O / (size_t)K, j = 0, first = 0;
		for (int k = 0; k < col_parts(nd); k++) {
			size_t q = col_block(nd, k) / (size_t)K;
			for (size_t i = 0; i < q; i++, j++) {
				size_t src = first + (size_t)r * q + i;
				float *w = whole + src * I, *l = local + j * I;
				memcpy(to_local ? l : w, to_local ? w : l, I * sizeof(float));
				if (bias) {
					float *wb = whole + O * I + src, *lb = local + rows * I + j;
					*(to_local ? lb : wb) = *(to_local ? wb : lb);
				}
			}
			first += col_block(nd, k);
		}
		return;
	}
	size_t c = I / (size_t)K; /* linear_row: each row's columns [r c, r c + c) */
	for (size_t o = 0; o < O; o++) {
		float *w = whole + o * I + (size_t)r * c, *l = local + o * c;
		memcpy(to_local ? l : w, to_local ? w : l, c * sizeof(float));
	}
	if (bias)
		memcpy(to_local ? local + O * c : whole + O * I,
		       to_local ? whole + O * I : local + O * c, O * sizeof(float));
}
