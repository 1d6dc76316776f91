/*
 * shardflow-overlap — the overlap report and timeline of a run traced with StarPU's FxT.
 *
 *   STARPU_FXT_TRACE=1 STARPU_FXT_PREFIX=dir/ mpirun -np 2 examples/mlp_synthetic
 *   starpu_fxt_tool -i dir/prof_file_*          # writes tasks.rec
 *   shardflow-overlap --out run tasks.rec       # report; run.overlap.{txt,json},
 *                                               # run.timeline.svg (and .png)
 *
 * tasks.rec is a recutils file: records of "Field: value" lines separated by blank
 * lines, one per task. Each record whose Name is one of shardflow's ("gather L3",
 * "fwd L3 linear", "loss allreduce", ...) becomes a struct _sf_event: rank from MPIRank
 * (-1, a run without MPI information, is rank 0), worker from WorkerId, times from
 * StartTime/EndTime (ms, turned into µs). Records of StarPU's own tasks
 * ("_starpu_data_acquire_pre", ...) are skipped and counted. The trace has no step
 * numbers, so they are rebuilt from the submission order: a step's tasks are submitted
 * together and the last one is "loss allreduce", so a rank's tasks, sorted by
 * SubmitOrder (JobId when a record has none), start a new step after each
 * "loss allreduce". The figures themselves come from scheduler/report.c, the same
 * code as the built-in trace, so both reports can be compared.
 *
 * The file is streamed line by line and arrays grow geometrically, so traces of long
 * runs fit. A malformed input is an error (exit 1) naming the file, the line, the
 * record and what was expected; a bad command line prints the usage (exit 2). Only
 * libc and libsftrace (report.c, svg.c, write.c) are used, and libsfcommon for errors:
 * every error is raised with SF_ERR, kept quiet (_sf_err_quiet), and printed by main
 * from sf_last_error() after "shardflow-overlap: error: ".
 */
#include "common/error.h"
#include "trace/report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *const usage_text =
    "usage: shardflow-overlap [options] TASKS.REC\n"
    "\n"
    "Reads the tasks.rec that starpu_fxt_tool writes from the FxT trace of a shardflow\n"
    "run and prints the overlap report: per rank and step, the wall time, the busy time\n"
    "of compute and of communication, the exposed (not hidden) communication, and how\n"
    "long each forward waited for its all-gather.\n"
    "\n"
    "options:\n"
    "  --out PREFIX  also write PREFIX.overlap.txt, PREFIX.overlap.json,\n"
    "                PREFIX.timeline.svg and, when rsvg-convert or ImageMagick's\n"
    "                convert is installed, PREFIX.timeline.png\n"
    "  --json        print the report as JSON instead of text\n"
    "  --title T     title of the timeline (default: shardflow timeline - TASKS.REC)\n"
    "  --help        print this help and exit\n";

static void usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "shardflow-overlap: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage_text);
	exit(2);
}

/* ------------------------------------------------------------------------------------ */
/* reading tasks.rec                                                                    */

/* The fields read from a record; the others (Model, Handles, ...) are ignored. */
enum field { F_NAME, F_JOBID, F_SUBMIT, F_WORKER, F_START, F_END, F_RANK, F_NFIELDS };
static const char *const field_names[F_NFIELDS] = {
    "Name", "JobId", "SubmitOrder", "WorkerId", "StartTime", "EndTime", "MPIRank",
};

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

struct reader {
	const char *path;
	size_t line; /* current line number */
	struct record rec;
	size_t nrecords, nskipped, nunnamed;
	struct _sf_event *ev;
	struct task *tasks;
	size_t n, cap;
};

/* Raises status with "<file>:<line>: " and the message. */
static int fail(struct reader *rd, int status, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct reader *rd, int status, size_t line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return SF_ERR(status, "%s:%zu: %s", rd->path, line, msg);
}

static void record_clear(struct record *r)
{
	for (int i = 0; i < F_NFIELDS; i++)
		free(r->value[i]);
	memset(r, 0, sizeof *r);
}

/* "record 12 (task "gather L2")" for messages. */
static const char *record_what(const struct record *r, char *buf, size_t len)
{
	if (r->value[F_NAME])
		snprintf(buf, len, "record %zu (task \"%.80s\")", r->index, r->value[F_NAME]);
	else
		snprintf(buf, len, "record %zu", r->index);
	return buf;
}

static int parse_int(struct reader *rd, enum field f, long long lo, long long hi, long long *out)
{
	const struct record *r = &rd->rec;
	const char *s = r->value[f];
	char *end, what[128];
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

static int parse_time(struct reader *rd, enum field f, double *us)
{
	const struct record *r = &rd->rec;
	const char *s = r->value[f];
	char *end, what[128];
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
static int append_task(struct reader *rd, const struct _sf_event *e, const struct task *t)
{
	if (rd->n == rd->cap) {
		size_t cap = rd->cap ? 2 * rd->cap : 1024;
		struct _sf_event *ev = realloc(rd->ev, cap * sizeof *ev);
		if (ev)
			rd->ev = ev;
		struct task *tk = realloc(rd->tasks, cap * sizeof *tk);
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
static int record_fields(struct reader *rd, const char *what, struct _sf_event *e, struct task *t)
{
	const struct record *r = &rd->rec;
	if (r->dup)
		return fail(rd, SF_ERR_INVALID, r->dup_line,
		            "%s: field %s appears twice (also on line %zu)", what,
		            field_names[r->dup - 1], r->vline[r->dup - 1]);
	static const enum field required[] = {F_WORKER, F_START, F_END};
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
	*t = (struct task){
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
static int record_take(struct reader *rd, bool at_eof)
{
	struct record *r = &rd->rec;
	char what[128];
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
	struct task t;
	memset(&e, 0, sizeof e);
	int prc = _sf_ev_parse_name(r->value[F_NAME], &e.kind, &e.layer);
	if (prc == -1) {
		rd->nskipped++;
		return 0;
	}
	record_what(r, what, sizeof what);
	if (prc != 0)
		return fail(
		    rd, SF_ERR_INVALID, r->vline[F_NAME],
		    "%s: malformed shardflow task name \"%.80s\": expected \"gather L<n>\", "
		    "\"fwd L<n> <type>\", \"bwd L<n> <type>\", \"rs L<n>\", \"opt L<n>\", "
		    "\"ag L<n>\", \"free L<n>\", \"loss\" or \"loss allreduce\"",
		    what, r->value[F_NAME]);
	int rc = record_fields(rd, what, &e, &t);
	return rc < 0 ? rc : append_task(rd, &e, &t);
}

static int record_end(struct reader *rd, bool at_eof)
{
	int rc = record_take(rd, at_eof);
	record_clear(&rd->rec);
	return rc;
}

/* One "Field: value" line (without its newline) of the current record. */
static int field_line(struct reader *rd, char *s, bool unterminated)
{
	struct record *r = &rd->rec;
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

static int read_tasks(struct reader *rd)
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
static void note_incomplete(int rank, size_t tail, int step)
{
	fprintf(stderr,
	        "shardflow-overlap: note: rank %d: the last %zu task(s) come after its last "
	        "\"loss allreduce\": step %d is incomplete\n",
	        rank, tail, step);
}

/* Numbers the steps of each rank from its submission order (see the top of the file). */
static int assign_steps(struct reader *rd)
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
				note_incomplete(o[k - 1].rank, tail, step);
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
		note_incomplete(o[rd->n - 1].rank, tail, step);
	free(o);
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* output                                                                               */

/* The full path of an executable called name in $PATH, in buf; false when none. */
static bool find_program(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t dl = colon ? (size_t)(colon - path) : strlen(path);
		int k = dl ? snprintf(buf, len, "%.*s/%s", (int)dl, path, name)
		           : snprintf(buf, len, "./%s", name); /* an empty entry is "." */
		if (k > 0 && (size_t)k < len && access(buf, X_OK) == 0)
			return true;
		path += dl + (colon ? 1 : 0);
	}
	return false;
}

/* svg -> png with rsvg-convert, else ImageMagick's convert. Never fatal: the PNG is a
 * convenience, the SVG is the picture. The converter's stdout goes to our stderr
 * (rsvg-convert's to the PNG), so that the report on stdout stays clean. */
static void write_png(const char *svg, const char *png)
{
	char prog[PATH_MAX];
	char *argv[4];
	posix_spawn_file_actions_t fa;
	bool rsvg = find_program("rsvg-convert", prog, sizeof prog);
	if (!rsvg && !find_program("convert", prog, sizeof prog)) {
		fprintf(stderr,
		        "shardflow-overlap: note: neither rsvg-convert nor ImageMagick's "
		        "convert is in PATH: no %s (open the SVG in a browser)\n",
		        png);
		return;
	}
	if (posix_spawn_file_actions_init(&fa) != 0)
		return;
	if (rsvg) {
		argv[0] = "rsvg-convert";
		argv[1] = (char *)svg;
		argv[2] = NULL;
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, png,
		                                 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	} else {
		argv[0] = "convert";
		argv[1] = (char *)svg;
		argv[2] = (char *)png;
		argv[3] = NULL;
		posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	}
	fflush(NULL);
	pid_t pid;
	int st = 0, rc = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		fprintf(stderr, "shardflow-overlap: warning: cannot run %s: %s: no %s\n", prog,
		        strerror(rc), png);
		return;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "shardflow-overlap: warning: %s %s failed (%s %d): no %s\n", prog,
		        svg, WIFEXITED(st) ? "exit status" : "signal",
		        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), png);
		unlink(png);
	}
}

/* The files of --out: the report, the timeline and, when a converter is there, the
 * PNG. Returns 0 or -1 after a message on stderr. */
static int write_outputs(const char *prefix, const struct reader *rd, const struct _sf_report *rep,
                         const char *title)
{
	int status = -1;
	size_t len = strlen(prefix) + 32;
	char *svg = malloc(len), *png = malloc(len), *deftitle = NULL;
	if (!svg || !png) {
		fprintf(stderr, "shardflow-overlap: error: out of memory\n");
		goto out;
	}
	if (!title) {
		size_t tl = strlen(rd->path) + 32;
		deftitle = malloc(tl);
		if (deftitle)
			snprintf(deftitle, tl, "shardflow timeline - %s", rd->path);
	}
	if (_sf_report_write_files(prefix, rd->ev, rd->n, rep, rd->path, title ? title : deftitle) <
	    0) {
		fprintf(stderr, "shardflow-overlap: error: %s\n", sf_last_error());
		goto out;
	}
	snprintf(svg, len, "%s.timeline.svg", prefix);
	snprintf(png, len, "%s.timeline.png", prefix);
	write_png(svg, png);
	status = 0;
out:
	free(svg);
	free(png);
	free(deftitle);
	return status;
}

struct options {
	const char *prefix, *title, *input;
	bool json;
};

/* The command line; exits on --help (0) and on a bad one (2). */
static void parse_args(int argc, char **argv, struct options *o)
{
	bool options_done = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (options_done || a[0] != '-' || strcmp(a, "-") == 0) {
			if (o->input)
				usage_error("one TASKS.REC expected, got \"%s\" and \"%s\"",
				            o->input, a);
			o->input = a;
		} else if (strcmp(a, "--") == 0) {
			options_done = true;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage_text, stdout);
			exit(0);
		} else if (strcmp(a, "--json") == 0) {
			o->json = true;
		} else if (strcmp(a, "--out") == 0 || strcmp(a, "--title") == 0) {
			if (i + 1 >= argc)
				usage_error("option \"%s\" needs a value", a);
			*(a[2] == 'o' ? &o->prefix : &o->title) = argv[++i];
		} else if (strncmp(a, "--out=", 6) == 0) {
			o->prefix = a + 6;
		} else if (strncmp(a, "--title=", 8) == 0) {
			o->title = a + 8;
		} else {
			usage_error("unknown option \"%s\"", a);
		}
	}
	if (!o->input)
		usage_error("no TASKS.REC given");
	if (o->prefix && !*o->prefix)
		usage_error("--out \"\": expected a non-empty file name prefix");
}

/* The tasks of the file, numbered into steps. Returns 0 or -1 after a message. */
static int load(struct reader *rd)
{
	if (read_tasks(rd) < 0) {
		fprintf(stderr, "shardflow-overlap: error: %s\n", sf_last_error());
		return -1;
	}
	if (rd->nskipped)
		fprintf(stderr,
		        "shardflow-overlap: note: %zu task(s) that are not shardflow's (StarPU's "
		        "own, e.g. _starpu_data_acquire_pre) skipped\n",
		        rd->nskipped);
	if (rd->n == 0) {
		fprintf(stderr,
		        "shardflow-overlap: error: %s: no shardflow task among its %zu record(s) "
		        "(%zu with other names, %zu without a Name): is this a trace of a "
		        "shardflow run?\n",
		        rd->path, rd->nrecords, rd->nskipped, rd->nunnamed);
		return -1;
	}
	if (assign_steps(rd) < 0) {
		fprintf(stderr, "shardflow-overlap: error: %s\n", sf_last_error());
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	_sf_err_quiet = true; /* main prints every error, after its own prefix */
	parse_args(argc, argv, &o);

	struct reader rd = {.path = o.input};
	struct _sf_report rep;
	int status = 1;
	bool have_rep = false;
	if (load(&rd) < 0)
		goto out;
	if (_sf_report_build(rd.ev, rd.n, &rep) < 0) {
		fprintf(stderr, "shardflow-overlap: error: %s: %s\n", o.input, sf_last_error());
		goto out;
	}
	have_rep = true;
	if (o.json)
		_sf_report_write_json(&rep, o.input, stdout);
	else
		_sf_report_write_text(&rep, o.input, stdout);
	if (ferror(stdout) || fflush(stdout) != 0) {
		fprintf(stderr, "shardflow-overlap: error: cannot write the report on stdout: %s\n",
		        strerror(errno));
		goto out;
	}
	if (o.prefix && write_outputs(o.prefix, &rd, &rep, o.title) < 0)
		goto out;
	status = 0;
out:
	if (have_rep)
		_sf_report_free(&rep);
	free(rd.ev);
	free(rd.tasks);
	return status;
}
