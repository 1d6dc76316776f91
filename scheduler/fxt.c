/*
 * fxt.c — a traced run's FxT files merged and reported (scheduler/fxt.h).
 *
 * starpu_fxt_tool does the merging: it is StarPU's own reader of its format, run as a
 * child process (posix_spawn, after MPI_Finalize, so no process is spawned from inside
 * MPI) with its output in a log beside the trace. Its tasks.rec is then read with
 * trace/taskrec.c and reported with trace/report.c, as the built-in trace is.
 */
#include "scheduler/fxt.h"
#include "common/error.h"

#include "config.h"

#ifdef SF_HAVE_FXT
#include "trace/report.h"
#include "trace/taskrec.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <starpu.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Runs argv[0] with stdout and stderr to log; SF_OK when it exits with 0. */
static int run_tool(char **argv, const char *log)
{
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa) != 0)
		return SF_ERR(SF_ERR_NOMEM, "out of memory");
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC,
	                                 0644);
	posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
	fflush(NULL);
	pid_t pid;
	int st = 0, e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e != 0)
		return SF_ERR(SF_ERR_IO, "cannot run %s: %s", argv[0], strerror(e));
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return SF_ERR(SF_ERR_IO, "%s failed (%s %d; its output: %s)", argv[0],
		              WIFEXITED(st) ? "exit status" : "signal",
		              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), log);
	return SF_OK;
}

/* Drops the tasks after a rank's last "loss allreduce" (an evaluation's forwards, say):
 * they are no training step, and the built-in trace does not report them either. */
static void drop_incomplete_step(struct _sf_taskrec *rd, int nranks)
{
	int *done = calloc((size_t)nranks, sizeof *done);
	if (!done)
		return;
	for (size_t i = 0; i < rd->n; i++)
		if (rd->ev[i].kind == SF_EV_LOSS_SUM && rd->ev[i].rank >= 0 &&
		    rd->ev[i].rank < nranks)
			done[rd->ev[i].rank]++;
	size_t k = 0;
	for (size_t i = 0; i < rd->n; i++) {
		int r = rd->ev[i].rank;
		if (r < 0 || r >= nranks || rd->ev[i].step < done[r] || done[r] == 0)
			rd->ev[k++] = rd->ev[i];
	}
	rd->n = k;
	free(done);
}

/* starpu_fxt_tool beside the StarPU this process loaded (<libdir>/../bin), so a
 * StarPU moved with its tools (scripts/gpu-bundle.sh's bundle) finds its own; else
 * the one of the StarPU configure found. */
static void fxt_tool_path(char *buf, size_t n)
{
	Dl_info di;
	if (dladdr((void *)starpu_init, &di) && di.dli_fname) {
		const char *slash = strrchr(di.dli_fname, '/');
		if (slash && (size_t)(slash - di.dli_fname) + 32 < n) {
			snprintf(buf, n, "%.*s/../bin/starpu_fxt_tool", (int)(slash - di.dli_fname),
			         di.dli_fname);
			if (access(buf, X_OK) == 0)
				return;
		}
	}
	snprintf(buf, n, "%s", SF_STARPU_BINDIR "/starpu_fxt_tool");
}

int _sf_fxt_merge(const char *prefix, int nranks)
{
	int rc = SF_OK;
	char dir[SF_PATH_MAX], log[SF_PATH_MAX], rec[SF_PATH_MAX], out[SF_PATH_MAX];
	char **argv = calloc((size_t)nranks + 6, sizeof *argv);
	struct _sf_taskrec rd = {0};
	struct _sf_report rep;
	bool have_rep = false;
	int k = 0;
	if (!argv)
		return SF_ERR(SF_ERR_NOMEM, "out of memory");
	SF_CHECK_GOTO(_sf_path_printf(dir, sizeof dir, "SHARDFLOW_TRACE", "%s.fxt", prefix), out);
	SF_CHECK_GOTO(
	    _sf_path_printf(log, sizeof log, "SHARDFLOW_TRACE", "%s/starpu_fxt_tool.log", dir), out);
	SF_CHECK_GOTO(_sf_path_printf(rec, sizeof rec, "SHARDFLOW_TRACE", "%s/tasks.rec", dir), out);
	SF_CHECK_GOTO(_sf_path_printf(out, sizeof out, "SHARDFLOW_TRACE", "%s.fxt", prefix), out);
	const char *user = getenv("USER");
	char tool[SF_PATH_MAX];
	fxt_tool_path(tool, sizeof tool);
	argv[k++] = tool;
	argv[k++] = "-d";
	argv[k++] = dir;
	argv[k++] = "-i";
	for (int r = 0; r < nranks; r++) {
		char f[SF_PATH_MAX];
		SF_CHECK_GOTO(_sf_path_printf(f, sizeof f, "SHARDFLOW_TRACE", "%s/prof_file_%s_%d", dir,
		                         user ? user : "", r), out);
		if (access(f, R_OK) != 0) {
			rc = SF_ERR(
			    SF_ERR_IO,
			    "SHARDFLOW_TRACE: rank %d's FxT file %s is not there (%s): every "
			    "rank must see the trace directory (a shared file system)",
			    r, f, strerror(errno));
			goto out;
		}
		if (!(argv[k++] = strdup(f))) {
			rc = SF_ERR(SF_ERR_NOMEM, "out of memory");
			goto out;
		}
	}
	unlink(rec); /* a previous run's */
	SF_CHECK_GOTO(run_tool(argv, log), out);
	rd.path = rec;
	SF_CHECK_GOTO(_sf_taskrec_load(&rd, NULL), out);
	drop_incomplete_step(&rd, nranks);
	SF_CHECK_GOTO(_sf_report_build(rd.ev, rd.n, &rep), out);
	have_rep = true;
	SF_CHECK_GOTO(_sf_report_write_files(out, rd.ev, rd.n, &rep, rec, rec), out);
	_sf_log(SF_LOG_INFO,
	        "SHARDFLOW_TRACE: StarPU's FxT trace in %s, its report in %s.overlap.txt", rec,
	        out);
out:
	if (have_rep)
		_sf_report_free(&rep);
	_sf_taskrec_free(&rd);
	for (int i = 4; i < k; i++)
		free(argv[i]);
	free(argv);
	return rc;
}

#else

int _sf_fxt_merge(const char *prefix, int nranks)
{
	(void)prefix;
	(void)nranks;
	return SF_OK;
}

#endif
