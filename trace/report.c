/*
 * report.c — the overlap report computed from task intervals (see report.h).
 *
 * Busy times are lengths of unions of intervals, never sums of task durations, so
 * two comm tasks in flight at once (or a compute worker and a second one) are not
 * counted twice and busy time can never exceed the wall time of the step. Exposed
 * communication is the part of the comm union not covered by the compute union.
 *
 * Steps are 0-based inside (event.h); everything written for a person or a script
 * numbers them from 1, as the programs' progress lines count them ("step 1/30"), and
 * the JSON says so ("step_base": 1).
 */
#include "trace/report.h"
#include "common/error.h"
#include "trace/write.h"

#include <stdlib.h>
#include <string.h>

static double length(const struct _sf_ival *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i].b - v[i].a;
	return s;
}

/* Length of the intersection of two merged lists. */
static double overlap_len(const struct _sf_ival *x, size_t nx, const struct _sf_ival *y, size_t ny)
{
	double s = 0;
	size_t i = 0, j = 0;
	while (i < nx && j < ny) {
		double a = x[i].a > y[j].a ? x[i].a : y[j].a;
		double b = x[i].b < y[j].b ? x[i].b : y[j].b;
		if (b > a)
			s += b - a;
		if (x[i].b < y[j].b)
			i++;
		else
			j++;
	}
	return s;
}

static void finish(struct _sf_step_figures *f)
{
	f->overlap = f->comm > 0 ? 1.0 - f->exposed / f->comm : 1.0;
	if (f->overlap < 0)
		f->overlap = 0;
	f->ratio = f->ideal > 0 ? f->wall / f->ideal : 0;
}

static int cmp_ev(const void *x, const void *y)
{
	const struct _sf_event *p = *(const struct _sf_event *const *)x;
	const struct _sf_event *q = *(const struct _sf_event *const *)y;
	if (p->rank != q->rank)
		return p->rank - q->rank;
	if (p->step != q->step)
		return p->step - q->step;
	return p->start < q->start ? -1 : p->start > q->start ? 1 : 0;
}

void _sf_report_free(struct _sf_report *r)
{
	if (!r)
		return;
	free(r->steps);
	free(r->totals);
	free(r->stalls);
	for (int i = 0; r->layer_unit && i < r->nlayers; i++)
		free(r->layer_unit[i]);
	free(r->layer_unit);
	free(r->layers);
	free(r->layer_stall_mean);
	free(r->layer_stall_max);
	free(r->rank_stage);
	free(r->pp_bubble);
	free(r->pp_replayed);
	free(r->pp_replayed_median);
	free(r->pp_median);
	memset(r, 0, sizeof *r);
}

/* The sums of a total: wall, busy, exposed and ideal times (overlap and ratio are
 * recomputed by finish). */
static void add_figures(struct _sf_step_figures *sum, const struct _sf_step_figures *f)
{
	sum->wall += f->wall;
	sum->compute += f->compute;
	sum->comm += f->comm;
	sum->exposed += f->exposed;
	sum->ideal += f->ideal;
}

/* What building a report needs besides the report itself. */
struct build {
	const struct _sf_event **ord; /* the events in (rank, step, start) order */
	struct _sf_ival *comp, *comm; /* one step's intervals (room for every event) */
};

/* Checks every event, and sizes the report (nranks, nsteps). Every (rank, step) must
 * have a task, so n tasks cover ranks and steps below n at most: a rank or step beyond
 * is an incomplete trace (MPIRank can read 2147483647: rank + 1 must not overflow). */
static int scan_events(const struct _sf_event *ev, size_t n, struct _sf_report *out)
{
	for (size_t i = 0; i < n; i++) {
		if (ev[i].rank < 0 || ev[i].step < 0 || ev[i].kind < 0 ||
		    ev[i].kind >= SF_EV_NKINDS)
			return SF_ERR(SF_ERR_INVALID,
			              "task \"%s\": bad rank %d, step %d or kind %d", ev[i].name,
			              ev[i].rank, ev[i].step, (int)ev[i].kind);
		if (!(ev[i].end >= ev[i].start))
			return SF_ERR(SF_ERR_INVALID,
			              "task \"%s\" (rank %d, step %d) ends before it starts "
			              "(%.3f < %.3f us)",
			              ev[i].name, ev[i].rank, ev[i].step + 1, ev[i].end,
			              ev[i].start);
		if ((size_t)ev[i].rank >= n || (size_t)ev[i].step >= n)
			return SF_ERR(SF_ERR_INVALID,
			              "task \"%s\" is on rank %d, step %d, but %zu task(s) cannot "
			              "cover every rank and step below: incomplete trace?",
			              ev[i].name, ev[i].rank, ev[i].step + 1, n);
		if (ev[i].rank + 1 > out->nranks)
			out->nranks = ev[i].rank + 1;
		if (ev[i].step + 1 > out->nsteps)
			out->nsteps = ev[i].step + 1;
	}
	return SF_OK;
}

/* The step "step" of rank "rank" has no task. */
static int missing_cell(const struct _sf_report *out, int rank, int step)
{
	return SF_ERR(SF_ERR_INVALID,
	              "step %d has no task on rank %d (ranks 0..%d, steps 1..%d seen): "
	              "incomplete trace?",
	              step + 1, rank, out->nranks - 1, out->nsteps);
}

/* The events sorted into b->ord, b's arrays and the report's per-step arrays: those
 * only once every (rank, step) is known to have a task, so that nranks * nsteps cells
 * are at most n (a trace with a rank 10^6 and 10 tasks allocates nothing large). */
static int build_alloc(const struct _sf_event *ev, size_t n, struct _sf_report *out,
                       struct build *b)
{
	size_t ncells = (size_t)out->nranks * (size_t)out->nsteps;
	b->ord = malloc(n * sizeof *b->ord);
	b->comp = malloc(n * sizeof *b->comp);
	b->comm = malloc(n * sizeof *b->comm);
	out->stalls = calloc(n, sizeof *out->stalls);
	if (!b->ord || !b->comp || !b->comm || !out->stalls)
		return SF_ERR(SF_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		b->ord[i] = &ev[i];
	qsort(b->ord, n, sizeof *b->ord, cmp_ev);
	/* each cell takes at least one event: this walk ends within n + 1 cells */
	for (size_t c = 0, lo = 0; c < ncells; c++) {
		int rank = (int)(c / (size_t)out->nsteps), step = (int)(c % (size_t)out->nsteps);
		if (lo == n || b->ord[lo]->rank != rank || b->ord[lo]->step != step)
			return missing_cell(out, rank, step);
		while (lo < n && b->ord[lo]->rank == rank && b->ord[lo]->step == step)
			lo++;
	}
	out->steps = calloc(ncells, sizeof *out->steps);
	out->totals = calloc((size_t)out->nranks, sizeof *out->totals);
	if (!out->steps || !out->totals)
		return SF_ERR(SF_ERR_NOMEM, "out of memory");
	return SF_OK;
}

/* Wall, busy and exposed times of one rank's step: the events ord[lo, hi). */
static void step_times(struct build *b, size_t lo, size_t hi, struct _sf_step_figures *f)
{
	const struct _sf_event *const *ord = b->ord;
	size_t ncomp = 0, ncomm = 0;
	f->t0 = ord[lo]->start;
	double t1 = ord[lo]->end;
	for (size_t i = lo; i < hi; i++) {
		const struct _sf_event *e = ord[i];
		if (e->end > t1)
			t1 = e->end;
		if (_sf_ev_is_compute(e->kind))
			b->comp[ncomp++] = (struct _sf_ival){e->start, e->end};
		else if (_sf_ev_is_comm(e->kind))
			b->comm[ncomm++] = (struct _sf_ival){e->start, e->end};
	}
	f->wall = t1 - f->t0;
	ncomp = _sf_ival_merge(b->comp, ncomp);
	ncomm = _sf_ival_merge(b->comm, ncomm);
	f->compute = length(b->comp, ncomp);
	f->comm = length(b->comm, ncomm);
	f->exposed = f->comm - overlap_len(b->comm, ncomm, b->comp, ncomp);
	if (f->exposed < 0)
		f->exposed = 0;
	f->ideal = f->compute > f->comm ? f->compute : f->comm;
	finish(f);
}

/* The stall of every fwd task of one rank's step (the events ord[lo, hi), figures f)
 * that has a gather of its layer before it, appended to out->stalls. */
static void step_stalls(struct build *b, size_t lo, size_t hi, const struct _sf_step_figures *f,
                        struct _sf_report *out)
{
	const struct _sf_event *const *ord = b->ord;
	for (size_t i = lo; i < hi; i++) {
		const struct _sf_event *fw = ord[i];
		if (fw->kind != SF_EV_FWD || fw->layer < 0)
			continue;
		const struct _sf_event *g = NULL;
		for (size_t j = lo; j < hi; j++)
			if (ord[j]->kind == SF_EV_GATHER && ord[j]->layer == fw->layer &&
			    ord[j]->start <= fw->start && (!g || ord[j]->start > g->start))
				g = ord[j];
		if (!g)
			continue;
		double prev = f->t0;
		for (size_t j = lo; j < hi; j++)
			if (ord[j] != fw && _sf_ev_is_compute(ord[j]->kind) &&
			    ord[j]->end <= fw->start && ord[j]->end > prev)
				prev = ord[j]->end;
		double until = g->end < fw->start ? g->end : fw->start;
		double s = until - prev;
		out->stalls[out->nstalls++] =
		    (struct _sf_stall){f->rank, f->step, fw->layer, s > 0 ? s : 0};
	}
}

/* The figures and stalls of every (rank, step), and the per-rank totals. */
static int build_steps(struct build *b, size_t n, struct _sf_report *out)
{
	size_t ncells = (size_t)out->nranks * (size_t)out->nsteps, lo = 0;
	for (size_t c = 0; c < ncells; c++) {
		int rank = (int)(c / (size_t)out->nsteps), step = (int)(c % (size_t)out->nsteps);
		size_t hi = lo;
		while (hi < n && b->ord[hi]->rank == rank && b->ord[hi]->step == step)
			hi++;
		if (hi == lo)
			return missing_cell(out, rank, step);
		struct _sf_step_figures *f = &out->steps[c];
		f->rank = rank;
		f->step = step;
		step_times(b, lo, hi, f);
		step_stalls(b, lo, hi, f, out);
		struct _sf_step_figures *t = &out->totals[rank];
		t->rank = rank;
		t->step = -1;
		add_figures(t, f);
		lo = hi;
	}
	out->all.rank = out->all.step = -1;
	for (int r = 0; r < out->nranks; r++) {
		finish(&out->totals[r]);
		add_figures(&out->all, &out->totals[r]);
	}
	finish(&out->all);
	return SF_OK;
}

static int cmp_int(const void *x, const void *y)
{
	int p = *(const int *)x, q = *(const int *)y;
	return p < q ? -1 : p > q;
}

/* The unit's name of each layer with a stall, from the first gather of that layer
 * whose task name has one (every gather of a unit carries the same name). */
static int layer_units(const struct _sf_event *ev, size_t n, struct _sf_report *out)
{
	out->layer_unit = calloc((size_t)out->nlayers + 1, sizeof *out->layer_unit);
	if (!out->layer_unit)
		return SF_ERR(SF_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind != SF_EV_GATHER)
			continue;
		const int *at = bsearch(&ev[i].layer, out->layers, (size_t)out->nlayers,
		                        sizeof *out->layers, cmp_int);
		char **unit = at ? &out->layer_unit[at - out->layers] : NULL;
		struct _sf_ev_name nm;
		if (!unit || *unit || _sf_ev_parse_name(ev[i].name, &nm) != 0 || !nm.label)
			continue;
		*unit = strndup(nm.label, nm.label_len);
		if (!*unit)
			return SF_ERR(SF_ERR_NOMEM, "out of memory");
	}
	return SF_OK;
}

/* Per layer with a stall, ascending: the mean and the max of its stalls. The layers
 * come from the stalls themselves (a layer number can be as large as 10^9: no array
 * indexed by it). */
static int layer_stalls(struct _sf_report *out)
{
	out->layers = calloc(out->nstalls + 1, sizeof *out->layers);
	if (!out->layers)
		return SF_ERR(SF_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < out->nstalls; i++)
		out->layers[i] = out->stalls[i].layer;
	qsort(out->layers, out->nstalls, sizeof *out->layers, cmp_int);
	int k = 0;
	for (size_t i = 0; i < out->nstalls; i++)
		if (i == 0 || out->layers[i] != out->layers[k - 1])
			out->layers[k++] = out->layers[i];
	out->nlayers = k;
	out->layer_stall_mean = calloc((size_t)out->nlayers + 1, sizeof(double));
	out->layer_stall_max = calloc((size_t)out->nlayers + 1, sizeof(double));
	if (!out->layer_stall_mean || !out->layer_stall_max)
		return SF_ERR(SF_ERR_NOMEM, "out of memory");
	for (int j = 0; j < k; j++) {
		double sum = 0, mx = 0;
		size_t cnt = 0;
		for (size_t i = 0; i < out->nstalls; i++)
			if (out->stalls[i].layer == out->layers[j]) {
				sum += out->stalls[i].stall;
				cnt++;
				if (out->stalls[i].stall > mx)
					mx = out->stalls[i].stall;
			}
		out->layer_stall_mean[j] = cnt ? sum / (double)cnt : 0;
		out->layer_stall_max[j] = mx;
	}
	return SF_OK;
}

/* ---- a pipeline's bubble --------------------------------------------------------- */

/* A pass of a pipeline's schedule is made of these: the tasks the schedule orders */
static bool is_pass(enum _sf_ev_kind k)
{
	return k == SF_EV_FWD || k == SF_EV_LOSS || k == SF_EV_BWD || k == SF_EV_RECOMPUTE;
}

/* The stages, from what each rank computes: a pipeline's stage runs the forwards of
 * its own run of nodes (the same on its dp ranks), and the runs of two stages do not
 * meet; without one every rank runs every node's. So the ranks' lowest forward nodes,
 * told apart, number the stages in graph order, when there are two or more and the
 * runs are disjoint. M: the most forwards of its stage's first node a rank runs in a
 * step (one a micro-batch). Leaves out->pp_stages 0 when the events show no pipeline. */
static int pp_find(struct build *b, size_t n, struct _sf_report *out)
{
	int R = out->nranks, rc = SF_OK;
	int *lo = malloc((size_t)R * sizeof *lo), *hi = malloc((size_t)R * sizeof *hi);
	int *firsts = malloc((size_t)R * sizeof *firsts);
	if (!lo || !hi || !firsts) {
		rc = SF_ERR(SF_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int r = 0; r < R; r++)
		lo[r] = hi[r] = -1;
	for (size_t i = 0; i < n; i++) {
		const struct _sf_event *e = b->ord[i];
		if (e->kind != SF_EV_FWD || e->layer < 0)
			continue;
		if (lo[e->rank] < 0 || e->layer < lo[e->rank])
			lo[e->rank] = e->layer;
		if (e->layer > hi[e->rank])
			hi[e->rank] = e->layer;
	}
	int S = 0;
	for (int r = 0; r < R; r++) {
		if (lo[r] < 0)
			goto out; /* a rank without forwards: no pipeline to speak of */
		bool seen = false;
		for (int k = 0; k < S; k++)
			seen = seen || firsts[k] == lo[r];
		if (!seen)
			firsts[S++] = lo[r];
	}
	if (S < 2)
		goto out;
	qsort(firsts, (size_t)S, sizeof *firsts, cmp_int);
	/* each node forwarded by one stage's ranks only; V: the runs of nodes a stage
	 * holds (1, or the interleaved schedule's chunks a rank) */
	int L = 0, V = 0;
	for (int r = 0; r < R; r++)
		L = hi[r] + 1 > L ? hi[r] + 1 : L;
	int *owner = malloc(((size_t)L + 1) * sizeof *owner);
	if (!owner) {
		rc = SF_ERR(SF_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int x = 0; x < L; x++)
		owner[x] = -1;
	for (size_t i = 0; i < n; i++) {
		const struct _sf_event *e = b->ord[i];
		if (e->kind != SF_EV_FWD || e->layer < 0)
			continue;
		int st = 0;
		while (firsts[st] != lo[e->rank])
			st++;
		if (owner[e->layer] >= 0 && owner[e->layer] != st) {
			free(owner);
			goto out; /* a node two stages run: not stages */
		}
		owner[e->layer] = st;
	}
	for (int x = 0, last = -1; x < L; x++)
		if (owner[x] >= 0 && owner[x] != last) {
			V += owner[x] == 0;
			last = owner[x];
		}
	free(owner);
	out->rank_stage = malloc((size_t)R * sizeof *out->rank_stage);
	out->pp_bubble = calloc((size_t)S * (size_t)out->nsteps, sizeof *out->pp_bubble);
	out->pp_median = calloc((size_t)S, sizeof *out->pp_median);
	if (!out->rank_stage || !out->pp_bubble || !out->pp_median) {
		rc = SF_ERR(SF_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int r = 0; r < R; r++)
		for (int k = 0; k < S; k++)
			if (firsts[k] == lo[r])
				out->rank_stage[r] = k;
	int M = 0;
	for (size_t i = 0, j; i < n; i = j) { /* one (rank, step) a run of ord */
		int cnt = 0;
		for (j = i; j < n && b->ord[j]->rank == b->ord[i]->rank &&
		            b->ord[j]->step == b->ord[i]->step;
		     j++)
			cnt +=
			    b->ord[j]->kind == SF_EV_FWD && b->ord[j]->layer == lo[b->ord[i]->rank];
		M = cnt > M ? cnt : M;
	}
	out->pp_stages = S;
	out->pp_micro = M;
	out->pp_virtual = V > 1 ? V : 1;
	out->pp_theory = (double)(S - 1) / (double)(out->pp_virtual * M + S - 1);
out:
	free(lo);
	free(hi);
	free(firsts);
	return rc;
}

/* Every stage's bubble in every step and its median over the steps (report.h). The
 * span is the pipeline's, over every rank of the step (one clock: the built-in
 * trace's start after a barrier, FxT's merged by starpu_fxt_tool), so that the
 * warm-up a later stage waits through and the drain an earlier one waits through
 * both count; each rank's busy time is the union of its compute tasks within it. */
static int pp_bubbles(struct build *b, size_t n, struct _sf_report *out)
{
	int S = out->pp_stages, T = out->nsteps;
	double *t0 = malloc((size_t)T * sizeof *t0), *t1 = malloc((size_t)T * sizeof *t1);
	int *cnt = calloc((size_t)S * (size_t)T, sizeof *cnt);
	double *sorted = malloc((size_t)T * sizeof *sorted);
	int rc = SF_OK;
	if (!t0 || !t1 || !cnt || !sorted) {
		rc = SF_ERR(SF_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int t = 0; t < T; t++)
		t0[t] = 0, t1[t] = -1;
	for (size_t i = 0; i < n; i++) {
		const struct _sf_event *e = b->ord[i];
		if (!is_pass(e->kind))
			continue;
		if (t1[e->step] < t0[e->step] || e->start < t0[e->step])
			t0[e->step] = e->start;
		if (t1[e->step] < t0[e->step] || e->end > t1[e->step])
			t1[e->step] = e->end;
	}
	for (size_t i = 0, j; i < n; i = j) { /* one (rank, step) a run of ord */
		int r = b->ord[i]->rank, t = b->ord[i]->step;
		size_t nc = 0;
		for (j = i; j < n && b->ord[j]->rank == r && b->ord[j]->step == t; j++) {
			const struct _sf_event *e = b->ord[j];
			double a = e->start > t0[t] ? e->start : t0[t];
			double z = e->end < t1[t] ? e->end : t1[t];
			if (_sf_ev_is_compute(e->kind) && z > a)
				b->comp[nc++] = (struct _sf_ival){a, z};
		}
		double span = t1[t] - t0[t];
		if (span <= 0)
			continue; /* a step without passes: no bubble to speak of */
		nc = _sf_ival_merge(b->comp, nc);
		int s = out->rank_stage[r];
		out->pp_bubble[s * T + t] += 1.0 - length(b->comp, nc) / span;
		cnt[s * T + t]++;
	}
	_sf_pp_medians(out->pp_bubble, cnt, S, T, sorted, out->pp_median);
out:
	free(t0);
	free(t1);
	free(cnt);
	free(sorted);
	return rc;
}

int _sf_report_build(const struct _sf_event *ev, size_t n, struct _sf_report *out)
{
	int rc = SF_OK;
	struct build b = {0};
	memset(out, 0, sizeof *out);
	if (!ev || n == 0)
		return SF_ERR(SF_ERR_INVALID, "no shardflow task to report on");
	SF_CHECK_GOTO(scan_events(ev, n, out), out);
	SF_CHECK_GOTO(build_alloc(ev, n, out, &b), out);
	SF_CHECK_GOTO(build_steps(&b, n, out), out);
	SF_CHECK_GOTO(layer_stalls(out), out);
	SF_CHECK_GOTO(layer_units(ev, n, out), out);
	SF_CHECK_GOTO(pp_find(&b, n, out), out);
	if (out->pp_stages) {
		SF_CHECK_GOTO(pp_bubbles(&b, n, out), out);
		SF_CHECK_GOTO(_sf_pp_replay(b.ord, n, out), out);
	}
out:
	free(b.ord);
	free(b.comp);
	free(b.comm);
	if (rc < 0)
		_sf_report_free(out);
	return rc;
}

/* The name of stall row i, "fc1 (L2)" ("L2" when its unit's name is unknown), in buf;
 * returns its width in characters (UTF-8 sequences count one), to align the rows. */
static size_t stall_row_name(const struct _sf_report *r, int i, char *buf, size_t len)
{
	if (r->layer_unit[i])
		snprintf(buf, len, "%s (L%d)", r->layer_unit[i], r->layers[i]);
	else
		snprintf(buf, len, "L%d", r->layers[i]);
	size_t w = 0;
	for (const unsigned char *p = (const unsigned char *)buf; *p; p++)
		w += (*p & 0xc0) != 0x80;
	return w;
}

static void row(FILE *f, const char *who, const struct _sf_step_figures *s)
{
	fprintf(f, "%-14s %10.3f %10.3f %10.3f %10.3f %8.3f %10.3f %7.3f\n", who, s->wall / 1e3,
	        s->compute / 1e3, s->comm / 1e3, s->exposed / 1e3, s->overlap, s->ideal / 1e3,
	        s->ratio);
}

/* The pipeline's bubble, one line a stage, when there is a pipeline */
static void write_bubble_text(const struct _sf_report *r, FILE *f)
{
	if (!r->pp_stages)
		return;
	int S = r->pp_stages, T = r->nsteps;
	static const char *replayed_text =
	    "  replayed = the same at the measured task times: each compute task again, in "
	    "its worker's order and for its duration, as soon as its worker is free and the "
	    "task it waited for on the next or previous stage has ended (free transfers, no "
	    "gaps): bubble - replayed is what the runtime added, replayed - theory what "
	    "unequal task times cost\n";
	if (r->pp_virtual > 1)
		fprintf(
		    f,
		    "\npipeline bubble: %d stages of %d chunks each (interleaved), %d "
		    "micro-batches; theory (S-1)/(V M+S-1) = %.3f (balanced chunks)\n"
		    "  bubble = the share of the step's pipeline span (first forward/loss/backward "
		    "task of any rank to the last one's end) in which a stage's compute runs no "
		    "task (mean over its ranks)\n%s",
		    S, r->pp_virtual, r->pp_micro, r->pp_theory, replayed_text);
	else
		fprintf(
		    f,
		    "\npipeline bubble: %d stages, %d micro-batches; theory (S-1)/(M+S-1) = %.3f "
		    "(gpipe and 1f1b, balanced stages)\n"
		    "  bubble = the share of the step's pipeline span (first forward/loss/backward "
		    "task of any rank to the last one's end) in which a stage's compute runs no "
		    "task (mean over its ranks)\n%s",
		    S, r->pp_micro, r->pp_theory, replayed_text);
	for (int s = 0; s < S; s++) {
		double lo = 1, hi = 0;
		for (int t = 0; t < T; t++) {
			double x = r->pp_bubble[s * T + t];
			lo = x < lo ? x : lo;
			hi = x > hi ? x : hi;
		}
		fprintf(f, "  stage %d (ranks", s);
		for (int k = 0; k < r->nranks; k++)
			if (r->rank_stage[k] == s)
				fprintf(f, " %d", k);
		fprintf(f,
		        "): bubble median %.3f  min %.3f  max %.3f over %d step(s)  theory %.3f  "
		        "replayed %.3f\n",
		        r->pp_median[s], lo, hi, T, r->pp_theory, r->pp_replayed_median[s]);
	}
}

void _sf_report_write_text(const struct _sf_report *r, const char *source, FILE *f)
{
	static const char *head =
	    "               wall ms compute ms    comm ms exposed ms  overlap "
	    "  ideal ms  ratio\n";
	fprintf(f, "shardflow overlap report%s%s\n", source ? " — " : "", source ? source : "");
	fprintf(f, "%d rank(s), %d step(s). Busy times are unions of task intervals (ms).\n",
	        r->nranks, r->nsteps);
	fprintf(f, "  exposed = time a collective is in flight and no compute task runs\n"
	           "  overlap = 1 - exposed / comm    ideal = max(compute, comm)    ratio = wall "
	           "/ ideal\n\n");
	fprintf(f, "per rank and step\n%s", head);
	for (int i = 0; i < r->nranks * r->nsteps; i++) {
		char who[32];
		snprintf(who, sizeof who, "rank %d step %d", r->steps[i].rank,
		         r->steps[i].step + 1);
		row(f, who, &r->steps[i]);
	}
	fprintf(f, "\ntotals (sums over steps)\n%s", head);
	for (int i = 0; i < r->nranks; i++) {
		char who[32];
		snprintf(who, sizeof who, "rank %d", i);
		row(f, who, &r->totals[i]);
	}
	row(f, "all ranks", &r->all);
	write_bubble_text(r, f);
	fprintf(f, "\nforward stalls: how long each unit's first forward (node Ln) waited for "
	           "the unit's gather (ms; a deeper prefetch removes them)\n");
	if (!r->nlayers)
		fprintf(f, "  (no gathers: parameters are not sharded in this run)\n");
	size_t width = 0;
	for (int i = 0; i < r->nlayers; i++) {
		char who[SF_EV_NAME_MAX + 16];
		size_t w = stall_row_name(r, i, who, sizeof who);
		width = w > width ? w : width;
	}
	for (int i = 0; i < r->nlayers; i++) {
		char who[SF_EV_NAME_MAX + 16];
		size_t w = stall_row_name(r, i, who, sizeof who);
		fprintf(f, "  %s%*s mean %9.3f   max %9.3f\n", who, (int)(width - w), "",
		        r->layer_stall_mean[i] / 1e3, r->layer_stall_max[i] / 1e3);
	}
}

/* One row of figures; a step's row (s->step >= 0) names its step, from 1. */
static void json_fig(FILE *f, const struct _sf_step_figures *s)
{
	fprintf(f, "{\"rank\": %d, ", s->rank);
	if (s->step >= 0)
		fprintf(f, "\"step\": %d, ", s->step + 1);
	fprintf(f,
	        "\"wall_ms\": %.6f, \"compute_ms\": %.6f, "
	        "\"comm_ms\": %.6f, \"exposed_ms\": %.6f, \"overlap\": %.6f, \"ideal_ms\": %.6f, "
	        "\"ratio\": %.6f}",
	        s->wall / 1e3, s->compute / 1e3, s->comm / 1e3, s->exposed / 1e3, s->overlap,
	        s->ideal / 1e3, s->ratio);
}

/* "pipeline": null, or the stages' bubbles (each step's from step 1, and the median) */
static void write_bubble_json(const struct _sf_report *r, FILE *f)
{
	if (!r->pp_stages) {
		fprintf(f, ",\n  \"pipeline\": null");
		return;
	}
	int S = r->pp_stages, T = r->nsteps;
	fprintf(f,
	        ",\n  \"pipeline\": {\"stages\": %d, \"microbatches\": %d, \"chunks\": %d, "
	        "\"theory\": %.6f, \"per_stage\": [\n",
	        S, r->pp_micro, r->pp_virtual, r->pp_theory);
	for (int s = 0; s < S; s++) {
		fprintf(f, "    {\"stage\": %d, \"ranks\": [", s);
		for (int k = 0, first = 1; k < r->nranks; k++)
			if (r->rank_stage[k] == s) {
				fprintf(f, "%s%d", first ? "" : ", ", k);
				first = 0;
			}
		fprintf(f, "], \"bubble_median\": %.6f, \"bubble_per_step\": [", r->pp_median[s]);
		for (int t = 0; t < T; t++)
			fprintf(f, "%s%.6f", t ? ", " : "", r->pp_bubble[s * T + t]);
		fprintf(f, "], \"replayed_median\": %.6f, \"replayed_per_step\": [",
		        r->pp_replayed_median[s]);
		for (int t = 0; t < T; t++)
			fprintf(f, "%s%.6f", t ? ", " : "", r->pp_replayed[s * T + t]);
		fprintf(f, "]}%s\n", s + 1 < S ? "," : "");
	}
	fprintf(f, "  ]}");
}

void _sf_report_write_json(const struct _sf_report *r, const char *source, FILE *f)
{
	fprintf(f, "{\n  \"source\": ");
	_sf_json_string(f, source);
	fprintf(f,
	        ",\n  \"step_base\": 1,\n  \"ranks\": %d,\n  \"steps\": %d,\n  \"per_step\": "
	        "[\n",
	        r->nranks, r->nsteps);
	for (int i = 0; i < r->nranks * r->nsteps; i++) {
		fprintf(f, "    ");
		json_fig(f, &r->steps[i]);
		fprintf(f, "%s\n", i + 1 < r->nranks * r->nsteps ? "," : "");
	}
	fprintf(f, "  ],\n  \"per_rank\": [\n");
	for (int i = 0; i < r->nranks; i++) {
		fprintf(f, "    ");
		json_fig(f, &r->totals[i]);
		fprintf(f, "%s\n", i + 1 < r->nranks ? "," : "");
	}
	fprintf(f, "  ],\n  \"total\": ");
	json_fig(f, &r->all);
	write_bubble_json(r, f);
	fprintf(f, ",\n  \"forward_stalls\": [\n");
	for (int i = 0; i < r->nlayers; i++) {
		fprintf(f, "    {\"layer\": %d, \"unit\": ", r->layers[i]);
		if (r->layer_unit[i])
			_sf_json_string(f, r->layer_unit[i]);
		else
			fputs("null", f);
		fprintf(f, ", \"mean_ms\": %.6f, \"max_ms\": %.6f}%s\n",
		        r->layer_stall_mean[i] / 1e3, r->layer_stall_max[i] / 1e3,
		        i + 1 < r->nlayers ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
}
