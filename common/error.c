/*
 * error.c — status codes, error messages and shardflow's own log.
 *
 * Every error is printed once where it is raised (with file and line, so a user's
 * report points at the check that fired), unless a program asked for quiet
 * (_sf_err_quiet, sf_log_set_quiet) or the log is off, and kept per thread for
 * sf_last_error(). A callback's error (sf_error_set in a layer type's infer) is held
 * and printed once, by the caller that adds its context (_sf_err_hold); a name lookup's
 * (sf_optimizer_from_name and the like) is only recorded, for the program to print
 * with the option it parsed (_sf_err_record). A failure another rank raised and this
 * rank only relays (_sf_err_peer) prints one short line, "stopping: rank N failed":
 * the failing rank prints the message, once for the job, not once per rank.
 */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum sf_log_level _sf_log_level = SF_LOG_WARN;
int _sf_log_rank = -1;
bool _sf_err_quiet = false;
static _Thread_local char last_error[1024];
static _Thread_local bool held;          /* _sf_err_hold: record, do not print */
static _Thread_local bool recorded;      /* an error was recorded while held */
static _Thread_local int last_peer = -1; /* _sf_err_peer: the rank that failed first */

SF_API const char *sf_strerror(int status)
{
	switch (status) {
	case SF_OK: return "success";
	case SF_ERR_INVALID: return "invalid argument";
	case SF_ERR_CONFIG: return "invalid configuration";
	case SF_ERR_NOMEM: return "out of memory";
	case SF_ERR_MPI: return "MPI error";
	case SF_ERR_STARPU: return "StarPU error";
	case SF_ERR_STATE: return "call made in the wrong state";
	case SF_ERR_IO: return "input/output error";
	case SF_ERR_NONFINITE: return "non-finite value";
	case SF_ERR_NOT_FOUND: return "not found";
	case SF_ERR_BUSY: return "busy";
	case SF_ERR_COMM: return "communication error";
	default: return "unknown status";
	}
}

SF_API const char *sf_last_error(void)
{
	return last_error;
}

SF_API int sf_last_error_peer(void)
{
	return last_peer;
}

/* Records the message; prints it unless held, quiet, the log is off or `print` is false */
static int vset(int status, const char *file, int line, bool print, const char *fmt, va_list ap)
{
	int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
	if (n < 0)
		last_error[0] = '\0';
	recorded = true;
	last_peer = -1;
	if (print && !held && !_sf_err_quiet && _sf_log_level >= SF_LOG_ERROR) {
		char where[64] = "";
		if (_sf_log_rank >= 0)
			snprintf(where, sizeof where, "[rank %d] ", _sf_log_rank);
		if (file)
			fprintf(stderr, "shardflow: error: %s%s (%s:%d)\n", where, last_error, file,
			        line);
		else
			fprintf(stderr, "shardflow: error: %s%s\n", where, last_error);
		fflush(stderr);
	}
	return status;
}

int _sf_err(int status, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(status, file, line, true, fmt, ap);
	va_end(ap);
	return status;
}

int _sf_err_peer(int status, int peer, const char *what, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(status, NULL, 0, false, fmt, ap);
	va_end(ap);
	last_peer = peer;
	if (!held && !_sf_err_quiet && _sf_log_level >= SF_LOG_ERROR) {
		if (_sf_log_rank >= 0)
			fprintf(stderr,
			        "shardflow: error: [rank %d] %s: stopping: rank %d failed\n",
			        _sf_log_rank, what, peer);
		else
			fprintf(stderr, "shardflow: error: %s: stopping: rank %d failed\n", what,
			        peer);
		fflush(stderr);
	}
	return status;
}

int _sf_err_record(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(status, NULL, 0, false, fmt, ap);
	va_end(ap);
	return status;
}

SF_API int sf_error_set(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(status < 0 ? status : SF_ERR_INVALID, NULL, 0, true, fmt, ap);
	va_end(ap);
	return status < 0 ? status : SF_ERR_INVALID;
}

SF_API void sf_log_set_quiet(int quiet)
{
	_sf_err_quiet = quiet != 0;
}

void _sf_err_hold(void)
{
	held = true;
	recorded = false;
}

bool _sf_err_release(void)
{
	held = false;
	return recorded;
}

void _sf_log(enum sf_log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"off", "error", "warn", "info", "debug"};
	_Static_assert(sizeof names / sizeof names[0] == SF_LOG_COUNT, "one name per level");
	if (level <= SF_LOG_OFF || level >= SF_LOG_COUNT || level > _sf_log_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (_sf_log_rank >= 0)
		fprintf(stderr, "shardflow: %s: [rank %d] ", names[level], _sf_log_rank);
	else
		fprintf(stderr, "shardflow: %s: ", names[level]);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
	va_end(ap);
}

int _sf_path_printf(char *buf, size_t n, const char *what, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= n)
		return SF_ERR(SF_ERR_INVALID, "%s: the path \"%.64s...\" is longer than %zu bytes",
		              what, buf, n - 1);
	return SF_OK;
}
