/*
 * pipeline.c — pipeline parallelism (SHARDFLOW_PP): a step as a task graph of stages
 * and micro-batches (scheduler/pipeline.h; docs/training.md, "Pipeline parallelism").
 *
 * Stages. The units, in forward order, are cut into S runs of consecutive units
 * balanced by SHARDFLOW_PP_BALANCE (cut_weights: the forwards' flops, or the
 * parameters); stage s is the nodes from its first unit's first node to
 * the next stage's (the first stage from the graph's start: inputs and the embedding;
 * the last to its end: the head and the loss). A unit read on the first and the last
 * stage (a tied embedding and head: pp_shared) is held by both; any other unit read
 * across a cut is refused (stage_orders gives each stage its own units' orders).
 * The world is S x dp x tp, stage s the dp tp consecutive ranks
 * [s dp tp, (s+1) dp tp), its TP groups tp consecutive ranks as without a pipeline
 * (comm/: a stage's shard group is the dp ranks of one TP place), so FSDP shards a
 * stage's units over its dp ranks, TP splits its layers over its TP groups, and the
 * passes of step.c run unchanged on the stage's span of the graph
 * (m->node_lo ..). A rank keeps only what its stage touches (mark_held: its units,
 * its nodes, the inputs they read and the boundary's activation and gradient), which
 * model_storage.c allocates and plans by.
 *
 * The boundary. An activation a node of stage s + 1 reads from stage s goes there
 * point to point, between the same dp and TP place of the two stages (rank +- dp tp:
 * each TP rank holds the activation as its place does, a unit's output whole after
 * its linear_row's all-reduce, and sends its own copy), after stage s's forward of a
 * micro-batch, and its gradient comes back
 * before stage s's backward of it; a node may read only its own stage, the one before
 * and the graph's inputs. Stage s + 1's readers write that gradient first in backward
 * order (_sf_plan_gradients), so stage s receives it whole ("=") and its own readers
 * add to it, as on one rank.
 *
 * Micro-batches. A step takes M micro-batches of B_local / M samples; each has its
 * own inputs, labels and loss, and the activations, gradients and saved buffers of
 * one of the act_sets sets its schedule holds at once (count_sets; micro-batch k's
 * are set k mod act_sets's, set 0 the nodes' own: model_storage.c's), which bind()
 * puts into the nodes before a pass is submitted. A micro-batch's loss is scaled by
 * M / the step's counted rows (every micro-batch is staged, and its count agreed,
 * before the first pass): the step's loss and gradient are the mean over the step's
 * counted rows, as torchtitan's and Megatron's. A shared unit's two stages each sum
 * their own readers' gradient; at the step's end the two reduced shards are
 * exchanged and added (shared_sum), and both stages update it alike. The backwards sum the gradients as
 * sf_model_accumulate's micro-batches do (m->accum_k, m->update), in micro-batch
 * order under every schedule: gpipe and 1f1b give the same bits.
 *
 * Order. Transfers are comm tasks on the comm-order handle, so a rank runs them in
 * submission order, among its stage's collectives. Two neighbour stages must run their
 * transfers to each other in one order: stage s + 1 receives activation k just before
 * its forward of k and sends gradient k just after its backward of k, in its own
 * schedule's order; stage s replays that order (the link's events, from stage s + 1's
 * schedule), sending an activation as soon as its forward is submitted and the events
 * before it are, and receiving gradient k just before its backward of k. The step's
 * end (the clip norm's all-reduce over the world, the updates, the loss) comes after
 * every transfer, on every stage. The interleaved schedule's chunks make a ring (the
 * last stage's chunk j feeds the first stage's chunk j + 1), which no one link's order
 * settles: there each transfer is matched by its tag (MPI), or where the backend has
 * none (NCCL, mpi-sync) every pass and transfer runs in one order of the whole step
 * that every stage agrees on (scheduler/pipeline_order.c). Those are the posts (the
 * backend's p2p_post: they return at once); a receive's wait comes just before the pass that reads it, a send's
 * after the pass that follows it and before any pass that rewrites its buffer, so the
 * comm worker never sits in a transfer while the collectives after it are ready, and
 * a stage's next activation leaves while its gradient is still awaited.
 *
 * Priorities. The schedule is also each pass's StarPU priority (2 M for the first pass
 * down to 1 for the last, the step's end at the default 0): a pass's tasks become ready
 * as their data arrive, not in submission order (a later micro-batch's first forward
 * is ready while the one before still runs its next node), and the scheduler (lws)
 * runs the ready task of the highest priority first, so a stage's compute worker
 * follows the schedule. Data decide every sum's order: the bits stay the same.
 *
 * Zero-bubble (ZB-H1, Qi et al. 2023). 1f1b's order and priorities, each backward
 * split: the pass submits the input gradients (every linear layer's as its own task,
 * plan.c's SF_DW_DEFER; the other nodes whole) and keeps every unit's gradient slot,
 * the gradient goes to the stage before, then the pass's weight-gradient tasks and
 * the units' reductions follow at the default priority 0, below every pass: they run
 * when no input gradient or forward is ready, in the wait for the next micro-batch's
 * activation or gradient (the cooldown's bubble at the end). They run before the
 * stage's next pass: its gathers follow their reductions in the comm order, and its
 * activation set's reuse follows their reads. Each weight-gradient task writes the
 * part of the slot the whole backward would, once: 1f1b's bits.
 */
#include "scheduler/pipeline.h"
#include "scheduler/pipeline_order.h"
#include "scheduler/ctxpar.h"
#include "scheduler/model_storage.h"
#include "comm/comm_codelets.h"
#include "tasks/grad.h"
#include "tasks/layer_codelets.h"
#include "tasks/microbatch.h"
#include "tasks/submit.h"
#include "trace/recorder.h"

#include <stdlib.h>
#include <string.h>

/* A node's buffers for one micro-batch (NULL where the node has none) */
struct pp_buf {
	float *act, *dact, *saved;
	starpu_data_handle_t h_act, h_dact, h_saved;
};

/* A tensor that crosses to or from the neighbour stage: its node, its place in the
 * bound nodes, the transfers' arguments (2 M: micro-batch k's activation at k, its
 * gradient at M + k, each holding its posted transfer until the wait) and its tasks'
 * names (act, its gradient; their waits) */
struct pp_edge {
	int node, idx;
	int chunk; /* this rank's chunk it leaves or enters (0 but under interleaved) */
	struct _sf_p2p_args *args;
	char act_name[SF_NAME_MAX + 32], grad_name[SF_NAME_MAX + 32];
	char act_wait[SF_NAME_MAX + 40], grad_wait[SF_NAME_MAX + 40];
};

/* A send posted whose wait is not submitted yet: micro-batch mb's tensor of edge e
 * (grad: its gradient) */
struct pp_sent {
	struct pp_edge *e;
	int mb;
	bool grad;
};

/* A shared unit (pp_shared) on the first or the last stage: its reduced gradient shard
 * to the other stage's rank of the same place, and that rank's into the accumulation
 * buffer (its S floats), at the step's end; the tasks' names */
struct pp_twin {
	int unit;
	struct _sf_p2p_args send, recv;
	char send_name[SF_NAME_MAX + 32], recv_name[SF_NAME_MAX + 32];
	char send_wait[SF_NAME_MAX + 40], recv_wait[SF_NAME_MAX + 40];
};

struct _sf_pipeline {
	int M;
	int nbound;         /* nodes whose buffers are a micro-batch's */
	int *bound;         /* their ids */
	/* M x nbound: micro-batch k's at [k nbound, (k+1) nbound); a layer's those of
	 * its slot k mod m->act_sets (owns()) */
	struct pp_buf *buf;
	int32_t **labels;   /* M, labels[0] the model's */
	starpu_data_handle_t *h_labels;
	double *loss; /* M */
	starpu_data_handle_t *h_loss;
	float *scale;                    /* M: the loss scale each micro-batch's staging set */
	struct starpu_data_descr *descr; /* M + 1: the loss mean's buffers */
	int nin, nout;
	struct pp_edge *in, *out; /* from the previous stage; to the next */
	struct _sf_pp_op *ops;    /* 4 M: this stage's schedule, then the next stage's */
	/* nitems: the interleaved schedule's passes and transfers in the order every stage
	 * agrees on, on a backend without tags (_sf_pp_order); else NULL */
	struct _sf_pp_item *items;
	int nitems;
	struct pp_sent *sent;     /* 2 M (nin + nout): the sends posted, not waited for */
	int nsent;
	bool *fwd_done;           /* M */
	int cur;                  /* the chunk of the pass being submitted (span()) */
	struct pp_twin *twins;    /* ntwins: the shared units this rank sums with its twin */
	int ntwins;
	const float **xs;         /* ninputs: a micro-batch's view of the batch */
	const int32_t **ids;      /* nint_inputs */
};

/* ---- layout and stages ------------------------------------------------------------ */

/* Whether the transfers are matched by tags (the interleaved schedule on a backend that
 * has them: MPI), else run in an order the two ends agree on */
static bool tagged(const struct sf_model *m)
{
	return m->cfg.pp_schedule == SF_PP_INTERLEAVED && m->comm->ops->p2p_tagged_post;
}

int _sf_pipeline_layout(struct sf_model *m)
{
	int S = m->pp_size;
	if (S <= 1)
		return SF_OK;
	int M = m->cfg.pp_microbatches ? m->cfg.pp_microbatches : 2 * S;
	if (m->cfg.sharding != SF_SHARD_FULL && m->cfg.sharding != SF_SHARD_GRAD_OP)
		return SF_ERR(SF_ERR_CONFIG,
		              "sf_model_create: SHARDFLOW_PP=%d with SHARDFLOW_SHARDING=%s: not "
		              "supported yet; accepted with a pipeline: sharding full or grad_op",
		              S, _sf_sharding_names[m->cfg.sharding]);
	if (m->cfg.pp_schedule == SF_PP_INTERLEAVED && M % S != 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: SHARDFLOW_PP_SCHEDULE=interleaved runs the "
		              "micro-batches in groups of the %d stages: %d micro-batches "
		              "(SHARDFLOW_PP_MICROBATCHES) do not make whole groups; accepted: a "
		              "multiple of %d",
		              S, M, S);
	if (m->B_global % (m->dp_size * M) != 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: batch %d does not split into %d data-parallel "
		              "ranks x %d micro-batches (SHARDFLOW_PP_MICROBATCHES%s); accepted: a "
		              "batch that is a multiple of %d",
		              m->B_global, m->dp_size, M,
		              m->cfg.pp_microbatches ? "" : " = 2 x SHARDFLOW_PP, its default",
		              m->dp_size * M);
	m->pp_micro = M;
	m->B_local /= M;
	m->rows_local = (size_t)m->B_local * (size_t)m->T;
	return SF_OK;
}

/* A node's floating-point operations in a training step's passes (its type's count
 * f of the forward): the forward, and a backward of 2 f when it computes an input
 * gradient (dX and, with parameters, dW: each one forward's product; attention's four
 * products for two) but f when it computes none (a first linear reading the graph's
 * input: dW alone), none without a backward; and f again for a forward rerun before its
 * backward (SHARDFLOW_RECOMPUTE). So a stage whose first layer skips its input gradient
 * is seen lighter by that product, which a count of forwards, the same for every
 * linear of a width, cannot see. */
static double step_flops(const struct sf_model *m, int n)
{
	const struct _sf_node_state *s = &m->nodes[n];
	double f = _sf_layer_flops(m->gnodes[n].type, &s->info, false);
	if (!s->needs_grad)
		return f;
	bool dinput = false;
	for (int i = 0; i < s->info.nin; i++)
		dinput = dinput || s->info.need_dinput[i];
	return f + (dinput ? 2 * f : f) + (s->rerun ? f : 0.0);
}

/* The weight before each unit's place as a cut (before[0 .. U], before[U] the whole):
 * flops, the floating-point operations of the nodes before the unit's first in a
 * step's forward and backward (step_flops; the embeddings' lookups count nothing, a
 * head's product its V columns); params, the parameters of the units before it. Flops
 * fall back to parameters where no node has a count (a graph of a user's types without
 * one). Returns the balance used. */
static enum sf_pp_balance cut_weights(const struct sf_model *m, double *before)
{
	int U = m->nunits;
	enum sf_pp_balance by = m->cfg.pp_balance;
	if (by == SF_PP_BALANCE_FLOPS) {
		double f = 0.0;
		int u = 0;
		for (int n = 0; n < m->nnodes; n++) {
			while (u < U && m->units[u].first == n)
				before[u++] = f;
			const struct _sf_node *nd = &m->gnodes[n];
			if (nd->kind == SF_NODE_LAYER)
				f += step_flops(m, n);
		}
		while (u < U)
			before[u++] = f;
		before[U] = f;
		if (f > 0)
			return by;
	}
	before[0] = 0.0;
	for (int u = 0; u < U; u++)
		before[u + 1] = before[u] + (double)m->units[u].P;
	return SF_PP_BALANCE_PARAMS;
}

/* The first unit of each stage (cut[S] = U): stage s takes the units from cut[s] on,
 * cut where the weight before (cut_weights) lies closest to s / S of the whole, one unit
 * at least each, the units read at both ends of the graph in the first; *by the
 * balance used. */
static int cut_units(const struct sf_model *m, int S, int *cut, enum sf_pp_balance *by)
{
	int U = m->nunits;
	double *before = malloc(((size_t)U + 1) * sizeof *before);
	if (!before)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	cut[0] = 0, cut[S] = U;
	*by = cut_weights(m, before);
	double total = before[U];
	/* a unit also read after the last unit's first reader (a tied head's, GPT's wpe and
	 * ln_f) stays in the first stage, which then holds it with the last (pp_shared) */
	int need = 1;
	for (int u = 0; u + 1 < U; u++)
		if (m->units[u].last >= m->units[U - 1].first && u + 1 <= U - (S - 1))
			need = u + 1 > need ? u + 1 : need;
	for (int s = 1; s < S; s++) {
		double target = total * s / S, best = -1.0;
		for (int c = s == 1 ? need : cut[s - 1] + 1; c <= U - (S - s); c++) {
			double d = before[c] > target ? before[c] - target : target - before[c];
			if (best < 0.0 || d < best)
				best = d, cut[s] = c;
		}
	}
	free(before);
	return SF_OK;
}

static int stage_of(const int *lo, int S, int n)
{
	int s = 0;
	while (s + 1 < S && n >= lo[s + 1])
		s++;
	return s;
}

static bool is_input(const struct sf_model *m, int n)
{
	enum _sf_node_kind k = m->gnodes[n].kind;
	return k == SF_NODE_INPUT || k == SF_NODE_INT_INPUT || k == SF_NODE_LABELS;
}

/* The graph's checks: each unit read in one chunk, or in the first and the last
 * (marked pp_shared: a tied embedding and head, GPT's wpe and ln_f), reads from the
 * chunk before at most, the loss in the last chunk. lo: each of the S chunks' first
 * node (S: the stages, or under the interleaved schedule the S x V chunks, `what`
 * naming them). *emax: the most tensors that cross from a chunk to the next. */
static int check_stages(struct sf_model *m, const char *name, const int *lo, int S,
                        const char *what, int *emax)
{
	for (int u = 0; u < m->nunits; u++) {
		struct _sf_unit *un = &m->units[u];
		int a = S, b = -1;
		bool middle = false;
		for (int n = un->first; n <= un->last; n++) {
			if (m->nodes[n].unit != u || m->gnodes[n].kind != SF_NODE_LAYER)
				continue;
			int t = stage_of(lo, S, n);
			a = t < a ? t : a, b = t > b ? t : b;
			middle = middle || (t != 0 && t != S - 1);
		}
		un->pp_shared = a < b;
		if (a < b && middle)
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_model_create: graph \"%s\": unit \"%s\" is read in pipeline "
			    "%s %d to %d of %d; a pipeline keeps a unit on one stage, or on "
			    "the first and the last (a tied embedding and head, whose gradients "
			    "the two stages sum); accepted: a graph whose units' readers stay "
			    "within a stage but for those, or another SHARDFLOW_PP",
			    name, un->name, what, a, b, S);
	}
	for (int u = 0; u < m->nunits; u++)
		if (m->units[u].no_reshard)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_model_create: graph \"%s\": unit \"%s\" stays gathered "
			              "(reshard_after_forward 0), which a pipeline's micro-batches "
			              "do not keep yet; accepted with SHARDFLOW_PP > 1: "
			              "reshard_after_forward 1",
			              name, m->units[u].name);
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		if (nd->kind != SF_NODE_LAYER && nd->kind != SF_NODE_LOSS)
			continue;
		int s = stage_of(lo, S, n);
		if (nd->kind == SF_NODE_LOSS && s != S - 1)
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_model_create: graph \"%s\": the loss falls in pipeline %s %d "
			    "of %d; a pipeline computes it in the last (add the loss after "
			    "the last layer)",
			    name, what, s, S);
		for (int i = 0; i < nd->nin; i++) {
			int x = nd->in[i], t = stage_of(lo, S, x);
			if (!is_input(m, x) && t != s && t != s - 1)
				return SF_ERR(
				    SF_ERR_INVALID,
				    "sf_model_create: graph \"%s\": node \"%s\" of pipeline "
				    "%s %d reads \"%s\" of %s %d; a stage reads only its "
				    "own nodes, the stage before's and the graph's inputs; "
				    "accepted: fewer stages (SHARDFLOW_PP) or a graph whose "
				    "skips stay within a stage",
				    name, nd->name, what, s, m->gnodes[x].name, what, t);
		}
	}
	/* the tensors crossing each boundary: those read by the chunk after their own */
	int *cross = calloc((size_t)S + 1, sizeof *cross);
	char *seen = calloc((size_t)m->nnodes + 1, 1);
	if (!cross || !seen) {
		free(cross), free(seen);
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	}
	*emax = 0;
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		if (nd->kind != SF_NODE_LAYER && nd->kind != SF_NODE_LOSS)
			continue;
		for (int i = 0; i < nd->nin; i++) {
			int x = nd->in[i], t = stage_of(lo, S, x);
			if (is_input(m, x) || t == stage_of(lo, S, n) || seen[x])
				continue;
			seen[x] = 1;
			cross[t]++;
			*emax = cross[t] > *emax ? cross[t] : *emax;
		}
	}
	free(cross), free(seen);
	return SF_OK;
}

/* m->act_sets: the most micro-batches this stage's schedule holds at once in one
 * chunk (forwards submitted whose backward is not), the layers' buffer sets it keeps:
 * gpipe M, 1f1b S - s at most. Backwards run in micro-batch order, so when micro-batch k's forward
 * comes, that of k - act_sets, whose slot k takes, is submitted: StarPU's implicit
 * dependencies order the slot's reuse after its readers. */
static int count_sets(struct sf_model *m)
{
	int M = m->pp_micro, V = m->nspans;
	struct _sf_pp_op *ops = malloc(2 * (size_t)M * (size_t)V * sizeof *ops);
	if (!ops)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	int n = _sf_pp_schedule(m->cfg.pp_schedule, m->pp_size, m->pp_stage, M, V, ops);
	m->act_sets = _sf_pp_sets(ops, n, V); /* a chunk's layers' buffers are its own */
	free(ops);
	return SF_OK;
}

/* This stage's passes (step.c's, plan.c's replays) over its span: the units it reads
 * in the order its forward (fwd_order[unit_lo .. unit_hi)) and its backward
 * (bwd_order[bwd_lo .. bwd_hi)) meet them, each unit's last forward reader and its
 * backward's first and last nodes there, whether that backward reads the parameters,
 * and which of its nodes write ("=") or add to their parameters' gradient: as
 * _sf_plan_units and _sf_plan_gradients decide them for the whole graph, which they
 * are for a unit within one stage. A shared unit's readers on the other stage are
 * not this pass's: the last stage's head writes the tied gradient, and so does the
 * first stage's embedding, each stage summing its own. */
static int stage_orders(struct sf_model *m)
{
	int U = m->nunits, nf = 0, nb = 0;
	bool *pwritten = calloc((size_t)m->nnodes + 1, sizeof *pwritten);
	if (!pwritten)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	for (int u = 0; u < U; u++) {
		struct _sf_unit *un = &m->units[u];
		un->fwd_pos = un->fwd_last = un->bwd_first = un->bwd_last = -1;
		un->bwd_params = false;
	}
	for (int j = 0; j < m->nspans; j++) { /* each chunk's units: fwd_order's next run */
		struct _sf_span *sp = &m->spans[j];
		sp->unit_lo = nf;
		for (int n = sp->node_lo; n < sp->node_hi; n++) {
			int u = m->nodes[n].unit;
			if (u < 0 || m->gnodes[n].kind != SF_NODE_LAYER)
				continue;
			struct _sf_unit *un = &m->units[u];
			if (un->fwd_pos < 0)
				m->fwd_order[nf] = u, un->fwd_pos = nf++;
			un->fwd_last = n;
			const struct _sf_node_state *st = &m->nodes[n];
			if (!st->needs_grad)
				continue;
			if (un->bwd_last < 0)
				un->bwd_last = n;
			un->bwd_first = n;
			un->bwd_params = un->bwd_params || !st->bwd_info.params_absent;
		}
		sp->unit_hi = nf;
	}
	for (int j = m->nspans - 1; j >= 0; j--) { /* backward: the last chunk first */
		struct _sf_span *sp = &m->spans[j];
		sp->bwd_lo = nb;
		for (int n = sp->node_hi - 1; n >= sp->node_lo; n--) {
			int u = m->nodes[n].unit;
			if (u < 0 || m->gnodes[n].kind != SF_NODE_LAYER)
				continue;
			if (n == m->units[u].fwd_last) /* by last reader, descending: plan.c's */
				m->bwd_order[nb++] = u;
			struct _sf_node_state *st = &m->nodes[n];
			if (!st->needs_grad || !m->gnodes[n].nparams)
				continue;
			int o = _sf_node_param_owner(m->gnodes, n);
			bool add = pwritten[o];
			pwritten[o] = true;
			st->info.accumulate_dparams = st->bwd_info.accumulate_dparams = add;
			st->dw_info.accumulate_dparams = add;
		}
		sp->bwd_hi = nb;
	}
	free(pwritten);
	/* the whole of bwd_order for _sf_span_set(m, -1): the chunks' runs in reverse */
	if (m->nspans > 1) {
		int *rev = malloc((size_t)(nb ? nb : 1) * sizeof *rev), k = 0;
		if (!rev)
			return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
		for (int j = 0; j < m->nspans; j++) {
			struct _sf_span *sp = &m->spans[j];
			int len = sp->bwd_hi - sp->bwd_lo;
			memcpy(rev + k, m->bwd_order + sp->bwd_lo, (size_t)len * sizeof *rev);
			sp->bwd_lo = k, sp->bwd_hi = k + len;
			k += len;
		}
		memcpy(m->bwd_order, rev, (size_t)nb * sizeof *rev);
		free(rev);
	}
	return SF_OK;
}

/* What this rank keeps (model_storage.c allocates by it): its stage's units (those
 * stage_orders found readers of in the span: the last stage's shared ones too); its
 * stage's nodes, the inputs they read, and the activation and its gradient of what
 * they read from the stage before; nothing of the rest. */
/* Whether node n is in one of this rank's spans (its chunks) */
static bool mine(const struct sf_model *m, int n)
{
	for (int j = 0; j < m->nspans; j++)
		if (n >= m->spans[j].node_lo && n < m->spans[j].node_hi)
			return true;
	return false;
}

static void mark_held(struct sf_model *m)
{
	for (int u = 0; u < m->nunits; u++)
		m->units[u].elsewhere = m->units[u].fwd_pos < 0;
	for (int n = 0; n < m->nnodes; n++)
		m->nodes[n].hold = mine(m, n) && !is_input(m, n) ? SF_HOLD_ALL : SF_HOLD_NONE;
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		if (is_input(m, n) || !mine(m, n))
			continue;
		for (int i = 0; i < nd->nin; i++) {
			int x = nd->in[i];
			if (is_input(m, x))
				m->nodes[x].hold = SF_HOLD_ALL;
			else if (!mine(m, x))
				m->nodes[x].hold = SF_HOLD_BOUNDARY;
		}
	}
}

/* SHARDFLOW_RECOMPUTE: the shared buffers (plan.c) of the like segments no node of this
 * stage uses (a group held by other stages), neither planned nor made: size 0 */
static void drop_unheld_recomp(struct sf_model *m)
{
	for (int b = 0; b < m->nrecomp_bufs; b++) {
		bool used = false;
		for (int n = 0; n < m->nnodes && !used; n++)
			used = m->nodes[n].recomp_buf == b && m->nodes[n].hold != SF_HOLD_NONE;
		if (!used)
			m->recomp_bufs[b].nact = m->recomp_bufs[b].nsaved = 0;
	}
}

/* The info line of this rank's stage: its units (or its chunks') and nodes, the units
 * it shares with the other end, the cut, the micro-batches and the schedule. cut: the
 * first unit of each of the S V chunks (cut_units). */
static void log_stage(const struct sf_model *m, const char *name, const int *cut,
                      enum sf_pp_balance by)
{
	int S = m->pp_size, s = m->pp_stage, V = m->nspans, shared = 0;
	for (int u = 0; u < m->nunits; u++)
		shared += m->units[u].pp_shared && !m->units[u].elsewhere;
	char also[64] = "", chunks[1024] = "";
	if (shared && s)
		snprintf(also, sizeof also, " and %d shared with stage 0", shared);
	else if (shared)
		snprintf(also, sizeof also, " (%d of them shared with stage %d)", shared, S - 1);
	for (int j = 0, k = 0; V > 1 && j < V && k < (int)sizeof chunks; j++) {
		int c = j * S + s;
		k += snprintf(chunks + k, sizeof chunks - (size_t)k,
		              "%s chunk %d: units %d..%d, nodes %d..%d", j ? ";" : "", c, cut[c],
		              cut[c + 1] - 1, m->spans[j].node_lo, m->spans[j].node_hi - 1);
	}
	if (V > 1) /* its chunks' units and nodes */
		_sf_log(SF_LOG_INFO,
		        "model \"%s\": pipeline stage %d of %d:%s%s (cut by %s), %d micro-batches "
		        "of %d samples, interleaved",
		        name, s, S, chunks, also, sf_pp_balance_name(by), m->pp_micro, m->B_local);
	else
		_sf_log(SF_LOG_INFO,
		        "model \"%s\": pipeline stage %d of %d: units %d..%d%s, nodes %d..%d (cut "
		        "by %s), %d micro-batches of %d samples, %s",
		        name, s, S, cut[s], cut[s + 1] - 1, also, m->spans[0].node_lo,
		        m->spans[0].node_hi - 1, sf_pp_balance_name(by), m->pp_micro, m->B_local,
		        sf_pp_schedule_name(m->cfg.pp_schedule));
}

int _sf_pipeline_plan(struct sf_model *m, const char *name)
{
	int S = m->pp_size, U = m->nunits, rc = SF_OK;
	m->nspans = 1;
	m->spans[0] = (struct _sf_span){0, m->nnodes, 0, U, 0, U};
	_sf_span_set(m, 0);
	if (S <= 1)
		return SF_OK;
	bool inter = m->cfg.pp_schedule == SF_PP_INTERLEAVED;
	int V = inter ? m->cfg.pp_virtual : 1, C = S * V, emax = 0;
	if (C > U)
		return V == 1 ? SF_ERR(SF_ERR_INVALID,
		                       "sf_model_create: graph \"%s\" has %d units, fewer than the "
		                       "%d pipeline stages (SHARDFLOW_PP): every stage takes one "
		                       "unit at least; accepted: SHARDFLOW_PP <= %d",
		                       name, U, S, U)
		              : SF_ERR(SF_ERR_INVALID,
		                       "sf_model_create: graph \"%s\" has %d units, fewer than the "
		                       "%d chunks of SHARDFLOW_PP=%d x SHARDFLOW_PP_VIRTUAL=%d (the "
		                       "interleaved schedule): every chunk takes one unit at least; "
		                       "accepted: SHARDFLOW_PP_VIRTUAL <= %d",
		                       name, U, C, S, V, U / S);
	int *cut = malloc(((size_t)C + 1) * sizeof *cut);
	int *lo = malloc(((size_t)C + 1) * sizeof *lo);
	if (!cut || !lo) {
		rc = SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
		goto out;
	}
	enum sf_pp_balance by = SF_PP_BALANCE_PARAMS;
	SF_CHECK_GOTO(cut_units(m, C, cut, &by), out);
	for (int c = 0; c < C; c++)
		lo[c] = c ? m->units[cut[c]].first : 0;
	lo[C] = m->nnodes;
	SF_CHECK_GOTO(check_stages(m, name, lo, C, V > 1 ? "chunks" : "stages", &emax), out);
	/* the interleaved schedule's transfers matched by their tags: one a boundary,
	 * micro-batch, direction and tensor */
	if (tagged(m) && (C - 1) * m->pp_micro * 2 * emax > SF_P2P_TAGS) {
		rc = SF_ERR(SF_ERR_INVALID,
		            "sf_model_create: SHARDFLOW_PP_SCHEDULE=interleaved: %d chunk "
		            "boundaries x %d micro-batches x 2 directions x %d tensors need more "
		            "than the %d transfer tags; accepted: fewer micro-batches "
		            "(SHARDFLOW_PP_MICROBATCHES) or chunks (SHARDFLOW_PP_VIRTUAL)",
		            C - 1, m->pp_micro, emax, SF_P2P_TAGS);
		goto out;
	}
	m->pp_emax = emax;
	int s = m->pp_stage;
	m->nspans = V;
	for (int j = 0; j < V; j++) /* chunk j of this rank: the graph's chunk j S + s */
		m->spans[j] = (struct _sf_span){lo[j * S + s], lo[j * S + s + 1], 0, 0, 0, 0};
	for (int u = 0; u < U; u++) {
		m->units[u].stage = stage_of(lo, C, m->units[u].first) % S;
		/* every pass gathers its units again: micro-batches interleave */
		m->units[u].keep = false;
	}
	SF_CHECK_GOTO(stage_orders(m), out);
	_sf_span_set(m, -1);
	mark_held(m);
	drop_unheld_recomp(m);
	SF_CHECK_GOTO(count_sets(m), out);
	if (m->dw_defer) { /* every unit's gradient slot stays until the weight gradients */
		int need = m->unit_hi - m->unit_lo;
		if (need > SF_MAX_DEPTH + SF_MAX_WIDTH) {
			rc = SF_ERR(SF_ERR_INVALID,
			            "sf_model_create: SHARDFLOW_PP_SCHEDULE=zero-bubble keeps a "
			            "gradient slot for each of stage %d's %d units, more than the "
			            "%d a model has; accepted: more stages (SHARDFLOW_PP), or "
			            "SHARDFLOW_PP_SCHEDULE=1f1b",
			            s, need, SF_MAX_DEPTH + SF_MAX_WIDTH);
			goto out;
		}
		m->G = m->G > need ? m->G : need;
	}
	for (int k = m->bwd_lo; k < m->bwd_hi; k++)
		if (m->units[m->bwd_order[k]].elsewhere) { /* the orders disagree: a bug */
			rc = SF_ERR(SF_ERR_STATE,
			            "sf_model_create: the backward order of graph \"%s\" does not "
			            "hold stage %d's units together; please report this graph",
			            name, s);
			goto out;
		}
	log_stage(m, name, cut, by);
out:
	free(cut);
	free(lo);
	return rc;
}

/* ---- buffers -------------------------------------------------------------------------- */

static void reg(starpu_data_handle_t *h, void *ptr, size_t n, size_t elem)
{
	starpu_vector_data_register(h, STARPU_MAIN_RAM, (uintptr_t)ptr, (uint32_t)n, elem);
}

/* Micro-batch k's buffers of node n (k > 0), as model_storage.c makes the nodes' own:
 * the inputs, which the step stages from the host, filled memory; a layer's, which only
 * tasks and transfers write, task-only (in a simulation bare address space: a Llama
 * 3 70B's micro-batch sets fold terabytes otherwise), counted in m->act_bytes as made
 * (sf_model_stats': the memory plan's _sf_node_set_floats is checked against it) */
static int alloc_buf(struct sf_model *m, int n, struct pp_buf *b)
{
	const struct _sf_node *nd = &m->gnodes[n];
	const struct _sf_node_state *s = &m->nodes[n];
	size_t cnt = m->rows_local * (size_t)nd->dim;
	if (nd->kind == SF_NODE_INT_INPUT) {
		SF_CHECK(
		    _sf_alloc_floats(&b->act, m->rows_local, "a micro-batch's integer inputs"));
		reg(&b->h_act, b->act, m->rows_local, sizeof(int32_t));
		m->act_bytes += m->rows_local * sizeof(int32_t);
		return SF_OK;
	}
	if (nd->kind != SF_NODE_LAYER) {
		SF_CHECK(_sf_alloc_floats(&b->act, cnt, "a micro-batch's inputs"));
		reg(&b->h_act, b->act, cnt, sizeof(float));
		m->act_bytes += cnt * sizeof(float);
		return SF_OK;
	}
	SF_CHECK(_sf_alloc_task_only(&b->act, cnt, "a micro-batch's activations"));
	reg(&b->h_act, b->act, cnt, sizeof(float));
	SF_CHECK(_sf_alloc_task_only(&b->dact, cnt, "a micro-batch's activation gradients"));
	reg(&b->h_dact, b->dact, cnt, sizeof(float));
	m->act_bytes += 2 * cnt * sizeof(float);
	if (s->info.nsaved && s->hold == SF_HOLD_ALL) { /* the boundary's: not this stage's */
		SF_CHECK(_sf_alloc_task_only(&b->saved, s->info.nsaved,
		                             "a micro-batch's saved buffer"));
		reg(&b->h_saved, b->saved, s->info.nsaved, sizeof(float));
		m->act_bytes += s->info.nsaved * sizeof(float);
	}
	return SF_OK;
}

static void unreg(starpu_data_handle_t *h)
{
	if (*h)
		starpu_data_unregister(*h);
	*h = NULL;
}

/* Whether micro-batch k's entry of bound node i holds buffers of its own: an input's,
 * every micro-batch (the step stages them all before its first pass); a layer's, the
 * first m->act_sets (its slots, taken in turn: k's are k mod act_sets's). Micro-batch
 * 0's are the nodes' own. */
static bool owns(const struct sf_model *m, const struct _sf_pipeline *pp, int k, int i)
{
	return k > 0 && k < _sf_node_sets(m, pp->bound[i]);
}

/* Micro-batch k's buffers, labels, loss and loss scale into the nodes and the model */
static void bind(struct sf_model *m, int k)
{
	struct _sf_pipeline *pp = m->pp;
	for (int i = 0; i < pp->nbound; i++) {
		struct _sf_node_state *s = &m->nodes[pp->bound[i]];
		const struct pp_buf *b = &pp->buf[(size_t)k * (size_t)pp->nbound + (size_t)i];
		s->act = b->act, s->dact = b->dact, s->saved = b->saved;
		s->h_act = b->h_act, s->h_dact = b->h_dact, s->h_saved = b->h_saved;
	}
	m->labels = pp->labels[k];
	m->h_labels = pp->h_labels[k];
	m->pp_loss = pp->h_loss[k];
	m->loss_args.scale = pp->scale[k];
}

/* This rank's chunk (m->spans) holding node n, or -1 */
static int chunk_of(const struct sf_model *m, int n)
{
	for (int j = 0; j < m->nspans; j++)
		if (n >= m->spans[j].node_lo && n < m->spans[j].node_hi)
			return j;
	return -1;
}

/* The nodes whose buffers are a micro-batch's: those mark_held keeps (the inputs the
 * stage reads, its layers and what it reads from the stage before); the edges to and
 * from the neighbours, each of one of this rank's chunks: from the chunk before (on
 * the stage before, or for chunk j > 0 of the first stage the last stage's chunk j -
 * 1), to the chunk after. Under the interleaved schedule on a backend with tags
 * (tagged()) each transfer has its tag:
 * its boundary b (the graph's chunk it leaves), micro-batch, direction and its place
 * e among the tensors crossing b (node order, as both ends count them). */
static int find_bound(struct sf_model *m, struct _sf_pipeline *pp)
{
	int N = m->nnodes, S = m->pp_size, s = m->pp_stage, M = pp->M;
	bool tags = tagged(m);
	char *role = calloc((size_t)N, 1); /* bit 0: bound, 1: from before, 2: to the next */
	int *jof = malloc((size_t)N * sizeof *jof); /* an edge's chunk of this rank */
	pp->bound = malloc((size_t)N * sizeof *pp->bound);
	pp->in = calloc((size_t)N, sizeof *pp->in);
	pp->out = calloc((size_t)N, sizeof *pp->out);
	if (!role || !jof || !pp->bound || !pp->in || !pp->out) {
		free(role), free(jof);
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	}
	for (int n = 0; n < N; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		int jn = chunk_of(m, n);
		bool buffers = nd->kind == SF_NODE_LAYER || nd->kind == SF_NODE_INPUT ||
		               nd->kind == SF_NODE_INT_INPUT;
		/* mark_held's; a recomputed node's buffers are its group's shared ones for every
		 * micro-batch (plan.c), never a micro-batch's own */
		if (buffers && m->nodes[n].hold != SF_HOLD_NONE && m->nodes[n].recomp_buf < 0)
			role[n] |= 1;
		if ((nd->kind != SF_NODE_LAYER && nd->kind != SF_NODE_LOSS) || is_input(m, n))
			continue;
		for (int i = 0; i < nd->nin; i++) {
			int x = nd->in[i], jx = chunk_of(m, x);
			if (is_input(m, x))
				continue;
			if (jn >= 0 && jx < 0)
				role[x] |= 2, jof[x] = jn;
			if (jn < 0 && jx >= 0)
				role[x] |= 4, jof[x] = jx;
		}
	}
	pp->nbound = pp->nin = pp->nout = 0;
	/* the same (dp, CP, TP) place of the stage before or after: a stage's ranks on */
	int stage = m->nranks / S;
	int prev = m->rank + ((s + S - 1) % S - s) * stage, next = m->rank + ((s + 1) % S - s) * stage;
	int *seq = calloc(2 * (size_t)SF_MAX_PP_VIRTUAL, sizeof *seq); /* e: per chunk, dir */
	if (!seq) {
		free(role), free(jof);
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	}
	for (int n = 0; n < N; n++) {
		if (!(role[n] & 1))
			continue;
		int idx = pp->nbound++;
		pp->bound[idx] = n;
		for (int dir = 0; dir < 2; dir++) {
			if (!(role[n] & (dir ? 4 : 2)))
				continue;
			struct pp_edge *e = dir ? &pp->out[pp->nout++] : &pp->in[pp->nin++];
			e->node = n, e->idx = idx, e->chunk = jof[n];
			int c = jof[n] * S + s, b = dir ? c : c - 1, place = seq[2 * jof[n] + dir]++;
			e->args = calloc(2 * (size_t)M, sizeof *e->args);
			if (!e->args) {
				free(role), free(jof), free(seq);
				return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
			}
			for (int k = 0; k < 2 * M; k++)
				e->args[k] = (struct _sf_p2p_args){
				    .comm = {.comm = m->comm,
				             .unit = m->gnodes[n].name,
				             .acct = &m->comm_acct},
				    .peer = dir ? next : prev,
				    .tag = tags ? 1 + ((b * M + k % M) * 2 + k / M) * m->pp_emax + place
				                  : 0};
			/* dir 0: the activation comes in, its gradient goes back; dir 1: out, back
			 * in */
			snprintf(e->act_name, sizeof e->act_name, "pp %s %s", dir ? "send" : "recv",
			         m->gnodes[n].name);
			snprintf(e->grad_name, sizeof e->grad_name, "pp %s d%s",
			         dir ? "recv" : "send", m->gnodes[n].name);
			snprintf(e->act_wait, sizeof e->act_wait, "pp wait %s %s",
			         dir ? "send" : "recv", m->gnodes[n].name);
			snprintf(e->grad_wait, sizeof e->grad_wait, "pp wait %s d%s",
			         dir ? "recv" : "send", m->gnodes[n].name);
		}
	}
	free(role), free(jof), free(seq);
	return SF_OK;
}

/* The shared units this rank sums with the other end's rank of the same place (the
 * first stage's with the last's: rank +- (S - 1) dp tp), frozen ones aside */
static int find_twins(struct sf_model *m, struct _sf_pipeline *pp)
{
	int S = m->pp_size, s = m->pp_stage;
	int peer = m->rank + (s == 0 ? 1 : -1) * (S - 1) * (m->nranks / S);
	pp->twins = calloc((size_t)m->nunits, sizeof *pp->twins);
	if (!pp->twins)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	for (int u = 0; u < m->nunits && (s == 0 || s == S - 1); u++) {
		const struct _sf_unit *un = &m->units[u];
		if (!un->pp_shared || un->frozen)
			continue;
		struct pp_twin *t = &pp->twins[pp->ntwins++];
		t->unit = u;
		struct _sf_p2p_args a = {
		    .comm = {.comm = m->comm, .unit = un->name, .acct = &m->comm_acct},
		    .peer = peer,
		    .n = un->S};
		t->send = t->recv = a;
		snprintf(t->send_name, sizeof t->send_name, "pp send d%s", un->name);
		snprintf(t->recv_name, sizeof t->recv_name, "pp recv d%s", un->name);
		snprintf(t->send_wait, sizeof t->send_wait, "pp wait send d%s", un->name);
		snprintf(t->recv_wait, sizeof t->recv_wait, "pp wait recv d%s", un->name);
	}
	return SF_OK;
}

static int pipeline_step(struct sf_model *m, const struct sf_batch *b, int64_t *ticket);

int _sf_pipeline_build(struct sf_model *m)
{
	if (m->pp_size <= 1)
		return SF_OK;
	if (m->loss_kind != SF_LOSS_CROSS_ENTROPY)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: SHARDFLOW_PP=%d with a regression loss: not "
		              "supported yet; accepted with a pipeline: the cross-entropy loss",
		              m->pp_size);
	int M = m->pp_micro;
	struct _sf_pipeline *pp = calloc(1, sizeof *pp);
	if (!pp)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	m->pp = pp;
	pp->M = M;
	SF_CHECK(find_bound(m, pp));
	SF_CHECK(find_twins(m, pp));
	pp->buf = calloc((size_t)M * (size_t)pp->nbound, sizeof *pp->buf);
	pp->labels = calloc((size_t)M, sizeof *pp->labels);
	pp->h_labels = calloc((size_t)M, sizeof *pp->h_labels);
	pp->loss = calloc((size_t)M, sizeof *pp->loss);
	pp->h_loss = calloc((size_t)M, sizeof *pp->h_loss);
	pp->scale = calloc((size_t)M, sizeof *pp->scale);
	pp->descr = calloc((size_t)M + 1, sizeof *pp->descr);
	pp->ops = calloc(4 * (size_t)M * (size_t)m->nspans, sizeof *pp->ops);
	pp->fwd_done = calloc((size_t)M, sizeof *pp->fwd_done);
	pp->sent = calloc(2 * (size_t)M * ((size_t)pp->nin + (size_t)pp->nout) + 1,
	                  sizeof *pp->sent);
	pp->xs = calloc((size_t)m->ninputs + 1, sizeof *pp->xs);
	pp->ids = calloc((size_t)m->nint_inputs + 1, sizeof *pp->ids);
	if (!pp->buf || !pp->labels || !pp->h_labels || !pp->loss || !pp->h_loss || !pp->scale ||
	    !pp->descr || !pp->ops || !pp->fwd_done || !pp->sent || !pp->xs || !pp->ids)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	if (m->cfg.pp_schedule == SF_PP_INTERLEAVED && !tagged(m)) {
		pp->items = calloc(6 * (size_t)M * (size_t)m->nspans, sizeof *pp->items);
		if (!pp->items)
			return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
		int n = _sf_pp_order(m->pp_size, m->pp_stage, M, m->nspans, pp->items);
		if (n < 0)
			return n;
		pp->nitems = n;
	}
	for (int i = 0; i < pp->nbound; i++) { /* micro-batch 0: the nodes' own */
		const struct _sf_node_state *s = &m->nodes[pp->bound[i]];
		pp->buf[i] =
		    (struct pp_buf){s->act, s->dact, s->saved, s->h_act, s->h_dact, s->h_saved};
	}
	pp->labels[0] = m->labels, pp->h_labels[0] = m->h_labels;
	for (int k = 0; k < M; k++) {
		for (int i = 0; k > 0 && i < pp->nbound; i++) {
			struct pp_buf *b = &pp->buf[(size_t)k * pp->nbound + i];
			/* its slot's: k's forward comes after the slot's last backward */
			if (!owns(m, pp, k, i)) {
				int sets = _sf_node_sets(m, pp->bound[i]);
				*b = pp->buf[(size_t)(k % sets) * pp->nbound + i];
				continue;
			}
			SF_CHECK(alloc_buf(m, pp->bound[i], b)); /* counted as made: the plan's
			                                           * check (_sf_node_set_floats) */
		}
		if (k > 0) {
			float *l = NULL;
			SF_CHECK(_sf_alloc_floats(&l, m->rows_local, "a micro-batch's labels"));
			pp->labels[k] = (int32_t *)l;
			reg(&pp->h_labels[k], l, m->rows_local, sizeof(int32_t));
		}
		reg(&pp->h_loss[k], &pp->loss[k], 1, sizeof(double));
		pp->scale[k] = m->loss_args.scale;
	}
	m->pp_step = pipeline_step;
	m->pp_predict = _sf_pipeline_predict;
	return SF_OK;
}

void _sf_pipeline_release(struct sf_model *m)
{
	struct _sf_pipeline *pp = m->pp;
	if (!pp)
		return;
	if (pp->buf && pp->labels && pp->h_labels && pp->h_loss && pp->scale)
		bind(m, 0);
	m->pp_loss = NULL;
	for (int k = 0; k < pp->M; k++) {
		for (int i = 0; k > 0 && pp->buf && i < pp->nbound; i++) {
			struct pp_buf *b = &pp->buf[(size_t)k * pp->nbound + i];
			if (!owns(m, pp, k, i))
				continue;
			unreg(&b->h_act);
			unreg(&b->h_dact);
			unreg(&b->h_saved);
			if (m->gnodes[pp->bound[i]].kind == SF_NODE_LAYER) {
				_sf_free_task_only(b->act);
				_sf_free_task_only(b->dact);
				_sf_free_task_only(b->saved);
			} else {
				_sf_free_floats(b->act);
			}
		}
		if (k > 0 && pp->h_labels && pp->labels) {
			unreg(&pp->h_labels[k]);
			_sf_free_floats((float *)pp->labels[k]);
		}
		if (pp->h_loss)
			unreg(&pp->h_loss[k]);
	}
	free(pp->bound), free(pp->buf), free(pp->labels), free(pp->h_labels);
	free(pp->loss), free(pp->h_loss), free(pp->scale), free(pp->descr);
	for (int i = 0; pp->in && i < pp->nin; i++)
		free(pp->in[i].args);
	for (int i = 0; pp->out && i < pp->nout; i++)
		free(pp->out[i].args);
	free(pp->in), free(pp->out), free(pp->ops), free(pp->fwd_done), free(pp->sent);
	free(pp->twins), free(pp->items);
	free(pp->xs), free(pp->ids);
	free(pp);
	m->pp = NULL;
}

/* ---- a step ------------------------------------------------------------------------- */

/* A transfer's task in the trace (SHARDFLOW_TRACE), as a collective */
static struct _sf_task_done traced(struct sf_model *m, const char *name)
{
	struct _sf_event *rec =
	    m->trace ? _sf_recorder_reserve(m->trace, (int)m->nsteps, name, SF_EV_PP, -1) : NULL;
	return rec ? (struct _sf_task_done){_sf_recorder_task_done, rec}
	           : (struct _sf_task_done){0};
}

/* Edge e's tensor of micro-batch k (grad: its gradient) */
static starpu_data_handle_t edge_handle(const struct _sf_pipeline *pp, const struct pp_edge *e,
                                        int k, bool grad)
{
	const struct pp_buf *b = &pp->buf[(size_t)k * pp->nbound + (size_t)e->idx];
	return grad ? b->h_dact : b->h_act;
}

/* Micro-batch k's tensors to or from a neighbour: next, the stage after (else before);
 * grad, the activations' gradients (else the activations); send, else receive. A
 * gradient nothing before needs is not sent (both stages know it from the plan).
 * Posted only (the backend's p2p_post): a receive is completed by recv_wait before its
 * readers, a send by sends_wait before its buffer's next writer. */
static int edge_tasks(struct sf_model *m, int k, bool next, bool grad, bool send, bool wait);

static int transfer(struct sf_model *m, int k, bool next, bool grad, bool send)
{
	return edge_tasks(m, k, next, grad, send, false);
}

/* The waits of micro-batch k's receives posted by transfer (the same arguments): in
 * the comm order just before the pass that reads them, so that the comm worker runs
 * the collectives submitted before them (the passes' gathers and reductions) while
 * the tensor is on its way, instead of waiting in the receive. */
static int recv_wait(struct sf_model *m, int k, bool next, bool grad)
{
	return edge_tasks(m, k, next, grad, false, true);
}

/* transfer's and recv_wait's tasks, one an edge of the side (next) and kind (grad):
 * a transfer posted, or (wait) a receive's wait */
static int edge_tasks(struct sf_model *m, int k, bool next, bool grad, bool send, bool wait)
{
	struct _sf_pipeline *pp = m->pp;
	int ne = next ? pp->nout : pp->nin;
	for (int i = 0; i < ne; i++) {
		struct pp_edge *e = next ? &pp->out[i] : &pp->in[i];
		if ((grad && !m->nodes[e->node].needs_grad) || e->chunk != pp->cur)
			continue;
		const char *name = wait ? (grad ? e->grad_wait : e->act_wait)
		                        : (grad ? e->grad_name : e->act_name);
		struct _sf_p2p_args *a = &e->args[grad ? pp->M + k : k];
		starpu_data_handle_t h = edge_handle(pp, e, k, grad);
		int w = m->ctx->comm_worker;
		SF_CHECK(wait ? _sf_submit_pp_wait(a, send, m->h_order, h, w, name, traced(m, name))
		              : _sf_submit_pp_transfer(a, send, m->h_order, h, w, name,
		                                       traced(m, name)));
		if (send && !wait)
			pp->sent[pp->nsent++] = (struct pp_sent){e, k, grad};
	}
	return SF_OK;
}

/* Whether a pass (bwd: a backward, else a forward) writes the buffer a send t reads:
 * a backward writes the gradients, a forward the activations, and the gradient of the
 * loss's input (the loss is in the forward). */
static bool pass_writes(const struct sf_model *m, struct pp_sent t, bool bwd)
{
	const struct _sf_node *loss = &m->gnodes[m->loss_node];
	bool loss_reads = false;
	for (int i = 0; i < loss->nin; i++)
		loss_reads = loss_reads || loss->in[i] == t.e->node;
	return bwd || !t.grad || loss_reads;
}

/* The waits of the sends posted and not waited for: every one (k < 0), or those whose
 * buffers micro-batch k's pass (bwd: its backward) is about to write (of the other
 * micro-batches of its set, k mod act_sets: a send's buffer is written again only by
 * such a pass, which must not be submitted before the wait). Called after each pass
 * as well (its own sends not posted yet), so that every send is waited for, in the
 * comm worker's time between collectives, and at the step's end. */
static int sends_wait(struct sf_model *m, int k, bool bwd)
{
	struct _sf_pipeline *pp = m->pp;
	int kept = 0;
	for (int i = 0; i < pp->nsent; i++) {
		struct pp_sent t = pp->sent[i];
		if (k >= 0 && (t.mb == k || t.mb % m->act_sets != k % m->act_sets ||
		               t.e->chunk != pp->cur || !pass_writes(m, t, bwd))) {
			pp->sent[kept++] = t;
			continue;
		}
		const char *name = t.grad ? t.e->grad_wait : t.e->act_wait;
		SF_CHECK(_sf_submit_pp_wait(&t.e->args[t.grad ? pp->M + t.mb : t.mb], true,
		                            m->h_order, edge_handle(pp, t.e, t.mb, t.grad),
		                            m->ctx->comm_worker, name, traced(m, name)));
	}
	pp->nsent = kept;
	return SF_OK;
}

/* The shared units' gradients at the step's end, after every transfer of the
 * micro-batches: each stage's sum over its readers (reduce-scattered over its dp
 * ranks) goes to the other stage's rank of the same place, and both add the two
 * (a + b and b + a round alike: the same bits), then update alike (_sf_unit_reduced;
 * with clipping, the norm counts the first stage's). The first stage sends first and
 * the last receives first, so a backend whose transfers are whole (the simulation's)
 * pairs them too. */
static int shared_sum(struct sf_model *m)
{
	struct _sf_pipeline *pp = m->pp;
	bool first = m->pp_stage == 0;
	int w = m->ctx->comm_worker;
	for (int i = 0; i < pp->ntwins; i++) {
		struct pp_twin *t = &pp->twins[i];
		struct _sf_unit *un = &m->units[t->unit];
		for (int j = 0; j < 2; j++) {
			bool send = (j == 0) == first;
			const char *name = send ? t->send_name : t->recv_name;
			SF_CHECK(_sf_submit_pp_transfer(send ? &t->send : &t->recv, send, m->h_order,
			                                send ? un->h_gshard : m->h_rstmp, w, name,
			                                traced(m, name)));
		}
		SF_CHECK(_sf_submit_pp_wait(&t->send, true, m->h_order, un->h_gshard, w, t->send_wait,
		                            traced(m, t->send_wait)));
		SF_CHECK(_sf_submit_pp_wait(&t->recv, false, m->h_order, m->h_rstmp, w, t->recv_wait,
		                            traced(m, t->recv_wait)));
		struct _sf_event *rec = m->trace ? _sf_recorder_reserve(m->trace, (int)m->nsteps,
		                                                        un->acc_name, SF_EV_GRAD, -1)
		                                 : NULL;
		SF_CHECK(_sf_submit_grad_acc(false, un->h_gshard, m->h_rstmp,
		                             (struct _sf_grad_args){.off = 0, .n = un->S},
		                             un->acc_name,
		                             rec ? (struct _sf_task_done){_sf_recorder_task_done, rec}
		                                 : (struct _sf_task_done){0}));
		SF_CHECK(_sf_unit_reduced(m, t->unit, first));
	}
	return SF_OK;
}

/* Micro-batch k of the batch into its buffers (checked and agreed on by every rank,
 * its counted rows, m->counted, by the last stage), through _sf_stage_batch */
static int stage_micro(struct sf_model *m, const struct sf_batch *b, int k)
{
	struct _sf_pipeline *pp = m->pp;
	bool whole = !b || b->ninputs != m->ninputs || b->nint_inputs != m->nint_inputs ||
	             (m->ninputs && !b->inputs) || (m->nint_inputs && !b->int_inputs) ||
	             (m->labels_node >= 0 && !b->labels);
	for (int i = 0; !whole && i < m->ninputs; i++)
		whole = !b->inputs[i];
	for (int i = 0; !whole && i < m->nint_inputs; i++)
		whole = !b->int_inputs[i];
	if (whole) { /* a malformed batch: the staging's own message, on every rank */
		int rc = _sf_stage_batch(m, b, true, "sf_model_step");
		return rc < 0 ? rc : SF_ERR(SF_ERR_INVALID, "sf_model_step: a malformed batch");
	}
	/* micro-batch k's whole samples in the caller's batch (with SHARDFLOW_CP the staging
	 * takes this rank's chunks of them) */
	size_t off = (size_t)k * (size_t)m->B_local * (size_t)m->T_ctx;
	for (int i = 0; i < m->ninputs; i++)
		pp->xs[i] = b->inputs[i] + off * (size_t)m->gnodes[m->input_nodes[i]].dim;
	for (int i = 0; i < m->nint_inputs; i++)
		pp->ids[i] = b->int_inputs[i] + off;
	struct sf_batch mb = {.ninputs = m->ninputs,
	                      .inputs = pp->xs,
	                      .labels = b->labels ? b->labels + off : NULL,
	                      .nint_inputs = m->nint_inputs,
	                      .int_inputs = pp->ids};
	bind(m, k);
	m->sample_base = k * m->B_local; /* a refusal names the rank's sample */
	int rc = _sf_stage_batch(m, &mb, true, "sf_model_step");
	m->sample_base = 0;
	return rc;
}

/* The link to the next stage, in its order (down, nd events), from event *p on: the
 * activations whose forward is submitted are sent; until_grad >= 0: and on to the
 * receipt of micro-batch until_grad's gradient. */
static int link_advance(struct sf_model *m, const struct _sf_pp_op *down, int nd, int *p,
                        int until_grad)
{
	struct _sf_pipeline *pp = m->pp;
	while (*p < nd) {
		struct _sf_pp_op e = down[*p];
		if (!e.bwd) {
			if (!pp->fwd_done[e.mb]) {
				if (until_grad < 0)
					return SF_OK;
				return SF_ERR(
				    SF_ERR_STATE,
				    "pipeline: stage %d would receive micro-batch %d's gradient "
				    "before sending micro-batch %d's activations; please "
				    "report this schedule",
				    m->pp_stage, until_grad, e.mb);
			}
			SF_CHECK(transfer(m, e.mb, true, false, true));
		} else {
			if (until_grad < 0)
				return SF_OK;
			SF_CHECK(transfer(m, e.mb, true, true, false));
			if (e.mb == until_grad) {
				(*p)++;
				return link_advance(m, down, nd, p, -1);
			}
		}
		(*p)++;
	}
	return SF_OK;
}

/* The passes' span: this rank's chunk j (m->spans), or (j < 0) all its units */
static void span(struct sf_model *m, int j)
{
	_sf_span_set(m, j);
	m->pp->cur = j < 0 ? 0 : j;
}

/* The interleaved schedule's pass i (of ops, this rank's n, over its chunks; nb: each
 * chunk's backwards so far). beside: the pass posts its receives, waits for them just
 * before its compute, and posts its sends right after it: matched by their tags, the
 * transfers need no order the two ends agree on, and each rank's comm worker runs its
 * schedule as a program whose only waits are for the tensors its next pass reads
 * (and, before a forward rewrites an activation set, for that set's sends, received
 * by the time the chunk's backward of that micro-batch got its gradient). Else its
 * transfers are posted apart (interleaved_passes), and the pass only waits for them.
 * The boundary's gradients, sent from buffers of every micro-batch (_sf_node_sets),
 * are waited for at the step's end. */
static int interleaved_pass(struct sf_model *m, const struct _sf_pp_op *ops, int n, int i,
                            int *nb, bool beside)
{
	int k = ops[i].mb, j = ops[i].chunk;
	_sf_task_priority_set(n - i);
	span(m, j);
	bind(m, k);
	if (!ops[i].bwd) {
		if (beside)
			SF_CHECK(transfer(m, k, false, false, false));
		SF_CHECK(sends_wait(m, k, false)); /* its set's activations, received */
		SF_CHECK(recv_wait(m, k, false, false));
		SF_CHECK(_sf_forward_submit(m, true));
		return beside ? transfer(m, k, true, false, true) : SF_OK;
	}
	if (beside)
		SF_CHECK(transfer(m, k, true, true, false));
	SF_CHECK(recv_wait(m, k, true, true));
	m->accum_k = nb[j]; /* the chunk's micro-batches in order: 1f1b's sums */
	m->update = nb[j] == m->pp->M - 1;
	SF_CHECK(_sf_backward_submit(m));
	nb[j]++;
	return beside ? transfer(m, k, false, true, true) : SF_OK;
}

/* The interleaved schedule's passes: beside their transfers where those have tags,
 * else in the order every stage agrees on (pp->items, _sf_pp_order: NCCL's and
 * mpi-sync's transfers wait for their other end, and the chunks' ring would hang
 * without it), each transfer posted there and waited for as above */
static int interleaved_passes(struct sf_model *m, const struct _sf_pp_op *ops, int n)
{
	struct _sf_pipeline *pp = m->pp;
	int nb[SF_MAX_PP_VIRTUAL] = {0};
	for (int i = 0; !pp->items && i < n; i++)
		SF_CHECK(interleaved_pass(m, ops, n, i, nb, true));
	for (int i = 0; pp->items && i < pp->nitems; i++) {
		struct _sf_pp_item t = pp->items[i];
		if (t.pass >= 0) {
			SF_CHECK(interleaved_pass(m, ops, n, t.pass, nb, false));
			continue;
		}
		span(m, t.chunk); /* the edges of the chunk it leaves or enters */
		/* to the next chunk: activations sent, their gradient received */
		SF_CHECK(transfer(m, t.mb, t.send != t.grad, t.grad, t.send));
	}
	return SF_OK;
}

static int pipeline_step(struct sf_model *m, const struct sf_batch *b, int64_t *ticket)
{
	struct _sf_pipeline *pp = m->pp;
	int rc = SF_OK, M = pp->M, S = m->pp_size, s = m->pp_stage;
	int64_t counted = 0;
	for (int k = 0; k < M; k++) {
		SF_CHECK_GOTO(stage_micro(m, b, k), out);
		counted += m->counted;
	}
	/* every micro-batch's loss over the step's counted rows (torchtitan's and
	 * Megatron's): M / them, since the step's sum is scaled by 1 / M; without ignored
	 * labels M / (M c) = 1 / c exactly (both roundings of one real), a micro-batch's
	 * own scale */
	for (int k = 0; k < M; k++)
		pp->scale[k] = counted > 0 ? (float)M / (float)counted : 0.0f;
	if (M > 1)
		SF_CHECK_GOTO(_sf_model_accum_buffers(m), out);
	struct _sf_pp_op *mine = pp->ops, *down = pp->ops + 2 * M * m->nspans;
	int nmine = _sf_pp_schedule(m->cfg.pp_schedule, S, s, M, m->nspans, mine);
	bool inter = m->cfg.pp_schedule == SF_PP_INTERLEAVED;
	int nd = s + 1 < S && !inter ? _sf_pp_schedule(m->cfg.pp_schedule, S, s + 1, M, 1, down) : 0;
	int p = 0, nbwd = 0;
	memset(pp->fwd_done, 0, (size_t)M * sizeof *pp->fwd_done);
	pp->nsent = 0;
	if (inter)
		SF_CHECK_GOTO(interleaved_passes(m, mine, nmine), out);
	for (int i = 0; i < nmine && !inter; i++) {
		int k = mine[i].mb;
		/* the schedule as priorities: of the ready tasks, those of the earliest pass */
		_sf_task_priority_set(nmine - i);
		if (!mine[i].bwd) {
			bind(m, k);
			/* the receive posted first: it travels while the sends finish */
			if (s > 0)
				SF_CHECK_GOTO(transfer(m, k, false, false, false), out);
			SF_CHECK_GOTO(sends_wait(m, k, false), out); /* its set's buffers sent */
			if (s > 0)
				SF_CHECK_GOTO(recv_wait(m, k, false, false), out);
			SF_CHECK_GOTO(_sf_forward_submit(m, true), out);
			/* after the pass's gathers: the comm worker drives the sends in its
			 * compute (MPI's progress) rather than delay the gathers for them */
			SF_CHECK_GOTO(sends_wait(m, -1, false), out);
			pp->fwd_done[k] = true;
			SF_CHECK_GOTO(link_advance(m, down, nd, &p, -1), out);
			continue;
		}
		SF_CHECK_GOTO(link_advance(m, down, nd, &p, k), out);
		SF_CHECK_GOTO(sends_wait(m, k, true), out);
		if (s + 1 < S)
			SF_CHECK_GOTO(recv_wait(m, k, true, true), out);
		bind(m, k);
		m->accum_k = nbwd; /* the micro-batches' sum, as sf_model_accumulate's */
		m->update = nbwd == M - 1;
		SF_CHECK_GOTO(_sf_backward_submit(m), out);
		SF_CHECK_GOTO(sends_wait(m, -1, false), out);
		nbwd++;
		if (s > 0)
			SF_CHECK_GOTO(transfer(m, k, false, true, true), out);
		if (m->dw_defer) { /* zero-bubble: W after the gradient is on its way */
			_sf_task_priority_set(STARPU_DEFAULT_PRIO); /* below every pass */
			SF_CHECK_GOTO(_sf_backward_dw_submit(m), out);
		}
	}
	_sf_task_priority_set(STARPU_DEFAULT_PRIO);
	SF_CHECK_GOTO(sends_wait(m, -1, false), out); /* before the step's end, on every stage */
	if (p != nd) {
		rc = SF_ERR(SF_ERR_STATE,
		            "pipeline: stage %d left %d of its %d transfers with stage %d "
		            "unsubmitted; please report this schedule",
		            s, nd - p, nd, s + 1);
		goto out;
	}
	span(m, -1); /* the step's end: every unit of the rank */
	m->accum_k = M - 1, m->update = true;
	SF_CHECK_GOTO(shared_sum(m), out);
	SF_CHECK_GOTO(_sf_update_submit(m), out);
	if (s == S - 1)
		SF_CHECK_GOTO(_sf_submit_loss_mean(m->h_loss[m->nsteps % SF_LOSS_SLOTS], pp->h_loss,
		                                   M, pp->descr, "loss mean",
		                                   (struct _sf_task_done){0}),
		              out);
	SF_CHECK_GOTO(_sf_loss_sum_submit(m), out);
	if (ticket)
		*ticket = m->nsteps;
	m->nsteps++;
	m->nupdates++;
	m->grad_mean_of = M;
out:
	_sf_task_priority_set(STARPU_DEFAULT_PRIO);
	m->accum_k = 0;
	span(m, -1);
	bind(m, 0);
	m->pp_loss = NULL;
	return rc;
}

/* ---- inference ---------------------------------------------------------------------- */

int _sf_pipeline_forward(struct sf_model *m)
{
	struct _sf_pipeline *pp = m->pp;
	bind(m, 0); /* outside a step the nodes hold micro-batch 0's: the staged pass */
	pp->nsent = 0;
	for (int j = 0; j < m->nspans; j++) { /* each chunk in turn (one but interleaved) */
		span(m, j);
		/* the chunk before's activations, before the forward that reads them */
		SF_CHECK(transfer(m, 0, false, false, false));
		SF_CHECK(recv_wait(m, 0, false, false));
		SF_CHECK(_sf_forward_submit(m, false));
		SF_CHECK(transfer(m, 0, true, false, true));
	}
	SF_CHECK(sends_wait(m, -1, false));
	span(m, -1);
	return SF_OK;
}

int _sf_pipeline_predict(struct sf_model *m, const struct sf_batch *b, float *logits)
{
	struct _sf_pipeline *pp = m->pp;
	int rc = SF_OK, S = m->pp_size, K = m->tp;
	size_t C = (size_t)m->loss_args.classes, rows = m->rows_local;
	/* a vocabulary-parallel head's logits: this TP rank's ceil(V / K) columns */
	size_t V = m->vp ? (size_t)m->nodes[m->gnodes[m->loss_node].in[0]].whole_dim : C;
	size_t Cl = m->vp ? (size_t)m->vp_args.classes : C, n = rows * Cl;
	/* a micro-batch's whole samples' rows (with SHARDFLOW_CP a rank computes 2 of the
	 * 2 K chunks of each: rows is theirs) */
	size_t whole = (size_t)m->B_local * (size_t)m->T_ctx;
	const struct _sf_node_state *z = &m->nodes[m->gnodes[m->loss_node].in[0]];
	float *piece = NULL, *all = NULL, *cols = NULL;
	if (!b || b->ninputs != m->ninputs || b->nint_inputs != m->nint_inputs ||
	    (m->ninputs && !b->inputs) || (m->nint_inputs && !b->int_inputs))
		return _sf_stage_batch(m, b, false, "sf_model_predict"); /* its message */
	SF_CHECK_GOTO(_sf_alloc_floats(&piece, n, "sf_model_predict"), out);
	SF_CHECK_GOTO(_sf_alloc_floats(&all, n * (size_t)m->nranks, "sf_model_predict"), out);
	if (m->cp > 1)
		SF_CHECK_GOTO(_sf_alloc_floats(&cols, whole * Cl, "sf_model_predict"), out);
	for (int k = 0; k < pp->M; k++) { /* micro-batch k's rows of the rank's batch */
		size_t off = (size_t)k * whole;
		for (int i = 0; i < m->ninputs; i++)
			pp->xs[i] =
			    b->inputs[i]
			        ? b->inputs[i] + off * (size_t)m->gnodes[m->input_nodes[i]].dim
			        : NULL;
		for (int i = 0; i < m->nint_inputs; i++)
			pp->ids[i] = b->int_inputs[i] ? b->int_inputs[i] + off : NULL;
		struct sf_batch mb = {.ninputs = m->ninputs,
		                      .inputs = pp->xs,
		                      .nint_inputs = m->nint_inputs,
		                      .int_inputs = pp->ids};
		bind(m, 0);
		m->sample_base = k * m->B_local; /* a refusal names the rank's sample */
		rc = _sf_stage_batch(m, &mb, false, "sf_model_predict");
		m->sample_base = 0;
		SF_CHECK_GOTO(rc, out);
		SF_CHECK_GOTO(_sf_pipeline_forward(m), out);
		if (m->pp_stage == S - 1) { /* the logits: the loss's input, the last stage's */
			SF_CHECK_GOTO(_sf_data_acquire(z->h_act, STARPU_R), out);
			memcpy(piece, z->act, n * sizeof(float));
			starpu_data_release(z->h_act);
		}
		SF_CHECK_GOTO(sf_model_sync(m), out); /* the transfers, then the host's gather */
		/* every rank: its dp place's rows from the last stage's ranks of that place,
		 * world rank ((S - 1) dp + d) K + t, or with CP each CP rank c's chunks from
		 * ((S - 1) dp cp + d cp + c) K + t; a vocabulary-parallel head's columns from
		 * each TP place t, the others' logits whole at t = 0 */
		size_t last = (size_t)(S - 1) * (size_t)(m->nranks / S);
		size_t first = last + (size_t)m->dp_rank * (size_t)m->cp * (size_t)K;
		SF_CHECK_GOTO(m->comm->ops->allgather_bytes(m->comm, piece, n * sizeof(float), all),
		              out);
		for (int t = 0; t < (m->vp ? K : 1); t++) {
			const float *src = all + (first + (size_t)t) * n;
			struct _sf_vocab_slice v = m->vp ? _sf_tp_vocab_slice((int)V, K, t)
			                                 : (struct _sf_vocab_slice){(int)C, 0, (int)C};
			if (m->cp > 1) { /* the CP group's chunks of TP place t put back in place */
				_sf_cp_unslice(m, all + (last + (size_t)t) * n, n, (size_t)m->dp_rank,
				               m->B_local, Cl, cols);
				src = cols;
			}
			for (size_t r = 0; r < whole; r++)
				memcpy(logits + (off + r) * V + (size_t)v.first, src + r * Cl,
				       (size_t)v.valid * sizeof(float));
		}
	}
out:
	_sf_free_floats(piece);
	_sf_free_floats(all);
	_sf_free_floats(cols);
	return rc;
}
