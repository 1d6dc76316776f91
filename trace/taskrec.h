/*
 * taskrec.h — reading the tasks.rec that starpu_fxt_tool writes from a shardflow run's
 * FxT trace into the events of the overlap report (trace/report.h).
 *
 * tasks.rec is a recutils file: records of "Field: value" lines separated by blank
 * lines, one per task. Each record whose Name is one of shardflow's ("gather fc1 (L2)",
 * "fwd fc1 (linear L2)", "loss allreduce", ...: trace/event.h) becomes a struct
 * _sf_event: rank from MPIRank (-1, a run without MPI information, is rank 0), worker
 * from WorkerId, times from StartTime/EndTime (ms, turned into µs). Records of
 * StarPU's own tasks ("_starpu_data_acquire_pre", ...) are skipped and counted. The
 * trace has no step numbers, so they are rebuilt from the submission order: a step's
 * tasks are submitted together and the last one is "loss allreduce", so a rank's
 * tasks, sorted by SubmitOrder (JobId when a record has none), start a new step after
 * each "loss allreduce".
 *
 * The file is streamed line by line and arrays grow geometrically, so traces of long
 * runs fit. A malformed input is an error naming the file, the line, the record and
 * what was expected (SF_ERR: the message is in sf_last_error()). Used by
 * tools/shardflow-overlap and by sf_finalize (a run traced with SHARDFLOW_TRACE and an
 * FxT StarPU).
 */
#ifndef SF_TRACE_TASKREC_H
#define SF_TRACE_TASKREC_H

#include <stdbool.h>
#include <stddef.h>

#include "trace/event.h"

/* The fields read from a record; the others (Model, Handles, ...) are ignored. */
enum _sf_taskrec_field { F_NAME, F_JOBID, F_SUBMIT, F_WORKER, F_START, F_END, F_RANK, F_NFIELDS };

struct _sf_taskrec_record {
	size_t index;  /* 1-based, in the file */
	size_t line;   /* of its first field */
	size_t nlines; /* field lines seen */
	char *value[F_NFIELDS];
	size_t vline[F_NFIELDS];
	int dup; /* 1 + the first field seen twice, 0 when none */
	size_t dup_line;
};

/* A shardflow task: its event plus what orders it within its rank. */
struct _sf_taskrec_task {
	int rank;
	bool has_submit, has_job;
	unsigned long long submit, job;
	size_t record, line;
};

struct _sf_taskrec {
	const char *path;
	size_t line; /* current line number */
	struct _sf_taskrec_record rec;
	size_t nrecords, nskipped, nunnamed;
	struct _sf_event *ev;
	struct _sf_taskrec_task *tasks;
	size_t n, cap;
};

/* Reads rd->path (set by the caller; the rest zeroed) into rd->ev[0..rd->n), steps
 * numbered (rd->nskipped: records of StarPU's own tasks). A note on an incomplete
 * last step goes to stderr after
 * "<who>: note: " (none when who is NULL). A file without any shardflow task is an error. Returns SF_OK or a
 * negative status; _sf_taskrec_free releases what was read in both cases. */
int _sf_taskrec_load(struct _sf_taskrec *rd, const char *who);
void _sf_taskrec_free(struct _sf_taskrec *rd);

#endif
