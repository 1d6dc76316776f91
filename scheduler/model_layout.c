/*
 * model_layout.c — a model's layout: what its nodes and units are, before any buffer.
 *
 * The graph's nodes, copied and given this rank's shapes (with SHARDFLOW_TP, each
 * node's slice, layers/tp.c, the whole shapes kept beside them), the infos their
 * kernels receive and their tasks' names; each unit's geometry (P, its shard
 * S = ceil(P / N) and this rank's block of it, its offsets in the model's vector and in
 * the whole model's), its collectives' arguments, its tasks' names, its optimizer runs
 * (parameter groups, learning-rate scales) and, with TP, the runs of its gradient this
 * rank counts in the norm; tensor parallelism's plan of all-reduces. Sizes and plain
 * tables only: scheduler/model_storage.c allocates and registers on them, and calls
 * here; nothing here calls it.
 */
#include "config.h"

#include "scheduler/model_layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- units --------------------------------------------------------------------- */

/* The sharding a unit's storage follows: hybrid shards as full does, inside a node */
enum sf_sharding _sf_unit_sharding(const struct sf_model *m)
{
	return m->cfg.sharding == SF_SHARD_HYBRID ? SF_SHARD_FULL : m->cfg.sharding;
}

void _sf_unit_block(const struct sf_model *m, int u, size_t *lo, size_t *n)
{
	const struct _sf_unit *un = &m->units[u];
	size_t b = (size_t)m->shard_rank * un->S;
	*lo = b < un->P ? b : un->P;
	*n = un->P - *lo < un->S ? un->P - *lo : un->S;
}

/* A task's name, as trace/event.h reads it: the graph's own names, and the index of the
 * node (for a unit, its first reader) that pairs a unit's gather with the forward
 * waiting for it. A line break of a user's name becomes a blank: FxT's tasks.rec holds
 * a field a line. */
static void task_name(char *buf, size_t len, const char *kind, const char *name, const char *type,
                      int index)
{
	if (type)
		snprintf(buf, len, "%s %s (%s L%d)", kind, name, type, index);
	else
		snprintf(buf, len, "%s %s (L%d)", kind, name, index);
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

static void unit_names(struct _sf_unit *u)
{
	task_name(u->gather_name, sizeof u->gather_name, "gather", u->name, NULL, u->first);
	task_name(u->rs_name, sizeof u->rs_name, "rs", u->name, NULL, u->first);
	task_name(u->opt_name, sizeof u->opt_name, "opt", u->name, NULL, u->first);
	task_name(u->free_name, sizeof u->free_name, "free", u->name, NULL, u->first);
	task_name(u->ag_name, sizeof u->ag_name, "ag", u->name, NULL, u->first);
	task_name(u->acc_name, sizeof u->acc_name, "acc", u->name, NULL, u->first);
	task_name(u->sq_name, sizeof u->sq_name, "sqnorm", u->name, NULL, u->first);
	task_name(u->ar_name, sizeof u->ar_name, "ar", u->name, NULL, u->first);
}

/* The parameter-group kind of a node's tensor (SF_NO_DECAY_*), 0: it decays. */
static unsigned tensor_kind(const struct _sf_node *nd, const struct sf_param_tensor *t)
{
	const char *type = nd->type->name;
	if (!strcmp(type, "layernorm") || !strcmp(type, "rmsnorm"))
		return SF_NO_DECAY_NORM;
	if (!strcmp(type, "embedding") || !strcmp(type, "embedding_vp") ||
	    !strcmp(type, "pos_embedding"))
		return SF_NO_DECAY_EMBED;
	if (nd->type->type.param_tensors && t->ndim == 1)
		return SF_NO_DECAY_BIAS;
	return 0;
}

/* A tensor's run of a unit's optimizer vector, before the runs are tiled */
struct group_run {
	size_t b, e;
	float lr_scale;
	int decay;
};

static int cmp_run(const void *a, const void *b)
{
	const struct group_run *x = a, *y = b;
	return x->b < y->b ? -1 : x->b > y->b;
}

static float lr_scale_of(const struct _sf_unit *un, size_t off)
{
	for (int i = 0; i < un->nlr; i++)
		if (un->lr[i].off == off)
			return un->lr[i].scale;
	return 1.0f;
}

/* Appends [b, e) with its attributes to the runs (merged with the last when alike) */
static void push_run(struct _sf_unit *un, size_t e, float lr_scale, int decay)
{
	struct _sf_opt_run *last = un->nruns ? &un->runs[un->nruns - 1] : NULL;
	if (last && last->lr_scale == lr_scale && last->decay == decay)
		last->end = e;
	else
		un->runs[un->nruns++] = (struct _sf_opt_run){e, lr_scale, decay};
}

/* Unit u's optimizer runs (struct _sf_opt_run) over its optimizer vector (its shard,
 * or all of it when replicated): each tensor's weight decay (sf_model_options::no_decay)
 * and learning-rate scale, the rest (padding) decayed at scale 1; alike runs merged. */
int _sf_unit_opt_runs(struct sf_model *m, int u)
{
	struct _sf_unit *un = &m->units[u];
	size_t lo = m->cfg.sharding == SF_SHARD_NONE ? 0 : (size_t)m->shard_rank * un->S;
	size_t hi = lo + un->opt_n, cap = 1;
	int nr = 0;
	for (int n = un->first; n <= un->last; n++)
		cap += SF_MAX_PARAM_TENSORS;
	struct group_run *r = malloc(cap * sizeof *r);
	free(un->runs);
	un->nruns = 0;
	un->runs = malloc(2 * cap * sizeof *un->runs);
	if (!r || !un->runs) {
		free(r);
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	}
	for (int n = un->first; n <= un->last; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		const struct sf_layer_info *li = &m->nodes[n].info;
		if (m->nodes[n].unit != u || nd->tied_to >= 0 || nd->kind != SF_NODE_LAYER)
			continue;
		struct sf_param_tensor t[SF_MAX_PARAM_TENSORS];
		int nt = _sf_node_param_tensors(nd, li, t);
		for (int i = 0; i < nt; i++) {
			size_t b = li->param_offset + t[i].offset;
			size_t e = b + t[i].shape[0] * (t[i].ndim == 2 ? t[i].shape[1] : 1);
			float scale = lr_scale_of(un, b);
			b = b > lo ? b : lo;
			e = e < hi ? e : hi;
			if (e > b)
				r[nr++] = (struct group_run){b - lo, e - lo, scale,
				                             !(tensor_kind(nd, &t[i]) & m->opt.no_decay)};
		}
	}
	qsort(r, (size_t)nr, sizeof *r, cmp_run);
	size_t at = 0;
	for (int i = 0; i < nr; i++) {
		if (r[i].b > at) /* not a named tensor's (a type without names tiles it all) */
			push_run(un, r[i].b, 1.0f, 1);
		push_run(un, r[i].e, r[i].lr_scale, r[i].decay);
		at = r[i].e;
	}
	push_run(un, un->opt_n, 1.0f, 1); /* the padding, or all of an empty vector */
	free(r);
	return SF_OK;
}

int _sf_unit_set_lr_scale(struct sf_model *m, int u, size_t off, size_t count, float scale)
{
	struct _sf_unit *un = &m->units[u];
	int i = 0;
	while (i < un->nlr && un->lr[i].off != off)
		i++;
	if (i == un->nlr) {
		struct _sf_lr_range *l = realloc(un->lr, (size_t)(un->nlr + 1) * sizeof *l);
		if (!l)
			return SF_ERR(SF_ERR_NOMEM, "sf_model_tensor_lr_scale: out of memory");
		un->lr = l;
		un->nlr++;
	}
	un->lr[i] = (struct _sf_lr_range){off, count, scale};
	return _sf_unit_opt_runs(m, u);
}

/* Node n's info with the whole layer's shapes (its graph's), for its initialisation
 * and its tensors' whole names and shapes */
void _sf_node_whole_info(const struct sf_model *m, int n, struct sf_layer_info *li)
{
	const struct _sf_node *nd = &m->gnodes[n];
	*li = m->nodes[n].info;
	for (int i = 0; i < li->nin; i++)
		if (!li->in_int[i])
			li->in_dim[i] = m->nodes[nd->in[i]].whole_dim;
	li->out_dim = m->nodes[n].whole_dim;
	li->nparams = m->nodes[n].whole_nparams;
	li->tp_split = 0;
}

/* Appends [lo, hi) of the unit's vector, within the window [wlo, whi) this rank
 * counts, to its runs, as runs of the buffer the norm reads (element `base` of the
 * vector at its element 0); an empty intersection adds nothing, and a run touching
 * the previous one joins it. */
static void tp_seg_add(struct _sf_unit *u, size_t lo, size_t hi, size_t wlo, size_t whi,
                       size_t base)
{
	lo = lo > wlo ? lo : wlo;
	hi = hi < whi ? hi : whi;
	if (lo >= hi)
		return;
	struct _sf_seg *last = u->nsq_segs ? &u->sq_segs[u->nsq_segs - 1] : NULL;
	if (last && last->off + last->n == lo - base) {
		last->n += hi - lo;
		return;
	}
	u->sq_segs[u->nsq_segs++] = (struct _sf_seg){lo - base, hi - lo};
}

/* Clipping with TP: the runs of unit k's gradient this rank counts in the global norm.
 * A linear_col's parameters, a linear_row's weight and an embedding_vp's rows are this
 * TP rank's slice (each counted by its own rank; a padded vocabulary's padding rows by
 * none); the rest (a row's bias, the norms, embeddings) every TP
 * rank holds alike, and only TP rank 0 counts it. Within this rank's shard, or its
 * block of the unit (sharding none), as the sqnorm task reads it; the sums' buffer and
 * handle are model_storage.c's (_sf_sq_register). */
static int tp_norm_segs(struct sf_model *m, int k)
{
	struct _sf_unit *u = &m->units[k];
	size_t wlo, wn, base = 0; /* sharding none: the unit's whole gradient is read */
	if (m->cfg.sharding == SF_SHARD_NONE)
		_sf_unit_block(m, k, &wlo, &wn);
	else
		wlo = base = (size_t)m->shard_rank * u->S, wn = u->S;
	size_t whi = wlo + wn, nodes = (size_t)(u->last - u->first + 1);
	u->sq_segs = calloc(2 * nodes + 1, sizeof *u->sq_segs);
	if (!u->sq_segs)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	for (int n = u->first; n <= u->last; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		const struct sf_layer_info *li = &m->nodes[n].info;
		if (m->nodes[n].unit != k || nd->tied_to >= 0 || !nd->nparams)
			continue;
		size_t lo = li->param_offset, hi = lo + nd->nparams, mine = lo;
		enum _sf_tp_kind kind = nd->type->tp;
		if (kind == SF_TP_VOCAB) { /* its rows below V: a padded vocabulary's never count */
			int valid = _sf_tp_vocab_slice(li->in_range[0], m->tp, m->tp_rank).valid;
			hi = mine = lo + (size_t)valid * (size_t)li->out_dim;
		}
		else if (kind == SF_TP_COL)
			mine = hi;
		else if (kind == SF_TP_ROW)
			mine = lo + (size_t)li->out_dim * (size_t)li->in_dim[0];
		tp_seg_add(u, lo, mine, wlo, whi, base);
		if (m->tp_rank == 0)
			tp_seg_add(u, mine, hi, wlo, whi, base);
	}
	if (u->nsq_segs == 0) /* nothing counted here: one empty run, sum 0 */
		u->sq_segs[u->nsq_segs++] = (struct _sf_seg){0, 0};
	return SF_OK;
}

/* The geometry, names and collective arguments of unit u (its P and nodes were
 * planned by plan.c); its storage comes after the memory check (model_storage.c). */
static int size_unit(struct sf_model *m, int k, size_t *off)
{
	enum sf_sharding sh = _sf_unit_sharding(m);
	size_t N = (size_t)m->shard_size;
	struct _sf_unit *u = &m->units[k];
	u->S = (u->P + N - 1) / N;
	if (u->vocab_rows) { /* whole rows of the vocabulary a shard (scheduler/vocabdp.c) */
		size_t C = u->vocab_row_len, rows = (u->P / C + N - 1) / N;
		u->S = rows * C;
	}
	u->off = *off;
	*off += u->P;
	if (u->P > m->largest_P)
		m->largest_P = u->P;
	if (u->S * N > m->largest_NS)
		m->largest_NS = u->S * N;
	if ((uint64_t)u->S * N > INT32_MAX)
		return SF_ERR(SF_ERR_INVALID,
		              "unit \"%s\": %zu parameters is more than one collective can carry",
		              u->name, u->P);
	u->opt_n = sh == SF_SHARD_NONE ? u->P : u->S;
	u->comm = (struct _sf_comm_args){
	    .comm = m->comm,
	    .unit = u->name,
	    .acct = &m->comm_acct,
	    .P = u->P,
	    .S = u->S,
	    .resident = sh == SF_SHARD_FULL ? &m->resident : NULL,
	    .max_resident = &m->max_resident,
	};
	unit_names(u);
	if (m->tp > 1)
		return tp_norm_segs(m, k);
	return SF_OK;
}

int _sf_size_units(struct sf_model *m)
{
	size_t off = 0;
	for (int k = 0; k < m->nunits; k++)
		SF_CHECK(size_unit(m, k, &off));
	m->nparams_total = off;
	m->nparams_whole = 0; /* with TP, every rank's slices together */
	for (int k = 0; k < m->nunits; k++) {
		struct _sf_unit *u = &m->units[k];
		u->woff = m->nparams_whole, u->Pw = 0;
		for (int n = u->first; n <= u->last; n++) {
			if (m->nodes[n].unit != k || m->gnodes[n].tied_to >= 0)
				continue;
			m->nodes[n].wpoff = u->Pw;
			u->Pw += m->nodes[n].whole_nparams;
		}
		m->nparams_whole += u->Pw;
	}
	for (int n = 0; n < m->nnodes; n++) /* a tied node reads its owner's */
		if (m->gnodes[n].tied_to >= 0)
			m->nodes[n].wpoff = m->nodes[_sf_node_param_owner(m->gnodes, n)].wpoff;
	return SF_OK;
}

/* --- nodes --------------------------------------------------------------------- */

static int copy_nodes(struct sf_model *m, const sf_graph *g)
{
	m->nnodes = g->n;
	m->gnodes = calloc((size_t)g->n, sizeof *m->gnodes);
	m->nodes = calloc((size_t)g->n, sizeof *m->nodes);
	m->input_nodes = calloc((size_t)(g->ninputs ? g->ninputs : 1), sizeof(int));
	m->int_input_nodes = calloc((size_t)(g->nint_inputs ? g->nint_inputs : 1), sizeof(int));
	if (!m->gnodes || !m->nodes || !m->input_nodes || !m->int_input_nodes)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	for (int n = 0; n < g->n; n++) {
		m->gnodes[n] = g->nodes[n];
		m->gnodes[n].config = NULL;
		if (g->nodes[n].config_size) {
			m->gnodes[n].config = malloc(g->nodes[n].config_size);
			if (!m->gnodes[n].config)
				return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
			memcpy(m->gnodes[n].config, g->nodes[n].config, g->nodes[n].config_size);
		}
	}
	return SF_OK;
}

/* Tensor parallelism: node n's shapes on this rank (layers/tp.c), its gnodes entry
 * made this rank's (dim, nparams), the whole ones kept; which all-reduces it has. */
static int tp_shapes(struct sf_model *m, int n)
{
	struct _sf_node *nd = &m->gnodes[n];
	struct _sf_node_state *s = &m->nodes[n];
	bool in_split[SF_MAX_INPUTS] = {false};
	int in_local[SF_MAX_INPUTS], out_local;
	size_t np_local;
	int nin = nd->kind == SF_NODE_LAYER || nd->kind == SF_NODE_LOSS ? nd->nin : 0;
	s->whole_dim = nd->dim;
	s->whole_nparams = nd->nparams;
	for (int i = 0; i < nin; i++) { /* the inputs' whole widths (their gnodes hold ours) */
		in_split[i] = m->nodes[nd->in[i]].tp_out_split;
		in_local[i] = m->nodes[nd->in[i]].whole_dim;
	}
	int rc = _sf_tp_local(m->gnodes, n, m->tp, in_split, in_local, &out_local, &np_local,
	                      &s->tp_out_split);
	if (rc < 0)
		return rc; /* tp.c's message names the node */
	nd->dim = out_local;
	bool tied_vocab = m->tp > 1 && _sf_tp_tied_vocab(m->gnodes, n);
	if (nd->tied_to < 0 || tied_vocab) /* a tied head reads its owner's slice */
		nd->nparams = np_local;
	enum _sf_tp_kind kind = nd->kind == SF_NODE_LAYER ? nd->type->tp : SF_TP_NONE;
	/* a loss reading split logits: the vocabulary-parallel cross-entropy */
	if (nd->kind == SF_NODE_LOSS && m->nodes[nd->in[0]].tp_out_split)
		m->vp = true;
	s->tp_fwd_ar = m->tp > 1 && (kind == SF_TP_ROW || kind == SF_TP_VOCAB);
	/* if its input gradient is wanted */
	s->tp_bwd_ar = m->tp > 1 && (kind == SF_TP_COL || tied_vocab);
	s->tp_gather = m->tp > 1 && kind == SF_TP_COL &&
	               ((const struct sf_linear_tp_config *)nd->config)->gather_output;
	if (s->tp_gather) { /* every TP rank's columns */
		s->tp_runs = calloc((size_t)m->tp * SF_MAX_PARAM_TENSORS, sizeof *s->tp_runs);
		if (!s->tp_runs)
			return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
		int nr = 0;
		for (int t = 0; t < m->tp; t++)
			nr = _sf_tp_col_runs(nd, m->tp, t, s->tp_runs + (size_t)t * SF_MAX_PARAM_TENSORS);
		s->tp_gcomm.tp_nruns = nr;
	}
	return SF_OK;
}

/* SHARDFLOW_TP > 1 on a graph without tensor-parallel layers: every TP rank computes
 * the whole model (correct, but the TP ranks only repeat each other): say so; and
 * (SHARDFLOW_LOG=info) that the loss is vocabulary-parallel. */
void _sf_tp_warn_unsplit(const struct sf_model *m, const char *graph)
{
	bool any = false;
	for (int n = 0; n < m->nnodes; n++)
		any |= m->nodes[n].tp_out_split;
	if (m->tp > 1 && !any && m->rank == 0)
		_sf_log(SF_LOG_WARN,
		        "model \"%s\": SHARDFLOW_TP=%d but the graph has no linear_col: every TP "
		        "rank computes the whole model, and the batch is split over %d ranks only "
		        "(sf_gpt_config.tensor_parallel = 1 splits the GPT's blocks)",
		        graph, m->tp, m->dp_size);
	if (m->vp && m->rank == 0)
		_sf_log(SF_LOG_INFO,
		        "model \"%s\": the loss is vocabulary-parallel: each of the %d TP ranks "
		        "holds %d of the %d classes' logits",
		        graph, m->tp, m->nodes[m->gnodes[m->loss_node].in[0]].info.out_dim,
		        m->nodes[m->gnodes[m->loss_node].in[0]].whole_dim);
}

/* Tensor parallelism, once the gradients are planned: a linear_col whose input
 * gradient is wanted writes it (a partial sum) into its own buffer, overwriting; its
 * all-reduce then writes or adds it where the plan said the node would. */
void _sf_tp_plan(struct sf_model *m)
{
	for (int n = 0; n < m->nnodes && m->tp > 1; n++) {
		struct _sf_node_state *s = &m->nodes[n];
		if (s->tp_bwd_ar && !s->bwd_info.need_dinput[0])
			s->tp_bwd_ar = false;
		if (s->tp_bwd_ar) {
			s->tp_comm.tp_acc = s->bwd_info.accumulate[0];
			s->bwd_info.accumulate[0] = 0;
		}
		size_t n_ar = s->tp_fwd_ar   ? (size_t)s->info.out_dim
		              : s->tp_bwd_ar ? (size_t)s->info.in_dim[0]
		                             : 0;
		if (n_ar * m->rows_local > m->tp_max)
			m->tp_max = n_ar * m->rows_local;
		/* a gather's K local outputs, side by side in the scratch */
		if (s->tp_gather && (size_t)s->whole_dim * m->rows_local > m->tp_max)
			m->tp_max = (size_t)s->whole_dim * m->rows_local;
	}
	/* the vocabulary-parallel loss's all-gather: K ranks' partials, 3 floats a row */
	size_t vp = (size_t)m->tp * m->rows_local * SF_XENT_VP_STATS;
	if (m->vp && vp > m->tp_max)
		m->tp_max = vp;
}

static void fill_info(struct sf_model *m, int n)
{
	const struct _sf_node *nd = &m->gnodes[n];
	struct sf_layer_info *li = &m->nodes[n].info;
	li->rows = (int)m->rows_local;
	li->samples = m->B_local;
	li->seq_len = m->T;
	li->nin = nd->kind == SF_NODE_LAYER ? nd->nin : 0;
	for (int i = 0; i < li->nin; i++) {
		const struct _sf_node *x = &m->gnodes[nd->in[i]];
		li->in_int[i] = x->kind == SF_NODE_INT_INPUT;
		li->in_dim[i] = li->in_int[i] ? 1 : x->dim;
		li->in_range[i] = li->in_int[i] ? x->dim : 0;
	}
	li->out_dim = nd->dim;
	li->nparams = nd->nparams;
	li->config = nd->config;
	li->config_size = nd->config_size;
	li->layer_index = n;
	li->tp_size = m->tp;
	li->tp_rank = m->tp_rank;
	/* a sample's rows' positions: with SHARDFLOW_CP this rank's two chunks */
	int c = m->T / 2;
	li->cp_size = m->cp;
	li->pos_n0 = m->cp > 1 ? c : m->T;
	li->pos_p0 = m->cp > 1 ? m->cp_rank * c : 0;
	li->pos_p1 = m->cp > 1 ? (2 * m->cp - 1 - m->cp_rank) * c : 0;
	li->tp_split = m->nodes[n].tp_out_split ||
	               (m->tp > 1 && nd->kind == SF_NODE_LAYER && nd->type->tp == SF_TP_VOCAB);
	for (int i = 0; i < li->nin; i++)
		li->tp_split |= m->nodes[nd->in[i]].tp_out_split;
	if (nd->kind == SF_NODE_LAYER && nd->type->type.saved_floats)
		li->nsaved = nd->type->type.saved_floats(li);
}

/* A node's shape, names and place among the inputs (its buffers: model_storage.c). */
static int build_node(struct sf_model *m, int n)
{
	struct _sf_node *nd = &m->gnodes[n];
	struct _sf_node_state *s = &m->nodes[n];
	int rc = tp_shapes(m, n);
	if (rc < 0)
		return rc;
	fill_info(m, n);
	if (s->tp_gather) /* its activation is whole; its kernels compute O / K columns */
		s->info.out_dim = s->whole_dim / m->tp;
	if (nd->kind == SF_NODE_INPUT)
		m->input_nodes[m->ninputs++] = n;
	if (nd->kind == SF_NODE_INT_INPUT)
		m->int_input_nodes[m->nint_inputs++] = n;
	const char *type = nd->kind == SF_NODE_LAYER ? nd->type->name : "input";
	task_name(s->fwd_name, sizeof s->fwd_name, "fwd", nd->name, type, n);
	task_name(s->bwd_name, sizeof s->bwd_name, "bwd", nd->name, type, n);
	task_name(s->rc_name, sizeof s->rc_name, "recompute", nd->name, type, n);
	/* a split backward's weight-gradient half (scheduler/plan.c): "bwd <name>.dW (...)" */
	char dw[SF_NAME_MAX + 4];
	snprintf(dw, sizeof dw, "%s.dW", nd->name);
	task_name(s->dw_name, sizeof s->dw_name, "bwd", dw, type, n);
	task_name(s->tp_name, sizeof s->tp_name, "tp_ar", nd->name, type, n);
	task_name(s->tp_ag_name, sizeof s->tp_ag_name, "tp_ag", nd->name, type, n);
	task_name(s->tp_sl_name, sizeof s->tp_sl_name, "tp_slice", nd->name, type, n);
	task_name(s->sp_rs_name, sizeof s->sp_rs_name, "tp_rs", nd->name, type, n);
	return SF_OK;
}

int _sf_build_nodes(struct sf_model *m, const sf_graph *g)
{
	SF_CHECK(copy_nodes(m, g));
	for (int n = 0; n < g->n; n++)
		SF_CHECK(build_node(m, n));
	return SF_OK;
}

int _sf_check_graph(const sf_graph *g)
{
	if (!g)
		return SF_ERR(SF_ERR_INVALID, "sf_model_create: graph is NULL");
	if (g->loss < 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: graph \"%s\" has no loss (end it with "
		              "sf_graph_softmax_cross_entropy)",
		              g->name);
	if (g->open_group >= 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: unit \"%s\" of graph \"%s\" is still open "
		              "(sf_graph_unit_end)",
		              g->group_names[g->open_group], g->name);
	return SF_OK;
}

void _sf_layout_release(struct sf_model *m)
{
	free(m->recomp_bufs);
	free(m->seg_of);
	for (int n = 0; m->nodes && n < m->nnodes; n++)
		if (m->nodes[n].recomp_buf < 0) {
			free(m->nodes[n].tp_runs);
			free(m->nodes[n].sp_runs);
		}
	for (int i = 0; m->units && i < m->nunits; i++) {
		free(m->units[i].sq_segs);
		free(m->units[i].runs);
		free(m->units[i].lr);
	}
	for (int n = 0; m->gnodes && n < m->nnodes; n++)
		free(m->gnodes[n].config);
	free(m->gnodes);
	free(m->nodes);
	free(m->input_nodes);
	free(m->int_input_nodes);
	free(m->units);
	free(m->bwd_order);
	free(m->fwd_order);
}
