/*
 * plot.c — a training run's loss and tokens/s curves as SVG (plot.h).
 *
 * Two panels share the step axis: the loss (training as a line, validation as a line
 * with a dot a point, since it has few) and tokens/s. Each axis is fitted to its finite
 * values and rounded out to round ticks; non-finite values (a diverged loss) are left
 * out of the line rather than clamped, and the legend counts them, so that a NaN never
 * reaches the file and a reader is told a point is missing. Like svg.c the picture is
 * self-contained SVG 1.1 that a browser opens as is.
 */
#include "trace/plot.h"
#include "trace/write.h"

#include <math.h>

#define WIDTH 900.0
#define LEFT 80.0 /* room for the y labels */
#define RIGHT 30.0
#define TOP 70.0 /* title and the first legend */
#define PANEL_H 220.0
#define PANEL_GAP 110.0 /* x labels, then the next panel's legend */
#define BOTTOM 50.0     /* x labels and the axis name */

#define COLOR_TRAIN "#4e79a7"
#define COLOR_VAL "#f28e2b"
#define COLOR_RATE "#59a14f"

double _sf_tick_step(double range, int want)
{
	double raw = range / want;
	double p = pow(10.0, floor(log10(raw)));
	double m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* Widens [*mn, *mx] (NAN: empty) to the finite values of v (n); returns their number. */
static size_t span_of(const double *v, size_t n, double *mn, double *mx)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(v[i]))
			continue;
		if (isnan(*mn) || v[i] < *mn)
			*mn = v[i];
		if (isnan(*mx) || v[i] > *mx)
			*mx = v[i];
		k++;
	}
	return k;
}

/* The axis over [mn, mx] (NAN: no value), as _sf_plot_axis_fit says. */
static void fit_span(struct _sf_plot_axis *a, double mn, double mx, bool integer)
{
	if (isnan(mn)) {
		mn = 0, mx = 1;
	} else if (mn == mx) {
		double half = integer ? 1 : mn != 0 ? fabs(mn) * 0.05 : 0.5;
		mn -= half, mx += half;
	}
	a->tick = _sf_tick_step(mx - mn, 5);
	if (integer && a->tick < 1)
		a->tick = 1;
	/* a value on a tick (4.0 / 0.2 = 19.999...) stays its own end */
	a->lo = floor(mn / a->tick + 1e-9) * a->tick;
	a->hi = ceil(mx / a->tick - 1e-9) * a->tick;
}

size_t _sf_plot_axis_fit(struct _sf_plot_axis *a, const double *v, size_t n, bool integer)
{
	double mn = NAN, mx = NAN;
	size_t k = span_of(v, n, &mn, &mx);
	fit_span(a, mn, mx, integer);
	return k;
}

double _sf_plot_px(const struct _sf_plot_axis *a, double v)
{
	return a->px_lo + (v - a->lo) / (a->hi - a->lo) * (a->px_hi - a->px_lo);
}

static int decimals_of(double tick)
{
	return tick >= 1 ? 0 : (int)ceil(-log10(tick) - 1e-9);
}

/* The panel's frame, its grid and tick labels on both axes, and the y axis's name. */
static void write_frame(FILE *f, const struct _sf_plot_axis *x, const struct _sf_plot_axis *y,
                        const char *yname)
{
	double top = y->px_hi, bottom = y->px_lo;
	fprintf(f,
	        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\" "
	        "stroke=\"#999\"/>\n",
	        x->px_lo, top, x->px_hi - x->px_lo, bottom - top);
	fprintf(f, "<g stroke=\"#ddd\" stroke-width=\"0.5\">\n");
	int ny = (int)floor((y->hi - y->lo) / y->tick + 1e-6),
	    nx = (int)floor((x->hi - x->lo) / x->tick + 1e-6);
	for (int k = 0; k <= ny; k++) {
		double py = _sf_plot_px(y, y->lo + k * y->tick);
		fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", x->px_lo,
		        py, x->px_hi, py);
	}
	for (int k = 0; k <= nx; k++) {
		double px = _sf_plot_px(x, x->lo + k * x->tick);
		fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", px, top, px,
		        bottom);
	}
	fprintf(f, "</g>\n<g fill=\"#333\" text-anchor=\"end\">\n");
	for (int k = 0; k <= ny; k++)
		fprintf(f, "<text x=\"%.1f\" y=\"%.2f\">%.*f</text>\n", x->px_lo - 6,
		        _sf_plot_px(y, y->lo + k * y->tick) + 4, decimals_of(y->tick),
		        y->lo + k * y->tick);
	fprintf(f, "</g>\n<g fill=\"#333\" text-anchor=\"middle\">\n");
	for (int k = 0; k <= nx; k++)
		fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">%.*f</text>\n",
		        _sf_plot_px(x, x->lo + k * x->tick), bottom + 16, decimals_of(x->tick),
		        x->lo + k * x->tick);
	fprintf(f, "</g>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n",
	        (x->px_lo + x->px_hi) / 2, bottom + 34);
	fprintf(f,
	        "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 "
	        "%.1f)\">%s</text>\n",
	        (top + bottom) / 2, (top + bottom) / 2, yname);
}

/* One curve: a polyline through its finite points (id names it), and a dot a point when
 * `dots` or when it has a single point; returns how many it drew. */
static size_t write_curve(FILE *f, const char *id, const char *color, bool dots, const double *xs,
                          const double *ys, size_t n, const struct _sf_plot_axis *x,
                          const struct _sf_plot_axis *y)
{
	size_t k = 0;
	fprintf(f, "<polyline id=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
	        id, color);
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(xs[i]) || !isfinite(ys[i]))
			continue;
		fprintf(f, "%s%.2f,%.2f", k ? " " : "", _sf_plot_px(x, xs[i]),
		        _sf_plot_px(y, ys[i]));
		k++;
	}
	fprintf(f, "\"/>\n");
	if (dots || k == 1) {
		fprintf(f, "<g fill=\"%s\">\n", color);
		for (size_t i = 0; i < n; i++)
			if (isfinite(xs[i]) && isfinite(ys[i]))
				fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\"/>\n",
				        _sf_plot_px(x, xs[i]), _sf_plot_px(y, ys[i]));
		fprintf(f, "</g>\n");
	}
	return k;
}

/* A legend entry at (lx, ly): the curve's colour, its name, its points and the
 * non-finite ones left out. */
static void write_legend(FILE *f, double lx, double ly, const char *color, const char *name,
                         size_t drawn, size_t n)
{
	fprintf(f,
	        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
	        "stroke-width=\"3\"/>\n",
	        lx, ly - 4, lx + 18, ly - 4, color);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s: ", lx + 24, ly, name);
	if (drawn == 0)
		fprintf(f, "no point");
	else
		fprintf(f, "%zu point%s", drawn, drawn == 1 ? " (no curve yet)" : "s");
	if (n > drawn)
		fprintf(f, ", %zu non-finite skipped", n - drawn);
	fprintf(f, "</text>\n");
}

void _sf_plot_write_svg(const struct _sf_plot_data *d, const char *title, FILE *f)
{
	double top1 = TOP + PANEL_H + PANEL_GAP, height = top1 + PANEL_H + BOTTOM;
	struct _sf_plot_axis x = {.px_lo = LEFT, .px_hi = WIDTH - RIGHT};
	struct _sf_plot_axis loss = {.px_lo = TOP + PANEL_H, .px_hi = TOP};
	struct _sf_plot_axis rate = {.px_lo = top1 + PANEL_H, .px_hi = top1};
	double mn = NAN, mx = NAN;
	span_of(d->train_step, d->ntrain, &mn, &mx);
	span_of(d->eval_step, d->neval, &mn, &mx);
	fit_span(&x, mn, mx, true);
	mn = mx = NAN;
	span_of(d->train_loss, d->ntrain, &mn, &mx);
	span_of(d->eval_loss, d->neval, &mn, &mx);
	fit_span(&loss, mn, mx, false);
	_sf_plot_axis_fit(&rate, d->train_rate, d->ntrain, false);

	_sf_svg_begin(f, WIDTH, height, LEFT, 16, title ? title : "shardflow training metrics");

	write_frame(f, &x, &loss, "loss");
	size_t nt = write_curve(f, "train-loss", COLOR_TRAIN, false, d->train_step, d->train_loss,
	                        d->ntrain, &x, &loss);
	size_t nv = write_curve(f, "val-loss", COLOR_VAL, true, d->eval_step, d->eval_loss,
	                        d->neval, &x, &loss);
	write_legend(f, LEFT, TOP - 12, COLOR_TRAIN, "training loss", nt, d->ntrain);
	write_legend(f, LEFT + 330, TOP - 12, COLOR_VAL, "validation loss", nv, d->neval);

	write_frame(f, &x, &rate, "tokens/s");
	size_t nr = write_curve(f, "tokens-per-s", COLOR_RATE, false, d->train_step, d->train_rate,
	                        d->ntrain, &x, &rate);
	write_legend(f, LEFT, top1 - 12, COLOR_RATE, "tokens/s", nr, d->ntrain);
	if (d->ntrain + d->neval == 0)
		fprintf(f,
		        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"16\" "
		        "fill=\"#888\">no step in the metrics yet</text>\n",
		        (x.px_lo + x.px_hi) / 2, TOP + PANEL_H / 2);
	fprintf(f, "</svg>\n");
}
