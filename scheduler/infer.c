/*
 * infer.c — forward passes and evaluation over any number of samples
 * (sf_model_forward, sf_model_evaluate), with no MPI in the caller.
 *
 * The model's buffers hold one batch of its geometry: B samples split over the ranks
 * as a training batch is (rank r: B_r samples from row0_r). Every rank is given all
 * the samples; they run in passes of B (the last one padded with zero inputs, id 0 and
 * label 0, which nothing counts), each rank staging its slice (the batch checks agreed
 * across ranks, as a step's are) and running the forward without loss or backward.
 * sf_model_forward then all-gathers each rank's rows of the node's output (padded to
 * the largest slice); sf_model_evaluate sums each valid row's softmax cross-entropy of
 * the loss's input in double (the loss task's row formula, layers/softmax_xent_math.h)
 * (or each element's regression loss against the staged target, layers/loss_math.h)
 * and all-gathers the ranks' sums, so every rank returns the same mean.
 *
 * With a pipeline (SHARDFLOW_PP) a pass is one micro-batch of each dp rank's samples
 * (B_local of the micro-batch's geometry), and goes through the stages as a training
 * micro-batch does (_sf_pipeline_forward: each stage its span, the activations sent
 * on); the node's activation comes from the first stage holding it, the loss's input
 * from the last, whose ranks alone add to the sums (the others add 0).
 */
#include "scheduler/ctxpar.h"
#include "scheduler/model.h"
#include "scheduler/model_storage.h"
#include "scheduler/pipeline.h"
#include "scheduler/vocabdp.h"
#include "layers/loss_math.h"
#include "layers/softmax_xent_math.h"
#include "layers/xent_vp.h"

#include <stdlib.h>
#include <string.h>

/* Samples a pass takes: the model's batch, or with a pipeline (SHARDFLOW_PP) one
 * micro-batch of each dp rank's (a pass goes through the stages as a micro-batch
 * does; the batch divides evenly then) */
static int pass_samples(const struct sf_model *m)
{
	return m->pp_size > 1 ? m->B_local * m->dp_size : m->B_global;
}

/* This dp rank's first sample in a pass */
static int pass_row0(const struct sf_model *m)
{
	return m->pp_size > 1 ? m->dp_rank * m->B_local : m->row0;
}

/* Samples of rank r in a batch of B over N ranks, and its first */
static void slice_of(int B, int N, int r, int *first, int *count)
{
	int base = B / N, extra = B % N;
	*count = base + (r < extra);
	*first = r * base + (r < extra ? r : extra);
}

/* The inputs of this rank's slice of pass p (samples p B + row0 ...), copied into
 * the staging buffers with zeros past `samples`; *b points at them. */
struct pass_buf {
	float **in;
	int32_t **ids;
	int32_t *labels;
};

static void pass_free(struct sf_model *m, struct pass_buf *pb)
{
	for (int i = 0; pb->in && i < m->ninputs; i++)
		free(pb->in[i]);
	for (int i = 0; pb->ids && i < m->nint_inputs; i++)
		free(pb->ids[i]);
	free(pb->in);
	free(pb->ids);
	free(pb->labels);
}

/* The rows of this rank's whole samples: a caller's (with SHARDFLOW_CP the staging
 * slices the rank's chunks of them, m->rows_local) */
static size_t whole_rows(const struct sf_model *m)
{
	return (size_t)m->B_local * (size_t)m->T_ctx;
}

static int pass_alloc(struct sf_model *m, struct pass_buf *pb, const char *fn)
{
	size_t rows = whole_rows(m) + 1;
	pb->in = calloc((size_t)m->ninputs + 1, sizeof *pb->in);
	pb->ids = calloc((size_t)m->nint_inputs + 1, sizeof *pb->ids);
	pb->labels = calloc(rows, sizeof *pb->labels);
	bool ok = pb->in && pb->ids && pb->labels;
	for (int i = 0; ok && i < m->ninputs; i++)
		ok = (pb->in[i] = calloc(rows * (size_t)m->gnodes[m->input_nodes[i]].dim,
		                         sizeof(float))) != NULL;
	for (int i = 0; ok && i < m->nint_inputs; i++)
		ok = (pb->ids[i] = calloc(rows, sizeof(int32_t))) != NULL;
	return ok ? SF_OK : SF_ERR(SF_ERR_NOMEM, "%s: out of memory", fn);
}

/* Copies this rank's slice of pass p into pb (rows past `samples` zero); returns how
 * many of its samples are real */
static int pass_fill(struct sf_model *m, const struct sf_batch *x, int samples, int p,
                     bool labels, struct pass_buf *pb)
{
	size_t T = (size_t)m->T_ctx; /* whole samples */
	int s0 = p * pass_samples(m) + pass_row0(m); /* first sample of the slice */
	int real = samples - s0 < 0 ? 0 : samples - s0 < m->B_local ? samples - s0 : m->B_local;
	size_t have = (size_t)real * T, all = whole_rows(m);
	for (int i = 0; i < m->ninputs; i++) {
		size_t d = (size_t)m->gnodes[m->input_nodes[i]].dim;
		memcpy(pb->in[i], x->inputs[i] + (size_t)s0 * T * d, have * d * sizeof(float));
		memset(pb->in[i] + have * d, 0, (all - have) * d * sizeof(float));
	}
	for (int i = 0; i < m->nint_inputs; i++) {
		memcpy(pb->ids[i], x->int_inputs[i] + (size_t)s0 * T, have * sizeof(int32_t));
		memset(pb->ids[i] + have, 0, (all - have) * sizeof(int32_t));
	}
	if (labels && m->labels_node >= 0) {
		memcpy(pb->labels, x->labels + (size_t)s0 * T, have * sizeof(int32_t));
		memset(pb->labels + have, 0, (all - have) * sizeof(int32_t));
	}
	return real;
}

/* One forward pass of pass p's slice, waited for */
static int pass_run(struct sf_model *m, int p, struct pass_buf *pb, bool labels, const char *fn)
{
	int rc = SF_OK;
	struct sf_batch b = {.ninputs = m->ninputs,
	                     .inputs = (const float *const *)pb->in,
	                     .nint_inputs = m->nint_inputs,
	                     .int_inputs = (const int32_t *const *)pb->ids,
	                     .labels = labels ? pb->labels : NULL};
	m->sample_base = p * pass_samples(m); /* a refusal names the caller's sample */
	rc = _sf_stage_batch(m, &b, labels, fn);
	m->sample_base = 0;
	SF_CHECK(rc);
	struct _sf_recorder *trace = m->trace; /* not a training step: not traced */
	m->trace = NULL;
	/* a pipeline: through the stages, each rank its own stage's span */
	rc = m->pp_size > 1 ? _sf_pipeline_forward(m) : _sf_forward_submit(m, false);
	m->trace = trace;
	SF_CHECK(rc);
	return rc;
}

static int check_args(struct sf_model *m, const struct sf_batch *x, int samples, bool labels,
                      const char *fn)
{
	if (!m || !x)
		return SF_ERR(SF_ERR_INVALID, "%s: NULL model or samples", fn);
	if (samples < 1)
		return SF_ERR(SF_ERR_INVALID, "%s: samples is %d; at least 1", fn, samples);
	if (labels && m->labels_node >= 0 && !x->labels)
		return SF_ERR(SF_ERR_INVALID, "%s: the samples have no labels", fn);
	if (m->accum_k > 0)
		return SF_ERR(SF_ERR_STATE,
		              "%s: %d micro-batches are accumulated (their activations would be "
		              "overwritten); call sf_model_step first",
		              fn, m->accum_k);
	return SF_OK;
}

/* Every rank passes the same number of samples (the passes are collectives) */
static int agree_samples(struct sf_model *m, int samples, const char *fn)
{
	int rc = SF_OK;
	int *all = calloc((size_t)m->nranks + 1, sizeof *all);
	if (!all)
		return SF_ERR(SF_ERR_NOMEM, "%s: out of memory", fn);
	SF_CHECK_GOTO(m->comm->ops->allgather_bytes(m->comm, &samples, sizeof samples, all), out);
	for (int r = 0; r < m->nranks; r++)
		if (all[r] != all[0]) {
			rc = SF_ERR(SF_ERR_INVALID,
			            "%s: rank %d passes %d samples, rank 0 %d: every rank passes the "
			            "same samples",
			            fn, r, all[r], all[0]);
			break;
		}
out:
	free(all);
	return rc;
}

static int find_node(struct sf_model *m, const char *name, const char *fn)
{
	if (!name)
		return SF_ERR(SF_ERR_INVALID, "%s: node name is NULL", fn);
	for (int n = 0; n < m->nnodes; n++) {
		const struct _sf_node *nd = &m->gnodes[n];
		if (strcmp(nd->name, name) != 0)
			continue;
		if (nd->kind != SF_NODE_LAYER && nd->kind != SF_NODE_INPUT)
			return SF_ERR(SF_ERR_INVALID,
			              "%s: node \"%s\" is not a layer or a float input (integer "
			              "inputs, labels and the loss have no activation to return)",
			              fn, name);
		if (m->nodes[n].recomp_buf >= 0)
			return SF_ERR(SF_ERR_STATE,
			              "%s: node \"%s\"'s activation is recomputed "
			              "(SHARDFLOW_RECOMPUTE=units) and its buffer shared with like "
			              "nodes; ask for its unit's last node, or run without recompute",
			              fn, name);
		return n;
	}
	return SF_ERR(SF_ERR_NOT_FOUND, "%s: graph has no node \"%s\"", fn, name);
}

/* The first pipeline stage that holds node id's activation (0 without a pipeline):
 * the stage whose span holds the layer, or the first reading the input; each rank
 * knows only its own, so the world agrees on the smallest. */
static int holder_stage(struct sf_model *m, int id, const char *fn, int *stage)
{
	int rc = SF_OK, S = m->pp_size;
	*stage = 0;
	if (S <= 1)
		return SF_OK;
	int mine = m->nodes[id].hold == SF_HOLD_ALL ? m->pp_stage : S, *all = NULL;
	all = calloc((size_t)m->nranks + 1, sizeof *all);
	if (!all)
		return SF_ERR(SF_ERR_NOMEM, "%s: out of memory", fn);
	SF_CHECK_GOTO(m->comm->ops->allgather_bytes(m->comm, &mine, sizeof mine, all), out);
	*stage = S;
	for (int r = 0; r < m->nranks; r++)
		*stage = all[r] < *stage ? all[r] : *stage;
	if (*stage == S) /* an input no stage reads */
		rc = SF_ERR(SF_ERR_INVALID, "%s: node \"%s\" is read by no pipeline stage", fn,
		            m->gnodes[id].name);
out:
	free(all);
	return rc;
}

SF_API int sf_model_forward(sf_model *m, const char *node, const struct sf_batch *x, int samples,
                            float *out, size_t n)
{
	const char *fn = "sf_model_forward";
	int rc = SF_OK;
	struct pass_buf pb = {0};
	float *piece = NULL, *all = NULL;
	SF_CHECK_GOTO(check_args(m, x, samples, false, fn), out);
	SF_CHECK_GOTO(agree_samples(m, samples, fn), out);
	int id = find_node(m, node, fn);
	if (id < 0)
		return id;
	if (m->dpv && id == m->dpv_head)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: node \"%s\"'s activation is the vocabulary-parallel head's "
		              "logits, the %d data-parallel ranks' rows over this rank's classes "
		              "(SHARDFLOW_VOCAB_PARALLEL); ask sf_model_predict for whole logits, "
		              "or run with SHARDFLOW_VOCAB_PARALLEL=off",
		              fn, node, m->shard_size);
	size_t T = (size_t)m->T, dim = (size_t)m->gnodes[id].dim, Tw = (size_t)m->T_ctx;
	if (!out || n != (size_t)samples * Tw * dim)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: out must hold samples x rows x width = %d x %zu x %zu floats "
		              "(n is %zu)",
		              fn, samples, Tw, dim, n);
	if (m->nodes[id].tp_out_split)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: node \"%s\"'s activation is split over the %d TP ranks "
		              "(SHARDFLOW_TP); ask for a node after its linear_row",
		              fn, node, m->tp);
	if (m->nodes[id].sp)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: node \"%s\"'s rows are split over the %d TP ranks "
		              "(SHARDFLOW_SEQUENCE_PARALLEL=on); ask for a node after a linear_col, "
		              "or run with SHARDFLOW_SEQUENCE_PARALLEL=off",
		              fn, node, m->tp);
	int N = m->dp_size, W = pass_samples(m), most = (W + N - 1) / N;
	size_t per = (size_t)most * T * dim; /* floats of the largest slice */
	SF_CHECK_GOTO(pass_alloc(m, &pb, fn), out);
	piece = calloc(per + 1, sizeof(float));
	all = calloc(per * (size_t)m->nranks + 1, sizeof(float));
	if (!piece || !all) {
		rc = SF_ERR(SF_ERR_NOMEM, "%s: out of memory", fn);
		goto out;
	}
	struct _sf_node_state *s = &m->nodes[id];
	/* dp rank r's rows come from world rank r tp, or with a pipeline from the first
	 * stage holding the node (its own layer, or an input it reads): stage * dp + r */
	int from = 0;
	SF_CHECK_GOTO(holder_stage(m, id, fn, &from), out);
	for (int p = 0; (size_t)p * (size_t)W < (size_t)samples; p++) {
		pass_fill(m, x, samples, p, false, &pb);
		SF_CHECK_GOTO(pass_run(m, p, &pb, false, fn), out);
		if (m->pp_stage == from) {
			SF_CHECK_GOTO(_sf_data_acquire(s->h_act, STARPU_R), out);
			memcpy(piece, s->act, m->rows_local * dim * sizeof(float));
			starpu_data_release(s->h_act);
		}
		if (m->pp_size > 1) /* the pass's transfers done before the host's collective */
			SF_CHECK_GOTO(sf_model_sync(m), out);
		SF_CHECK_GOTO(m->comm->ops->allgather_bytes(m->comm, piece, per * sizeof(float), all), out);
		for (int r = 0; r < N; r++) { /* dp rank r's samples of the pass, the real ones */
			int first, count;
			slice_of(W, N, r, &first, &count);
			int s0 = p * W + first;
			int real = samples - s0 < 0 ? 0 : samples - s0 < count ? samples - s0 : count;
			size_t src = ((size_t)from * (size_t)N + (size_t)r) * (size_t)m->tp;
			if (m->cp > 1) { /* the CP group's chunks, each rank's two, into place */
				_sf_cp_unslice(m, all + (size_t)from * (size_t)(m->nranks / m->pp_size) * per,
				               per, (size_t)r, real, dim, out + (size_t)s0 * Tw * dim);
				continue;
			}
			memcpy(out + (size_t)s0 * T * dim, all + src * per,
			       (size_t)real * T * dim * sizeof(float));
		}
	}
out:
	pass_free(m, &pb);
	free(piece);
	free(all);
	return rc;
}

/* The vocabulary-parallel loss of a pass's first `valid` local rows (logits z, this
 * rank's ceil(V / K) columns, padding left out by the kernels), added to mine[0] and
 * the rows that count to mine[1]: each rank's partials (layers/xent_vp.h) all-gathered
 * over the world, this TP group's combined as the training step's kernel does; z NULL:
 * a pipeline's other stages, which join the all-gather only. */
static int eval_vp(struct sf_model *m, const float *z, const int32_t *labels, size_t valid,
                   double *mine)
{
	int rc = SF_OK;
	size_t most = (size_t)((m->B_global + m->dp_size - 1) / m->dp_size) * (size_t)m->T;
	size_t n = most * SF_XENT_VP_STATS, K = (size_t)m->tp, v3 = valid * SF_XENT_VP_STATS;
	float *st = calloc(n, sizeof(float)), *world = calloc(n * (size_t)m->nranks, sizeof(float));
	float *group = calloc(K * v3 + 1, sizeof(float));
	if (!st || !world || !group) {
		rc = SF_ERR(SF_ERR_NOMEM, "sf_model_evaluate: out of memory");
		goto out;
	}
	const struct _sf_xent_vp_args *a = &m->vp_args;
	if (z)
		_sf_xent_vp_partials((int)valid, a->classes, a->valid, a->first, z, labels,
		                     a->ignore, st);
	SF_CHECK_GOTO(m->comm->ops->allgather_bytes(m->comm, st, n * sizeof(float), world), out);
	if (!z) /* a pipeline stage without the logits: the collective only */
		goto out;
	size_t base = (size_t)(m->rank - m->tp_rank); /* the TP group's first rank */
	for (size_t t = 0; t < K; t++)
		memcpy(group + t * v3, world + (base + t) * n, v3 * sizeof(float));
	mine[0] += _sf_xent_vp_finish((int)valid, a->classes, a->valid, a->first, m->tp, z, labels,
	                              a->ignore, 1.0f, group, NULL);
	for (size_t r = 0; r < valid; r++)
		mine[1] += labels[r] != a->ignore;
out:
	free(st);
	free(world);
	free(group);
	return rc;
}

SF_API int sf_model_evaluate(sf_model *m, const struct sf_batch *x, int samples, double *loss)
{
	const char *fn = "sf_model_evaluate";
	int rc = SF_OK;
	struct pass_buf pb = {0};
	float *dr = NULL;
	double *sums = NULL, mine[2] = {0.0, 0.0}; /* the rank's sum and rows counted */
	SF_CHECK_GOTO(check_args(m, x, samples, true, fn), out);
	SF_CHECK_GOTO(agree_samples(m, samples, fn), out);
	if (!loss)
		return SF_ERR(SF_ERR_INVALID, "%s: loss is NULL", fn);
	int C = m->loss_args.classes;
	const struct _sf_node *lnd = &m->gnodes[m->loss_node];
	struct _sf_node_state *z = &m->nodes[lnd->in[0]];
	SF_CHECK_GOTO(pass_alloc(m, &pb, fn), out);
	const float *target = NULL; /* a regression loss's: its input's staging buffer */
	int target_i = 0;
	for (int i = 0; i < m->ninputs; i++)
		if (lnd->nin > 1 && m->input_nodes[i] == lnd->in[1])
			target = pb.in[i], target_i = i;
	dr = malloc(((size_t)C + 1) * sizeof(float));
	sums = calloc(2 * (size_t)m->nranks + 2, sizeof(double));
	if (!dr || !sums) {
		rc = SF_ERR(SF_ERR_NOMEM, "%s: out of memory", fn);
		goto out;
	}
	for (int p = 0; (size_t)p * (size_t)pass_samples(m) < (size_t)samples; p++) {
		int real = pass_fill(m, x, samples, p, true, &pb);
		SF_CHECK_GOTO(pass_run(m, p, &pb, true, fn), out);
		if (m->pp_stage != m->pp_size - 1) { /* a pipeline's last stage has the logits */
			if (m->vp) /* its TP ranks' partials travel over the world */
				SF_CHECK_GOTO(eval_vp(m, NULL, NULL, 0, mine), out);
			continue;
		}
		/* the rows the logits are of: with SHARDFLOW_CP this rank's chunks, as staged */
		const int32_t *labels = m->cp > 1 ? m->cp_in[m->ninputs + m->nint_inputs] : pb.labels;
		if (target && m->cp > 1)
			target = m->cp_in[target_i];
		SF_CHECK_GOTO(_sf_data_acquire(z->h_act, STARPU_R), out);
		size_t valid = (size_t)real * (size_t)m->T;
		if (m->dpv) { /* the shard group's rows, split by classes (vocabdp.c) */
			rc = _sf_dpv_eval(m, z->act, valid, mine);
			starpu_data_release(z->h_act);
			if (rc < 0)
				goto out;
			continue;
		}
		if (m->vp) { /* the logits split over the TP group: their partials travel */
			rc = eval_vp(m, z->act, labels, valid, mine);
			starpu_data_release(z->h_act);
			if (rc < 0)
				goto out;
			continue;
		}
		if (m->loss_kind == SF_LOSS_CROSS_ENTROPY) {
			for (size_t r = 0; r < valid; r++) { /* a row of the ignore index adds 0 */
				mine[0] += sf_softmax_xent_row_or_ignore(
				    C, z->act + r * (size_t)C, labels[r], m->loss_args.ignore, 1.0f, dr);
				mine[1] += labels[r] != m->loss_args.ignore;
			}
		} else { /* the regression loss of each element against the staged target */
			for (size_t i = 0; i < valid * (size_t)C; i++)
				mine[0] += sf_loss_elem(m->loss_kind, z->act[i] - (target ? target[i] : 0.0f),
				                        m->reg_loss_args.delta, dr);
			mine[1] += (double)valid * (double)C;
		}
		starpu_data_release(z->h_act);
	}
	if (m->pp_size > 1) /* the other stages' transfers done before the host's collective */
		SF_CHECK_GOTO(sf_model_sync(m), out);
	SF_CHECK_GOTO(m->comm->ops->allgather_bytes(m->comm, mine, sizeof mine, sums), out);
	/* in rank order: the same sum on every rank (a pipeline's other stages add 0) */
	double total = 0.0, counted = 0.0;
	for (int r = 0; r < m->nranks; r += m->tp) /* a TP group's first rank counts */
		total += sums[2 * r], counted += sums[2 * r + 1];
	/* the mean over the rows that count (cross-entropy) or over every element */
	if (counted == 0.0) {
		rc = SF_ERR(SF_ERR_INVALID,
		            "%s: every label of the %d samples is the ignore index (%d): there is "
		            "no row to average over",
		            fn, samples, (int)m->loss_args.ignore);
		goto out;
	}
	*loss = total / counted;
out:
	pass_free(m, &pb);
	free(dr);
	free(sums);
	return rc;
}
