/*
 * shardflow-overlap — the overlap report and timeline of a run traced with StarPU's FxT.
 *
 *   STARPU_FXT_TRACE=1 STARPU_FXT_PREFIX=dir/ mpirun -np 2 examples/mlp_synthetic
 *   starpu_fxt_tool -i dir/prof_file_*          # writes tasks.rec
 *   shardflow-overlap --out run tasks.rec       # report; run.overlap.{txt,json},
 *                                               # run.timeline.svg (and .png)
 *
 * How tasks.rec is read (and its steps rebuilt) is in trace/taskrec.h; the figures
 * come from trace/report.c, the same code as the built-in trace, so both reports can
 * be compared. A malformed input is an error (exit 1) naming the file, the line, the
 * record and what was expected; a bad command line says what is wrong (exit 2). Only
 * libc and libsftrace are used, and libsfcommon for errors:
 * every error is raised with SF_ERR, kept quiet (_sf_err_quiet), and printed by main
 * from sf_last_error() after "shardflow-overlap: error: ".
 */
#include "common/error.h"
#include "tools/cli.h"
#include "trace/report.h"
#include "trace/taskrec.h"

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

static void usage(FILE *f)
{
	fputs(usage_text, f);
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
static int write_outputs(const char *prefix, const struct _sf_taskrec *rd, const struct _sf_report *rep,
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

static const char *const option_names[] = {"--out", "--title"};
static const char *const flag_names[] = {"--json"};

static int on_value(int k, char *val, void *ctx)
{
	struct options *o = ctx;
	*(k == 0 ? &o->prefix : &o->title) = val;
	return 0;
}

static int on_flag(int j, void *ctx)
{
	(void)j;
	((struct options *)ctx)->json = true;
	return 0;
}

static int on_operand(char **argp, void *ctx)
{
	struct options *o = ctx;
	if (o->input)
		return cli_bad_usage("one TASKS.REC expected, got \"%s\" and \"%s\"", o->input,
		                     *argp);
	o->input = *argp;
	return 0;
}

/* The command line: 0, 1 (--help printed) or 2 (bad, said). */
static int parse_args(int argc, char **argv, struct options *o)
{
	const struct cli_spec sp = {option_names, 2, flag_names, 1, on_value, on_flag};
	cli_prog = "shardflow-overlap";
	cli_usage = usage;
	int rc = cli_parse_operands(argc, argv, &sp, on_operand, o);
	if (rc)
		return rc;
	if (!o->input)
		return cli_bad_usage("no TASKS.REC given");
	if (o->prefix && !*o->prefix)
		return cli_bad_usage("--out \"\": expected a non-empty file name prefix");
	return 0;
}

/* The tasks of the file, numbered into steps. Returns 0 or -1 after a message. */
static int load(struct _sf_taskrec *rd)
{
	if (_sf_taskrec_load(rd, "shardflow-overlap") < 0) {
		fprintf(stderr, "shardflow-overlap: error: %s\n", sf_last_error());
		return -1;
	}
	if (rd->nskipped)
		fprintf(stderr,
		        "shardflow-overlap: note: %zu task(s) that are not shardflow's (StarPU's "
		        "own, e.g. _starpu_data_acquire_pre) skipped\n",
		        rd->nskipped);
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	_sf_err_quiet = true; /* main prints every error, after its own prefix */
	int prc = parse_args(argc, argv, &o);
	if (prc)
		return prc == 1 ? 0 : prc;

	struct _sf_taskrec rd = {.path = o.input};
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
	_sf_taskrec_free(&rd);
	return status;
}
