/* submit.c — _sf_task_submit (tasks/submit.h): one starpu_task_insert per kind of
 * argument block, every buffer through STARPU_DATA_MODE_ARRAY (which also takes more
 * buffers than STARPU_NMAXBUFS); STARPU_EXECUTE_ON_WORKER -1 leaves the placement to
 * the scheduler; STARPU_FLOPS 0 is StarPU's own default (no count). */
#include "tasks/submit.h"

#include "common/error.h"

int _sf_task_submit_flops(struct starpu_codelet *cl, const struct starpu_data_descr *buf, int nbuf,
                          const void *arg, size_t arg_size, bool arg_copy, int worker, double flops,
                          const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr *d = (struct starpu_data_descr *)buf;
	int rc = arg_copy
	             ? starpu_task_insert(cl, STARPU_DATA_MODE_ARRAY, d, nbuf, STARPU_VALUE,
	                                  (void *)arg, arg_size, STARPU_EXECUTE_ON_WORKER, worker,
	                                  STARPU_FLOPS, flops, STARPU_NAME, name,
	                                  STARPU_CALLBACK_WITH_ARG_NFREE, done.fn, done.arg, 0)
	             : starpu_task_insert(cl, STARPU_DATA_MODE_ARRAY, d, nbuf, STARPU_CL_ARGS_NFREE,
	                                  (void *)arg, arg_size, STARPU_EXECUTE_ON_WORKER, worker,
	                                  STARPU_FLOPS, flops, STARPU_NAME, name,
	                                  STARPU_CALLBACK_WITH_ARG_NFREE, done.fn, done.arg, 0);
	if (rc != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_task_insert of \"%s\" failed (%d)",
		              name ? name : cl->name, rc);
	return SF_OK;
}

int _sf_task_submit(struct starpu_codelet *cl, const struct starpu_data_descr *buf, int nbuf,
                    const void *arg, size_t arg_size, bool arg_copy, int worker, const char *name,
                    struct _sf_task_done done)
{
	return _sf_task_submit_flops(cl, buf, nbuf, arg, arg_size, arg_copy, worker, 0.0, name,
	                             done);
}
