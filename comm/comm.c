/*
 * comm.c — what every backend shares (comm/comm.h): the backend SHARDFLOW_COMM names,
 * a communicator's creation and destruction, and the agreement of every rank on a
 * status.
 */
#include "config.h"

#include "comm/comm.h"
#include "common/error.h"

#include <libgen.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The backends this build has, by SHARDFLOW_COMM value (a backend is one line here);
 * a simulation build's proxy takes the MPI row before the program starts
 * (_sf_comm_backend_plug, from sim/comm_sim.c: comm/ never names the simulation) */
static const struct _sf_comm_ops *backends[SF_COMM_COUNT] = {
    [SF_COMM_MPI] = &_sf_comm_mpi_ops,
#ifdef SF_HAVE_NCCL
    [SF_COMM_NCCL] = &_sf_comm_nccl_ops,
#endif
    [SF_COMM_MPI_SYNC] = &_sf_comm_mpi_sync_ops,
};

int _sf_comm_backend_plug(enum sf_comm_backend which, const struct _sf_comm_ops *ops)
{
	if ((int)which < 0 || which >= SF_COMM_COUNT)
		return SF_ERR(SF_ERR_INVALID, "a communication backend plugged in as %d", (int)which);
	backends[which] = ops;
	return SF_OK;
}

int _sf_comm_backend(enum sf_comm_backend which, const struct _sf_comm_ops **out)
{
	if ((int)which < 0 || which >= SF_COMM_COUNT)
		return SF_ERR(SF_ERR_CONFIG, "SHARDFLOW_COMM: backend %d does not exist",
		              (int)which);
	if (!backends[which] && which == SF_COMM_MPI_SYNC) /* emptied by a simulation */
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_COMM=mpi-sync: a simulation models MPI's and NCCL's "
		              "timing, not mpi-sync's ordering check; accepted here: mpi "
		              "(SHARDFLOW_SIM_NCCL for NCCL's timing: docs/scale.md)");
	if (!backends[which]) /* NCCL, the one a build may leave out */
		return SF_ERR(
		    SF_ERR_CONFIG,
		    "SHARDFLOW_COMM=nccl: this shardflow was built without NCCL (configure "
		    "--with-cuda --with-nccl, with a StarPU built by scripts/build-starpu.sh "
		    "--with-cuda); accepted here: mpi");
	*out = backends[which];
	return SF_OK;
}

/* A communicator whose backend did not set up what knob=req asks for: ended, and the
 * refusal naming the backend and what it has */
static int refuse_missing(struct _sf_comm *c, const char *knob, int req, const char *lacks,
                          const char *who)
{
	int rc = SF_ERR(SF_ERR_CONFIG, "%s=%d: the %s backend has %s; accepted with it: %s=1 (%s)",
	                knob, req, c->ops->name, lacks, knob, who);
	c->ops->fini(c);
	free(c);
	return rc;
}

int _sf_comm_create(const struct _sf_comm_ops *ops, const struct sf_config *cfg, int *argc,
                    char ***argv, struct _sf_comm **out)
{
	struct _sf_comm *c = calloc(1, sizeof *c);
	if (!c)
		return SF_ERR(SF_ERR_NOMEM, "sf_init: out of memory");
	c->ops = ops;
	c->hybrid = cfg->sharding == SF_SHARD_HYBRID;
	c->node_req = cfg->node_size;
	c->tp_req = cfg->tp > 1 ? cfg->tp : 1;
	c->chunk = (size_t)cfg->comm_chunk / sizeof(float);
	c->timeout = (double)cfg->comm_timeout;
	c->tp_rank = 0, c->tp_size = 1;
	c->pp_req = cfg->pp > 1 ? cfg->pp : 1;
	c->pp_rank = 0, c->pp_size = 1;
	c->cp_req = cfg->cp > 1 ? cfg->cp : 1;
	c->cp_rank = 0, c->cp_size = 1;
	c->flight_cap = cfg->flight_record;
	if (cfg->trace[0]) { /* the flight record goes beside the trace */
		char dir[sizeof cfg->trace];
		snprintf(dir, sizeof dir, "%s", cfg->trace);
		snprintf(c->flight_dir, sizeof c->flight_dir, "%s", dirname(dir));
	}
	int rc = ops->init(c, argc, argv);
	if (rc < 0) {
		free(c);
		return rc;
	}
	/* a parallelism asked for that the backend did not set up */
	if (c->tp_req > 1 && (c->tp_size != c->tp_req || !ops->tp_all_reduce || !ops->tp_all_gather))
		return refuse_missing(c, "SHARDFLOW_TP", c->tp_req, "no tensor-parallel groups",
		                      "SHARDFLOW_COMM=mpi or nccl has them");
	if (c->pp_req > 1 && (c->pp_size != c->pp_req || !ops->p2p))
		return refuse_missing(c, "SHARDFLOW_PP", c->pp_req,
		                      ops->p2p ? "no pipeline stages (the stages' shard groups) yet"
		                               : "no point-to-point transfers yet",
		                      "SHARDFLOW_COMM=mpi has them");
	if (c->cp_req > 1 && (c->cp_size != c->cp_req || !ops->cp_shift))
		return refuse_missing(c, "SHARDFLOW_CP", c->cp_req, "no context-parallel ring yet",
		                      "SHARDFLOW_COMM=mpi has it");
	/* the flight record's job key: rank 0's, so that each rank can tell this job's
	 * records from an earlier job's */
	uint64_t key = ((uint64_t)time(NULL) << 22) ^ (uint64_t)getpid();
	rc = ops->bcast(c, &key, sizeof key, 0);
	if (rc == SF_OK)
		rc = _sf_flight_create(c->flight_cap, c->rank, c->size, key, &c->flight);
	_sf_flight_set_dir(c->flight, c->flight_dir);
	if (rc < 0) {
		ops->fini(c);
		free(c);
		return rc;
	}
	*out = c;
	return SF_OK;
}

int _sf_comm_destroy(struct _sf_comm *c)
{
	if (!c)
		return SF_OK;
	int rc = c->ops->fini(c);
	_sf_flight_destroy(c->flight);
	free(c);
	return rc;
}

_Noreturn void _sf_comm_fail_job(struct _sf_comm *c, int rc, enum _sf_flight_channel ch,
                                 const char *fmt, ...)
{
	static atomic_flag failing = ATOMIC_FLAG_INIT;
	char why[1024], path[4200] = "", blame[2048] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (atomic_flag_test_and_set(&failing))
		for (;;) /* the first caller's abort ends this process too */
			pause();
	_sf_err(rc, NULL, 0, "%s", why);
	/* the program never sees this status: a quiet program's log must still say why */
	if (_sf_err_quiet)
		_sf_log(SF_LOG_ERROR, "%s", why);
	if (c->flight && _sf_flight_dump(c->flight, why, path, sizeof path) == SF_OK) {
		double grace = c->timeout > 0 ? (c->timeout / 2 < 3 ? c->timeout / 2 : 3) : 1;
		_sf_flight_blame(c->flight, ch, grace, blame, sizeof blame);
		_sf_log(SF_LOG_ERROR, "flight record written to %s%s%s", path, blame[0] ? ": " : "",
		        blame);
	}
	c->ops->abort(c, 1);
	abort(); /* an abort that returned */
}

int _sf_comm_agree_sum(struct _sf_comm *c, int rc, const char *what, int64_t *count)
{
	int worst = 0, who = 0;
	int64_t sum = 0;
	c->agreeing = what;
	int crc = c->ops->min_rank(c, rc < 0 ? rc : 0, count ? *count : 0, &worst, &who, &sum);
	if (crc < 0)
		return crc;
	if (worst == 0) {
		if (count)
			*count = sum;
		return SF_OK;
	}
	char msg[1024] = "";
	if (c->rank == who)
		snprintf(msg, sizeof msg, "%s", sf_last_error());
	crc = c->ops->bcast(c, msg, sizeof msg, who);
	if (crc < 0)
		return crc;
	msg[sizeof msg - 1] = '\0';
	/* a rank that failed itself keeps its own message; the others relay it and say
	 * only that they stop (the failing rank printed it) */
	if (rc >= 0)
		return _sf_err_peer(worst, who, what, "%s failed on rank %d: %s", what, who, msg);
	return worst;
}

int _sf_comm_agree(struct _sf_comm *c, int rc, const char *what)
{
	return _sf_comm_agree_sum(c, rc, what, NULL);
}
