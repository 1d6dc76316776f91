/*
 * vocabdp.c — FSDP's vocabulary-parallel tied unit (issue 48's item 2): a tied
 * embedding and head that are never gathered.
 *
 * Under plain FSDP a tied GPT-2's embedding matrix (50 257 x 768, 38.6M parameters) is
 * a unit of its own that every step gathers whole at both ends and reduce-scatters
 * whole, and that nothing overlaps. Here the data-parallel ranks of the shard group (N
 * of them) compute the embedding, the head and the loss as Megatron's vocabulary-
 * parallel layers do over a TP group, but over the rows of all N ranks' batches:
 *   - the unit's shard on rank r is rows [r Vl, (r+1) Vl) of the matrix (Vl = ceil(V /
 *     N), the shard length rounded to whole rows: struct _sf_unit::vocab_rows), which
 *     the kernels read in place: no gather, no ring slot;
 *   - the embedding (embedding_vp) looks up the ids of the group's N R rows (the ids
 *     all-gathered when the batch is staged, _sf_dpv_stage), zeros for ids of other
 *     ranks' rows of the vocabulary, and reduce-scatters the N R partial rows: each rank
 *     gets its own R rows summed (its backward all-gathers their gradient first);
 *   - the head (linear_nobias tied to it) all-gathers the N R rows of its input (ln_f's
 *     output), computes their logits over its Vl classes, and reduce-scatters its
 *     partial input gradient into its own R rows;
 *   - the loss is the vocabulary-parallel cross-entropy (layers/xent_vp.h) over the N R
 *     rows, its partials all-gathered over the group, the scale 1 / the rows counted
 *     over the world as always, so each rank's gradient of its rows is plain FSDP's;
 *   - the unit's gradient is then already the sum over the group's rows for this
 *     rank's rows of the vocabulary: it goes into the gradient shard as is (no
 *     reduce-scatter), and the optimizer, the clip norm and checkpoints see an ordinary
 *     shard (a checkpoint's shards are of ceil(P / N): io/ reads and writes this one
 *     through the whole vector, as it does TP's slices).
 * Per step the link carries 4 N R C floats of activations a rank and 3 N^2 R floats of
 * loss partials instead of the matrix's gather and reduce-scatter (2 V C floats a
 * pass). The collectives are the TP codelets' (tp_gather, tp_rs) with
 * struct _sf_comm_args::shard_group: the shard group's all-gather and reduce-scatter.
 * Sizes, flags and arguments only: model_storage.c allocates, step.c submits.
 */
#include "config.h"

#include "scheduler/vocabdp.h"
#include "layers/xent_vp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SF_API int sf_vocab_parallel_pays(int vocab, int width, int ranks, size_t rows)
{
	if (vocab < 1 || width < 1 || ranks < 2 || rows < 1)
		return 0;
	double R = (double)rows, C = (double)width, N = (double)ranks;
	return 5.0 * R * C + 3.0 * N * R < 2.0 * (double)vocab * C / N;
}

/* The embedding_vp, the head tied to it and its loss, or -1s */
static void find_nodes(const struct sf_model *m, int *emb, int *head)
{
	*emb = *head = -1;
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		if (nd->kind == SF_NODE_LAYER && nd->type->tp == SF_TP_VOCAB && *emb < 0)
			*emb = n;
		else if (*emb >= 0 && nd->tied_to == *emb && _sf_tp_tied_vocab(m->gnodes, n))
			*head = n;
	}
}

/* What the layout must be; NULL when it is */
static const char *unsupported(const struct sf_model *m)
{
	if (m->cfg.sharding == SF_SHARD_NONE)
		return "SHARDFLOW_SHARDING=none (every rank holds the whole matrix)";
	if (m->pp_size > 1)
		return "SHARDFLOW_PP";
	if (m->cp > 1)
		return "SHARDFLOW_CP";
	if (m->cfg.recompute != SF_RECOMPUTE_NONE)
		return "SHARDFLOW_RECOMPUTE";
	if (m->cfg.split_backward)
		return "SHARDFLOW_SPLIT_BACKWARD";
	return NULL;
}

/* The kernels' view of a node: the group's rows, this rank's slice */
static void group_info(struct sf_layer_info *li, size_t rows, int N, int r)
{
	li->rows = (int)rows;
	li->tp_size = N;
	li->tp_rank = r;
}

/* Why the model cannot take it, into why (a message's end); 0 when it can */
static int refusal(const struct sf_model *m, int E, int H, char *why, size_t n)
{
	const char *what = unsupported(m);
	int L = m->loss_node, u = m->nodes[E].unit;
	if (what)
		snprintf(why, n, "is not supported with %s yet", what);
	else if (H < 0 || L < 0 || m->gnodes[L].in[0] != H ||
	         !_sf_tp_vocab_parallel_loss(m->gnodes, L))
		snprintf(why, n, "needs a head tied to it (linear_nobias) whose logits the "
		                 "cross-entropy loss reads, as tie_weights = 1 gives");
	else if (u < 0 || m->units[u].P != m->gnodes[E].nparams)
		snprintf(why, n, "needs a unit of its own: its shards are whole rows of the "
		                 "vocabulary (sf_gpt_graph gives it one with tied weights)");
	else if (m->B_global % m->dp_size != 0)
		snprintf(why, n, "computes every data-parallel rank's rows, which must be as "
		                 "many: a batch of %d samples does not divide by the %d ranks",
		         m->B_global, m->dp_size);
	else
		return 0;
	return 1;
}

int _sf_dpv_plan(struct sf_model *m)
{
	int E, H;
	char why[256];
	find_nodes(m, &E, &H);
	if (E < 0 || m->tp > 1 || m->shard_size == 1 ||
	    m->cfg.vocab_parallel == SF_VOCAB_PARALLEL_OFF)
		return SF_OK; /* an embedding_vp of one slice: the embedding, bitwise */
	if (refusal(m, E, H, why, sizeof why)) { /* auto: where it applies */
		if (m->cfg.vocab_parallel != SF_VOCAB_PARALLEL_ON)
			return SF_OK;
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: SHARDFLOW_VOCAB_PARALLEL=on: the vocabulary-"
		              "parallel embedding \"%s\" over %d data-parallel ranks %s "
		              "(accepted: SHARDFLOW_VOCAB_PARALLEL=auto, which then gathers the "
		              "matrix, or off)",
		              m->gnodes[E].name, m->shard_size, why);
	}
	int u = m->nodes[E].unit;
	int N = m->shard_size, r = m->shard_rank, V = m->nodes[E].info.in_range[0];
	size_t R = m->rows_local, C = (size_t)m->nodes[E].info.out_dim;
	struct _sf_vocab_slice v = _sf_tp_vocab_slice(V, N, r);
	m->dpv = true;
	m->dpv_emb = E, m->dpv_head = H;
	m->units[u].vocab_rows = true;
	m->units[u].vocab_row_len = C;
	m->vp = true; /* the loss takes the group's logits, split by classes */

	struct _sf_node_state *e = &m->nodes[E], *h = &m->nodes[H];
	e->dpv_info = e->info, e->dpv_bwd_info = e->bwd_info;
	group_info(&e->dpv_info, (size_t)N * R, N, r);
	group_info(&e->dpv_bwd_info, (size_t)N * R, N, r);
	e->dpv_info.tp_split = e->dpv_bwd_info.tp_split = 1;
	e->dpv_info.nparams = e->dpv_bwd_info.nparams = (size_t)v.rows * C;
	e->sp_rs = true; /* its N R partial rows into m->sp_out, reduce-scattered */
	e->dpv = true;

	h->dpv_info = h->info, h->dpv_bwd_info = h->bwd_info;
	group_info(&h->dpv_info, (size_t)N * R, N, r);
	group_info(&h->dpv_bwd_info, (size_t)N * R, N, r);
	h->dpv_info.out_dim = h->dpv_bwd_info.out_dim = v.rows;
	h->dpv_info.nparams = h->dpv_bwd_info.nparams = (size_t)v.rows * C;
	h->sp_in = true;     /* its input's N R rows all-gathered into m->sp_in */
	h->act_rows = (size_t)N * R;
	m->gnodes[H].dim = v.rows; /* its logits: the group's rows, this rank's classes */
	h->tp_bwd_ar = h->bwd_info.need_dinput[0] != 0;
	if (h->tp_bwd_ar) { /* the partial input gradient into tpbuf, then reduce-scattered */
		h->tp_comm.tp_acc = h->dpv_bwd_info.accumulate[0];
		h->dpv_bwd_info.accumulate[0] = 0;
	}
	h->dpv = true;

	size_t whole = (size_t)N * R * C;
	m->sp_out_n = m->sp_out_n > whole ? m->sp_out_n : whole;
	m->sp_in_n = m->sp_in_n > whole ? m->sp_in_n : whole;
	/* tp_rs over the shard group: its input copied (N R C), the sum's block and the
	 * block added from */
	m->dpv_scratch_n = whole + 2 * R * C;
	if (m->rank == 0)
		_sf_log(SF_LOG_INFO,
		        "model: the tied unit \"%s\" is vocabulary-parallel over the %d "
		        "data-parallel ranks: each holds %d of the %d rows, never gathered; "
		        "the embedding, the head and the loss take the %d ranks' %zu rows",
		        m->units[u].name, N, v.rows, V, N, (size_t)N * R);
	return SF_OK;
}

static struct _sf_comm_args rows_args(struct sf_model *m, int n, size_t mine, size_t P, bool acc)
{
	return (struct _sf_comm_args){
	    .comm = m->comm,
	    .unit = m->gnodes[n].name,
	    .acct = &m->comm_acct,
	    .P = P,
	    .tp_scratch = m->tp_scratch,
	    .tp_acc = acc,
	    .tp_rows = 1,
	    .tp_cols = (size_t)m->shard_size * mine,
	    .tp_lcols = mine,
	    .shard_group = true,
	};
}

void _sf_dpv_comm_args(struct sf_model *m)
{
	if (!m->dpv)
		return;
	size_t N = (size_t)m->shard_size, R = m->rows_local;
	struct _sf_node_state *e = &m->nodes[m->dpv_emb], *h = &m->nodes[m->dpv_head];
	size_t C = (size_t)e->info.out_dim;
	/* the embedding: its partial rows reduce-scattered, its gradient's rows gathered */
	e->tp_comm = rows_args(m, m->dpv_emb, R * C, N * R * C, false);
	e->sp_rows = rows_args(m, m->dpv_emb, R * C, R * C, false);
	/* the head: its input's rows gathered, its partial input gradient reduce-scattered */
	h->tp_comm = rows_args(m, m->dpv_head, R * C, N * R * C, h->tp_comm.tp_acc);
	h->sp_irows = rows_args(m, m->dpv_head, R * C, R * C, false);
	m->vp_comm.shard_group = true;
	m->loss_comm.shard_group = true; /* every member computes the group's loss */
}

/* dst (the group's N blocks of n) = the group's members' blocks of the world's
 * all-gather of src (n elements of `size` bytes a rank) */
static int group_gather(struct sf_model *m, const void *src, size_t n, size_t size, void *dst,
                        const char *fn)
{
	size_t bytes = n * size, N = (size_t)m->shard_size;
	uint8_t *all = malloc(bytes * (size_t)m->nranks + 1);
	if (!all)
		return SF_ERR(SF_ERR_NOMEM, "%s: out of memory", fn);
	int rc = m->comm->ops->allgather_bytes(m->comm, src, bytes, all);
	/* the shard group: shard_size consecutive ranks (tp 1, no pipeline, no CP) */
	size_t base = (size_t)(m->rank - m->shard_rank);
	if (rc == SF_OK)
		memcpy(dst, all + base * bytes, N * bytes);
	free(all);
	return rc;
}

/* h's buffer (n int32) = the group's blocks of src, once the previous step's readers
 * are done with it */
static int stage_group(struct sf_model *m, starpu_data_handle_t h, int32_t *buf,
                       const int32_t *src, const char *fn)
{
	int ret = starpu_data_acquire(h, STARPU_W);
	if (ret != 0)
		return SF_ERR(SF_ERR_STARPU, "%s: starpu_data_acquire failed (%d)", fn, ret);
	int rc = group_gather(m, src, m->rows_local, sizeof(int32_t), buf, fn);
	starpu_data_release(h);
	return rc;
}

int _sf_dpv_stage(struct sf_model *m, const int32_t *ids, const int32_t *labels, const char *fn)
{
	SF_CHECK(stage_group(m, m->h_dpv_ids, m->dpv_ids, ids, fn));
	return labels ? stage_group(m, m->h_labels, m->labels, labels, fn) : SF_OK;
}

int _sf_dpv_whole_logits(struct sf_model *m, const float *mine, float *out)
{
	size_t N = (size_t)m->shard_size, R = m->rows_local;
	size_t Vl = (size_t)m->vp_args.classes, n = N * R * Vl;
	int V = m->nodes[m->dpv_head].whole_dim;
	float *all = malloc(n * N * sizeof(float) + 1);
	if (!all)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_predict: out of memory");
	int rc = group_gather(m, mine, n, sizeof(float), all, "sf_model_predict");
	for (size_t t = 0; rc == SF_OK && t < N; t++) {
		/* member t's classes of this rank's rows */
		const float *src = all + t * n + (size_t)m->shard_rank * R * Vl;
		struct _sf_vocab_slice v = _sf_tp_vocab_slice(V, (int)N, (int)t);
		for (size_t r = 0; r < R; r++)
			memcpy(out + r * (size_t)V + (size_t)v.first, src + r * Vl,
			       (size_t)v.valid * sizeof(float));
	}
	free(all);
	return rc;
}

int _sf_dpv_eval(struct sf_model *m, const float *z, size_t valid, double *mine)
{
	const char *fn = "sf_model_evaluate";
	const struct _sf_xent_vp_args *a = &m->vp_args;
	size_t N = (size_t)m->shard_size, R = m->rows_local, n = N * R;
	int64_t v = (int64_t)valid, *vs = malloc(N * sizeof *vs);
	int32_t *lab = malloc(n * sizeof *lab);
	float *st = malloc(n * SF_XENT_VP_STATS * sizeof *st);
	float *all = malloc(N * n * SF_XENT_VP_STATS * sizeof *all);
	int rc = SF_OK;
	if (!vs || !lab || !st || !all) {
		rc = SF_ERR(SF_ERR_NOMEM, "%s: out of memory", fn);
		goto out;
	}
	/* the members' real rows: a pass's last samples may be padding on some */
	SF_CHECK_GOTO(group_gather(m, &v, 1, sizeof v, vs, fn), out);
	memcpy(lab, m->labels, n * sizeof *lab); /* staged: the group's labels */
	for (size_t t = 0; t < N; t++)
		for (size_t r = (size_t)vs[t]; r < R; r++)
			lab[t * R + r] = a->ignore;
	_sf_xent_vp_partials((int)n, a->classes, a->valid, a->first, z, lab, a->ignore, st);
	SF_CHECK_GOTO(group_gather(m, st, n * SF_XENT_VP_STATS, sizeof *st, all, fn), out);
	double loss = _sf_xent_vp_finish((int)n, a->classes, a->valid, a->first, (int)N, z, lab,
	                                 a->ignore, 1.0f, all, NULL);
	if (m->shard_rank == 0) { /* every member has the group's: the first counts it */
		mine[0] += loss;
		for (size_t r = 0; r < n; r++)
			mine[1] += lab[r] != a->ignore;
	}
out:
	free(vs);
	free(lab);
	free(st);
	free(all);
	return rc;
}
