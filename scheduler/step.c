/*
 * step.c — one training step unrolled into StarPU tasks.
 *
 * The order in which this file submits tasks is the schedule. Compute order follows
 * from data dependencies; communication order is exactly the submission order of
 * comm tasks (they chain through the comm-order handle), so the choices below are
 * the communication schedule every rank follows:
 *
 *   forward : gather(u) is submitted `depth` units ahead of the first node reading
 *             u. It writes a free ring slot, so StarPU holds it until free(u') — the
 *             task after the last reader of that slot's previous unit — has run: at
 *             most R units are ever resident, by data dependency, with no host-side
 *             throttle. After the last forward reader of u, free(u), unless u stays
 *             gathered for the backward pass (the R units it meets first).
 *   backward: at the first backward reader of u, its gradient slot (and its gather if
 *             it is not resident and its backward reads parameters); every node of
 *             u writes its slice of that slot; after the last, free(u), then the next
 *             unit's gather placed before (pre) or after (post) rs(u), or after opt(u)
 *             with a dependency on it (none); then opt(u) on the local shard.
 *             SHARDFLOW_RECOMPUTE: entering a recomputed unit's segment, its gather
 *             (if not resident) and the forward of its dropped nodes again. A
 *             micro-batch (sf_model_accumulate) ends a unit with its sum instead of
 *             opt(u) (reduce_unit); with clipping, opt(u) becomes sqnorm(u).
 *   end     : (clipping) the norm's all-reduce, then every opt(u); (grad_op)
 *             all-gather of the updated shards in forward order (the next step's
 *             forward overlaps all but the first); the loss all-reduce.
 *
 * Which units, slots and orders: scheduler/plan.c. Nothing is allocated here except
 * StarPU's task structures and the packed optimizer arguments.
 */
#include "scheduler/ctxpar.h"
#include "scheduler/model.h"
#include "scheduler/model_layout.h"
#include "scheduler/model_storage.h"
#include "scheduler/vocabdp.h"
#include "tasks/grad.h"
#include "tasks/layer_codelets.h"
#include "tasks/loss.h"
#include "tasks/optim.h"
#include "sim/sim_device.h"
#include "trace/recorder.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What runs when the task named `name` is done: its built-in trace record (reserved
 * now, in submission order), or nothing when the model is not traced. */
static struct _sf_task_done traced(struct sf_model *m, const char *name, enum _sf_ev_kind kind,
                                   int layer)
{
	struct _sf_event *rec =
	    m->trace ? _sf_recorder_reserve(m->trace, (int)m->nsteps, name, kind, layer) : NULL;
	return rec ? (struct _sf_task_done){_sf_recorder_task_done, rec}
	           : (struct _sf_task_done){0};
}

static bool full_sharding(const struct sf_model *m)
{
	return m->cfg.sharding == SF_SHARD_FULL || m->cfg.sharding == SF_SHARD_HYBRID;
}

static int slot_of(const struct sf_model *m, int u)
{
	return _sf_slots_find(&m->ring_slots, u);
}

/* unit u gathered (a vocabulary-parallel unit always is: it is read in place) */
static bool resident(const struct sf_model *m, int u)
{
	return m->units[u].vocab_rows || slot_of(m, u) >= 0;
}

static starpu_data_handle_t param_handle(struct sf_model *m, int u)
{
	if (m->units[u].vocab_rows) /* its rows of the vocabulary (scheduler/vocabdp.c) */
		return m->units[u].h_shard;
	if (full_sharding(m))
		return m->h_ring[slot_of(m, u)];
	return m->units[u].h_full;
}

static int submit_gather(struct sf_model *m, int u, starpu_data_handle_t after)
{
	struct _sf_unit *un = &m->units[u];
	if (un->vocab_rows) /* read in place: nothing to gather */
		return SF_OK;
	int s = _sf_slots_take(&m->ring_slots, u);
	if (s < 0)
		return SF_ERR(SF_ERR_STATE,
		              "step planner: no free ring slot to gather unit \"%s\" (%d slots); "
		              "please report this graph",
		              un->name, m->R);
	if (m->ring_len[s] < _sf_ring_need(m, u)) /* plan.c's replay drifted from the pass */
		return SF_ERR(SF_ERR_STATE,
		              "step planner: ring slot %d holds %zu floats, unit \"%s\" needs %zu; "
		              "please report this graph",
		              s, m->ring_len[s], un->name, _sf_ring_need(m, u));
	return _sf_submit_gather(&un->comm, m->h_order, un->h_shard, m->h_ring[s], after,
	                         m->ctx->comm_worker, un->gather_name,
	                         traced(m, un->gather_name, SF_EV_GATHER, un->first));
}

/* The slot of unit u is no longer read: count it out, then let StarPU drop it. */
static int submit_free(struct sf_model *m, int u)
{
	struct _sf_unit *un = &m->units[u];
	int s = slot_of(m, u);
	if (un->vocab_rows)
		return SF_OK;
	int rc = _sf_submit_free(&un->comm, m->h_ring[s], un->free_name,
	                         traced(m, un->free_name, SF_EV_FREE, un->first));
	if (rc < 0)
		return rc;
	starpu_data_invalidate_submit(m->h_ring[s]);
	_sf_slots_release(&m->ring_slots, s);
	return SF_OK;
}

static int submit_fwd_named(struct sf_model *m, int n, const char *name, enum _sf_ev_kind kind);
static starpu_data_handle_t input_of(const struct sf_model *m, int n, int i);

/* SHARDFLOW_CP: an attention node's forward as K parts around the ring
 * (tasks/cp_attention.h, scheduler/ctxpar.c): its own key/value block packed, then
 * each part attends to the block the rank holds while a ring step passes that block on
 * (two buffers in turn: a step waits for the part that read its destination) */
static int submit_cp_fwd(struct sf_model *m, int n, const char *name, enum _sf_ev_kind kind)
{
	struct _sf_node_state *s = &m->nodes[n];
	int K = m->cp, w = m->ctx->comm_worker;
	starpu_data_handle_t qkv = input_of(m, n, 0);
	SF_CHECK(_sf_submit_cp_pack(&s->cp_args[2 * K], qkv, m->h_cp_kv[0], s->cp_pack_name,
	                            traced(m, s->cp_pack_name, SF_EV_FREE, n)));
	for (int j = 0; j < K; j++) {
		starpu_data_handle_t kv = m->h_cp_kv[j % 2];
		if (j + 1 < K)
			SF_CHECK(_sf_submit_cp_shift(&s->cp_comm, m->h_order, kv, m->h_cp_kv[(j + 1) % 2],
			                             w, s->cp_ring_name,
			                             traced(m, s->cp_ring_name, SF_EV_CP_RING, n)));
		SF_CHECK(_sf_submit_cp_fwd(&s->cp_args[j], qkv, kv, s->h_act, s->h_saved, name,
		                           traced(m, name, kind, n)));
	}
	return SF_OK;
}

/* Its backward: the blocks around the ring again (packed anew: other nodes have used
 * the buffers since), each with its key/value gradient, home after K steps, where it
 * goes into dqkv. Part j > 0 computes its block's share into a buffer of its own while
 * the ring brings the gradient it is added to (a grad_add task), then passes on. */
static int submit_cp_bwd(struct sf_model *m, int n)
{
	struct _sf_node_state *s = &m->nodes[n];
	int K = m->cp, w = m->ctx->comm_worker;
	const char *name = s->bwd_name, *ring = s->cp_ring_name;
	starpu_data_handle_t dqkv = m->nodes[m->gnodes[n].in[0]].h_dact;
	starpu_data_handle_t h[8] = {input_of(m, n, 0), NULL,          s->h_saved, s->h_act,
	                             s->h_dact,         m->h_cp_dsum, dqkv,       NULL};
	SF_CHECK(_sf_submit_cp_pack(&s->cp_args[2 * K], h[0], m->h_cp_kv[0], s->cp_pack_name,
	                            traced(m, s->cp_pack_name, SF_EV_FREE, n)));
	for (int j = 0; j < K; j++) {
		h[1] = m->h_cp_kv[j % 2];
		h[7] = j == 0 ? m->h_cp_dkv[0] : m->h_cp_dloc[j % 2];
		if (j + 1 < K)
			SF_CHECK(_sf_submit_cp_shift(&s->cp_comm, m->h_order, h[1], m->h_cp_kv[(j + 1) % 2],
			                             w, ring, traced(m, ring, SF_EV_CP_RING, n)));
		SF_CHECK(_sf_submit_cp_bwd(&s->cp_args[K + j], h, name, traced(m, name, SF_EV_BWD, n)));
		if (j > 0) /* the share into the gradient the ring brought */
			SF_CHECK(_sf_submit_grad_acc(false, m->h_cp_dkv[j % 2], h[7],
			                             (struct _sf_grad_args){0, s->cp_comm.P, NULL, 0},
			                             s->cp_pack_name,
			                             traced(m, s->cp_pack_name, SF_EV_FREE, n)));
		SF_CHECK(_sf_submit_cp_shift(&s->cp_comm, m->h_order, m->h_cp_dkv[j % 2],
		                             m->h_cp_dkv[(j + 1) % 2], w,
		                             ring, traced(m, ring, SF_EV_CP_RING, n)));
	}
	return _sf_submit_cp_unpack(&s->cp_args[2 * K], m->h_cp_dkv[K % 2], dqkv, s->cp_pack_name,
	                            traced(m, s->cp_pack_name, SF_EV_FREE, n));
}

static int submit_fwd(struct sf_model *m, int n)
{
	return submit_fwd_named(m, n, m->nodes[n].fwd_name, SF_EV_FWD);
}

/* The handle node n reads its input i from: the input's activation, or with
 * SHARDFLOW_SEQUENCE_PARALLEL a whole input's rows (a row-split reader) or the
 * gathered rows of a row-split one (a linear_col's, m->sp_in) */
static starpu_data_handle_t input_of(const struct sf_model *m, int n, int i)
{
	const struct _sf_node_state *s = &m->nodes[n], *x = &m->nodes[m->gnodes[n].in[i]];
	if (s->dpv && s->sp_rs) /* the vocabulary-parallel embedding: the group's ids */
		return m->h_dpv_ids;
	if ((s->sp && x->sp_scatter) || (!s->sp && !s->sp_in && x->sp_gather))
		return x->h_sp_act;
	if (s->sp_in && i == 0)
		return m->h_sp_in;
	return x->h_act;
}

/* SHARDFLOW_SEQUENCE_PARALLEL: a linear_col's row-split input, every TP rank's rows
 * all-gathered into m->sp_in (before its forward, and again before its backward: the
 * buffer is shared, and the next linear_col has written it since) */
static int submit_sp_gather_in(struct sf_model *m, int n)
{
	struct _sf_node_state *s = &m->nodes[n];
	return _sf_submit_tp_gather(&s->sp_irows, m->h_order, m->nodes[m->gnodes[n].in[0]].h_act,
	                            m->h_sp_in, m->ctx->comm_worker, s->tp_ag_name,
	                            traced(m, s->tp_ag_name, SF_EV_TP_AR, n));
}

/* A node's forward task, under a name (the forward, or its recompute), and the TP
 * collectives after it */
static int submit_fwd_named(struct sf_model *m, int n, const char *name, enum _sf_ev_kind kind)
{
	const struct _sf_node *nd = &m->gnodes[n];
	struct _sf_node_state *s = &m->nodes[n];
	starpu_data_handle_t in[SF_MAX_INPUTS];
	if (s->cp_ring)
		return submit_cp_fwd(m, n, name, kind);
	if (s->sp_in)
		SF_CHECK(submit_sp_gather_in(m, n));
	for (int i = 0; i < nd->nin; i++)
		in[i] = input_of(m, n, i);
	starpu_data_handle_t out = s->sp_rs ? m->h_sp_out : s->tp_gather ? s->h_tpbuf_o : s->h_act;
	int w = m->ctx->comm_worker;
	SF_CHECK(_sf_submit_layer_fwd(nd->type, s->dpv ? &s->dpv_info : &s->info,
	                              s->unit >= 0 ? param_handle(m, s->unit) : NULL, in, nd->nin,
	                              out, s->h_saved, name, traced(m, name, kind, n)));
	if (s->tp_gather) /* gather_output: every TP rank's columns, whole */
		SF_CHECK(_sf_submit_tp_gather(&s->tp_gcomm, m->h_order, s->h_tpbuf_o, s->h_act, w,
		                              s->tp_ag_name,
		                              traced(m, s->tp_ag_name, SF_EV_TP_AR, n)));
	if (s->tp_fwd_ar) /* a linear_row's partial outputs, summed over the TP group */
		SF_CHECK(_sf_submit_tp_allreduce(&s->tp_comm, m->h_order, s->h_act, NULL, w,
		                                 s->tp_name,
		                                 traced(m, s->tp_name, SF_EV_TP_AR, n)));
	if (s->sp_rs) /* SP: the sum's rows of this TP rank */
		SF_CHECK(_sf_submit_tp_rs(&s->tp_comm, m->h_order, m->h_sp_out, s->h_act, w,
		                          s->sp_rs_name, traced(m, s->sp_rs_name, SF_EV_TP_AR, n)));
	if (s->sp_scatter) /* SP: its rows, for its row-split readers (a copy) */
		SF_CHECK(_sf_submit_tp_slice(&s->sp_rows, s->h_act, s->h_sp_act, w, s->tp_sl_name,
		                             traced(m, s->tp_sl_name, SF_EV_FREE, n)));
	if (s->sp_gather) /* SP: every TP rank's rows, for its whole readers */
		SF_CHECK(_sf_submit_tp_gather(&s->sp_rows, m->h_order, s->h_act, s->h_sp_act, w,
		                              s->tp_ag_name,
		                              traced(m, s->tp_ag_name, SF_EV_TP_AR, n)));
	return SF_OK;
}

/* A node's backward task, or its input-gradient half (a split backward: dw_before >= 0,
 * bwd_info.dparams_absent) or, dw, its weight-gradient half. grad: the unit's gradient
 * slot, written (W) by the pass's first task that writes it, added to or filled in
 * slices (RW) by the later ones. */
static int submit_bwd_part(struct sf_model *m, int n, starpu_data_handle_t grad, bool dw)
{
	const struct _sf_node *nd = &m->gnodes[n];
	struct _sf_node_state *s = &m->nodes[n];
	const struct sf_layer_info *li = dw       ? &s->dw_info
	                                 : s->dpv ? &s->dpv_bwd_info
	                                          : &s->bwd_info;
	const char *name = dw ? s->dw_name : s->bwd_name;
	int w = m->ctx->comm_worker;
	starpu_data_handle_t in[SF_MAX_INPUTS], din[SF_MAX_INPUTS];
	if (s->cp_ring)
		return submit_cp_bwd(m, n);
	if (s->sp_scatter) /* SP: its row-split readers' gradients, all-gathered */
		SF_CHECK(_sf_submit_tp_gather(&s->sp_rows, m->h_order, s->h_sp_dact, s->h_dact, w,
		                              s->tp_ag_name,
		                              traced(m, s->tp_ag_name, SF_EV_TP_AR, n)));
	if (s->sp_gather) /* SP: its rows of its whole readers' gradient (a copy) */
		SF_CHECK(_sf_submit_tp_slice(&s->sp_rows, s->h_sp_dact, s->h_dact, w, s->tp_sl_name,
		                             traced(m, s->tp_sl_name, SF_EV_FREE, n)));
	if (s->sp_in)
		SF_CHECK(submit_sp_gather_in(m, n));
	for (int i = 0; i < nd->nin; i++) {
		const struct _sf_node_state *x = &m->nodes[nd->in[i]];
		in[i] = input_of(m, n, i);
		bool copy = (s->sp && x->sp_scatter) || (!s->sp && !s->sp_in && x->sp_gather);
		din[i] = copy ? x->h_sp_dact : x->h_dact;
	}
	starpu_data_handle_t params = NULL, dparams = NULL, after = NULL;
	bool first = false;
	if (s->unit >= 0) {
		params = li->params_absent ? m->h_noparams : param_handle(m, s->unit);
		if (!li->dparams_absent) {
			dparams = grad;
			first = !m->units[s->unit].bwd_wrote;
			m->units[s->unit].bwd_wrote = true;
		}
	}
	if (dw && s->dw_before >= 0) /* after the other units' backward, which ends
	                                writing this node's dout */
		after = m->nodes[s->dw_before].h_dact;
	bool tp = s->tp_bwd_ar && !dw;
	if (tp) /* a linear_col's partial input gradient: into its own buffer first */
		din[0] = s->h_tpbuf;
	starpu_data_handle_t out = s->h_act, dout = s->h_dact;
	if (s->tp_gather) { /* gather_output: this rank's columns of dout, then its kernel */
		SF_CHECK(_sf_submit_tp_slice(&s->tp_gcomm, s->h_dact, s->h_tpbuf_do, w,
		                             s->tp_sl_name,
		                             traced(m, s->tp_sl_name, SF_EV_FREE, n)));
		out = s->h_tpbuf_o, dout = s->h_tpbuf_do;
	}
	if (s->sp_rs) { /* SP: every TP rank's rows of dout (its backward reads no output) */
		SF_CHECK(_sf_submit_tp_gather(&s->sp_rows, m->h_order, s->h_dact, m->h_sp_out, w,
		                              s->tp_ag_name,
		                              traced(m, s->tp_ag_name, SF_EV_TP_AR, n)));
		dout = m->h_sp_out;
	}
	SF_CHECK(_sf_submit_layer_bwd(nd->type, li, params, in, nd->nin, out, dout, s->h_saved, din,
	                              dparams, first, after, name, traced(m, name, SF_EV_BWD, n)));
	if (s->sp_psum && dparams) /* SP: its parameters' gradient over this rank's rows */
		SF_CHECK(_sf_submit_tp_allreduce(&s->sp_pcomm, m->h_order, dparams, NULL, w,
		                                 s->tp_name,
		                                 traced(m, s->tp_name, SF_EV_TP_AR, n)));
	if (!tp)
		return SF_OK;
	if (s->sp_in) /* SP: summed over the TP group, this rank's rows into the input's */
		return _sf_submit_tp_rs(&s->tp_comm, m->h_order, s->h_tpbuf,
		                        m->nodes[nd->in[0]].h_dact, w, s->sp_rs_name,
		                        traced(m, s->sp_rs_name, SF_EV_TP_AR, n));
	/* summed over the TP group, then written (or added) where the input's gradient is */
	return _sf_submit_tp_allreduce(&s->tp_comm, m->h_order, s->h_tpbuf,
	                               m->nodes[nd->in[0]].h_dact, w, s->tp_name,
	                               traced(m, s->tp_name, SF_EV_TP_AR, n));
}

static int submit_bwd(struct sf_model *m, int n, starpu_data_handle_t grad)
{
	return submit_bwd_part(m, n, grad, false);
}

static int submit_reduce(struct sf_model *m, int u, starpu_data_handle_t grad,
                         starpu_data_handle_t out)
{
	struct _sf_unit *un = &m->units[u];
	int w = m->ctx->comm_worker;
	bool replicated = m->cfg.sharding == SF_SHARD_NONE;
	int rc = _sf_submit_reduce(&un->comm, m->h_order, grad, replicated ? NULL : out, w,
	                           un->rs_name, traced(m, un->rs_name, SF_EV_RS, un->first));
	/* hybrid: the node's sum of the shard, summed over the nodes */
	if (rc == SF_OK && m->nrep > 1 && !replicated)
		rc = _sf_submit_rep_allreduce(&un->comm, m->h_order, out, w, un->ar_name,
		                              traced(m, un->ar_name, SF_EV_RS, un->first));
	return rc;
}

/* dst = src (copy) or dst += src, elements [off, off + n) */
static int submit_acc(struct sf_model *m, int u, starpu_data_handle_t dst, starpu_data_handle_t src,
                      bool copy, size_t n)
{
	struct _sf_unit *un = &m->units[u];
	return _sf_submit_grad_acc(copy, dst, src, (struct _sf_grad_args){.off = 0, .n = n},
	                           un->acc_name, traced(m, un->acc_name, SF_EV_GRAD, un->first));
}

static bool clipping(const struct sf_model *m)
{
	return m->opt.max_grad_norm > 0.0f;
}

/* The handle unit u's optimizer reads its reduced gradient from: the shard, or for
 * replicated units the gradient slot itself unless a clip (the optimizer runs after
 * the slot is reused) or a sum of micro-batches puts it in the unit's own buffer. */
static starpu_data_handle_t opt_grad(const struct sf_model *m, int u, starpu_data_handle_t grad)
{
	if (m->cfg.sharding != SF_SHARD_NONE || clipping(m) || m->accum_k > 0)
		return m->units[u].h_gshard;
	return grad;
}

/* Unit u's gradient of this pass (in `grad`) joins what the step will apply:
 *   a step of one batch : reduce (reduce-scatter into the shard, or all-reduce);
 *   a micro-batch, local: the unit's local sum (=, then +=), no communication;
 *   a micro-batch, sharded: reduce, then into the shard's sum (=, then +=);
 *   the step after micro-batches: local adds its sum first and reduces once;
 *   sharded reduces into a buffer and adds it to the shard's sum. */
static int reduce_unit(struct sf_model *m, int u, starpu_data_handle_t grad)
{
	int rc = SF_OK;
	struct _sf_unit *un = &m->units[u];
	bool local = m->cfg.accum_mode == SF_ACCUM_LOCAL, first = m->accum_k == 0;
	bool replicated = m->cfg.sharding == SF_SHARD_NONE;
	size_t n = _sf_unit_grad_n(un); /* the slot's gradient */
	if (!m->update && local) {
		SF_CHECK_GOTO(submit_acc(m, u, un->h_acc, grad, first, n), out);
		goto out;
	}
	if (m->update && local && !first)
		SF_CHECK_GOTO(submit_acc(m, u, grad, un->h_acc, false, n), out);
	/* now grad is all this rank has to reduce */
	bool sum = !local && !first; /* into the sum of earlier micro-batches */
	if (un->vocab_rows) { /* already its rows' sum over the group: the shard's as is */
		if (m->nrep > 1) /* hybrid: summed over the nodes first, as a shard is */
			SF_CHECK_GOTO(_sf_submit_rep_allreduce(&un->comm, m->h_order, grad,
			                                       m->ctx->comm_worker, un->ar_name,
			                                       traced(m, un->ar_name, SF_EV_RS, un->first)),
			              out);
		SF_CHECK_GOTO(submit_acc(m, u, un->h_gshard, grad, !sum, un->S), out);
		goto out;
	}
	if (!replicated) {
		SF_CHECK_GOTO(submit_reduce(m, u, grad, sum ? m->h_rstmp : un->h_gshard), out);
		if (sum)
			SF_CHECK_GOTO(submit_acc(m, u, un->h_gshard, m->h_rstmp, false, un->S), out);
		goto out;
	}
	SF_CHECK_GOTO(submit_reduce(m, u, grad, NULL), out);
	starpu_data_handle_t g = m->update ? opt_grad(m, u, grad) : un->h_gshard;
	if (g != grad)
		SF_CHECK_GOTO(submit_acc(m, u, g, grad, !sum, un->P), out);
out:
	return rc;
}

/* The step's scale of the summed gradient: 1 / its micro-batches. */
static float grad_scale(const struct sf_model *m)
{
	return 1.0f / (float)(m->accum_k + 1);
}

static starpu_data_handle_t clip_handle(struct sf_model *m)
{
	return clipping(m) ? m->h_clip[m->nsteps % SF_LOSS_SLOTS] : m->h_one;
}

static int submit_opt(struct sf_model *m, int u, starpu_data_handle_t g)
{
	struct _sf_unit *un = &m->units[u];
	bool replicated = m->cfg.sharding == SF_SHARD_NONE;
	starpu_data_handle_t p = replicated ? un->h_full : un->h_shard;
	struct _sf_opt_args a = {
	    .n = un->opt_n,
	    .lr = m->lr,
	    .momentum = m->opt.momentum,
	    .weight_decay = m->opt.weight_decay,
	    .beta1 = m->opt.beta1,
	    .beta2 = m->opt.beta2,
	    .eps = m->opt.eps,
	    .t = m->nupdates + 1,
	    .grad_scale = grad_scale(m),
	    .runs = un->runs,
	    .nruns = un->nruns,
	};
	return _sf_submit_opt(m->opt.optimizer, &a, p, g, un->h_m, un->h_v, clip_handle(m),
	                      un->opt_name, traced(m, un->opt_name, SF_EV_OPT, un->first));
}

/* This rank's share of unit u's squared gradient norm: its shard, or its slice of a
 * replicated unit's gradient (each element counted once over the ranks). */
static int submit_sqnorm(struct sf_model *m, int u, starpu_data_handle_t g)
{
	struct _sf_unit *un = &m->units[u];
	struct _sf_grad_args a = {.off = 0, .n = un->S, .segs = un->sq_segs, .nsegs = un->nsq_segs};
	if (m->cfg.sharding == SF_SHARD_NONE)
		_sf_unit_block(m, u, &a.off, &a.n);
	return _sf_submit_grad_sqnorm(g, un->h_sq, a, un->sq_name,
	                              traced(m, un->sq_name, SF_EV_GRAD, un->first));
}

/* After unit u's reduction: its update now, or (clipping) its share of the norm, the
 * update waiting for the whole gradient's norm (update_all); nothing for a
 * micro-batch. */
static int finish_reduction(struct sf_model *m, int u, starpu_data_handle_t grad)
{
	/* a pipeline's shared unit: the other stage's sum first (_sf_unit_reduced) */
	if (!m->update || m->units[u].pp_shared)
		return SF_OK;
	starpu_data_handle_t g = opt_grad(m, u, grad);
	return clipping(m) ? submit_sqnorm(m, u, g) : submit_opt(m, u, g);
}

int _sf_unit_reduced(struct sf_model *m, int u, bool counted)
{
	starpu_data_handle_t g = m->units[u].h_gshard; /* a pipeline shards fully */
	if (!clipping(m))
		return submit_opt(m, u, g);
	return counted ? submit_sqnorm(m, u, g) : SF_OK;
}

/* Clipping: the norm's all-reduce, then every unit's update, in backward order. */
static int update_all(struct sf_model *m)
{
	int slot = (int)(m->nsteps % SF_LOSS_SLOTS);
	struct _sf_norm_args a = {
	    .comm = &m->loss_comm,
	    .nunits = m->nunits,
	    .scale = grad_scale(m),
	    .max_norm = m->opt.max_grad_norm,
	    .replicas = m->nrep,
	};
	m->clip_ticket[slot] = m->nsteps;
	SF_CHECK(_sf_submit_grad_norm(&a, m->h_order, m->h_clip[slot], m->h_sqs, m->norm_descr,
	                              m->ctx->comm_worker, "grad norm",
	                              traced(m, "grad norm", SF_EV_NORM, -1)));
	for (int i = m->bwd_lo; i < m->bwd_hi; i++) {
		int u = m->bwd_order[i];
		if (!m->units[u].frozen)
			SF_CHECK(submit_opt(m, u, opt_grad(m, u, m->units[u].h_gshard)));
	}
	return SF_OK;
}

/* The vocabulary-parallel cross-entropy of logits x, split over the TP group
 * (layers/xent_vp.h): this rank's partials of each row, their all-gather over the
 * group (on the comm worker, in the comm order), then the loss and this rank's columns
 * of the logits' gradient. Every TP rank computes the same loss; the loss's sum over
 * the world counts TP rank 0's. */
static int submit_loss_vp(struct sf_model *m, int x)
{
	struct _sf_node_state *z = &m->nodes[x];
	m->vp_args.scale = m->loss_args.scale; /* this step's */
	SF_CHECK(_sf_submit_xent_vp_partials(&m->vp_args, z->h_act, m->h_labels, m->h_vp_stats,
	                                     m->vp_fwd_name,
	                                     traced(m, m->vp_fwd_name, SF_EV_FWD, m->loss_node)));
	SF_CHECK(_sf_submit_tp_gather(&m->vp_comm, m->h_order, m->h_vp_stats, m->h_vp_all,
	                              m->ctx->comm_worker, m->vp_ag_name,
	                              traced(m, m->vp_ag_name, SF_EV_TP_AR, m->loss_node)));
	/* a pipeline's micro-batch: its own loss (pp_loss), averaged at the step's end */
	starpu_data_handle_t out = m->pp_loss ? m->pp_loss : m->h_loss[m->nsteps % SF_LOSS_SLOTS];
	return _sf_submit_xent_vp_finish(&m->vp_args, z->h_act, m->h_labels, m->h_vp_all,
	                                 z->h_dact, out, "loss",
	                                 traced(m, "loss", SF_EV_LOSS, -1));
}

static int submit_loss(struct sf_model *m, const struct _sf_node *nd)
{
	int x = nd->in[0];
	starpu_data_handle_t out = m->pp_loss ? m->pp_loss : m->h_loss[m->nsteps % SF_LOSS_SLOTS];
	if (m->loss_kind != SF_LOSS_CROSS_ENTROPY) /* a loss layer's mean reads no target */
		return _sf_submit_reg_loss(&m->reg_loss_args, m->nodes[x].h_act,
		                           nd->nin > 1 ? m->nodes[nd->in[1]].h_act : m->h_noparams,
		                           m->nodes[x].h_dact, out, "loss",
		                           traced(m, "loss", SF_EV_LOSS, -1));
	if (m->vp)
		return submit_loss_vp(m, x);
	return _sf_submit_loss(&m->loss_args, m->nodes[x].h_act, m->h_labels, m->nodes[x].h_dact,
	                       out, "loss", traced(m, "loss", SF_EV_LOSS, -1));
}

/* Gathers, in forward order (fwd_order), unit u if it is not resident, then the units
 * after it up to depth places on while ring slots are free. *next: the place in
 * fwd_order of the first unit not gathered yet. */
static int prefetch_forward(struct sf_model *m, int u, int *next)
{
	int at = m->units[u].fwd_pos;
	for (; *next < m->unit_hi && *next <= at + m->cfg.prefetch_depth; (*next)++) {
		if (*next > at && m->ring_slots.nfree == 0)
			break;
		SF_CHECK(submit_gather(m, m->fwd_order[*next], NULL));
	}
	return SF_OK;
}

/* The forward pass; `train` keeps the units the backward meets first gathered and
 * computes the loss, otherwise every unit is freed after its last reader. */
int _sf_forward_submit(struct sf_model *m, bool train)
{
	bool full = full_sharding(m);
	int next = m->unit_lo; /* fwd_order's next unit to gather */
	_sf_slots_reset(&m->ring_slots, m->R);
	for (int n = m->node_lo; n < m->node_hi; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		int u = m->nodes[n].unit;
		if (nd->kind == SF_NODE_LOSS && train)
			SF_CHECK(submit_loss(m, nd));
		if (nd->kind != SF_NODE_LAYER)
			continue;
		if (full && u >= 0)
			SF_CHECK(prefetch_forward(m, u, &next));
		SF_CHECK(submit_fwd(m, n));
		if (full && u >= 0 && n == m->units[u].fwd_last && !(train && m->units[u].keep))
			SF_CHECK(submit_free(m, u));
	}
	return SF_OK;
}

/* The next unit the backward pass will start (bwd_order from *started on), or -1. */
static int bwd_upcoming(const struct sf_model *m, int started)
{
	return started < m->bwd_hi ? m->bwd_order[started] : -1;
}

/* Unit u's last backward reader is done: free it, reduce its gradient, update it, and
 * gather the next unit the backward pass will start (`started` units of bwd_order
 * have) where the policy says. */
static int finish_unit_backward(struct sf_model *m, int u, starpu_data_handle_t grad, int started)
{
	int rc = SF_OK;
	bool frozen = m->units[u].frozen; /* its gradient slot held a scratch: no reduction */
	/* deferred weight gradients: the reduction comes after them (backward_dw_submit) */
	bool reduce = !frozen && !m->dw_defer;
	if (!full_sharding(m)) {
		if (!reduce)
			goto out;
		SF_CHECK_GOTO(reduce_unit(m, u, grad), out);
		SF_CHECK_GOTO(finish_reduction(m, u, grad), out);
		goto out;
	}
	if (resident(m, u))
		SF_CHECK_GOTO(submit_free(m, u), out);
	/* gather the next unit of backward early, unless its backward needs no
	 * parameters (a first layer) or no slot is free */
	int v = bwd_upcoming(m, started);
	bool prefetch =
	    v >= 0 && !resident(m, v) && m->units[v].bwd_params && m->ring_slots.nfree > 0;
	if (!reduce) {
		if (prefetch)
			SF_CHECK_GOTO(submit_gather(m, v, NULL), out);
		goto out;
	}
	switch (m->cfg.bwd_prefetch) {
	case SF_BWD_PRE:
		if (prefetch)
			SF_CHECK_GOTO(submit_gather(m, v, NULL), out);
		SF_CHECK_GOTO(reduce_unit(m, u, grad), out);
		SF_CHECK_GOTO(finish_reduction(m, u, grad), out);
		break;
	case SF_BWD_POST:
		SF_CHECK_GOTO(reduce_unit(m, u, grad), out);
		if (prefetch)
			SF_CHECK_GOTO(submit_gather(m, v, NULL), out);
		SF_CHECK_GOTO(finish_reduction(m, u, grad), out);
		break;
	case SF_BWD_NONE:
		SF_CHECK_GOTO(reduce_unit(m, u, grad), out);
		SF_CHECK_GOTO(finish_reduction(m, u, grad), out);
		/* reading shard u makes the gather wait for opt(u) */
		if (prefetch)
			SF_CHECK_GOTO(submit_gather(m, v, m->units[u].h_shard), out);
		break;
	case SF_BWD_COUNT: break; /* not a value: sf_config_from_env gives one of the three */
	}
out:
	return rc;
}

/* SHARDFLOW_RECOMPUTE: the forward of segment s's dropped nodes again (those a
 * backward or another of them reads: plan.c's rerun), in forward order, with its unit
 * gathered (it stays for the backward: gathered once for both). */
static int recompute_segment(struct sf_model *m, int s)
{
	struct _sf_unit *un = &m->units[s];
	if (full_sharding(m) && !resident(m, s))
		SF_CHECK(submit_gather(m, s, NULL));
	for (int n = un->first; n < un->seg_end; n++) {
		struct _sf_node_state *st = &m->nodes[n];
		if (st->recomp_buf >= 0 && st->rerun)
			SF_CHECK(submit_fwd_named(m, n, st->rc_name, SF_EV_RECOMPUTE));
	}
	return SF_OK;
}

int _sf_backward_submit(struct sf_model *m)
{
	int rc = SF_OK;
	bool full = full_sharding(m);
	int started = m->bwd_lo; /* units of bwd_order whose backward has begun */
	int seg = -1;            /* the segment whose backward is running */
	_sf_slots_reset(&m->grad_slots, m->G);
	for (int n = m->node_hi - 1; n >= m->node_lo; n--) {
		const struct _sf_node *nd = &m->gnodes[n];
		int u = m->nodes[n].unit;
		if (nd->kind != SF_NODE_LAYER || !m->nodes[n].needs_grad)
			continue;
		if (m->seg_of[n] != seg) {
			seg = m->seg_of[n];
			if (seg >= 0 && m->units[seg].recompute)
				SF_CHECK_GOTO(recompute_segment(m, seg), out);
		}
		if (u < 0) {
			SF_CHECK_GOTO(submit_bwd(m, n, NULL), out);
			continue;
		}
		struct _sf_unit *un = &m->units[u];
		bool first = n == un->bwd_first;
		started += first;
		if (first)
			un->bwd_wrote = false;
		if (first && _sf_slots_take(&m->grad_slots, u) < 0) {
			rc = SF_ERR(SF_ERR_STATE,
			            "step planner: no free gradient slot for unit \"%s\" (%d "
			            "slots); please report this graph",
			            un->name, m->G);
			goto out;
		}
		int gs = _sf_slots_find(&m->grad_slots, u);
		if (first && m->grad_len[gs] < _sf_grad_need(m, u)) {
			rc = SF_ERR(SF_ERR_STATE,
			            "step planner: gradient slot %d holds %zu floats, unit \"%s\" "
			            "needs %zu; please report this graph",
			            gs, m->grad_len[gs], un->name, _sf_grad_need(m, u));
			goto out;
		}
		starpu_data_handle_t grad = m->h_grad[gs];
		if (first && full && !resident(m, u) && un->bwd_params)
			SF_CHECK_GOTO(submit_gather(m, u, NULL), out);
		/* the deferred weight-gradient halves that go before this node (plan.c) */
		for (int k = n + 1; m->cfg.split_backward && k <= un->bwd_first; k++)
			if (m->nodes[k].dw_before == n)
				SF_CHECK_GOTO(submit_bwd_part(m, k, grad, true), out);
		SF_CHECK_GOTO(submit_bwd(m, n, grad), out);
		if (n == un->bwd_last) {
			SF_CHECK_GOTO(finish_unit_backward(m, u, grad, started), out);
			if (!m->dw_defer)
				_sf_slots_release(&m->grad_slots, gs);
		}
	}
out:
	return rc;
}

int _sf_backward_dw_submit(struct sf_model *m)
{
	for (int i = m->bwd_lo; i < m->bwd_hi; i++) {
		int u = m->bwd_order[i], gs = _sf_slots_find(&m->grad_slots, u);
		struct _sf_unit *un = &m->units[u];
		if (gs < 0) /* no backward reached it (nothing in it needs a gradient) */
			continue;
		starpu_data_handle_t grad = m->h_grad[gs];
		/* in backward order, as the unsplit tasks would write their parameters' parts */
		for (int n = un->bwd_first; n >= un->bwd_last; n--)
			if (m->nodes[n].dw_before == SF_DW_DEFER)
				SF_CHECK(submit_bwd_part(m, n, grad, true));
		if (!un->frozen) {
			SF_CHECK(reduce_unit(m, u, grad));
			SF_CHECK(finish_reduction(m, u, grad));
		}
		_sf_slots_release(&m->grad_slots, gs);
	}
	return SF_OK;
}

int _sf_update_submit(struct sf_model *m)
{
	int rc = SF_OK;
	if (m->update && clipping(m))
		SF_CHECK_GOTO(update_all(m), out);
	/* in forward order: the next step's forward starts on the first unit gathered
	 * while the later ones are still on the wire */
	if (m->update && m->cfg.sharding == SF_SHARD_GRAD_OP)
		for (int i = m->unit_lo; i < m->unit_hi; i++) {
			struct _sf_unit *un = &m->units[m->fwd_order[i]];
			if (un->frozen || un->vocab_rows) /* its gathered copy is still its
			                                     parameters; or it has none */
				continue;
			SF_CHECK_GOTO(_sf_submit_gather(&un->comm, m->h_order, un->h_shard, un->h_full,
			                           NULL, m->ctx->comm_worker, un->ag_name,
			                           traced(m, un->ag_name, SF_EV_AG, un->first)), out);
		}
out:
	return rc;
}

int _sf_loss_sum_submit(struct sf_model *m)
{
	return _sf_submit_loss_sum(&m->loss_comm, m->h_order, m->h_loss[m->nsteps % SF_LOSS_SLOTS],
	                           m->ctx->comm_worker, "loss allreduce",
	                           traced(m, "loss allreduce", SF_EV_LOSS_SUM, -1));
}

int _sf_step_submit(struct sf_model *m)
{
	SF_CHECK(_sf_forward_submit(m, true));
	SF_CHECK(_sf_backward_submit(m));
	SF_CHECK(_sf_update_submit(m));
	return _sf_loss_sum_submit(m);
}

static int stage(starpu_data_handle_t h, void *dst, const void *src, size_t bytes)
{
	/* waits for the previous step's last reader of this buffer */
	int ret = starpu_data_acquire(h, STARPU_W);
	if (ret != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_data_acquire failed (%d)", ret);
	memcpy(dst, src, bytes);
	starpu_data_release(h);
	return SF_OK;
}

/* ids in [0, range), but `skip` (a label that counts for nothing) */
static int check_ids(const int32_t *v, size_t n, int range, int64_t skip, const char *what,
                     const char *fn, const struct sf_model *m)
{
	for (size_t r = 0; r < n; r++)
		if ((v[r] < 0 || v[r] >= range) && v[r] != skip)
			return SF_ERR(SF_ERR_INVALID,
			              "%s: %s %d of local row %zu (sample %d of the global batch) "
			              "is outside [0, %d)",
			              fn, what, (int)v[r], r, m->sample_base + m->row0 + (int)(r / (size_t)m->T),
			              range);
	return SF_OK;
}

static int check_batch(struct sf_model *m, const struct sf_batch *b, bool labels, const char *fn)
{
	if (b->ninputs != m->ninputs || (m->ninputs && !b->inputs))
		return SF_ERR(SF_ERR_INVALID,
		              "%s: the graph has %d float input(s), the batch gives %d", fn,
		              m->ninputs, b->inputs ? b->ninputs : 0);
	if (b->nint_inputs != m->nint_inputs || (m->nint_inputs && !b->int_inputs))
		return SF_ERR(SF_ERR_INVALID,
		              "%s: the graph has %d integer input(s), the batch gives %d", fn,
		              m->nint_inputs, b->int_inputs ? b->nint_inputs : 0);
	for (int i = 0; i < m->ninputs; i++)
		if (!b->inputs[i])
			return SF_ERR(SF_ERR_INVALID, "%s: input %d (\"%s\") is NULL", fn, i,
			              m->gnodes[m->input_nodes[i]].name);
	for (int i = 0; i < m->nint_inputs; i++) {
		const struct _sf_node *nd = &m->gnodes[m->int_input_nodes[i]];
		if (!b->int_inputs[i])
			return SF_ERR(SF_ERR_INVALID, "%s: integer input %d (\"%s\") is NULL", fn,
			              i, nd->name);
		char what[SF_NAME_MAX + 8];
		snprintf(what, sizeof what, "id of \"%s\"", nd->name);
		SF_CHECK(check_ids(b->int_inputs[i], m->rows_local, nd->dim, INT64_MIN, what, fn, m));
	}
	if (labels) { /* a graph with a label input (cross-entropy) */
		if (!b->labels)
			return SF_ERR(SF_ERR_INVALID, "%s: labels are NULL", fn);
		SF_CHECK(check_ids(b->labels, m->rows_local, m->loss_args.classes, m->loss_args.ignore,
		                   "label", fn, m));
	}
	return SF_OK;
}

/* Every float input finite: one NaN would spread through the all-reduces to every
 * rank's parameters */
static int check_finite(const struct sf_model *m, const struct sf_batch *b, const char *fn)
{
	for (int i = 0; i < m->ninputs; i++) {
		size_t dim = (size_t)m->gnodes[m->input_nodes[i]].dim;
		for (size_t k = 0; k < m->rows_local * dim; k++)
			if (!isfinite(b->inputs[i][k]))
				return SF_ERR(SF_ERR_INVALID,
				              "%s: input \"%s\" holds %g at local row %zu, column %zu "
				              "(sample %d of the global batch): inputs must be finite",
				              fn, m->gnodes[m->input_nodes[i]].name,
				              (double)b->inputs[i][k], k / dim,
				              k % dim, m->sample_base + m->row0 + (int)(k / dim / (size_t)m->T));
	}
	return SF_OK;
}

/* The rows of this rank's labels that count (not the ignore index) */
static int64_t counted_rows(const struct sf_model *m, const int32_t *labels)
{
	int64_t n = 0;
	for (size_t r = 0; r < m->rows_local; r++)
		n += labels[r] != m->loss_args.ignore;
	return n;
}

/* Checks a batch on every rank and agrees on the outcome before anything is submitted
 * (one rank's bad batch fails every rank at once, with that rank's message, instead of
 * leaving the others in their first collective), then copies it into the model's input
 * handles (labels too when `labels` is set). With labels, the same agreement counts the
 * global batch's rows whose label is not the ignore index: the loss's mean is over
 * them (its scale, set once the previous reader of the labels is done). */
int _sf_stage_batch(struct sf_model *m, const struct sf_batch *b, bool labels, const char *fn)
{
	if (!m || !b)
		return SF_ERR(SF_ERR_INVALID, "%s: %s is NULL", fn, m ? "batch" : "model");
	struct sf_batch sliced;
	if (m->cp > 1) { /* whole samples: this rank's chunks of them */
		SF_CHECK(_sf_cp_slice(m, b, &sliced));
		b = &sliced;
	}
	labels = labels && m->labels_node >= 0; /* a regression loss's target is an input */
	int crc = check_batch(m, b, labels, fn);
	if (crc == SF_OK)
		crc = check_finite(m, b, fn);
	/* (the K ranks of a TP group hold the same rows: the first one counts them; a
	 * pipeline's stages too: the last one, which computes the loss) */
	int64_t counted = crc == SF_OK && labels && m->tp_rank == 0 && m->pp_stage == m->pp_size - 1
	                      ? counted_rows(m, b->labels)
	                      : 0;
	SF_CHECK(_sf_comm_agree_sum(m->comm, crc, fn, &counted));
	for (int i = 0; i < m->ninputs; i++) {
		struct _sf_node_state *s = &m->nodes[m->input_nodes[i]];
		if (!s->h_act) /* read by another pipeline stage only */
			continue;
		SF_CHECK(stage(s->h_act, s->act, b->inputs[i],
		               m->rows_local * (size_t)m->gnodes[m->input_nodes[i]].dim *
		                   sizeof(float)));
	}
	for (int i = 0; i < m->nint_inputs; i++) {
		struct _sf_node_state *s = &m->nodes[m->int_input_nodes[i]];
		if (!s->h_act)
			continue;
		SF_CHECK(
		    stage(s->h_act, s->act, b->int_inputs[i], m->rows_local * sizeof(int32_t)));
	}
	if (labels) {
		SF_CHECK(stage(m->h_labels, m->labels, b->labels, m->rows_local * sizeof(int32_t)));
		m->loss_args.scale = counted > 0 ? 1.0f / (float)(double)counted : 0.0f;
		m->counted = counted;
	}
	if (m->dpv) { /* the vocabulary-parallel tied unit: the group's ids and labels */
		int k = 0;
		while (m->int_input_nodes[k] != m->gnodes[m->dpv_emb].in[0])
			k++;
		SF_CHECK(_sf_dpv_stage(m, b->int_inputs[k], labels ? b->labels : NULL, fn));
	}
	return SF_OK;
}

/* One pass over a batch: a step (update) or a micro-batch kept for the next step. */
static int submit_pass(sf_model *m, const struct sf_batch *b, int64_t *ticket, bool update,
                       const char *fn)
{
	_sf_sim_host_step();
	if (m && m->pp_step) { /* a pipeline: the step takes its micro-batches itself */
		if (!update)
			return SF_ERR(SF_ERR_INVALID,
			              "%s: a pipeline (SHARDFLOW_PP=%d) splits each step into its "
			              "%d micro-batches itself (SHARDFLOW_PP_MICROBATCHES); call "
			              "sf_model_step with the whole batch",
			              fn, m->pp_size, m->pp_micro);
		return m->pp_step(m, b, ticket);
	}
	SF_CHECK(_sf_stage_batch(m, b, true, fn));
	if (!update && m->accum_k >= SF_MAX_GRAD_ACCUM)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: %d micro-batches are accumulated already, the most one step "
		              "takes; call sf_model_step",
		              fn, m->accum_k);
	if (!update || m->accum_k > 0)
		SF_CHECK(_sf_model_accum_buffers(m));
	m->update = update;
	SF_CHECK(_sf_step_submit(m));
	if (ticket)
		*ticket = m->nsteps;
	m->nsteps++;
	if (update) {
		m->nupdates++;
		m->grad_mean_of = m->accum_k + 1; /* what sf_model_grad_get divides by */
		m->accum_k = 0;
	} else {
		m->accum_k++;
	}
	return SF_OK;
}

SF_API int sf_model_step(sf_model *m, const struct sf_batch *b, int64_t *ticket)
{
	return submit_pass(m, b, ticket, true, "sf_model_step");
}

SF_API int sf_model_accumulate(sf_model *m, const struct sf_batch *b, int64_t *ticket)
{
	return submit_pass(m, b, ticket, false, "sf_model_accumulate");
}

SF_API int sf_model_grad_norm(sf_model *m, int64_t ticket, double *norm)
{
	if (!m || !norm)
		return SF_ERR(SF_ERR_INVALID, "sf_model_grad_norm: NULL model or output");
	if (!clipping(m))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_grad_norm: the model computes no gradient norm; set "
		              "sf_model_options::max_grad_norm (INFINITY: the norm without "
		              "clipping)");
	int slot = (int)(ticket % SF_LOSS_SLOTS);
	if (ticket < 0 || ticket >= m->nsteps || ticket < m->nsteps - SF_LOSS_SLOTS ||
	    m->clip_ticket[slot] != ticket)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_grad_norm: ticket %lld is not one of the last %d tickets "
		              "of sf_model_step (%lld tickets issued; an sf_model_accumulate "
		              "ticket has no norm of its own)",
		              (long long)ticket, SF_LOSS_SLOTS, (long long)m->nsteps);
	int ret = starpu_data_acquire(m->h_clip[slot], STARPU_R);
	if (ret != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_data_acquire failed (%d)", ret);
	*norm = m->clip_val[slot][0];
	starpu_data_release(m->h_clip[slot]);
	return SF_OK;
}

SF_API int sf_model_loss(sf_model *m, int64_t ticket, double *loss)
{
	if (!m || !loss)
		return SF_ERR(SF_ERR_INVALID, "sf_model_loss: NULL model or output");
	if (ticket < 0 || ticket >= m->nsteps)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_loss: ticket %lld was never issued (%lld "
		              "steps submitted)",
		              (long long)ticket, (long long)m->nsteps);
	if (ticket < m->nsteps - SF_LOSS_SLOTS)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_loss: ticket %lld is too old; the losses of "
		              "the last %d steps are kept",
		              (long long)ticket, SF_LOSS_SLOTS);
	starpu_data_handle_t h = m->h_loss[ticket % SF_LOSS_SLOTS];
	int ret = starpu_data_acquire(h, STARPU_R);
	if (ret != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_data_acquire failed (%d)", ret);
	*loss = m->loss_val[ticket % SF_LOSS_SLOTS];
	starpu_data_release(h);
	if (isfinite(*loss) || m->cfg.skip != SF_SKIP_NONE)
		return SF_OK;
	/* the loss is the global mean, the same on every rank: rank 0 says it, the others
	 * that they stop because of it */
#define SF_DIVERGED                                                                                \
	"the loss of step %lld (ticket %lld) is %g: training diverged (try a lower learning "      \
	"rate) or the parameters hold NaN or Inf (check the initial weights)"
	if (m->comm && m->comm->rank != 0)
		return _sf_err_peer(SF_ERR_NONFINITE, 0, "sf_model_loss", SF_DIVERGED,
		                    (long long)ticket + 1, (long long)ticket, *loss);
	return SF_ERR(SF_ERR_NONFINITE, SF_DIVERGED, (long long)ticket + 1, (long long)ticket,
	              *loss);
#undef SF_DIVERGED
}

/* The vocabulary-parallel head's logits made whole (rows x V) from this rank's
 * columns (rows x ceil(V / K)): every rank's all-gathered (the world's, each padded to
 * the largest slice of rows), this TP group's classes put in their columns (a padded
 * vocabulary's padding columns left behind: never a logit, never sampled). */
static int whole_logits(struct sf_model *m, const float *mine, float *out)
{
	int rc = SF_OK;
	size_t Vl = (size_t)m->vp_args.classes, rows = m->rows_local;
	size_t V = (size_t)m->nodes[m->gnodes[m->loss_node].in[0]].whole_dim;
	size_t most = (size_t)((m->B_global + m->dp_size - 1) / m->dp_size) * (size_t)m->T;
	float *piece = calloc(most * Vl + 1, sizeof(float));
	float *all = calloc(most * Vl * (size_t)m->nranks + 1, sizeof(float));
	if (!piece || !all) {
		rc = SF_ERR(SF_ERR_NOMEM, "sf_model_predict: out of memory");
		goto out;
	}
	memcpy(piece, mine, rows * Vl * sizeof(float));
	SF_CHECK_GOTO(
	    m->comm->ops->allgather_bytes(m->comm, piece, most * Vl * sizeof(float), all), out);
	for (int t = 0; t < m->tp; t++) {
		const float *src = all + (size_t)(m->rank - m->tp_rank + t) * most * Vl;
		struct _sf_vocab_slice v = _sf_tp_vocab_slice((int)V, m->tp, t);
		for (size_t r = 0; r < rows; r++)
			memcpy(out + r * V + (size_t)v.first, src + r * Vl,
			       (size_t)v.valid * sizeof(float));
	}
out:
	free(piece);
	free(all);
	return rc;
}

/* SHARDFLOW_CP: the logits of this rank's whole samples (B_local T_ctx rows) from its
 * rows' (vocabulary-parallel: made whole first) and its CP group's, every rank's
 * all-gathered over the world (padded to the largest slice of rows) */
static int cp_whole_samples(struct sf_model *m, const float *mine, float *out)
{
	int rc = SF_OK;
	size_t V = m->vp ? (size_t)m->nodes[m->gnodes[m->loss_node].in[0]].whole_dim
	                 : (size_t)m->loss_args.classes;
	size_t most = (size_t)((m->B_global + m->dp_size - 1) / m->dp_size) * (size_t)m->T;
	float *piece = calloc(most * V + 1, sizeof(float));
	float *all = calloc(most * V * (size_t)m->nranks + 1, sizeof(float));
	if (!piece || !all) {
		rc = SF_ERR(SF_ERR_NOMEM, "sf_model_predict: out of memory");
		goto out;
	}
	if (m->vp)
		SF_CHECK_GOTO(whole_logits(m, mine, piece), out);
	else
		memcpy(piece, mine, m->rows_local * V * sizeof(float));
	SF_CHECK_GOTO(
	    m->comm->ops->allgather_bytes(m->comm, piece, most * V * sizeof(float), all), out);
	_sf_cp_unslice(m, all, most * V, (size_t)m->dp_rank, m->B_local, V, out);
out:
	free(piece);
	free(all);
	return rc;
}

SF_API int sf_model_predict(sf_model *m, const struct sf_batch *b, float *logits)
{
	int rc = SF_OK;
	if (!logits)
		return SF_ERR(SF_ERR_INVALID, "sf_model_predict: logits is NULL");
	if (m && m->pp_predict) /* a pipeline: through the stages, micro-batch by micro-batch */
		return m->pp_predict(m, b, logits);
	SF_CHECK(_sf_stage_batch(m, b, false, "sf_model_predict"));
	/* not a training step: not traced, not counted */
	struct _sf_recorder *trace = m->trace;
	m->trace = NULL;
	rc = _sf_forward_submit(m, false);
	m->trace = trace;
	SF_CHECK(rc);
	struct _sf_node_state *out = &m->nodes[m->gnodes[m->loss_node].in[0]];
	int ret = starpu_data_acquire(out->h_act, STARPU_R);
	if (ret != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_data_acquire failed (%d)", ret);
	if (m->cp > 1)
		rc = cp_whole_samples(m, out->act, logits);
	else if (m->dpv)
		rc = _sf_dpv_whole_logits(m, out->act, logits);
	else if (m->vp)
		rc = whole_logits(m, out->act, logits);
	else
		memcpy(logits, out->act, m->rows_local * (size_t)m->loss_args.classes * sizeof(float));
	starpu_data_release(out->h_act);
	return rc;
}
