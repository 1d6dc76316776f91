/*
 * taskrec.h — the reader of StarPU's tasks.rec (starpu_fxt_tool's output) behind
 * shardflow-overlap, in a file of its own so that the fuzzer (fuzz/fuzz_taskrec.c)
 * runs the very code the tool does.
 *
 * tasks.rec is a recutils file: records of "Field: value" lines separated by blank
 * lines, one per task. Each record whose Name is one of shardflow's ("gather L3",
 * "fwd L3 linear", "loss allreduce", ...) becomes a struct _sf_event; records of
 * StarPU's own tasks are skipped and counted. Errors are raised with SF_ERR
 * (common/error.h): the message, naming the file and the line, is in sf_last_error().
 */
#ifndef SF_TOOLS_TASKREC_H
#define SF_TOOLS_TASKREC_H

#include "trace/report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The fields read from a record; the others (Model, Handles, ...) are ignored. */
enum field { F_NAME, F_JOBID, F_SUBMIT, F_WORKER, F_START, F_END, F_RANK, F_NFIELDS };

struct record {
	size_t index;  /* 1-based, in the file */
	size_t line;   /* of its first field */
	size_t nlines; /* field lines seen */
	char *value[F_NFIELDS];
	size_t vline[F_NFIELDS];
	int dup; /* 1 + the first field seen twice, 0 when none */
	size_t dup_line;
};

/* A shardflow task: its event plus what orders it within its rank. */
struct task {
	int rank;
	bool has_submit, has_job;
	unsigned long long submit, job;
	size_t record, line;
};

/* Set path (and notes) and zero the rest before reading. */
struct taskrec {
	const char *path; /* the file read, named in messages */
	FILE *notes;      /* where notes (an incomplete last step) go; NULL: nowhere */
	size_t line;      /* current line number */
	struct record rec;
	size_t nrecords, nskipped, nunnamed;
	struct _sf_event *ev; /* n events, and their tasks */
	struct task *tasks;
	size_t n, cap;
};

/* Reads the file rd->path / the stream f (rd->path only names it) into rd->ev. */
int _sf_taskrec_read(struct taskrec *rd);
int _sf_taskrec_read_stream(struct taskrec *rd, FILE *f);
/* Numbers the steps of each rank's events from their submission order. */
int _sf_taskrec_assign_steps(struct taskrec *rd);
/* Frees the events and tasks (not rd itself). */
void _sf_taskrec_free(struct taskrec *rd);

#endif
