/*
 * plot.h — a training run's curves as SVG: the loss (training and validation) and the
 * throughput (tokens/s) against the step, in two panels over one step axis.
 *
 * The data come from a metrics file (JSON lines, one object a step, as examples/gpt's
 * --metrics writes them; trace/metrics.c reads them and holds the format), so the
 * drawing knows nothing of files or JSON. The scaling is its own two functions
 * (_sf_plot_axis_fit, _sf_plot_px) so that a test can check coordinates by hand.
 * Part of libsftrace (no StarPU, no MPI); svg.c shares its tick spacing.
 */
#ifndef SF_TRACE_PLOT_H
#define SF_TRACE_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* What the curves are drawn from. A value that is absent or not finite is NAN: it is
 * left out of its curve and counted in the legend. Arrays are the caller's. */
struct _sf_plot_data {
	size_t ntrain;            /* training steps */
	const double *train_step; /* (ntrain) */
	const double *train_loss; /* (ntrain) */
	const double *train_rate; /* (ntrain) tokens/s */
	size_t neval;             /* evaluations */
	const double *eval_step;  /* (neval) */
	const double *eval_loss;  /* (neval) validation loss */
};

/* One axis: values lo..hi drawn at pixels px_lo..px_hi (a y axis has px_lo below
 * px_hi on the page: px_lo > px_hi), ticks every `tick` from lo. */
struct _sf_plot_axis {
	double lo, hi, tick;
	double px_lo, px_hi;
};

/* A round tick spacing (1, 2 or 5 times a power of ten) giving about `want` ticks over
 * `range` (> 0). */
double _sf_tick_step(double range, int want);

/* Sets a->lo, hi and tick from the finite values among v (n): tick = _sf_tick_step of
 * their span for 5 ticks (at least 1 when `integer`), lo and hi the span's ends rounded
 * out to multiples of tick. One distinct value v0 spans v0 +- 1 when `integer`, else
 * v0 +- 5% (+- 0.5 for 0); none spans 0..1. Returns the number of finite values. */
size_t _sf_plot_axis_fit(struct _sf_plot_axis *a, const double *v, size_t n, bool integer);

/* The pixel of value v on axis a (linear between lo -> px_lo and hi -> px_hi). */
double _sf_plot_px(const struct _sf_plot_axis *a, double v);

/* Writes the picture to f: a title (XML-escaped; NULL: a default), the loss panel
 * (training loss as the polyline id="train-loss", validation loss as id="val-loss"
 * with a dot a point) and the tokens/s panel (id="tokens-per-s"), each legend saying
 * how many points it drew and how many non-finite ones it skipped. No point at all, or
 * one, still gives a whole picture that says so. Errors of f are left to its owner
 * (_sf_file_close). */
void _sf_plot_write_svg(const struct _sf_plot_data *d, const char *title, FILE *f);

#endif
