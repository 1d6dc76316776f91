/*
 * seqpar.c — sequence parallelism's plan (SHARDFLOW_SEQUENCE_PARALLEL=on, under
 * SHARDFLOW_TP=K): which nodes run on a TP rank's slice of the rows, and the
 * collectives that move rows between them and the whole-row nodes.
 *
 * Megatron's sequence parallelism, on our row-major activations: the R = B_local T
 * rows of a TP group are cut in K contiguous slices, rank r holding rows
 * [r R/K, (r+1) R/K). A node is row-split (struct _sf_node_state::sp) when it is a
 * linear_row or an embedding_vp (their partial outputs reduce-scattered over rows
 * instead of all-reduced), or an op computing each row from its input rows alone (the
 * norms and element-wise ops: _sf_layer_entry::rows_alone) that reads a row-split node
 * or only layers. Its activation, gradient and saved buffer are R/K rows. Around them:
 * a linear_col (or a head tied to an embedding_vp) reading a row-split node all-gathers
 * its rows first (forward, and again before its backward) and reduce-scatters its
 * partial input gradient; a linear_row all-gathers its output's gradient before its
 * backward; a whole layer read by row-split nodes (the embeddings' outputs) gives them
 * its rows (a copy) and takes their gradients all-gathered; a row-split node read by
 * other whole layers (a replicated head) all-gathers its rows for them and takes its
 * rows of their gradient (a copy: they compute it alike on every TP rank); a row-split
 * node's
 * parameters (a norm's) get gradients over its rows only, all-reduced over the TP
 * group after its backward. Any other meeting of row-split and whole is refused,
 * naming the nodes. Sizes and flags only: model_storage.c allocates on them and
 * step.c submits the tasks.
 */
#include "config.h"

#include "scheduler/seqpar.h"

#include <stdlib.h>
#include <string.h>

static const char *type_of(const struct _sf_node *nd)
{
	return nd->kind == SF_NODE_LAYER  ? nd->type->name
	       : nd->kind == SF_NODE_LOSS ? "loss"
	                                  : "input";
}

/* A node that takes a row-split input by all-gathering it: a linear_col, or the head
 * tied to an embedding_vp (which computes as one) */
static bool gathers_input(const struct sf_model *m, int n)
{
	const struct _sf_node *nd = &m->gnodes[n];
	return nd->kind == SF_NODE_LAYER &&
	       (nd->type->tp == SF_TP_COL || _sf_tp_tied_vocab(m->gnodes, n));
}

static int refuse_config(const struct sf_model *m)
{
	const char *other = m->cfg.recompute != SF_RECOMPUTE_NONE ? "SHARDFLOW_RECOMPUTE"
	                    : m->pp_size > 1                      ? "SHARDFLOW_PP"
	                    : m->cfg.split_backward               ? "SHARDFLOW_SPLIT_BACKWARD"
	                                                          : NULL;
	if (m->tp == 1)
		return SF_ERR(
		    SF_ERR_INVALID,
		    "SHARDFLOW_SEQUENCE_PARALLEL=on needs tensor parallelism: it splits "
		    "the rows between a TP group's ranks, and SHARDFLOW_TP is 1 (accepted: "
		    "SHARDFLOW_TP > 1, or SHARDFLOW_SEQUENCE_PARALLEL=off)");
	if (other)
		return SF_ERR(SF_ERR_INVALID,
		              "SHARDFLOW_SEQUENCE_PARALLEL=on is not supported with %s yet "
		              "(accepted: one or the other)",
		              other);
	if (!m->comm->ops->tp_reduce_scatter)
		return SF_ERR(
		    SF_ERR_INVALID,
		    "SHARDFLOW_SEQUENCE_PARALLEL=on: the %s backend has no tensor-parallel "
		    "reduce-scatter (accepted: SHARDFLOW_COMM=mpi or nccl)",
		    m->comm->ops->name);
	if (m->rows_local % (size_t)m->tp != 0)
		return SF_ERR(SF_ERR_INVALID,
		              "SHARDFLOW_SEQUENCE_PARALLEL=on: a rank's %zu rows (%d samples of %d "
		              "tokens) do not divide by SHARDFLOW_TP=%d; each TP rank holds an "
		              "equal slice of them (accepted: a batch and sequence length whose "
		              "rows per data-parallel rank divide by %d)",
		              m->rows_local, m->B_local, m->T, m->tp, m->tp);
	return SF_OK;
}

/* Node n read by row-split nodes and others: one of each, for the message */
static int refuse_mixed(const struct sf_model *m, int x, int split, int whole)
{
	return SF_ERR(SF_ERR_INVALID,
	              "sf_model_create: node \"%s\" (%s) is read by \"%s\" (%s), which runs on "
	              "this TP rank's rows (SHARDFLOW_SEQUENCE_PARALLEL=on), and by \"%s\" (%s), "
	              "which needs them all: with sequence parallelism a node's readers must "
	              "all be row-split (or all-gather it themselves, a linear_col) or all whole",
	              m->gnodes[x].name, type_of(&m->gnodes[x]), m->gnodes[split].name,
	              type_of(&m->gnodes[split]), m->gnodes[whole].name,
	              type_of(&m->gnodes[whole]));
}

/* Whether every reader of node n can take its rows split: a row-split op or one that
 * all-gathers them (else a linear_row or embedding_vp keeps its all-reduce: GPT's
 * token embedding, which pos_embedding reads by position) */
static bool readers_take_rows(const struct sf_model *m, int n)
{
	for (int k = n + 1; k < m->nnodes; k++) {
		const struct _sf_node *r = &m->gnodes[k];
		int nin = r->kind == SF_NODE_LAYER || r->kind == SF_NODE_LOSS ? r->nin : 0;
		for (int j = 0; j < nin; j++)
			if (r->in[j] == n && !(r->kind == SF_NODE_LAYER && r->type->rows_alone) &&
			    !(j == 0 && nin == 1 && gathers_input(m, k)))
				return false;
	}
	return true;
}

/* Node n's state: row-split or whole, and what it reads across the boundary */
static int plan_node(struct sf_model *m, int n)
{
	const struct _sf_node *nd = &m->gnodes[n];
	struct _sf_node_state *s = &m->nodes[n];
	int nin = nd->kind == SF_NODE_LAYER || nd->kind == SF_NODE_LOSS ? nd->nin : 0;
	bool any = false, layers = nin > 0;
	for (int i = 0; i < nin; i++) {
		any |= m->nodes[nd->in[i]].sp;
		layers &= m->gnodes[nd->in[i]].kind == SF_NODE_LAYER;
	}
	if (nd->kind == SF_NODE_LAYER &&
	    (nd->type->tp == SF_TP_ROW || nd->type->tp == SF_TP_VOCAB) && readers_take_rows(m, n)) {
		s->sp = s->sp_rs = true;
		s->tp_fwd_ar = false; /* its reduce-scatter instead */
		return SF_OK;
	}
	if (nd->kind == SF_NODE_LAYER && nd->type->rows_alone && (any || layers) &&
	    !m->nodes[n].tp_out_split) {
		s->sp = true;
		for (int i = 0; i < nin; i++) { /* its whole inputs give it their rows */
			int x = nd->in[i];
			if (m->nodes[x].sp)
				continue;
			if (m->gnodes[x].kind != SF_NODE_LAYER)
				return SF_ERR(
				    SF_ERR_INVALID,
				    "sf_model_create: node \"%s\" (%s) reads the input \"%s\" "
				    "with row-split inputs (SHARDFLOW_SEQUENCE_PARALLEL=on); "
				    "an input is whole: give it a layer first",
				    nd->name, type_of(nd), m->gnodes[x].name);
			m->nodes[x].sp_scatter = true;
		}
		if (nd->nparams && nd->tied_to >= 0)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_model_create: node \"%s\" (%s) shares another node's "
			              "parameters and runs on a TP rank's rows "
			              "(SHARDFLOW_SEQUENCE_PARALLEL=on): not supported",
			              nd->name, type_of(nd));
		s->sp_psum = nd->nparams > 0;
		return SF_OK;
	}
	for (int i = 0; i < nin; i++) {
		int x = nd->in[i];
		if (!m->nodes[x].sp)
			continue;
		if (i == 0 && nin == 1 && gathers_input(m, n)) {
			s->sp_in = true;
			continue;
		}
		if (nd->kind != SF_NODE_LAYER)
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_model_create: the loss reads \"%s\", whose rows are split over "
			    "the %d TP ranks (SHARDFLOW_SEQUENCE_PARALLEL=on); give it a layer "
			    "that needs whole rows first (a head)",
			    m->gnodes[x].name, m->tp);
		m->nodes[x].sp_gather = true; /* a whole reader: its rows all-gathered */
	}
	return SF_OK;
}

/* With n's readers: row-split ones, ones that gather their input themselves, and
 * whole ones that read the all-gathered copy (sp_gather) or, of a whole node, its rows
 * (sp_scatter): one kind of each gradient buffer, so one kind of reader; the first of
 * each for a message */
static int check_readers(const struct sf_model *m, int x)
{
	const struct _sf_node_state *sx = &m->nodes[x];
	int split = -1, whole = -1;
	for (int k = x + 1; k < m->nnodes; k++) {
		const struct _sf_node *r = &m->gnodes[k];
		int nin = r->kind == SF_NODE_LAYER || r->kind == SF_NODE_LOSS ? r->nin : 0;
		for (int j = 0; j < nin; j++) {
			if (r->in[j] != x)
				continue;
			if (m->nodes[k].sp || (sx->sp && m->nodes[k].sp_in))
				split = split < 0 ? k : split;
			else
				whole = whole < 0 ? k : whole;
		}
	}
	if ((sx->sp_scatter || sx->sp_gather) && split >= 0 && whole >= 0)
		return refuse_mixed(m, x, split, whole);
	return SF_OK;
}

int _sf_sp_plan(struct sf_model *m)
{
	size_t R = m->rows_local, K = (size_t)m->tp;
	for (int n = 0; n < m->nnodes; n++)
		m->nodes[n].act_rows = R;
	m->sp = m->cfg.sequence_parallel != 0;
	if (!m->sp)
		return SF_OK;
	SF_CHECK(refuse_config(m));
	for (int n = 0; n < m->nnodes; n++)
		SF_CHECK(plan_node(m, n));
	for (int n = 0; n < m->nnodes; n++)
		SF_CHECK(check_readers(m, n));
	/* the row-split nodes' kernels see their rows */
	for (int n = 0; n < m->nnodes; n++) {
		struct _sf_node_state *s = &m->nodes[n];
		if (!s->sp)
			continue;
		s->act_rows = R / K;
		if (s->sp_rs)
			continue;
		s->info.rows = (int)(R / K);
		if (m->gnodes[n].type->type.saved_floats)
			s->info.nsaved = m->gnodes[n].type->type.saved_floats(&s->info);
	}
	return SF_OK;
}

/* K runs of one TP rank's block of rows each: rank t's n floats at t n of the whole */
static void row_runs(struct _sf_tp_run *runs, size_t K, size_t n)
{
	for (size_t t = 0; t < K; t++)
		runs[t * SF_MAX_PARAM_TENSORS] = (struct _sf_tp_run){0, t * n, n};
}

/* The arguments of the all-gather (and slice) of a node's rows, `width` floats each */
static struct _sf_comm_args rows_args(struct sf_model *m, int n, const struct _sf_tp_run *runs,
                                      size_t width)
{
	size_t n_mine = m->rows_local / (size_t)m->tp * width;
	return (struct _sf_comm_args){
	    .comm = m->comm,
	    .unit = m->gnodes[n].name,
	    .acct = &m->comm_acct,
	    .P = n_mine,
	    .tp_scratch = m->tp_scratch,
	    .tp_runs = runs,
	    .tp_nruns = 1,
	    .tp_rows = 1,
	    .tp_cols = (size_t)m->tp * n_mine,
	    .tp_lcols = n_mine,
	};
}

int _sf_sp_plan_comm(struct sf_model *m)
{
	size_t R = m->rows_local;
	if (!m->sp)
		return SF_OK;
	for (int n = 0; n < m->nnodes; n++) {
		struct _sf_node_state *s = &m->nodes[n];
		size_t out = (size_t)s->info.out_dim,
		       in = s->info.nin ? (size_t)s->info.in_dim[0] : 0;
		size_t whole = s->sp_rs || s->sp_scatter ? R * out : 0;
		if (s->sp_in && R * in > whole)
			whole = R * in;
		if (whole > m->tp_max) /* the rings' copy, and the all-gathers' K blocks */
			m->tp_max = whole;
		if (s->sp_psum && (size_t)m->gnodes[n].nparams > m->tp_max)
			m->tp_max = (size_t)m->gnodes[n].nparams;
		if (s->sp_rs && R * out > m->sp_out_n)
			m->sp_out_n = R * out;
		if (s->sp_in && R * in > m->sp_in_n)
			m->sp_in_n = R * in;
		if (s->sp_gather && R * out > m->tp_max)
			m->tp_max = R * out;
		if (!s->sp_rs && !s->sp_scatter && !s->sp_gather && !s->sp_in && !s->sp_psum)
			continue;
		s->sp_runs = calloc(2 * (size_t)m->tp * SF_MAX_PARAM_TENSORS, sizeof *s->sp_runs);
		if (!s->sp_runs)
			return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	}
	return SF_OK;
}

void _sf_sp_comm_args(struct sf_model *m)
{
	size_t K = (size_t)m->tp, R = m->rows_local;
	for (int n = 0; m->sp && n < m->nnodes; n++) {
		struct _sf_node_state *s = &m->nodes[n];
		if (!s->sp_runs)
			continue;
		struct _sf_tp_run *own = s->sp_runs, *in = s->sp_runs + K * SF_MAX_PARAM_TENSORS;
		size_t out = (size_t)s->info.out_dim, inw = (size_t)s->info.in_dim[0];
		row_runs(own, K, R / K * out);
		s->sp_rows = rows_args(m, n, own, out);
		if (s->sp_in) {
			row_runs(in, K, R / K * inw);
			s->sp_irows = rows_args(m, n, in, inw);
		}
		if (s->sp_rs) { /* the partial output's reduce-scatter: tp_comm, R x out */
			s->tp_comm.P = R * out;
			s->tp_comm.tp_acc = false;
		}
		s->sp_pcomm = (struct _sf_comm_args){
		    .comm = m->comm,
		    .unit = m->gnodes[n].name,
		    .acct = &m->comm_acct,
		    .P = m->gnodes[n].nparams,
		    .tp_scratch = m->tp_scratch,
		    .tp_off = s->info.param_offset,
		};
	}
}
