/*
 * plan.c — what the step planner decides once, at model creation: the units (which
 * nodes' parameters are gathered together, in which order), which gradients are
 * wanted and whether each is overwritten or added to, and the slot bookkeeping the
 * passes use (scheduler/step.c).
 *
 * Orders. Units are numbered by their first use in forward order; the forward pass
 * gathers them in that order. The backward pass meets a unit first at its last
 * forward use, and is done with it at its first: bwd_order sorts units by last use,
 * descending. A chain (an MLP, a stack of blocks) uses one unit at a time: width 1.
 * A unit read at both ends of the graph (tied embedding and output head) stays in use
 * across the others: width 2. The ring then has depth + width slots, so that a depth
 * of d still prefetches d units ahead while the wide unit holds its slot, and the
 * planner never finds the ring full when a unit is needed (it checks anyway).
 */
#include "scheduler/model.h"

#include <stdlib.h>
#include <string.h>

/* ---- slots: the ring and the gradient slots ------------------------------------- */

void _sf_slots_reset(struct _sf_slots *s, int n)
{
	s->n = n;
	s->nfree = n;
	for (int i = 0; i < n; i++) {
		s->holder[i] = -1;
		s->fifo[i] = i;
	}
}

int _sf_slots_take(struct _sf_slots *s, int u)
{
	if (s->nfree == 0)
		return -1;
	int slot = s->fifo[0];
	memmove(s->fifo, s->fifo + 1, (size_t)(s->nfree - 1) * sizeof s->fifo[0]);
	s->nfree--;
	s->holder[slot] = u;
	return slot;
}

void _sf_slots_release(struct _sf_slots *s, int slot)
{
	s->holder[slot] = -1;
	s->fifo[s->nfree++] = slot;
}

int _sf_slots_find(const struct _sf_slots *s, int u)
{
	for (int i = 0; i < s->n; i++)
		if (s->holder[i] == u)
			return i;
	return -1;
}

/* ---- units ------------------------------------------------------------------------- */

/* The unit key of a parameter owner: its group, or itself. */
static int key_of(const struct _sf_node *nd, int owner, int nnodes)
{
	return nd[owner].group >= 0 ? nnodes + nd[owner].group : owner;
}

static int count_units(struct sf_model *m, int *unit_of_key)
{
	int nu = 0;
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		if (nd->kind != SF_NODE_LAYER || !nd->nparams)
			continue;
		int k = key_of(m->gnodes, _sf_node_param_owner(m->gnodes, n), m->nnodes);
		if (unit_of_key[k] < 0)
			unit_of_key[k] = nu++;
		m->nodes[n].unit = unit_of_key[k];
	}
	return nu;
}

/* Offsets: the owners of a unit, in node order, one after the other. */
static void lay_out_units(struct sf_model *m, const struct sf_graph *g, size_t *owner_off)
{
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		int u = m->nodes[n].unit;
		if (u < 0)
			continue;
		struct _sf_unit *un = &m->units[u];
		if (un->P == 0 && !un->name[0]) {
			un->first = n;
			/* the first reader owns parameters (a tied node follows its owner) */
			snprintf(un->name, sizeof un->name, "%s",
			         nd->group >= 0 ? g->group_names[nd->group] : nd->name);
			const struct sf_unit_options *uo =
			    nd->group >= 0 ? &g->group_opts[nd->group] : &nd->unit_opts;
			un->no_reshard = !uo->reshard_after_forward;
			un->keep_fp32 = uo->keep_fp32;
			un->frozen = uo->frozen;
		}
		un->last = n;
		if (nd->tied_to < 0) {
			owner_off[n] = un->P;
			un->P += nd->nparams;
		}
	}
	for (int n = 0; n < m->nnodes; n++) {
		int u = m->nodes[n].unit;
		if (u < 0)
			continue;
		size_t off = owner_off[_sf_node_param_owner(m->gnodes, n)];
		m->nodes[n].info.param_offset = off;
		m->nodes[n].info.param_bf16 =
		    m->cfg.param_dtype == SF_DTYPE_BF16 && !m->units[u].keep_fp32;
	}
}

/* Most units in use at once: at node p, the units with first <= p <= last. */
static int width_of(const struct sf_model *m)
{
	int w = 1;
	for (int p = 0; p < m->nnodes; p++) {
		int k = 0;
		for (int u = 0; u < m->nunits; u++)
			k += m->units[u].first <= p && p <= m->units[u].last;
		w = k > w ? k : w;
	}
	return w;
}

int _sf_plan_units(struct sf_model *m, const struct sf_graph *g)
{
	int rc = SF_OK;
	int nkeys = m->nnodes + g->ngroups;
	int *unit_of_key = malloc((size_t)nkeys * sizeof *unit_of_key);
	size_t *owner_off = calloc((size_t)m->nnodes, sizeof *owner_off);
	if (!unit_of_key || !owner_off) {
		rc = SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
		goto out;
	}
	for (int k = 0; k < nkeys; k++)
		unit_of_key[k] = -1;
	for (int n = 0; n < m->nnodes; n++)
		m->nodes[n].unit = -1;
	m->nunits = count_units(m, unit_of_key);
	m->units = calloc((size_t)(m->nunits ? m->nunits : 1), sizeof *m->units);
	m->bwd_order = calloc((size_t)(m->nunits ? m->nunits : 1), sizeof *m->bwd_order);
	m->fwd_order = calloc((size_t)(m->nunits ? m->nunits : 1), sizeof *m->fwd_order);
	if (!m->units || !m->bwd_order || !m->fwd_order) {
		rc = SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
		goto out;
	}
	lay_out_units(m, g, owner_off);
	for (int u = 0; u < m->nunits; u++) { /* units are numbered by first use */
		m->fwd_order[u] = u;
		m->units[u].fwd_pos = u;
		m->units[u].fwd_last = m->units[u].last;
	}
	/* backward meets units by last use, descending (insertion sort: few units) */
	for (int u = 0; u < m->nunits; u++) {
		int k = u;
		while (k > 0 && m->units[m->bwd_order[k - 1]].last < m->units[u].last) {
			m->bwd_order[k] = m->bwd_order[k - 1];
			k--;
		}
		m->bwd_order[k] = u;
	}
	m->width = width_of(m);
	if (m->width > SF_MAX_WIDTH) {
		rc = SF_ERR(SF_ERR_INVALID,
		            "sf_model_create: %d units of graph \"%s\" are in use at once (their "
		            "first and last readers interleave); at most %d are supported",
		            m->width, g->name, SF_MAX_WIDTH);
		goto out;
	}
	/* what stays gathered from forward to backward: the R units the backward meets
	 * first (a chain keeps its last R units), and the units whose options ask it, each
	 * with a ring slot of its own */
	bool full = m->cfg.sharding == SF_SHARD_FULL || m->cfg.sharding == SF_SHARD_HYBRID;
	m->R = full ? m->cfg.prefetch_depth + m->width : 0;
	int extra = 0;
	for (int k = 0; full && k < m->nunits; k++) {
		struct _sf_unit *un = &m->units[m->bwd_order[k]];
		un->keep = k < m->R || un->no_reshard;
		extra += k >= m->R && un->no_reshard;
	}
	m->R += extra;
	if (m->R > SF_MAX_DEPTH + SF_MAX_WIDTH) {
		rc = SF_ERR(SF_ERR_INVALID,
		            "sf_model_create: graph \"%s\" keeps %d units gathered after forward "
		            "(reshard_after_forward 0) besides its ring of %d; at most %d slots in "
		            "all",
		            g->name, extra, m->R - extra, SF_MAX_DEPTH + SF_MAX_WIDTH);
		goto out;
	}
	m->G = SF_GRAD_SLOTS + m->width - 1;
out:
	free(unit_of_key);
	free(owner_off);
	return rc;
}

/* ---- gradients ---------------------------------------------------------------------- */

static void plan_need_grad(struct sf_model *m)
{
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		bool ng = false;
		if (nd->kind == SF_NODE_LAYER) {
			/* a frozen unit's parameters want no gradient */
			int u = m->nodes[n].unit;
			ng = nd->nparams > 0 && !(u >= 0 && m->units[u].frozen);
			for (int i = 0; i < nd->nin; i++)
				ng = ng || m->nodes[nd->in[i]].needs_grad;
		}
		m->nodes[n].needs_grad = ng;
	}
}

int _sf_plan_gradients(struct sf_model *m)
{
	plan_need_grad(m);
	/* backward runs in reverse creation order: the first writer of an activation
	 * gradient or of a parameter gradient met there writes ("="), the later ones add
	 * ("+=") */
	bool *written = calloc((size_t)m->nnodes + 1, sizeof *written);
	bool *pwritten = calloc((size_t)m->nnodes + 1, sizeof *pwritten);
	if (!written || !pwritten) {
		free(written);
		free(pwritten);
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	}
	for (int n = m->nnodes - 1; n >= 0; n--) {
		const struct _sf_node *nd = &m->gnodes[n];
		struct sf_layer_info *li = &m->nodes[n].info;
		if (nd->kind == SF_NODE_LOSS) {
			written[nd->in[0]] = true;
			continue;
		}
		if (nd->kind != SF_NODE_LAYER || !m->nodes[n].needs_grad)
			continue;
		for (int i = 0; i < nd->nin; i++) {
			int x = nd->in[i];
			li->need_dinput[i] = m->nodes[x].needs_grad;
			if (li->need_dinput[i]) {
				li->accumulate[i] = written[x];
				written[x] = true;
			}
		}
		if (nd->nparams) {
			int o = _sf_node_param_owner(m->gnodes, n);
			li->accumulate_dparams = pwritten[o];
			pwritten[o] = true;
		}
	}
	free(written);
	free(pwritten);
	/* A backward that reads the parameters only for input gradients, and wants none
	 * (a first layer), gets none: its unit need not be gathered again. */
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		struct _sf_node_state *s = &m->nodes[n];
		bool want_dinput = false;
		for (int i = 0; i < s->info.nin; i++)
			want_dinput = want_dinput || s->info.need_dinput[i];
		s->bwd_info = s->info;
		s->bwd_info.backward = 1;
		s->bwd_info.params_absent = nd->kind == SF_NODE_LAYER && nd->nparams > 0 &&
		                            !want_dinput &&
		                            nd->type->type.backward_params_for_dinput_only;
		if (s->unit >= 0 && !s->bwd_info.params_absent && s->needs_grad)
			m->units[s->unit].bwd_params = true;
	}
	/* each unit's backward: from its last node that runs one to its first (a trained
	 * unit's last and first readers; a frozen unit's, where an input gradient is
	 * wanted through it; none when nothing before it trains) */
	for (int u = 0; u < m->nunits; u++)
		m->units[u].bwd_first = m->units[u].bwd_last = -1;
	for (int n = 0; n < m->nnodes; n++) {
		struct _sf_node_state *s = &m->nodes[n];
		if (s->unit < 0 || m->gnodes[n].kind != SF_NODE_LAYER || !s->needs_grad)
			continue;
		struct _sf_unit *un = &m->units[s->unit];
		if (un->bwd_last < 0)
			un->bwd_last = n;
		un->bwd_first = n;
	}
	return SF_OK;
}

/* ---- activation recompute (SHARDFLOW_RECOMPUTE=units) -------------------------------- *
 *
 * The segment of unit u is the nodes [u.first, first node of unit u + 1) (units are
 * numbered by first use, so segments tile the graph from the first unit on). A node of
 * a segment is dropped when it lies within the unit's own span [first, last] (what
 * follows the unit's last reader, a block's final residual add or a tied head, stays),
 * every reader of its output is in the segment (not the loss), and it reads no unit
 * but the segment's own: the segment's input and output stay, its inner activations
 * (their gradients and saved buffers too) are recomputed from them before its
 * backward. Dropped activations live in buffers shared between
 * like segments (the same widths and saved sizes in the same order: a stack of
 * identical blocks): a group of g >= 3 like segments shares two sets of them, taken in
 * turn, instead of g. Smaller groups (an embedding, a final layernorm) keep theirs:
 * recomputing them would save nothing. */

/* a segment's signature: its dropped nodes' (width, saved) in order, compared */
static bool same_shape(const struct sf_model *m, int a, int b, const bool *drop)
{
	int ea = m->units[a].seg_end, eb = m->units[b].seg_end;
	int i = m->units[a].first, j = m->units[b].first;
	for (;;) {
		while (i < ea && !drop[i])
			i++;
		while (j < eb && !drop[j])
			j++;
		if (i == ea || j == eb)
			return i == ea && j == eb;
		if (m->gnodes[i].dim != m->gnodes[j].dim ||
		    m->nodes[i].info.nsaved != m->nodes[j].info.nsaved ||
		    m->gnodes[i].type != m->gnodes[j].type)
			return false;
		i++, j++;
	}
}

/* Which dropped nodes run their forward again before the segment's backward (rerun):
 * walking each recomputed segment from its end, a node whose own backward reads its
 * saved buffer or its output, or one of whose readers' backward reads its inputs (or
 * whose reader runs again: that forward reads it). The others' results no backward
 * reads: a GPT block's fc_b, whose only reader is the block's last residual add
 * (its backward passes dy on), kept as the segment's output. */
static void plan_reruns(struct sf_model *m)
{
	for (int u = 0; u < m->nunits; u++) {
		const struct _sf_unit *un = &m->units[u];
		for (int n = un->seg_end - 1; un->recompute && n >= un->first; n--) {
			struct _sf_node_state *st = &m->nodes[n];
			if (st->recomp_buf < 0)
				continue;
			bool need = st->info.nsaved > 0 || m->gnodes[n].type->bwd_reads_output;
			for (int r = n + 1; !need && r < un->seg_end; r++) { /* its readers' */
				const struct _sf_node *rd = &m->gnodes[r];
				for (int i = 0; i < rd->nin && !need; i++)
					need = rd->in[i] == n &&
					       (rd->kind != SF_NODE_LAYER || rd->type->bwd_reads_inputs ||
					        m->nodes[r].rerun);
			}
			st->rerun = need;
		}
	}
}

int _sf_plan_recompute(struct sf_model *m)
{
	int rc = SF_OK, U = m->nunits, nb = 0;
	bool *drop = calloc((size_t)m->nnodes + 1, sizeof *drop);
	int *group = malloc((size_t)(U ? U : 1) * sizeof *group);
	m->seg_of = malloc((size_t)m->nnodes * sizeof *m->seg_of);
	if (!drop || !group || !m->seg_of) {
		rc = SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
		goto out;
	}
	for (int n = 0; n < m->nnodes; n++) {
		m->seg_of[n] = -1;
		m->nodes[n].recomp_buf = -1;
	}
	for (int u = 0; u < U; u++) {
		m->units[u].seg_end = u + 1 < U ? m->units[u + 1].first : m->nnodes;
		for (int n = m->units[u].first; n < m->units[u].seg_end; n++)
			m->seg_of[n] = u;
	}
	if (m->cfg.recompute != SF_RECOMPUTE_UNITS)
		goto out;
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		int s = m->seg_of[n], u = m->nodes[n].unit;
		drop[n] = s >= 0 && n <= m->units[s].last && nd->kind == SF_NODE_LAYER &&
		          nd->tied_to < 0 && (u < 0 || u == s);
	}
	for (int n = 0; n < m->nnodes; n++) { /* a reader outside the segment keeps it */
		const struct _sf_node *nd = &m->gnodes[n];
		for (int i = 0; i < (nd->kind == SF_NODE_LAYER || nd->kind == SF_NODE_LOSS ? nd->nin : 0);
		     i++) {
			int x = nd->in[i];
			if (nd->kind == SF_NODE_LOSS || m->seg_of[n] != m->seg_of[x])
				drop[x] = false;
		}
	}
	/* group like segments (first member's index), keep groups of 3 or more */
	for (int u = 0; u < U; u++) {
		group[u] = u;
		for (int v = 0; v < u; v++)
			if (group[v] == v && same_shape(m, u, v, drop)) {
				group[u] = v;
				break;
			}
	}
	for (int u = 0; u < U; u++) {
		int members = 0, pos = 0, idx = 0;
		for (int v = 0; v < U; v++)
			members += group[v] == group[u];
		for (int v = 0; v < u; v++)
			idx += group[v] == group[u];
		int ndrop = 0;
		for (int n = m->units[u].first; n < m->units[u].seg_end; n++)
			ndrop += drop[n];
		if (members < 3 || ndrop == 0)
			continue;
		m->units[u].recompute = true;
		m->units[u].bwd_params = true; /* its recompute reads the parameters */
		/* the group's buffers follow those of the groups before it: base of group g =
		 * the buffers of the first members of earlier groups, two sets each */
		int base = 0;
		for (int v = 0; v < group[u]; v++)
			if (group[v] == v && m->units[v].recompute) {
				int nd = 0;
				for (int n = m->units[v].first; n < m->units[v].seg_end; n++)
					nd += drop[n];
				base += 2 * nd;
			}
		for (int n = m->units[u].first; n < m->units[u].seg_end; n++)
			if (drop[n])
				m->nodes[n].recomp_buf = base + (idx % 2) * ndrop + pos++;
		if (base + 2 * ndrop > nb)
			nb = base + 2 * ndrop;
	}
	plan_reruns(m);
	m->nrecomp_bufs = nb;
	m->recomp_bufs = calloc((size_t)(nb ? nb : 1), sizeof *m->recomp_bufs);
	if (!m->recomp_bufs) {
		rc = SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
		goto out;
	}
	for (int n = 0; n < m->nnodes; n++) {
		int b = m->nodes[n].recomp_buf;
		if (b < 0)
			continue;
		m->recomp_bufs[b].nact = m->rows_local * (size_t)m->gnodes[n].dim;
		m->recomp_bufs[b].nsaved = m->nodes[n].info.nsaved;
	}
out:
	free(drop);
	free(group);
	return rc;
}

/* ---- split backward (SHARDFLOW_SPLIT_BACKWARD) --------------------------------------- *
 *
 * A unit read at both ends of the graph (a tied head and its embedding) finishes its
 * gradient only when the backward pass reaches the graph's start. Its node at the far
 * end, the head, is the first backward task of the pass, and its weight gradient (half
 * of its work: a third of the model's products for GPT-2 124M at a short context) holds
 * up every unit between: their gradients, and so their reduce-scatters, come that much
 * later, while the link has nothing to send. A node of such a unit whose type can
 * split (the linear types) runs its input gradient at once and its weight gradient as
 * a second task just before the unit's next node after the other units (the
 * embedding's end), which adds to the same gradient after it: the same products in
 * the same order, only later, so the results are bitwise those of one task. The
 * second task waits for that node's output gradient (the last of the other units'
 * backward) rather than running as soon as it could: on one compute worker it would
 * otherwise still run first. Not split: a node with no input gradient (nothing to
 * gain), a frozen unit, a node whose own or input activations live in recompute's
 * shared buffers (the other segments' recomputes rewrite them in between), and a
 * node followed, before the gap, by another reader of the same parameters. */
/* A node whose backward can run in two halves at all: a linear type's, with a gradient,
 * parameters of a unit that trains, none of its buffers or its inputs' recompute's (the
 * weight-gradient half reads its input later, after other segments' recomputes may
 * have rewritten the shared buffers) */
static bool splittable(const struct sf_model *m, int n)
{
	const struct _sf_node *nd = &m->gnodes[n];
	const struct _sf_node_state *s = &m->nodes[n];
	if (!(nd->kind == SF_NODE_LAYER && nd->type->splits_backward &&
	      nd->type->type.backward_params_for_dinput_only && s->needs_grad && s->unit >= 0 &&
	      !m->units[s->unit].frozen && !s->bwd_info.params_absent && s->recomp_buf < 0))
		return false;
	for (int i = 0; i < nd->nin; i++)
		if (m->nodes[nd->in[i]].recomp_buf >= 0)
			return false;
	return true;
}

static int split_point(const struct sf_model *m, int n)
{
	int u = m->nodes[n].unit;
	if (!splittable(m, n))
		return -1;
	int owner = _sf_node_param_owner(m->gnodes, n);
	bool gap = false;
	for (int j = n - 1; j >= 0; j--) {
		const struct _sf_node_state *t = &m->nodes[j];
		if (m->gnodes[j].kind != SF_NODE_LAYER || !t->needs_grad || t->unit < 0)
			continue;
		if (t->unit != u)
			gap = true;
		else if (gap) /* its output gradient must be its own buffer to wait on */
			return t->recomp_buf < 0 ? j : -1;
		else if (_sf_node_param_owner(m->gnodes, j) == owner)
			return -1;
	}
	return -1;
}

/* The zero-bubble schedule (scheduler/pipeline.c) splits every node that can split,
 * tied head or not: its input gradient in the backward pass, its weight gradient in
 * the pass's weight-gradient tasks after it (SF_DW_DEFER). A node's parameters whose
 * gradient another node adds to stay one task: the sum's order would change. */
static int defer_point(const struct sf_model *m, int n)
{
	const struct _sf_node_state *s = &m->nodes[n];
	int u = s->unit;
	if (!splittable(m, n))
		return -1;
	bool dinput = false; /* without an input gradient, nothing is sent sooner */
	for (int i = 0; i < s->bwd_info.nin; i++)
		dinput = dinput || s->bwd_info.need_dinput[i];
	if (!dinput)
		return -1;
	int owner = _sf_node_param_owner(m->gnodes, n);
	for (int j = m->units[u].first; j <= m->units[u].last; j++)
		if (j != n && m->gnodes[j].kind == SF_NODE_LAYER && m->nodes[j].unit == u &&
		    _sf_node_param_owner(m->gnodes, j) == owner)
			return -1;
	return SF_DW_DEFER;
}

void _sf_plan_split_backward(struct sf_model *m)
{
	m->dw_defer = m->pp_size > 1 && m->cfg.pp_schedule == SF_PP_ZERO_BUBBLE;
	for (int n = 0; n < m->nnodes; n++) {
		struct _sf_node_state *s = &m->nodes[n];
		s->dw_before = m->dw_defer             ? defer_point(m, n)
		               : m->cfg.split_backward ? split_point(m, n)
		                                       : -1;
		if (s->dw_before == -1)
			continue;
		s->dw_info = s->bwd_info;
		for (int i = 0; i < s->dw_info.nin; i++)
			s->dw_info.need_dinput[i] = s->dw_info.accumulate[i] = 0;
		s->dw_info.params_absent = 1; /* the weight gradient reads x and dy only */
		s->bwd_info.dparams_absent = 1;
	}
}

/* ---- slot sizes --------------------------------------------------------------------- *
 *
 * A slot is sized by the largest unit it will ever hold, not every slot by the model's
 * largest unit: GPT-2's tied embedding (38.6M parameters against 7.1M a block) would
 * otherwise size every ring slot and gradient slot. Which unit takes which slot is
 * decided at submission (step.c: the oldest freed slot first), but the passes' slot
 * operations depend only on the plan (the units' spans, keep, bwd_params, recompute,
 * the depth), never on timing or values, and not on the backward policy (each policy
 * frees a unit's slot before it gathers the next). So they are replayed here, once, in
 * step.c's order: the forward of evaluation and inference, then a training step's
 * forward and backward (every micro-batch repeats it: each forward starts from an empty
 * ring). step.c checks each slot it hands out against these lengths, so a replay that
 * drifted from the passes fails the step with a message, never writes out of bounds. */

size_t _sf_ring_need(const struct sf_model *m, int u)
{
	return m->units[u].S * (size_t)m->shard_size;
}

size_t _sf_grad_need(const struct sf_model *m, int u)
{
	if (m->units[u].vocab_rows) /* its gradient is its shard's (scheduler/vocabdp.c) */
		return _sf_unit_grad_n(&m->units[u]);
	return m->cfg.sharding == SF_SHARD_NONE ? m->units[u].P : _sf_ring_need(m, u);
}

/* unit u takes a slot as the pass would; the slot grows to hold it */
static void occupy(struct _sf_slots *s, size_t *len, int u, size_t need)
{
	int k = _sf_slots_take(s, u);
	if (k >= 0 && need > len[k])
		len[k] = need;
}

/* unit u gathered into a ring slot, but a vocabulary-parallel unit (read in place) */
static void occupy_ring(struct sf_model *m, struct _sf_slots *ring, int u)
{
	if (!m->units[u].vocab_rows)
		occupy(ring, m->ring_len, u, _sf_ring_need(m, u));
}

static void vacate(struct _sf_slots *s, int u)
{
	int k = _sf_slots_find(s, u);
	if (k >= 0)
		_sf_slots_release(s, k);
}

/* step.c's _sf_forward_submit and prefetch_forward, slots only (full sharding) */
static void replay_forward(struct sf_model *m, struct _sf_slots *ring, bool train)
{
	int next = m->unit_lo;
	_sf_slots_reset(ring, m->R);
	for (int n = m->node_lo; n < m->node_hi; n++) {
		int u = m->nodes[n].unit;
		if (m->gnodes[n].kind != SF_NODE_LAYER || u < 0)
			continue;
		int at = m->units[u].fwd_pos;
		for (; next < m->unit_hi && next <= at + m->cfg.prefetch_depth; next++) {
			if (next > at && ring->nfree == 0)
				break;
			occupy_ring(m, ring, m->fwd_order[next]);
		}
		if (n == m->units[u].fwd_last && !(train && m->units[u].keep))
			vacate(ring, u);
	}
}

/* step.c's backward, recompute_segment and finish_unit_backward, slots only; the ring
 * as the training forward left it (full sharding), or none */
static void replay_backward(struct sf_model *m, struct _sf_slots *ring, struct _sf_slots *grads)
{
	bool full = m->R > 0;
	int started = m->bwd_lo, seg = -1;
	_sf_slots_reset(grads, m->G);
	for (int n = m->node_hi - 1; n >= m->node_lo; n--) {
		int u = m->nodes[n].unit;
		if (m->gnodes[n].kind != SF_NODE_LAYER || !m->nodes[n].needs_grad)
			continue;
		if (m->seg_of[n] != seg) {
			seg = m->seg_of[n];
			if (full && seg >= 0 && m->units[seg].recompute && _sf_slots_find(ring, seg) < 0)
				occupy_ring(m, ring, seg);
		}
		if (u < 0)
			continue;
		const struct _sf_unit *un = &m->units[u];
		bool first = n == un->bwd_first;
		started += first;
		if (first)
			occupy(grads, m->grad_len, u, _sf_grad_need(m, u));
		if (first && full && _sf_slots_find(ring, u) < 0 && un->bwd_params)
			occupy_ring(m, ring, u);
		if (n != un->bwd_last)
			continue;
		if (full) {
			vacate(ring, u);
			int v = started < m->bwd_hi ? m->bwd_order[started] : -1;
			if (v >= 0 && _sf_slots_find(ring, v) < 0 && m->units[v].bwd_params &&
			    ring->nfree > 0)
				occupy_ring(m, ring, v);
		}
		if (!m->dw_defer) /* else kept for the weight gradients, after the pass */
			vacate(grads, u);
	}
}

void _sf_plan_slots(struct sf_model *m)
{
	struct _sf_slots ring, grads;
	memset(m->ring_len, 0, sizeof m->ring_len);
	memset(m->grad_len, 0, sizeof m->grad_len);
	for (int i = 0; i < m->nspans; i++) { /* a pipeline's chunks: each its passes */
		_sf_span_set(m, i);
		_sf_slots_reset(&ring, m->R);
		if (m->R > 0) {
			replay_forward(m, &ring, false);
			replay_forward(m, &ring, true);
		}
		replay_backward(m, &ring, &grads);
	}
	_sf_span_set(m, -1);
	/* a pipeline (scheduler/pipeline.c) runs backwards back to back (its schedules'
	 * last micro-batches), from ring states one pass after a forward never has: there
	 * every ring slot holds the stage's largest unit */
	for (int i = m->unit_lo; m->pp_size > 1 && i < m->unit_hi; i++)
		for (int s = 0; s < m->R; s++)
			if (m->ring_len[s] < _sf_ring_need(m, m->fwd_order[i]))
				m->ring_len[s] = _sf_ring_need(m, m->fwd_order[i]);
	/* a slot no pass takes (a ring deeper than the units) keeps a float for its handle */
	for (int s = 0; s < m->R; s++)
		m->ring_len[s] += m->ring_len[s] == 0;
	for (int s = 0; s < m->G; s++)
		m->grad_len[s] += m->grad_len[s] == 0;
}
