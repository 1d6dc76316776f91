/*
 * replay.c — a pipeline's bubble at its measured task times (see report.h,
 * pp_replayed).
 *
 * The measured bubble mixes two things: what the schedule implies for tasks of these
 * durations (the warm-up and the drain, and a faster stage waiting for a slower one),
 * and what the runtime adds on top (a transfer's latency, a pass waiting for its
 * gathers, a worker waking late). The replay keeps the first and drops the second:
 * every compute task of a step runs again, in its worker's observed order and for its
 * observed duration, starting as soon as its worker is free and the task it waits for
 * on a neighbouring stage has ended. The waits are the boundary's transfers, read from
 * the trace: a rank's k-th "pp wait recv X" pairs with the k-th "pp send X" posted by
 * the rank of the same place one stage before or after (rank +- R / S, the interleaved
 * schedule's and a tied weight's wrapping around); the task it waits for is the
 * sender's last task of the pass to end before that post (a forward's when X is a node
 * the sender forwards, else a backward's: a gradient), and the task that waits is the
 * receiver's first forward (or backward) to start after the wait ended. A tied
 * weight's gradient sum after the passes has no backward after it: no edge.
 *
 * Exact for one compute worker a rank (a GPU rank, bench/pipeline_bubble.sh): each
 * worker replays alone, so on a rank of several the dependencies between its workers
 * are not seen and the replay can only be shorter.
 */
#include "trace/report.h"
#include "common/error.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The tasks a pipeline's boundary feeds, or is fed by, when the tensor is an
 * activation: forward-side passes */
static bool is_fwd_side(enum _sf_ev_kind k)
{
	return k == SF_EV_FWD || k == SF_EV_RECOMPUTE || k == SF_EV_LOSS;
}

static bool is_pass(enum _sf_ev_kind k)
{
	return is_fwd_side(k) || k == SF_EV_BWD;
}

/* Whether name is "<prefix><x>" with x exactly the rest */
static bool names(const char *name, const char *prefix, const char *x)
{
	size_t p = strlen(prefix);
	return strncmp(name, prefix, p) == 0 && strcmp(name + p, x) == 0;
}

/* Whether node x is forwarded in the cell ord[lo, hi): a "fwd x (" task */
static bool forwards(const struct _sf_event *const *ord, size_t lo, size_t hi, const char *x)
{
	size_t len = strlen(x);
	for (size_t i = lo; i < hi; i++)
		if (ord[i]->kind == SF_EV_FWD && strncmp(ord[i]->name, "fwd ", 4) == 0 &&
		    strncmp(ord[i]->name + 4, x, len) == 0 &&
		    strncmp(ord[i]->name + 4 + len, " (", 2) == 0)
			return true;
	return false;
}

struct replay {
	const struct _sf_event *const *ord;
	size_t *lo, *hi; /* each (rank, step) cell's run of ord: index rank * T + step */
	size_t *dep;     /* per event: the event it waits for on another rank, or SIZE_MAX */
	double *rs, *re; /* per event: replayed start and end */
	int R, S, T;
};

/* The edge of the wait ord[w] (a "pp wait recv X" of rank r, step t, its k-th of X):
 * sets dep of the receiver's task that waited to the sender's task it waited for. */
static void pair(struct replay *p, size_t w, int r, int t, int k)
{
	const struct _sf_event *const *ord = p->ord;
	const char *x = ord[w]->name + strlen("pp wait recv ");
	int place = p->R / p->S;
	int peers[2] = {(r + place) % p->R, (r - place + p->R) % p->R};
	for (int c = 0; c < 2; c++) {
		size_t lo = p->lo[peers[c] * p->T + t], hi = p->hi[peers[c] * p->T + t], post = hi;
		for (size_t i = lo, seen = 0; i < hi && post == hi; i++)
			if (ord[i]->kind == SF_EV_PP && names(ord[i]->name, "pp send ", x) &&
			    seen++ == (size_t)k)
				post = i;
		if (post == hi)
			continue;
		bool act = forwards(ord, lo, hi, x);
		size_t from = SIZE_MAX, to = SIZE_MAX;
		for (size_t i = lo; i < hi; i++)
			if ((act ? is_fwd_side(ord[i]->kind) : ord[i]->kind == SF_EV_BWD) &&
			    ord[i]->end <= ord[post]->start &&
			    (from == SIZE_MAX || ord[i]->end > ord[from]->end))
				from = i;
		for (size_t i = p->lo[r * p->T + t]; i < p->hi[r * p->T + t] && to == SIZE_MAX; i++)
			if (ord[i]->start >= ord[w]->end &&
			    (act ? is_fwd_side(ord[i]->kind) : ord[i]->kind == SF_EV_BWD))
				to = i;
		/* a task that waits for two transfers waits for the later one's sender:
		 * keep the sender that ended last */
		if (from != SIZE_MAX && to != SIZE_MAX &&
		    (p->dep[to] == SIZE_MAX || ord[from]->end > ord[p->dep[to]]->end))
			p->dep[to] = from;
		return;
	}
}

struct keyed {
	double start;
	size_t i; /* the event's index in ord */
};

static int cmp_keyed(const void *x, const void *y)
{
	const struct keyed *a = x, *b = y;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* Replays step t: its compute tasks in order of observed start (a task's sender has
 * ended before the task started, so it comes first), each worker from the observed
 * span's start t0 (or from its first task's start, when that came before). Sets p->rs
 * and p->re of those tasks. key: room for every event; free_at: R * W. */
static void replay_step(struct replay *p, int t, double t0, struct keyed *key, double *free_at,
                        int W)
{
	const struct _sf_event *const *ord = p->ord;
	size_t m = 0;
	for (int r = 0; r < p->R; r++)
		for (size_t i = p->lo[r * p->T + t]; i < p->hi[r * p->T + t]; i++)
			if (_sf_ev_is_compute(ord[i]->kind))
				key[m++] = (struct keyed){ord[i]->start, i};
	qsort(key, m, sizeof *key, cmp_keyed);
	for (int c = 0; c < p->R * W; c++)
		free_at[c] = HUGE_VAL; /* the worker has run nothing yet */
	for (size_t j = 0; j < m; j++) {
		size_t i = key[j].i;
		const struct _sf_event *e = ord[i];
		double *f = &free_at[e->rank * W + (e->worker > 0 ? e->worker : 0)];
		double s = *f < HUGE_VAL ? *f : e->start < t0 ? e->start : t0;
		if (p->dep[i] != SIZE_MAX && p->re[p->dep[i]] > s)
			s = p->re[p->dep[i]];
		p->rs[i] = s;
		p->re[i] = s + (e->end - e->start);
		*f = p->re[i];
	}
}

/* Step t's replayed bubble on every rank, summed into out->pp_replayed by stage
 * (cnt: the ranks summed) */
static void step_bubbles(struct replay *p, int t, struct _sf_ival *iv, int *cnt,
                         struct _sf_report *out)
{
	const struct _sf_event *const *ord = p->ord;
	double a = 0, z = -1;
	for (int r = 0; r < p->R; r++)
		for (size_t i = p->lo[r * p->T + t]; i < p->hi[r * p->T + t]; i++)
			if (is_pass(ord[i]->kind)) {
				if (z < a || p->rs[i] < a)
					a = p->rs[i];
				if (z < a || p->re[i] > z)
					z = p->re[i];
			}
	if (z <= a)
		return; /* a step without passes: no bubble to speak of */
	for (int r = 0; r < p->R; r++) {
		size_t n = 0;
		for (size_t i = p->lo[r * p->T + t]; i < p->hi[r * p->T + t]; i++) {
			double x = p->rs[i] > a ? p->rs[i] : a, y = p->re[i] < z ? p->re[i] : z;
			if (_sf_ev_is_compute(ord[i]->kind) && y > x)
				iv[n++] = (struct _sf_ival){x, y};
		}
		n = _sf_ival_merge(iv, n);
		double busy = 0;
		for (size_t i = 0; i < n; i++)
			busy += iv[i].b - iv[i].a;
		int s = out->rank_stage[r];
		out->pp_replayed[s * p->T + t] += 1.0 - busy / (z - a);
		cnt[s * p->T + t]++;
	}
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

void _sf_pp_medians(double *per_step, const int *cnt, int S, int T, double *sorted, double *median)
{
	for (int s = 0; s < S; s++) {
		int k = 0;
		for (int t = 0; t < T; t++)
			if (cnt[s * T + t]) {
				per_step[s * T + t] /= cnt[s * T + t];
				sorted[k++] = per_step[s * T + t];
			}
		qsort(sorted, (size_t)k, sizeof *sorted, cmp_double);
		median[s] = k == 0  ? 0
		            : k % 2 ? sorted[k / 2]
		                    : 0.5 * (sorted[k / 2 - 1] + sorted[k / 2]);
	}
}

int _sf_pp_replay(const struct _sf_event *const *ord, size_t n, struct _sf_report *out)
{
	int R = out->nranks, S = out->pp_stages, T = out->nsteps, W = 1, rc = SF_OK;
	struct replay p = {.ord = ord, .R = R, .S = S, .T = T};
	p.lo = calloc((size_t)R * (size_t)T, sizeof *p.lo);
	p.hi = calloc((size_t)R * (size_t)T, sizeof *p.hi);
	p.dep = malloc(n * sizeof *p.dep);
	p.rs = calloc(n, sizeof *p.rs);
	p.re = calloc(n, sizeof *p.re);
	struct keyed *key = malloc(n * sizeof *key);
	struct _sf_ival *iv = malloc(n * sizeof *iv);
	int *cnt = calloc((size_t)S * (size_t)T, sizeof *cnt);
	double *sorted = malloc((size_t)T * sizeof *sorted), *free_at = NULL;
	out->pp_replayed = calloc((size_t)S * (size_t)T, sizeof *out->pp_replayed);
	out->pp_replayed_median = calloc((size_t)S, sizeof *out->pp_replayed_median);
	for (size_t i = 0; i < n; i++)
		W = ord[i]->worker + 1 > W ? ord[i]->worker + 1 : W;
	free_at = malloc((size_t)R * (size_t)W * sizeof *free_at);
	if (!p.lo || !p.hi || !p.dep || !p.rs || !p.re || !key || !iv || !cnt || !sorted ||
	    !free_at || !out->pp_replayed || !out->pp_replayed_median) {
		rc = SF_ERR(SF_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* ord is in (rank, step, start) order, every cell has an event (report.c) */
	for (size_t i = 0; i < n; i++) {
		size_t c = (size_t)ord[i]->rank * (size_t)T + (size_t)ord[i]->step;
		if (i == 0 || ord[i - 1]->rank != ord[i]->rank || ord[i - 1]->step != ord[i]->step)
			p.lo[c] = i;
		p.hi[c] = i + 1;
		p.dep[i] = SIZE_MAX;
	}
	for (int r = 0; r < R; r++)
		for (int t = 0; t < T; t++)
			for (size_t i = p.lo[r * T + t]; i < p.hi[r * T + t]; i++) {
				if (ord[i]->kind != SF_EV_PP ||
				    strncmp(ord[i]->name, "pp wait recv ", 13) != 0)
					continue;
				int k = 0; /* the earlier waits for the same tensor */
				for (size_t j = p.lo[r * T + t]; j < i; j++)
					k += ord[j]->kind == SF_EV_PP &&
					     strcmp(ord[j]->name, ord[i]->name) == 0;
				pair(&p, i, r, t, k);
			}
	for (int t = 0; t < T; t++) {
		double t0 = 0;
		bool any = false;
		for (int r = 0; r < R; r++) /* the step's cells: one pass over its events */
			for (size_t i = p.lo[r * T + t]; i < p.hi[r * T + t]; i++)
				if (is_pass(ord[i]->kind) && (!any || ord[i]->start < t0))
					t0 = ord[i]->start, any = true;
		if (!any)
			continue;
		replay_step(&p, t, t0, key, free_at, W);
		step_bubbles(&p, t, iv, cnt, out);
	}
	_sf_pp_medians(out->pp_replayed, cnt, S, T, sorted, out->pp_replayed_median);
out:
	free(p.lo);
	free(p.hi);
	free(p.dep);
	free(p.rs);
	free(p.re);
	free(key);
	free(iv);
	free(cnt);
	free(sorted);
	free(free_at);
	return rc;
}
