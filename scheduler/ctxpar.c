/*
 * ctxpar.c — context parallelism's plan (SHARDFLOW_CP=K): the ranks of a CP group
 * share each sample, and attention runs as a ring over them.
 *
 * Each sample of T_ctx rows is cut into 2K chunks of c = T_ctx / 2K rows, and CP rank r
 * holds chunks r and 2K - 1 - r, in that order, as its T = 2c rows: the causal mask
 * gives the early chunks little to attend to and the late ones much, and one of each
 * gives every rank the same work (Megatron's and torchtitan's load balance). Every op
 * but attention computes a row from its own rows (the built-in types do; a type of a
 * user's own is refused, as its rows' meaning is not known), so they run unchanged on
 * the rank's rows; the position embedding and RoPE read each row's position from the
 * info (struct sf_layer_info::pos_n0, pos_p0, pos_p1). An attention node's forward and
 * backward become K part tasks each, between the ring's comm tasks
 * (tasks/cp_attention.h; step.c submits them).
 *
 * The CP ranks hold different rows of the same samples and the same parameters: they
 * are data-parallel ranks to FSDP (the shard group is dp x K ranks), and the loss's
 * mean over the counted rows of the global batch (step.c's staging) makes their
 * summed gradients the 1-rank gradient. A caller gives each rank its whole samples
 * (sf_model_local_rows: the K ranks of a CP group get the same ones) and _sf_cp_slice
 * takes the rank's chunks.
 */
#include "config.h"

#include "scheduler/ctxpar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int refuse(const char *what)
{
	return SF_ERR(SF_ERR_INVALID,
	              "SHARDFLOW_CP > 1 is not supported with %s yet (accepted: one or the other)",
	              what);
}

int _sf_cp_layout(struct sf_model *m, const sf_graph *g)
{
	m->cp = m->comm->cp_size;
	m->cp_rank = m->comm->cp_rank;
	m->T_ctx = g->seq_len;
	m->T = g->seq_len;
	if (m->cp == 1)
		return SF_OK;
	int K = m->cp;
	if (g->seq_len % (2 * K) != 0)
		return SF_ERR(SF_ERR_INVALID,
		              "SHARDFLOW_CP=%d: the context of %d rows does not divide into %d "
		              "equal chunks (2 per CP rank: causal load balance); accepted: a "
		              "context that is a multiple of %d",
		              K, g->seq_len, 2 * K, 2 * K);
	if (starpu_cuda_worker_get_count() > 0)
		return refuse("GPU ranks (the ring's part kernels run on CPU workers only)");
	m->T = g->seq_len / K;
	return SF_OK;
}

/* An attention node's heads on this rank (a TP rank's share) */
static void heads_of(const struct sf_layer_info *li, int *NH, int *NKV)
{
	if (li->config_size == sizeof(int)) { /* "attention": one key/value head a head */
		*NH = *NKV = *(const int *)li->config;
	} else {
		const struct sf_attention_config *c = li->config;
		*NH = c->heads, *NKV = c->kv_heads;
	}
	if (li->tp_split)
		*NH /= li->tp_size, *NKV /= li->tp_size;
}

static int plan_ring(struct sf_model *m, int n)
{
	struct _sf_node_state *s = &m->nodes[n];
	const struct sf_layer_info *li = &s->info;
	struct _sf_cp_attn_geom *g = &s->cp_geom;
	int K = m->cp;
	*g = (struct _sf_cp_attn_geom){.B = m->B_local, .C = li->out_dim, .K = K,
	                               .rank = m->cp_rank, .c = m->T / 2, .ld = li->in_dim[0],
	                               .acc = s->bwd_info.accumulate[0]};
	heads_of(li, &g->NH, &g->NKV);
	s->cp_args = calloc((size_t)(2 * K + 1), sizeof *s->cp_args);
	if (!s->cp_args)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	for (int j = 0; j <= 2 * K; j++)
		s->cp_args[j] = (struct _sf_cp_attn_args){g, j < K ? j : j - K};
	s->cp_ring = true;
	snprintf(s->cp_ring_name, sizeof s->cp_ring_name, "cp_ring %s", s->fwd_name + 4);
	snprintf(s->cp_pack_name, sizeof s->cp_pack_name, "cp_pack %s", s->fwd_name + 4);
	size_t kv = _sf_cp_attn_kv_floats(g);
	size_t dsum = (size_t)g->B * (size_t)g->NH * (size_t)m->T;
	m->cp_kv_n = kv > m->cp_kv_n ? kv : m->cp_kv_n;
	m->cp_dsum_n = dsum > m->cp_dsum_n ? dsum : m->cp_dsum_n;
	s->cp_comm = (struct _sf_comm_args){.comm = m->comm, .unit = m->gnodes[n].name,
	                                    .acct = &m->comm_acct, .P = kv};
	return SF_OK;
}

int _sf_cp_plan(struct sf_model *m)
{
	if (m->cp == 1)
		return SF_OK;
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		if (nd->kind != SF_NODE_LAYER)
			continue;
		if (!nd->type->builtin)
			return SF_ERR(SF_ERR_INVALID,
			              "SHARDFLOW_CP=%d: node \"%s\" is of layer type \"%s\", not one "
			              "of shardflow's: context parallelism runs each op on a rank's "
			              "chunks of the sequence and knows which ops read other rows "
			              "only for its own types (accepted: SHARDFLOW_CP=1 for this "
			              "graph)",
			              m->cp, nd->name, nd->type->name);
		if (nd->type->tp == SF_TP_HEADS)
			SF_CHECK(plan_ring(m, n));
	}
	return SF_OK;
}

void _sf_cp_release(struct sf_model *m)
{
	for (int n = 0; m->nodes && n < m->nnodes; n++) {
		free(m->nodes[n].cp_args);
		m->nodes[n].cp_args = NULL;
	}
	for (int i = 0; m->cp_in && i < m->ninputs + m->nint_inputs + 1; i++)
		free(m->cp_in[i]);
	free(m->cp_in);
	free(m->cp_inp);
	free(m->cp_idp);
	m->cp_in = NULL, m->cp_inp = NULL, m->cp_idp = NULL;
}

void _sf_cp_unslice(const struct sf_model *m, const float *all, size_t per, size_t r, int real,
                    size_t dim, float *out)
{
	size_t K = (size_t)m->cp, c = (size_t)m->T / 2, Tw = (size_t)m->T_ctx, row = c * dim;
	for (size_t k = 0; k < K; k++) {
		const float *piece = all + (r * K + k) * (size_t)m->tp * per;
		for (size_t s = 0; s < (size_t)real; s++) {
			const float *p = piece + s * 2 * row;
			memcpy(out + s * Tw * dim + k * row, p, row * sizeof(float));
			memcpy(out + s * Tw * dim + (2 * K - 1 - k) * row, p + row, row * sizeof(float));
		}
	}
}

/* dst (B samples of T rows of w bytes) = this rank's chunks of src (B samples of T_ctx
 * rows): chunk r, then chunk 2K - 1 - r, of each sample */
static void slice_rows(const struct sf_model *m, const void *src, void *dst, size_t w)
{
	size_t c = (size_t)m->T / 2, Tc = (size_t)m->T_ctx, K = (size_t)m->cp;
	size_t r = (size_t)m->cp_rank, late = 2 * K - 1 - r;
	for (size_t b = 0; b < (size_t)m->B_local; b++) {
		const char *s = (const char *)src + b * Tc * w;
		char *d = (char *)dst + b * 2 * c * w;
		memcpy(d, s + r * c * w, c * w);
		memcpy(d + c * w, s + late * c * w, c * w);
	}
}

static int slice_buffers(struct sf_model *m)
{
	if (m->cp_in)
		return SF_OK;
	int n = m->ninputs + m->nint_inputs + 1;
	m->cp_in = calloc((size_t)n, sizeof *m->cp_in);
	m->cp_inp = calloc((size_t)m->ninputs + 1, sizeof *m->cp_inp);
	m->cp_idp = calloc((size_t)m->nint_inputs + 1, sizeof *m->cp_idp);
	if (!m->cp_in || !m->cp_inp || !m->cp_idp)
		return SF_ERR(SF_ERR_NOMEM, "out of memory for a batch's context-parallel slice");
	for (int i = 0; i < n; i++) {
		size_t w = i < m->ninputs ? (size_t)m->gnodes[m->input_nodes[i]].dim * sizeof(float)
		                          : sizeof(int32_t);
		m->cp_in[i] = malloc(m->rows_local * w);
		if (!m->cp_in[i])
			return SF_ERR(SF_ERR_NOMEM, "out of memory for a batch's context-parallel slice");
	}
	return SF_OK;
}

int _sf_cp_slice(struct sf_model *m, const struct sf_batch *b, struct sf_batch *out)
{
	SF_CHECK(slice_buffers(m));
	const float **in = m->cp_inp;
	const int32_t **ids = m->cp_idp;
	*out = *b;
	for (int i = 0; i < m->ninputs; i++) {
		slice_rows(m, b->inputs[i], m->cp_in[i],
		           (size_t)m->gnodes[m->input_nodes[i]].dim * sizeof(float));
		in[i] = m->cp_in[i];
	}
	for (int i = 0; i < m->nint_inputs; i++) {
		slice_rows(m, b->int_inputs[i], m->cp_in[m->ninputs + i], sizeof(int32_t));
		ids[i] = m->cp_in[m->ninputs + i];
	}
	out->inputs = in;
	out->int_inputs = ids;
	if (b->labels) {
		int32_t *l = m->cp_in[m->ninputs + m->nint_inputs];
		slice_rows(m, b->labels, l, sizeof(int32_t));
		out->labels = l;
	}
	return SF_OK;
}
