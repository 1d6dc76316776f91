/*
 * runtime.h — the context of one process: configuration, communicator, StarPU and
 * the comm worker (scheduler/runtime.c, scheduler/config.c).
 */
#ifndef SF_SCHEDULER_RUNTIME_H
#define SF_SCHEDULER_RUNTIME_H

#include "common/error.h"
#include "tasks/comm.h"

#include <stdbool.h>
#include <time.h>

struct sf_context {
	struct sf_config cfg;
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

/* Logs, once, the SHARDFLOW_* variables that were set (rank 0, at sf_init). */
void _sf_config_log(void);

/* A strict decimal integer in [lo, hi]: an optional '-' and digits only. 0 or -1. */
int _sf_parse_long(const char *s, long lo, long hi, long *out);

/* Checks the StarPU variables shardflow documents (STARPU_NCPU(S) 2..maxcpus, the
 * numeric ones, the CPU lists) before starpu_init, which would abort on them. */
int _sf_starpu_env_check(int maxcpus);

/* The maximal prefetch depth (SHARDFLOW_PREFETCH_DEPTH). */
#define SF_MAX_DEPTH 64

#endif
