/*
 * comm.c — what every backend shares (tasks/comm.h): the backend SHARDFLOW_COMM names,
 * a communicator's creation and destruction, and the agreement of every rank on a
 * status.
 */
#include "config.h"

#include "tasks/comm.h"
#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>

/* The backends this build has, by SHARDFLOW_COMM value (a backend is one line here) */
static const struct _sf_comm_ops *const backends[SF_COMM_COUNT] = {
    [SF_COMM_MPI] = &_sf_comm_mpi_ops,
#ifdef SF_HAVE_NCCL
    [SF_COMM_NCCL] = &_sf_comm_nccl_ops,
#endif
};

int _sf_comm_backend(enum sf_comm_backend which, const struct _sf_comm_ops **out)
{
	if ((int)which < 0 || which >= SF_COMM_COUNT)
		return SF_ERR(SF_ERR_CONFIG, "SHARDFLOW_COMM: backend %d does not exist",
		              (int)which);
	if (!backends[which]) /* NCCL, the one a build may leave out */
		return SF_ERR(
		    SF_ERR_CONFIG,
		    "SHARDFLOW_COMM=nccl: this shardflow was built without NCCL (configure "
		    "--with-cuda --with-nccl, with a StarPU built by scripts/build-starpu.sh "
		    "--with-cuda); accepted here: mpi");
	*out = backends[which];
	return SF_OK;
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
	c->chunk = (size_t)cfg->comm_chunk / sizeof(float);
	c->timeout = (double)cfg->comm_timeout;
	int rc = ops->init(c, argc, argv);
	if (rc < 0) {
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
	free(c);
	return rc;
}

int _sf_comm_agree(struct _sf_comm *c, int rc, const char *what)
{
	int worst = 0, who = 0;
	int crc = c->ops->min_rank(c, rc < 0 ? rc : 0, &worst, &who);
	if (crc < 0)
		return crc;
	if (worst == 0)
		return SF_OK;
	char msg[1024] = "";
	if (c->rank == who)
		snprintf(msg, sizeof msg, "%s", sf_last_error());
	crc = c->ops->bcast(c, msg, sizeof msg, who);
	if (crc < 0)
		return crc;
	msg[sizeof msg - 1] = '\0';
	/* a rank that failed itself keeps its own message */
	if (rc >= 0)
		return _sf_err(worst, NULL, 0, "%s failed on rank %d: %s", what, who, msg);
	return worst;
}
