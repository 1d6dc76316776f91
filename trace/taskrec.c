/*
 * taskrec.c — tasks.rec (starpu_fxt_tool's output) to overlap-report events
 * (trace/taskrec.h says how).
 */
#include "trace/taskrec.h"
#include "common/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <math.h>
#include <sys/types.h>

static const char *const field_names[F_NFIELDS] = {
    "Name", "JobId", "SubmitOrder", "WorkerId", "StartTime", "EndTime", "MPIRank",
};

/* Raises status with "<file>:<line>: " and the message. */
static int fail(struct _sf_taskrec *rd, int status, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct _sf_taskrec *rd, int status, size_t line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return SF_ERR(status, "%s:%zu: %s", rd->path, line, msg);
}

static void record_clear(struct _sf_taskrec_record *r)
{
	for (int i = 0; i < F_NFIELDS; i++)
		free(r->value[i]);
	memset(r, 0, sizeof *r);
}

/* "record 12 (task "gather fc1 (L2)")" for messages. */
static const char *record_what(const struct _sf_taskrec_record *r, char *buf, size_t len)
{
	if (r->value[F_NAME])
		snprintf(buf, len, "record %zu (task \"%.160s\")", r->index, r->value[F_NAME]);
	else
		snprintf(buf, len, "record %zu", r->index);
	return buf;
}

static int parse_int(struct _sf_taskrec *rd, enum _sf_taskrec_field f, long long lo, long long hi, long long *out)
{
	const struct _sf_taskrec_record *r = &rd->rec;
	const char *s = r->value[f];
	char *end, what[200];
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < lo || v > hi)
		return fail(rd, SF_ERR_INVALID, r->vline[f],
		            "%s: %s \"%.40s\" is invalid: expected an integer from "
		            "%lld to %lld",
		            record_what(r, what, sizeof what), field_names[f], s, lo, hi);
	*out = v;
	return 0;
}

static int parse_time(struct _sf_taskrec *rd, enum _sf_taskrec_field f, double *us)
{
	const struct _sf_taskrec_record *r = &rd->rec;
	const char *s = r->value[f];
	char *end, what[200];
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno == ERANGE || !isfinite(v))
		return fail(rd, SF_ERR_INVALID, r->vline[f],
		            "%s: %s \"%.40s\" is invalid: expected a time in "
		            "milliseconds (a finite decimal number)",
		            record_what(r, what, sizeof what), field_names[f], s);
	*us = v * 1e3;
	return 0;
}

/* Appends an event and its task; the arrays grow geometrically. */
static int append_task(struct _sf_taskrec *rd, const struct _sf_event *e, const struct _sf_taskrec_task *t)
{
	if (rd->n == rd->cap) {
		size_t cap = rd->cap ? 2 * rd->cap : 1024;
		struct _sf_event *ev = realloc(rd->ev, cap * sizeof *ev);
		if (ev)
			rd->ev = ev;
		struct _sf_taskrec_task *tk = realloc(rd->tasks, cap * sizeof *tk);
		if (tk)
			rd->tasks = tk;
		if (!ev || !tk)
			return fail(rd, SF_ERR_NOMEM, rd->rec.line, "out of memory after %zu tasks",
			            rd->n);
		rd->cap = cap;
	}
	rd->ev[rd->n] = *e;
	rd->tasks[rd->n] = *t;
	rd->n++;
	return 0;
}

/* The fields of the current record, a task of shardflow's called `what` in messages,
 * as its event (kind and layer already set) and task. */
static int record_fields(struct _sf_taskrec *rd, const char *what, struct _sf_event *e, struct _sf_taskrec_task *t)
{
	const struct _sf_taskrec_record *r = &rd->rec;
	if (r->dup)
		return fail(rd, SF_ERR_INVALID, r->dup_line,
		            "%s: field %s appears twice (also on line %zu)", what,
		            field_names[r->dup - 1], r->vline[r->dup - 1]);
	static const enum _sf_taskrec_field required[] = {F_WORKER, F_START, F_END};
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
		if (!r->value[required[i]])
			return fail(rd, SF_ERR_INVALID, r->line,
			            "%s has no %s field: every task of shardflow's must have "
			            "WorkerId, StartTime and EndTime (did it run?)",
			            what, field_names[required[i]]);
	if (!r->value[F_SUBMIT] && !r->value[F_JOBID])
		return fail(rd, SF_ERR_INVALID, r->line,
		            "%s has neither SubmitOrder nor JobId: one is needed to find its step",
		            what);

	long long worker, rank = -1, submit = 0, job = 0;
	int rc;
	if ((rc = parse_int(rd, F_WORKER, 0, INT_MAX, &worker)) < 0 ||
	    (rc = parse_time(rd, F_START, &e->start)) < 0 ||
	    (rc = parse_time(rd, F_END, &e->end)) < 0)
		return rc;
	if (r->value[F_RANK] && (rc = parse_int(rd, F_RANK, -1, INT_MAX, &rank)) < 0)
		return rc;
	if (r->value[F_SUBMIT] && (rc = parse_int(rd, F_SUBMIT, 0, LLONG_MAX, &submit)) < 0)
		return rc;
	/* JobId reads "<rank>_<id>" when starpu_fxt_tool merged several ranks' files:
	 * only SubmitOrder (always a plain integer) is needed then */
	if (!r->value[F_SUBMIT] && r->value[F_JOBID] &&
	    (rc = parse_int(rd, F_JOBID, 0, LLONG_MAX, &job)) < 0)
		return rc;
	if (e->end < e->start)
		return fail(rd, SF_ERR_INVALID, r->vline[F_END],
		            "%s: EndTime %s is before StartTime %s: expected EndTime >= StartTime",
		            what, r->value[F_END], r->value[F_START]);
	e->rank = rank < 0 ? 0 : (int)rank;
	e->worker = (int)worker;
	e->step = 0;
	snprintf(e->name, sizeof e->name, "%s", r->value[F_NAME]);
	*t = (struct _sf_taskrec_task){
	    .rank = e->rank,
	    .has_submit = r->value[F_SUBMIT] != NULL,
	    .has_job = !r->value[F_SUBMIT] && r->value[F_JOBID] != NULL,
	    .submit = (unsigned long long)submit,
	    .job = (unsigned long long)job,
	    .record = r->index,
	    .line = r->line,
	};
	return 0;
}

/* A complete record: a shardflow task becomes an event, anything else is counted. */
static int record_take(struct _sf_taskrec *rd, bool at_eof)
{
	struct _sf_taskrec_record *r = &rd->rec;
	char what[200];
	if (!r->nlines)
		return 0;
	rd->nrecords++;
	/* starpu_fxt_tool ends every record with a blank line: without one, the file was
	 * cut inside this record, and whatever it holds cannot be trusted */
	if (at_eof)
		return fail(rd, SF_ERR_INVALID, rd->line,
		            "%s: the file ends inside this record (no blank line after it%s): is "
		            "the file truncated?",
		            record_what(r, what, sizeof what),
		            r->value[F_NAME] && !r->value[F_END] ? ", and it has no EndTime" : "");
	if (!r->value[F_NAME]) {
		rd->nunnamed++; /* a record descriptor ("%rec: ...") or a nameless task */
		return 0;
	}
	struct _sf_event e;
	struct _sf_taskrec_task t;
	memset(&e, 0, sizeof e);
	struct _sf_ev_name nm;
	int prc = _sf_ev_parse_name(r->value[F_NAME], &nm);
	e.kind = nm.kind;
	e.layer = nm.layer;
	if (prc == -1) {
		rd->nskipped++;
		return 0;
	}
	record_what(r, what, sizeof what);
	if (prc != 0)
		return fail(
		    rd, SF_ERR_INVALID, r->vline[F_NAME],
		    "%s: malformed shardflow task name \"%.160s\": expected \"<kind> <unit> "
		    "(L<n>)\" (gather, rs, ar, opt, ag, free, acc, sqnorm), \"<kind> <node> "
		    "(<type> L<n>)\" (fwd, bwd, recompute), \"loss\", \"loss allreduce\" or "
		    "\"grad norm\"",
		    what, r->value[F_NAME]);
	int rc = record_fields(rd, what, &e, &t);
	return rc < 0 ? rc : append_task(rd, &e, &t);
}

static int record_end(struct _sf_taskrec *rd, bool at_eof)
{
	int rc = record_take(rd, at_eof);
	record_clear(&rd->rec);
	return rc;
}

/* One "Field: value" line (without its newline) of the current record. */
static int field_line(struct _sf_taskrec *rd, char *s, bool unterminated)
{
	struct _sf_taskrec_record *r = &rd->rec;
	size_t k = 0;
	while (s[k] == '%' || s[k] == '_' || (s[k] >= 'A' && s[k] <= 'Z') ||
	       (s[k] >= 'a' && s[k] <= 'z') || (k > 0 && s[k] >= '0' && s[k] <= '9'))
		k++;
	if (k == 0 || s[k] != ':' || (s[k + 1] != ' ' && s[k + 1] != '\0'))
		return fail(
		    rd, SF_ERR_INVALID, rd->line,
		    "\"%.60s\" is not a field line: expected \"Field: value\"%s", s,
		    unterminated ? " (this last line has no newline: is the file truncated?)" : "");
	if (!r->nlines) {
		r->index = rd->nrecords + 1;
		r->line = rd->line;
	}
	r->nlines++;
	for (int f = 0; f < F_NFIELDS; f++) {
		if (strlen(field_names[f]) != k || strncmp(s, field_names[f], k) != 0)
			continue;
		if (r->value[f]) {
			/* an error only if this turns out to be a shardflow task */
			if (!r->dup) {
				r->dup = f + 1;
				r->dup_line = rd->line;
			}
			return 0;
		}
		const char *v = s[k + 1] ? s + k + 2 : "";
		r->value[f] = strdup(v);
		if (!r->value[f])
			return fail(rd, SF_ERR_NOMEM, rd->line, "out of memory");
		r->vline[f] = rd->line;
	}
	return 0;
}

static int read_tasks(struct _sf_taskrec *rd)
{
	FILE *f = fopen(rd->path, "r");
	if (!f)
		return SF_ERR(SF_ERR_IO, "cannot open \"%s\": %s", rd->path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0;
	bool unterminated = false; /* the last line read had no newline */
	while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
		rd->line++;
		unterminated = len == 0 || line[len - 1] != '\n';
		if (!unterminated)
			line[--len] = '\0';
		if (len > 0 && line[len - 1] == '\r')
			line[--len] = '\0';
		if ((size_t)len != strlen(line))
			rc = fail(rd, SF_ERR_INVALID, rd->line,
			          "a NUL byte inside a line: this is not a text file");
		else if (len == 0)
			rc = record_end(rd, false);
		else if (line[0] == '#' || line[0] == '+')
			continue; /* a comment, or the continuation of a value we ignore */
		else
			rc = field_line(rd, line, unterminated);
	}
	if (rc == 0 && ferror(f))
		rc = SF_ERR(SF_ERR_IO, "cannot read \"%s\": %s", rd->path, strerror(errno));
	/* the last record, when no blank line follows it */
	if (rc == 0)
		rc = record_end(rd, true);
	record_clear(&rd->rec);
	free(line);
	fclose(f);
	return rc;
}

/* ------------------------------------------------------------------------------------ */
/* steps                                                                                */

struct order {
	size_t i;
	int rank;
	unsigned long long key;
};

static int cmp_order(const void *x, const void *y)
{
	const struct order *p = x, *q = y;
	if (p->rank != q->rank)
		return p->rank < q->rank ? -1 : 1;
	if (p->key != q->key)
		return p->key < q->key ? -1 : 1;
	return p->i < q->i ? -1 : p->i > q->i;
}

/* A rank's last tasks that no "loss allreduce" follows. */
static void note_incomplete(const char *who, int rank, size_t tail, int step)
{
	if (!who)
		return;
	fprintf(stderr,
	        "%s: note: rank %d: the last %zu task(s) come after its last "
	        "\"loss allreduce\": step %d is incomplete\n",
	        who, rank, tail, step + 1);
}

/* Numbers the steps of each rank from its submission order (see the top of the file). */
static int assign_steps(struct _sf_taskrec *rd, const char *who)
{
	bool all_submit = true, all_job = true;
	for (size_t i = 0; i < rd->n; i++) {
		all_submit &= rd->tasks[i].has_submit;
		all_job &= rd->tasks[i].has_job;
	}
	if (!all_submit && !all_job)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: some tasks have only SubmitOrder and others only JobId: the "
		              "submission order cannot be rebuilt",
		              rd->path);
	struct order *o = malloc(rd->n * sizeof *o);
	if (!o)
		return SF_ERR(SF_ERR_NOMEM, "out of memory for %zu tasks", rd->n);
	for (size_t i = 0; i < rd->n; i++)
		o[i] = (struct order){i, rd->tasks[i].rank,
		                      all_submit ? rd->tasks[i].submit : rd->tasks[i].job};
	qsort(o, rd->n, sizeof *o, cmp_order);
	int step = 0;
	size_t tail = 0; /* tasks after the last "loss allreduce" of the rank */
	for (size_t k = 0; k < rd->n; k++) {
		if (k > 0 && o[k].rank != o[k - 1].rank) {
			if (tail)
				note_incomplete(who, o[k - 1].rank, tail, step);
			step = 0;
			tail = 0;
		}
		struct _sf_event *e = &rd->ev[o[k].i];
		e->step = step;
		tail++;
		if (e->kind == SF_EV_LOSS_SUM) {
			step++;
			tail = 0;
		}
	}
	if (rd->n && tail)
		note_incomplete(who, o[rd->n - 1].rank, tail, step);
	free(o);
	return 0;
}

/* ------------------------------------------------------------------------------------ */

int _sf_taskrec_load(struct _sf_taskrec *rd, const char *who)
{
	int rc = read_tasks(rd);
	if (rc < 0)
		return rc;
	if (rd->n == 0)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: no shardflow task among its %zu record(s) "
		              "(%zu with other names, %zu without a Name): is this a trace of a "
		              "shardflow run?",
		              rd->path, rd->nrecords, rd->nskipped, rd->nunnamed);
	return assign_steps(rd, who);
}

void _sf_taskrec_free(struct _sf_taskrec *rd)
{
	free(rd->ev);
	free(rd->tasks);
	rd->ev = NULL;
	rd->tasks = NULL;
	rd->n = rd->cap = 0;
}
