/*
 * cli.h — what the project's programs on the library share: the command line of
 * tools/cli.h (options from a table, strict numbers, usage errors with status 2), the
 * check of a library call in two names that say where they leave to, and the runtime's
 * clock for progress lines. Header-only: each program is one file.
 */
#ifndef SF_EXAMPLES_CLI_H
#define SF_EXAMPLES_CLI_H

#include "shardflow.h"
#include "tools/cli.h"

/* "<prog>: <function> failed: <status>" (cli_call_failed) for a library call that
 * failed, except on a rank that stops because another rank failed
 * (sf_last_error_peer): the library's "stopping: rank N failed" is that rank's one
 * line, and the failing rank says which call failed. */
static inline void cli_lib_call_failed(const char *call, int status)
{
	if (sf_last_error_peer() < 0)
		cli_call_failed(cli_prog, call, sf_strerror(status));
}

/* A library call that can fail: on failure, "<prog>: <function> failed: <status>"
 * (cli_lib_call_failed; the library has logged the detail) and a jump to `label`. */
#define CLI_CHECK_GOTO(call, label)                                                                \
	do {                                                                                       \
		int check_rc_ = (call);                                                            \
		if (check_rc_ < 0) {                                                               \
			cli_lib_call_failed(#call, check_rc_);                                     \
			goto label;                                                                \
		}                                                                                  \
	} while (0)

/* The same message, then the status returned from the calling function (which returns
 * a status, as the library's do). */
#define CLI_CHECK_RETURN(call)                                                                     \
	do {                                                                                       \
		int check_rc_ = (call);                                                            \
		if (check_rc_ < 0) {                                                               \
			cli_lib_call_failed(#call, check_rc_);                                     \
			return check_rc_;                                                          \
		}                                                                                  \
	} while (0)

/* CLI_CHECK_GOTO for a call that fails alike on every rank, as sf_init does on a bad
 * SHARDFLOW_* variable (the environment is every rank's): the launcher's rank 0 alone
 * says so, as the library does. */
#define CLI_CHECK_ALIKE_GOTO(call, label)                                                          \
	do {                                                                                       \
		int check_rc_ = (call);                                                            \
		if (check_rc_ < 0) {                                                               \
			if (cli_launcher_rank() == 0)                                              \
				cli_call_failed(cli_prog, #call, sf_strerror(check_rc_));          \
			goto label;                                                                \
		}                                                                                  \
	} while (0)

/* the runtime's clock: simulated time in a simulation build (docs/scale.md) */
static inline double cli_now(void)
{
	double t = 0;
	sf_clock(&t);
	return t;
}

#endif
