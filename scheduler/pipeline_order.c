/*
 * pipeline_order.c — the schedules of a pipeline (scheduler/pipeline_order.h) and, for
 * the interleaved one on a backend without tags, the order its transfers run in.
 *
 * Why an order. NCCL runs a rank's sends and receives in the order its comm worker
 * enqueues them on its stream, and a send waits there until its peer's stream reaches
 * the matching receive; so does SHARDFLOW_COMM=mpi-sync. 1f1b's neighbours agree on
 * their link's order by replaying the later stage's schedule (pipeline.c), since the
 * stages make a line. The interleaved schedule's virtual stages wrap from the last
 * stage to the first (chunk j of stage S - 1 feeds chunk j + 1 of stage 0), so the
 * stages make a ring, and two orders each agreed on one link can still leave every
 * stage waiting for the next round the ring. MPI matches by tag instead, whatever the
 * order (pipeline.c's interleaved_passes).
 *
 * The order. Every stage lays out every stage's schedule in time, a forward taking one
 * unit and a backward two (its two products: the flops' count): a pass starts when its
 * stage's previous pass and the pass that produced what it reads (the chunk before's
 * forward of the micro-batch, the chunk after's backward) have ended. A transfer runs
 * at its producer's end: NCCL's run on a stream of their own (comm/comm_nccl.c), where
 * one waiting for its peer holds only the transfers after it, so posted early they
 * move while the reader's stage computes (posted at the reader's start, the reader
 * waits for the whole transfer; on one stream with the collectives, where a transfer
 * holds every collective after it, that was the better of the two: docs/scale.md
 * measured both). Sorting every transfer and pass by (time, transfers before passes,
 * then activations before gradients, the sender's stage, micro-batch, chunk) gives
 * one sequence of the whole step; each stage runs its part of it. Nothing waits on
 * what comes later in that sequence:
 * - a transfer's data come from a pass that ended then;
 * - its receiving buffer is free: an activation enters a buffer of its micro-batch's
 *   own (the boundary's, _sf_node_sets), and a gradient one of a layer's act_sets,
 *   taken in turn, whose last reader, the backward of micro-batch k - sets, came
 *   before the receiver's forward of k (that is what sets counts), itself before the
 *   gradient's producer;
 * - its sending buffer is rewritten only by a later pass: a gradient leaves a
 *   micro-batch's own buffer, activations a layer's set, rewritten by the forward of
 *   k + sets, after the backward that read k's gradient, after this transfer's reader;
 * - a stage's collectives are its passes', run by all its ranks alike.
 * So the first unfinished step of the sequence can always run, and the step ends
 * (tests/test_pp_order.c runs the programs on a machine that checks these rules).
 */
#include "config.h"

#include "scheduler/pipeline_order.h"

#include "common/error.h"

#include <stdlib.h>

/* The interleaved schedule's i-th forward (or backward) of a rank: the micro-batches
 * in groups of S, each group through the rank's chunks in turn (the backward's from
 * the last chunk): chunk (i mod S V) / S, micro-batch (i / S V) S + i mod S. So a
 * chunk's backwards run in micro-batch order, as 1f1b's: the same sums. */
static struct _sf_pp_op virtual_op(bool bwd, int i, int S, int V)
{
	int j = (i % (S * V)) / S;
	return (struct _sf_pp_op){bwd, (i / (S * V)) * S + i % S, bwd ? V - 1 - j : j};
}

/* gpipe: every forward, then every backward. 1f1b (and zero-bubble): S - 1 - s
 * forwards, then a forward and a backward in turn, then the backwards left: stage s
 * holds at most S - s micro-batches' activations at once. interleaved (Narayanan et
 * al. 2021, Megatron-LM's order): the same over the M V passes of the rank's V chunks,
 * 2 (S - s - 1) + (V - 1) S forwards first. Backwards in micro-batch order in all:
 * the gradient sums are the same. */
int _sf_pp_schedule(enum sf_pp_schedule sched, int S, int s, int M, int V, struct _sf_pp_op *ops)
{
	int n = 0;
	if (sched == SF_PP_INTERLEAVED) { /* V chunks: M V passes each way */
		int total = M * V, w = (S - s - 1) * 2 + (V - 1) * S;
		w = w < total ? w : total;
		for (int i = 0; i < w; i++)
			ops[n++] = virtual_op(false, i, S, V);
		for (int i = 0; i < total - w; i++) {
			ops[n++] = virtual_op(false, w + i, S, V);
			ops[n++] = virtual_op(true, i, S, V);
		}
		for (int i = total - w; i < total; i++)
			ops[n++] = virtual_op(true, i, S, V);
		return n;
	}
	int w = sched == SF_PP_GPIPE ? M : (S - 1 - s < M ? S - 1 - s : M);
	for (int k = 0; k < w; k++)
		ops[n++] = (struct _sf_pp_op){false, k, 0};
	for (int i = 0; i < M - w; i++) {
		ops[n++] = (struct _sf_pp_op){false, w + i, 0};
		ops[n++] = (struct _sf_pp_op){true, i, 0};
	}
	for (int i = M - w; i < M; i++)
		ops[n++] = (struct _sf_pp_op){true, i, 0};
	return n;
}

int _sf_pp_sets(const struct _sf_pp_op *ops, int n, int V)
{
	int held[SF_MAX_PP_VIRTUAL] = {0}, most = 1;
	for (int i = 0; i < n && V <= SF_MAX_PP_VIRTUAL; i++) {
		int *h = &held[ops[i].chunk];
		*h += ops[i].bwd ? -1 : 1;
		most = *h > most ? *h : most;
	}
	return most;
}

/* The whole step's schedules laid out: stage s's pass i is ops[s n + i], starting at
 * slot[s n + i] (in forwards' times); at[((s 2 + bwd) M + mb) V + chunk] its index i */
struct layout {
	int S, M, V, n;
	struct _sf_pp_op *ops;
	int *slot, *at;
};

static int index_of(const struct layout *L, int s, bool bwd, int mb, int chunk)
{
	return L->at[((s * 2 + (bwd ? 1 : 0)) * L->M + mb) * L->V + chunk];
}

/* The pass (stage *ps, index returned) that produces what stage s's pass op reads from
 * another stage, or -1: the chunk before's forward, the chunk after's backward */
static int producer(const struct layout *L, int s, struct _sf_pp_op op, int *ps)
{
	int S = L->S, v = op.chunk * S + s, u = op.bwd ? v + 1 : v - 1;
	if (u < 0 || u >= S * L->V)
		return -1;
	*ps = u % S;
	return index_of(L, *ps, op.bwd, op.mb, u / S);
}

/* A pass's time in the layout: a forward's product, or a backward's two */
static int span_of(struct _sf_pp_op op)
{
	return op.bwd ? 2 : 1;
}

/* Each pass's start: once its stage's pass before and its producer have ended */
static int lay_out(struct layout *L)
{
	int S = L->S, n = L->n, left = S * n;
	int *next = calloc((size_t)S, sizeof *next);
	if (!next)
		return SF_ERR(SF_ERR_NOMEM, "pipeline: out of memory");
	while (left > 0) {
		int placed = 0;
		for (int s = 0; s < S; s++) {
			for (; next[s] < n; next[s]++, placed++, left--) {
				int i = next[s], ps = 0, p = producer(L, s, L->ops[s * n + i], &ps);
				const struct _sf_pp_op *o = L->ops + s * n;
				int t = i > 0 ? L->slot[s * n + i - 1] + span_of(o[i - 1]) : 0;
				if (p >= 0 && p >= next[ps])
					break; /* its producer has no start yet */
				int e =
				    p >= 0 ? L->slot[ps * n + p] + span_of(L->ops[ps * n + p]) : 0;
				t = e > t ? e : t;
				L->slot[s * n + i] = t;
			}
		}
		if (!placed) {
			free(next);
			return SF_ERR(SF_ERR_STATE,
			              "pipeline: the interleaved schedule of %d stages, %d "
			              "micro-batches and %d chunks waits on itself; please report "
			              "this schedule",
			              S, L->M, L->V);
		}
	}
	free(next);
	return SF_OK;
}

/* An entry of the step's sequence and where it sorts: (when, pass, grad, from, mb,
 * chunk) */
struct keyed {
	int when, pass, grad, from, mb, chunk;
	struct _sf_pp_item item;
};

static int by_key(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int dx[6] = {x->when, x->pass, x->grad, x->from, x->mb, x->chunk};
	int dy[6] = {y->when, y->pass, y->grad, y->from, y->mb, y->chunk};
	for (int i = 0; i < 6; i++)
		if (dx[i] != dy[i])
			return dx[i] < dy[i] ? -1 : 1;
	return 0;
}

/* Stage s's entries: its passes at their starts, and each transfer it sends or
 * receives at its producer's end */
static int entries(const struct layout *L, int s, struct keyed *e)
{
	int S = L->S, n = L->n, ne = 0;
	for (int i = 0; i < n; i++)
		e[ne++] =
		    (struct keyed){.when = L->slot[s * n + i], .pass = 1, .item = {.pass = i}};
	for (int r = 0; r < S; r++) { /* every transfer into stage r */
		for (int i = 0; i < n; i++) {
			struct _sf_pp_op op = L->ops[r * n + i];
			int ps = 0, p = producer(L, r, op, &ps);
			if (p < 0 || (r != s && ps != s))
				continue;
			int when = L->slot[ps * n + p] + span_of(L->ops[ps * n + p]);
			int from_chunk = L->ops[ps * n + p].chunk;
			bool send = ps == s;
			struct _sf_pp_item t = {-1, op.mb, send ? from_chunk : op.chunk, op.bwd,
			                        send};
			e[ne++] = (struct keyed){when, 0, op.bwd, ps, op.mb, from_chunk, t};
		}
	}
	qsort(e, (size_t)ne, sizeof *e, by_key);
	return ne;
}

int _sf_pp_order(int S, int s, int M, int V, struct _sf_pp_item *items)
{
	if (S < 2 || s < 0 || s >= S || M < 1 || V < 1 || V > SF_MAX_PP_VIRTUAL)
		return SF_ERR(SF_ERR_INVALID,
		              "pipeline: no order for stage %d of %d, %d "
		              "micro-batches, %d chunks",
		              s, S, M, V);
	int n = 2 * M * V, rc = SF_OK;
	struct layout L = {S, M, V, n, NULL, NULL, NULL};
	L.ops = malloc((size_t)S * (size_t)n * sizeof *L.ops);
	L.slot = malloc((size_t)S * (size_t)n * sizeof *L.slot);
	L.at = malloc((size_t)S * (size_t)n * sizeof *L.at);
	struct keyed *e = malloc(3 * (size_t)n * sizeof *e);
	if (!L.ops || !L.slot || !L.at || !e) {
		rc = SF_ERR(SF_ERR_NOMEM, "pipeline: out of memory");
		goto out;
	}
	for (int r = 0; r < S; r++) {
		struct _sf_pp_op *o = L.ops + (size_t)r * (size_t)n;
		_sf_pp_schedule(SF_PP_INTERLEAVED, S, r, M, V, o);
		for (int i = 0; i < n; i++)
			L.at[((r * 2 + (o[i].bwd ? 1 : 0)) * M + o[i].mb) * V + o[i].chunk] = i;
	}
	rc = lay_out(&L);
	if (rc < 0)
		goto out;
	int ne = entries(&L, s, e);
	for (int i = 0; i < ne; i++)
		items[i] = e[i].item;
	rc = ne;
out:
	free(L.ops), free(L.slot), free(L.at), free(e);
	return rc;
}
