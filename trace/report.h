/*
 * report.h — the overlap report: from task intervals to the figures a user tunes
 * prefetch depth with.
 *
 * Two sources feed it the same struct _sf_event list: the built-in trace
 * (trace/recorder.c, StarPU profiling info read in each task's callback) and
 * StarPU's own FxT trace (tools/shardflow-overlap.c reads the tasks.rec that
 * starpu_fxt_tool writes). Both name tasks the same way ("gather fc1 (L2)",
 * "fwd fc1 (linear L2)", "loss", "bwd fc1 (linear L2)", "rs fc1 (L2)", ...:
 * trace/event.h), so one parser of names and one computation serve both, and the two
 * reports can be compared.
 *
 * This code (event.c, report.c, svg.c, files.c, write.c, taskrec.c) is the convenience
 * library libsftrace, linked into libshardflow and into the tool; it uses no StarPU and
 * no MPI. Calls point one way: files.c writes the report (report.c) and the timeline
 * (svg.c), which both call event.c and write.c, and neither calls the other. Its functions
 * return SF_OK or a negative status and raise their errors with SF_ERR
 * (common/error.h): the message is in sf_last_error().
 */
#ifndef SF_TRACE_REPORT_H
#define SF_TRACE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "trace/event.h"

/* Figures of one step on one rank (times in microseconds). */
struct _sf_step_figures {
	int rank, step;
	double t0;      /* first task start */
	double wall;    /* last task end - first task start */
	double compute; /* length of the union of compute task intervals */
	double comm;    /* length of the union of comm task intervals */
	double exposed; /* comm time during which no compute task runs */
	double overlap; /* 1 - exposed / comm (1 when comm is 0) */
	double ideal;   /* max(compute, comm) */
	double ratio;   /* wall / ideal */
};

/* How long a unit's first forward task (the fwd of node l, the unit's first reader)
 * waited for the unit's gather (whose index is l too), on one rank in one step: the
 * time between the end of the last compute task that ended before that fwd started
 * and the end of the gather, when the gather ended later (0 otherwise). */
struct _sf_stall {
	int rank, step, layer;
	double stall;
};

struct _sf_report {
	int nranks, nsteps; /* max rank + 1, max step + 1: every rank below must have tasks */
	struct _sf_step_figures *steps;  /* nranks * nsteps, index rank * nsteps + step */
	struct _sf_step_figures *totals; /* nranks: sums over steps (overlap, ratio recomputed) */
	struct _sf_step_figures all;     /* sums over every rank and step */
	size_t nstalls;
	struct _sf_stall *stalls;
	int nlayers;              /* distinct layers with a stall (a gather before their fwd) */
	int *layers;              /* their indices, ascending */
	char **layer_unit;        /* per layer: its unit's name, from its gather's task name
	                             (NULL when that name has none) */
	double *layer_stall_mean; /* per layer: mean stall over ranks and steps */
	double *layer_stall_max;
	/* A pipeline (SHARDFLOW_PP) seen in the events: each node forwarded by the ranks
	 * of one stage, a stage's nodes one run (or its V chunks' runs) (pp_stages 0: no
	 * pipeline). A stage's bubble in a
	 * step is the fraction of the pipeline's span (the first forward, loss or
	 * backward task of any rank of the step to the last one's end) during which none of
	 * the rank's compute tasks runs, averaged over the stage's ranks. */
	int pp_stages, pp_micro; /* S; M: the forwards of a stage's first node in a step */
	int pp_virtual;          /* V: the runs of nodes a stage holds (interleaved: its
	                            chunks; else 1) */
	double pp_theory;        /* (S - 1) / (V M + S - 1): gpipe's and 1f1b's (V 1) and
	                            the interleaved schedule's, balanced */
	int *rank_stage;         /* nranks (pp_stages > 0) */
	double *pp_bubble;       /* pp_stages * nsteps, index stage * nsteps + step */
	double *pp_median;       /* pp_stages: the median over steps */
	/* The same bubbles replayed at the measured task times (trace/replay.c): every
	 * compute task of the step again, in its worker's order and for its duration,
	 * each as soon as its worker is free and the task it waited for across a stage
	 * boundary (the transfer's sender) has ended: what the schedule and these
	 * durations give with free transfers and no gaps. pp_bubble - pp_replayed is what
	 * the runtime added; pp_replayed - pp_theory what the stages' unequal (or varying)
	 * task times cost. */
	double *pp_replayed;        /* pp_stages * nsteps, as pp_bubble */
	double *pp_replayed_median; /* pp_stages */
};

/* Builds the report of n events (any order). Every step must have at least one
 * task on every rank seen. Returns SF_OK, or SF_ERR_INVALID (events that make no
 * report) or SF_ERR_NOMEM, with *out empty. */
int _sf_report_build(const struct _sf_event *ev, size_t n, struct _sf_report *out);
/* report.c's part for the replay: ord, the n events in (rank, step, start) order with
 * every (rank, step) of out one; out's pipeline found (pp_stages > 0). Fills
 * out->pp_replayed and pp_replayed_median; SF_OK or SF_ERR_NOMEM. */
int _sf_pp_replay(const struct _sf_event *const *ord, size_t n, struct _sf_report *out);
/* (replay.c, for both) per_step (S x T, stage s's at [s T, (s+1) T)) divided by cnt, its
 * ranks summed, and each stage's median over the steps with a count into median[s] (0
 * without); sorted: room for T */
void _sf_pp_medians(double *per_step, const int *cnt, int S, int T, double *sorted,
                    double *median);
void _sf_report_free(struct _sf_report *r);

/* The writers below leave errors of the stream f to its owner (ferror, fclose; see
 * _sf_file_close in trace/write.h), who knows the file's name. */

/* The report for a person: a header saying what each column means, one line per
 * rank and step (steps from 1), totals per rank and overall, under a pipeline each
 * stage's bubble beside the theory, and the stalls per unit ("fc1 (L2)"). */
void _sf_report_write_text(const struct _sf_report *r, const char *source, FILE *f);
/* The same figures for a script (milliseconds): "step_base": 1 says that its "step"
 * fields count from 1, as the text's and the progress lines' do; the per-rank and
 * total rows have no "step"; "pipeline": the stages' bubbles, or null. */
void _sf_report_write_json(const struct _sf_report *r, const char *source, FILE *f);

/* Timeline picture (trace/svg.c): one row per worker per rank, compute and comm in
 * two colours, exposed comm marked, step boundaries drawn. Events may come in any
 * order; title may be NULL (a default is used) and r may be NULL (no step lines or
 * summary). Returns SF_OK, or SF_ERR_INVALID (no event, or times that cannot be
 * drawn) or SF_ERR_NOMEM. */
int _sf_timeline_write_svg(const struct _sf_event *ev, size_t n, const struct _sf_report *r,
                           const char *title, FILE *f);

/* Writes <prefix>.overlap.txt and <prefix>.overlap.json (headed by source) and
 * <prefix>.timeline.svg (headed by title) from the report r of the n events ev
 * (trace/files.c). Returns SF_OK or the first error (a file that cannot be written is
 * named). */
int _sf_report_write_files(const char *prefix, const struct _sf_event *ev, size_t n,
                           const struct _sf_report *r, const char *source, const char *title);

#endif
