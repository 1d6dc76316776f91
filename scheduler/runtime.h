/*
 * runtime.h — the context of one process: configuration, communicator, StarPU and
 * the comm worker (scheduler/runtime.c, scheduler/config.c).
 */
#ifndef SF_SCHEDULER_RUNTIME_H
#define SF_SCHEDULER_RUNTIME_H

#include "common/error.h"
#include "comm/comm.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct sf_context {
	struct sf_config cfg;
	uint32_t cfg_from_env; /* the knobs the environment set (_sf_config_resolve) */
	struct sf_config cfg_program; /* what the program gave sf_init_config (or defaults) */
	struct _sf_comm *comm; /* the world: rank and size below are its */
	int rank, size;
	int comm_worker;      /* StarPU worker id running every collective */
	clockid_t comm_clock; /* CPU-time clock of the comm worker's thread */
	int ncompute;         /* compute workers */
	int nmodels;          /* live models: sf_finalize refuses while > 0 */
	bool auto_fxt;        /* shardflow records FxT for SHARDFLOW_TRACE (runtime.c) */
};

bool _sf_runtime_active(void);

/* ---- configuration (scheduler/config.c) ------------------------------------------ */

/* The names of enum sf_sharding values, as SHARDFLOW_SHARDING and checkpoints spell
 * them (SF_SHARD_COUNT); and of enum sf_optimizer (SF_OPT_COUNT). Unsized here, so that
 * config.c can check that its tables have a name for every value. */
extern const char *const _sf_sharding_names[];
extern const char *const _sf_optimizer_names[];

/* *out = the program's configuration (NULL: the defaults; each value checked, `fn`
 * naming the caller in a refusal) with every SHARDFLOW_* variable of the environment
 * read over it; bit k of *from_env says that the k-th knob came from the environment.
 * alike_quiet: a refusal every rank meets alike is returned but not printed (the
 * launcher's rank 0 says it); one that depends on this rank's machine (a trace
 * directory missing here) is printed still. */
int _sf_config_resolve(const struct sf_config *program, const char *fn, struct sf_config *out,
                       uint32_t *from_env, bool alike_quiet);
/* The log of what the environment set (rank 0): each variable at info (unless `model`),
 * and a warning for each value that overrides the program's: "SHARDFLOW_X=v overrides
 * the program's w" (for a model, its knobs only, with its name). program may be NULL. */
void _sf_config_log(const struct sf_config *program, const struct sf_config *now,
                    uint32_t from_env, const char *model);
/* A model's configuration: the context's (ctx->cfg), with the model's knobs of
 * `program` (NULL: none; checked) where the environment did not set them (as resolved
 * at sf_init). A runtime knob of program that is neither the context's value, nor what
 * the program gave sf_init_config, nor the default is refused, as is a hybrid model on
 * a context that is not, and the reverse. */
int _sf_config_for_model(const struct sf_context *ctx, const struct sf_config *program,
                         struct sf_config *out);

/* A strict decimal integer in [lo, hi]: an optional '-' and digits only. 0 or -1. */
int _sf_parse_long(const char *s, long lo, long hi, long *out);

/* Checks the StarPU variables shardflow documents (STARPU_NCPU(S) 2..maxcpus, the
 * numeric ones, the CPU lists) before starpu_init, which would abort on them. */
int _sf_starpu_env_check(int maxcpus);

/* The maximal prefetch depth (SHARDFLOW_PREFETCH_DEPTH). */
#define SF_MAX_DEPTH 64

#endif
