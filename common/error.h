/*
 * error.h — errors and shardflow's own log, used by every module.
 *
 * The rule of the library: every function returns SF_OK (0) or a negative enum
 * sf_status. An error is raised once, where it is detected, with SF_ERR (which keeps
 * file and line for the printed message and records the text for sf_last_error()):
 * `return SF_ERR(...)` before anything is acquired, `rc = SF_ERR(...); goto fail;`
 * after; callers propagate the status with SF_CHECK (which returns it) or
 * SF_CHECK_GOTO (which jumps to a label: `fail:` reached by failures only, `out:` the
 * exit the success path shares). sf_error_set
 * is the public twin, for user layers and models/ (public API only, tests/layout.sh).
 * Codelets cannot return a status: a comm codelet that fails ends the job (comm_failed
 * in comm/comm_codelets.c), and a CUDA error in a kernel aborts with its location
 * (common/cuda_util.h). Nothing here knows MPI, StarPU or CUDA, so the tools and the
 * trace library link it too.
 */
#ifndef SF_COMMON_ERROR_H
#define SF_COMMON_ERROR_H

#include "shardflow.h"

#include <stdbool.h>
#include <stddef.h>

/* Records and prints a message (unless _sf_err_quiet); returns status. file may be NULL
 * (no location). */
int _sf_err(int status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define SF_ERR(status, ...) _sf_err((status), __FILE__, __LINE__, __VA_ARGS__)
/* Records a message for sf_last_error() without ever printing it; returns status. For a
 * lookup whose caller knows where the text came from (sf_optimizer_from_name and the
 * like, on a program's option) and prints the message once, with that, itself. */
int _sf_err_record(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The error of a rank that stops because rank `peer` failed (an agreement relayed that
 * rank's failure, or every rank saw the same one and `peer` reports it): records the
 * message for sf_last_error() and `peer` for sf_last_error_peer(), and prints only
 * "<what>: stopping: rank <peer> failed" (unless quiet or held), since `peer` prints
 * the message itself; returns status. */
int _sf_err_peer(int status, int peer, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Formats a file path into buf (n bytes, SF_PATH_MAX for the library's): SF_OK, or
 * SF_ERR_INVALID saying that the path `what` names would be too long. */
int _sf_path_printf(char *buf, size_t n, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The two ways a status propagates, named by their control flow (NCCL's NCCLCHECK and
 * NCCLCHECKGOTO): SF_CHECK returns a negative status from the enclosing function at
 * once (nothing to release yet); SF_CHECK_GOTO stores it in the enclosing function's
 * `rc` and jumps to `label`: `fail` when only a failure gets there, `out` when the
 * success path ends there too (the function's one exit, releasing what it holds). */
#define SF_CHECK(call)                                                                             \
	do {                                                                                       \
		int sf_check_rc_ = (call);                                                         \
		if (sf_check_rc_ < 0)                                                              \
			return sf_check_rc_;                                                       \
	} while (0)
#define SF_CHECK_GOTO(call, label)                                                                 \
	do {                                                                                       \
		int sf_check_rc_ = (call);                                                         \
		if (sf_check_rc_ < 0) {                                                            \
			rc = sf_check_rc_;                                                         \
			goto label;                                                                \
		}                                                                                  \
	} while (0)

/* Messages at or below this level are printed (SHARDFLOW_LOG; errors print at
 * SF_LOG_ERROR and above, nothing at SF_LOG_OFF). */
extern enum sf_log_level _sf_log_level;
/* true: _sf_err (and sf_error_set) only record the message for sf_last_error(), never
 * print it. For a program that prints sf_last_error() itself, with its own prefix
 * (tools/shardflow-overlap; sf_log_set_quiet() for programs), so that an error is not
 * printed twice. Set it once, at start, before any thread; false by default. */
extern bool _sf_err_quiet;

/* Holds this thread's errors: until _sf_err_release(), _sf_err and sf_error_set record
 * their message without printing it. For a callback whose error the caller raises
 * again with its own context (sf_graph_layer and a type's infer()), so that the
 * message is printed once, with the context. _sf_err_release() says whether an error
 * was recorded meanwhile (a callback may fail without a message). Not nested. */
void _sf_err_hold(void);
bool _sf_err_release(void);
/* Prefixes messages with "[rank r]" when >= 0 (set by sf_init for worlds of size > 1). */
extern int _sf_log_rank;

void _sf_log(enum sf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define SF_NAME_MAX 64   /* names of graphs, nodes, layer types and units, with the NUL */
#define SF_PATH_MAX 4096 /* bytes of every file path the library builds, with the NUL */

#endif
