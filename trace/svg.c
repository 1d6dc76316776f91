/*
 * svg.c — the timeline picture of a traced run (_sf_timeline_write_svg, see report.h).
 *
 * One row per (rank, worker) that ran a task, on one time axis in milliseconds:
 * compute tasks in blue, collectives in orange, bookkeeping ("free") in grey. Under
 * every row that ran collectives, a red band marks *exposed* communication: the
 * intervals when a collective of that rank is in flight and no compute task of that
 * rank runs — what a deeper prefetch could hide. It is computed here from the events
 * (union of comm intervals minus union of compute intervals, per rank) rather than
 * taken from the report, because the report keeps only per-step lengths.
 *
 * The file is self-contained SVG 1.1 (no script, no external style or font), so a
 * browser opens it and rsvg-convert or ImageMagick turn it into a PNG. Every task
 * rectangle carries a <title> tooltip (name, rank, worker, step, duration); text is
 * XML-escaped. Steps are numbered from 1, as the programs' progress lines count
 * them. Tasks shorter than a pixel are drawn a pixel wide so that none disappears.
 */
#include "trace/report.h"
#include "common/error.h"
#include "trace/plot.h"
#include "trace/write.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SVG_WIDTH 1400.0
#define LEFT 180.0 /* room for the row labels */
#define RIGHT 30.0
#define TOP 78.0 /* title and legend */
#define ROW_H 22.0
#define BAND_H 5.0    /* exposed-comm band under a comm row */
#define RANK_GAP 14.0 /* between the rows of two ranks */
#define AXIS_H 46.0

#define COLOR_COMPUTE "#4e79a7"
#define COLOR_COMM "#f28e2b"
#define COLOR_OTHER "#b0b0b0"
#define COLOR_EXPOSED "#d62728"
#define COLOR_STEP "#555555"

struct row {
	int rank, worker;
	bool comm; /* ran at least one collective: gets the exposed band */
	double y;  /* top of the row */
};

static int cmp_row(const void *x, const void *y)
{
	const struct row *p = x, *q = y;
	if (p->rank != q->rank)
		return p->rank < q->rank ? -1 : 1;
	return p->worker < q->worker ? -1 : p->worker > q->worker ? 1 : 0;
}

static struct row *find_row(struct row *rows, size_t n, int rank, int worker)
{
	struct row key = {.rank = rank, .worker = worker};
	return bsearch(&key, rows, n, sizeof *rows, cmp_row);
}

/* Writes into out the parts of the merged list x not covered by the merged list y;
 * returns their number (at most nx + ny). */
static size_t subtract(const struct _sf_ival *x, size_t nx, const struct _sf_ival *y, size_t ny,
                       struct _sf_ival *out)
{
	size_t k = 0, j = 0;
	for (size_t i = 0; i < nx; i++) {
		double a = x[i].a;
		while (j < ny && y[j].b <= a)
			j++;
		for (size_t jj = j; jj < ny && y[jj].a < x[i].b; jj++) {
			if (y[jj].a > a)
				out[k++] = (struct _sf_ival){a, y[jj].a};
			if (y[jj].b > a)
				a = y[jj].b;
		}
		if (a < x[i].b)
			out[k++] = (struct _sf_ival){a, x[i].b};
	}
	return k;
}

static const char *color_of(enum _sf_ev_kind k)
{
	return _sf_ev_is_comm(k) ? COLOR_COMM : _sf_ev_is_compute(k) ? COLOR_COMPUTE : COLOR_OTHER;
}

struct scale {
	double t0, t1; /* µs */
	double px_per_us;
};

static double xpos(const struct scale *s, double t)
{
	return LEFT + (t - s->t0) * s->px_per_us;
}

static void legend_item(FILE *f, double x, double y, const char *color, const char *label)
{
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"12\" fill=\"%s\"/>\n", x,
	        y - 10, color);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 19, y, label);
}

/* Where everything goes: the rows, the time scale, the heights. */
struct layout {
	struct row *rows; /* the distinct (rank, worker) pairs, sorted */
	size_t nrows;
	struct scale sc;
	double span;        /* µs on the time axis (> 0) */
	double plot_bottom; /* below the last row */
	double height;      /* of the picture */
};

/* Checks the events' times and lays them out: rows in lay->rows (room for n), the
 * scale and the heights. */
static int lay_out(const struct _sf_event *ev, size_t n, struct layout *lay)
{
	struct row *rows = lay->rows;
	struct scale sc = {ev[0].start, ev[0].end, 0};
	for (size_t i = 0; i < n; i++) {
		if (!(ev[i].end >= ev[i].start) || !isfinite(ev[i].start) || !isfinite(ev[i].end))
			return SF_ERR(
			    SF_ERR_INVALID,
			    "timeline: task \"%s\" (rank %d, worker %d) has times %g..%g us: "
			    "expected finite times with end >= start",
			    ev[i].name, ev[i].rank, ev[i].worker, ev[i].start, ev[i].end);
		rows[i] = (struct row){ev[i].rank, ev[i].worker, false, 0};
		if (ev[i].start < sc.t0)
			sc.t0 = ev[i].start;
		if (ev[i].end > sc.t1)
			sc.t1 = ev[i].end;
	}
	qsort(rows, n, sizeof *rows, cmp_row);
	size_t nrows = 0;
	for (size_t i = 0; i < n; i++)
		if (!nrows || cmp_row(&rows[nrows - 1], &rows[i]) != 0)
			rows[nrows++] = rows[i];
	for (size_t i = 0; i < n; i++)
		if (_sf_ev_is_comm(ev[i].kind))
			find_row(rows, nrows, ev[i].rank, ev[i].worker)->comm = true;
	double y = TOP;
	for (size_t i = 0; i < nrows; i++) {
		if (i > 0 && rows[i].rank != rows[i - 1].rank)
			y += RANK_GAP;
		rows[i].y = y;
		y += ROW_H + BAND_H + 4;
	}
	lay->nrows = nrows;
	lay->plot_bottom = y;
	lay->height = lay->plot_bottom + AXIS_H;
	lay->span = sc.t1 - sc.t0;
	if (lay->span <= 0)
		lay->span = 1; /* one instantaneous task: any scale will do */
	sc.px_per_us = (SVG_WIDTH - LEFT - RIGHT) / lay->span;
	lay->sc = sc;
	return SF_OK;
}

/* The XML prolog, the <svg> element, the title and the run's summary. */
static void write_head(FILE *f, const char *title, const struct _sf_report *r, double height)
{
	_sf_svg_begin(f, SVG_WIDTH, height, LEFT, 17, title);
	if (r)
		fprintf(f,
		        "<text x=\"%.1f\" y=\"24\" text-anchor=\"end\" fill=\"#444\">%d rank(s), "
		        "%d step(s); overlap %.3f, exposed comm %.3f ms of %.3f ms</text>\n",
		        SVG_WIDTH - RIGHT, r->nranks, r->nsteps, r->all.overlap,
		        r->all.exposed / 1e3, r->all.comm / 1e3);
}

static void write_legend(FILE *f)
{
	double lx = LEFT, ly = 50;
	legend_item(f, lx, ly, COLOR_COMPUTE, "compute (fwd, bwd, loss, opt)");
	legend_item(f, lx + 230, ly, COLOR_COMM, "communication (gather, rs, ag, loss allreduce)");
	legend_item(f, lx + 570, ly, COLOR_OTHER, "bookkeeping (free)");
	legend_item(f, lx + 730, ly, COLOR_EXPOSED,
	            "exposed communication (no compute on the rank)");
	fprintf(f,
	        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
	        "stroke-dasharray=\"4,3\"/>\n",
	        lx + 1070, ly - 11, lx + 1070, ly + 1, COLOR_STEP);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">step start</text>\n", lx + 1076, ly);
}

/* Row backgrounds and labels. */
static void write_rows(FILE *f, const struct layout *lay)
{
	for (size_t i = 0; i < lay->nrows; i++) {
		const struct row *rw = &lay->rows[i];
		fprintf(f,
		        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		        "fill=\"%s\"/>\n",
		        LEFT, rw->y, SVG_WIDTH - LEFT - RIGHT, ROW_H,
		        i % 2 ? "#f4f4f4" : "#ebebeb");
		fprintf(f,
		        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">rank %d / worker "
		        "%d%s</text>\n",
		        LEFT - 8, rw->y + ROW_H - 6, rw->rank, rw->worker,
		        rw->comm ? " (comm)" : "");
	}
}

/* The time axis: grid lines and ticks in ms from the first task. */
static void write_axis(FILE *f, const struct layout *lay)
{
	const struct scale *sc = &lay->sc;
	double step_ms = _sf_tick_step(lay->span / 1e3, 10);
	int decimals = step_ms >= 1 ? 0 : (int)ceil(-log10(step_ms) - 1e-9);
	fprintf(f, "<g stroke=\"#999\" stroke-width=\"0.5\">\n");
	int nticks = (int)floor(lay->span / 1e3 / step_ms + 1e-6) + 1;
	for (int k = 0; k < nticks; k++) {
		double x = xpos(sc, sc->t0 + k * step_ms * 1e3);
		fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/>\n", x, TOP - 4,
		        x, lay->plot_bottom + 5);
	}
	fprintf(f, "</g>\n<g text-anchor=\"middle\" fill=\"#333\">\n");
	for (int k = 0; k < nticks; k++)
		fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">%.*f</text>\n",
		        xpos(sc, sc->t0 + k * step_ms * 1e3), lay->plot_bottom + 19, decimals,
		        k * step_ms);
	fprintf(f, "</g>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time (ms)</text>\n",
	        LEFT + (SVG_WIDTH - LEFT - RIGHT) / 2, lay->plot_bottom + 38);
}

/* One rectangle per task, with its tooltip. */
static void write_tasks(FILE *f, const struct _sf_event *ev, size_t n, const struct layout *lay)
{
	const struct scale *sc = &lay->sc;
	for (size_t i = 0; i < n; i++) {
		const struct _sf_event *e = &ev[i];
		const struct row *rw = find_row(lay->rows, lay->nrows, e->rank, e->worker);
		double x = xpos(sc, e->start), w = (e->end - e->start) * sc->px_per_us;
		fprintf(f,
		        "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" "
		        "stroke=\"white\" stroke-width=\"0.3\"><title>",
		        x, rw->y + 2, w < 1 ? 1 : w, ROW_H - 4, color_of(e->kind));
		_sf_xml_text(f, e->name);
		fprintf(f,
		        " (rank %d / worker %d, step %d): %.3f ms, from %.3f ms</title></rect>\n",
		        e->rank, e->worker, e->step + 1, (e->end - e->start) / 1e3,
		        (e->start - sc->t0) / 1e3);
	}
}

/* The exposed-comm bands of one rank: comm union minus compute union. comm, comp
 * (n each) and diff (2n) are scratch. */
static void write_exposed(FILE *f, const struct _sf_event *ev, size_t n, int rank,
                          const struct layout *lay, struct _sf_ival *comm, struct _sf_ival *comp,
                          struct _sf_ival *diff)
{
	const struct scale *sc = &lay->sc;
	size_t ncomm = 0, ncomp = 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].rank != rank)
			continue;
		if (_sf_ev_is_comm(ev[i].kind))
			comm[ncomm++] = (struct _sf_ival){ev[i].start, ev[i].end};
		else if (_sf_ev_is_compute(ev[i].kind))
			comp[ncomp++] = (struct _sf_ival){ev[i].start, ev[i].end};
	}
	ncomm = _sf_ival_merge(comm, ncomm);
	ncomp = _sf_ival_merge(comp, ncomp);
	size_t nd = subtract(comm, ncomm, comp, ncomp, diff);
	if (!nd)
		return;
	for (size_t r = 0; r < lay->nrows; r++) {
		const struct row *rw = &lay->rows[r];
		if (rw->rank != rank || !rw->comm)
			continue;
		fprintf(f, "<g fill=\"%s\">\n", COLOR_EXPOSED);
		for (size_t i = 0; i < nd; i++) {
			double x = xpos(sc, diff[i].a), w = (diff[i].b - diff[i].a) * sc->px_per_us;
			fprintf(f,
			        "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\">"
			        "<title>rank %d: exposed communication %.3f ms (%.3f to %.3f ms)"
			        "</title></rect>\n",
			        x, rw->y + ROW_H + 1, w < 1 ? 1 : w, BAND_H, rank,
			        (diff[i].b - diff[i].a) / 1e3, (diff[i].a - sc->t0) / 1e3,
			        (diff[i].b - sc->t0) / 1e3);
		}
		fprintf(f, "</g>\n");
	}
}

/* Step boundaries: each rank's steps start at its own time. */
static void write_step_lines(FILE *f, const struct _sf_report *r, const struct layout *lay)
{
	for (int i = 0; i < r->nranks * r->nsteps; i++) {
		const struct _sf_step_figures *s = &r->steps[i];
		double y0 = -1, y1 = -1;
		for (size_t k = 0; k < lay->nrows; k++) {
			if (lay->rows[k].rank != s->rank)
				continue;
			if (y0 < 0)
				y0 = lay->rows[k].y;
			y1 = lay->rows[k].y + ROW_H + BAND_H + 1;
		}
		if (y0 < 0)
			continue;
		double x = xpos(&lay->sc, s->t0);
		fprintf(f,
		        "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"%s\" "
		        "stroke-width=\"1.2\" stroke-dasharray=\"4,3\"/>\n",
		        x, y0 - 3, x, y1 + 2, COLOR_STEP);
		fprintf(f,
		        "<text x=\"%.2f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\">step "
		        "%d<title>rank %d step %d: wall %.3f ms, overlap %.3f</title></text>\n",
		        x + 2, y0 - 4, COLOR_STEP, s->step + 1, s->rank, s->step + 1, s->wall / 1e3,
		        s->overlap);
	}
}

int _sf_timeline_write_svg(const struct _sf_event *ev, size_t n, const struct _sf_report *r,
                           const char *title, FILE *f)
{
	int rc = SF_OK;
	struct layout lay = {0};
	struct _sf_ival *comm = NULL, *comp = NULL, *diff = NULL;
	if (!ev || !n || !f)
		return SF_ERR(SF_ERR_INVALID, "timeline: no task to draw (%zu events)", n);
	lay.rows = malloc(n * sizeof *lay.rows);
	comm = malloc(n * sizeof *comm);
	comp = malloc(n * sizeof *comp);
	diff = malloc(2 * n * sizeof *diff);
	if (!lay.rows || !comm || !comp || !diff) {
		rc = SF_ERR(SF_ERR_NOMEM, "timeline: out of memory for %zu events", n);
		goto out;
	}
	SF_CHECK_GOTO(lay_out(ev, n, &lay), out);
	write_head(f, title ? title : "shardflow timeline", r, lay.height);
	write_legend(f);
	write_rows(f, &lay);
	write_axis(f, &lay);
	write_tasks(f, ev, n, &lay);
	for (size_t i = 0; i < lay.nrows; i++) /* per rank */
		if (i == 0 || lay.rows[i].rank != lay.rows[i - 1].rank)
			write_exposed(f, ev, n, lay.rows[i].rank, &lay, comm, comp, diff);
	if (r && r->steps)
		write_step_lines(f, r, &lay);
	fprintf(f, "</svg>\n");
out:
	free(lay.rows);
	free(comm);
	free(comp);
	free(diff);
	return rc;
}
