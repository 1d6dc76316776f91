/*
 * recorder.h — the built-in trace (SHARDFLOW_TRACE=<prefix>), for any StarPU.
 *
 * Every task of a traced step gets a record, reserved on the submitting thread (name,
 * kind, layer, step) and completed in the task's callback from StarPU's profiling
 * info (start, end, worker). The writers turn records into a Chrome trace per rank
 * and, from every rank's records, the overlap report and the timeline
 * (trace/report.c, trace/svg.c). Collecting every rank's records on rank 0 is the
 * caller's (scheduler/trace_write.c): this module knows no communication.
 */
#ifndef SF_TRACE_RECORDER_H
#define SF_TRACE_RECORDER_H

#include "trace/event.h"

#include <stdbool.h>
#include <stddef.h>

struct _sf_recorder;

/* A recorder whose clock starts now (call it right after a barrier, so that ranks
 * line up to within the barrier's skew). Released by _sf_recorder_destroy. */
int _sf_recorder_create(int rank, struct _sf_recorder **out);
void _sf_recorder_destroy(struct _sf_recorder *r);

/* A record for a task about to be submitted, or NULL when memory ran out (the trace
 * is then incomplete, and says so). */
struct _sf_event *_sf_recorder_reserve(struct _sf_recorder *r, int step, const char *name,
                                       int kind, int layer);
/* The task's callback: completes the record handed as its argument. */
void _sf_recorder_task_done(void *record);

/* A copy of the completed records (*out: malloc'ed, the caller frees it). */
int _sf_recorder_events(const struct _sf_recorder *r, struct _sf_event **out, size_t *n);
/* true when a reservation failed. */
bool _sf_recorder_incomplete(const struct _sf_recorder *r);

/* Writes one rank's records as a Chrome trace (Perfetto, chrome://tracing), one event
 * per line; nworkers StarPU workers, comm_worker named as such. */
int _sf_trace_write_chrome(const char *path, int rank, int nworkers, int comm_worker,
                           const struct _sf_event *ev, size_t n);
/* Writes <prefix>.overlap.txt, .overlap.json and .timeline.svg from every rank's
 * records; config (or NULL): the run's layout and settings, which each file records
 * beside its source (the text's first line, the JSON's "source", the timeline's
 * title). */
int _sf_trace_write_report(const char *prefix, const char *config, const struct _sf_event *all,
                           size_t n);

#endif
