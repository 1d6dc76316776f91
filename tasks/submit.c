/* submit.c — _sf_task_submit (tasks/submit.h): one starpu_task_insert per kind of
 * argument block and placement, every buffer through STARPU_DATA_MODE_ARRAY (which
 * also takes more buffers than STARPU_NMAXBUFS). */
#include "tasks/submit.h"

#include "common/error.h"

int _sf_task_submit(const struct _sf_task *t)
{
	struct starpu_data_descr *d = (struct starpu_data_descr *)t->buf;
	void *arg = (void *)t->arg;
	int rc;
	if (t->arg_copy && t->worker >= 0)
		rc = starpu_task_insert(t->cl, STARPU_DATA_MODE_ARRAY, d, t->nbuf, STARPU_VALUE,
		                        arg, t->arg_size, STARPU_EXECUTE_ON_WORKER, t->worker,
		                        STARPU_NAME, t->name, STARPU_CALLBACK_WITH_ARG_NFREE,
		                        t->done.fn, t->done.arg, 0);
	else if (t->arg_copy)
		rc = starpu_task_insert(t->cl, STARPU_DATA_MODE_ARRAY, d, t->nbuf, STARPU_VALUE,
		                        arg, t->arg_size, STARPU_NAME, t->name,
		                        STARPU_CALLBACK_WITH_ARG_NFREE, t->done.fn, t->done.arg, 0);
	else if (t->worker >= 0)
		rc = starpu_task_insert(t->cl, STARPU_DATA_MODE_ARRAY, d, t->nbuf,
		                        STARPU_CL_ARGS_NFREE, arg, t->arg_size,
		                        STARPU_EXECUTE_ON_WORKER, t->worker, STARPU_NAME, t->name,
		                        STARPU_CALLBACK_WITH_ARG_NFREE, t->done.fn, t->done.arg, 0);
	else
		rc =
		    starpu_task_insert(t->cl, STARPU_DATA_MODE_ARRAY, d, t->nbuf,
		                       STARPU_CL_ARGS_NFREE, arg, t->arg_size, STARPU_NAME, t->name,
		                       STARPU_CALLBACK_WITH_ARG_NFREE, t->done.fn, t->done.arg, 0);
	if (rc != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_task_insert of \"%s\" failed (%d)",
		              t->name ? t->name : t->cl->name, rc);
	return SF_OK;
}
