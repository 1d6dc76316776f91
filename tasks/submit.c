/* submit.c — _sf_task_submit (tasks/submit.h): one starpu_task_insert per kind of
 * argument block, every buffer through STARPU_DATA_MODE_ARRAY (which also takes more
 * buffers than STARPU_NMAXBUFS); STARPU_EXECUTE_ON_WORKER -1 leaves the placement to
 * the scheduler; STARPU_FLOPS 0 is StarPU's own default (no count). The priority is the
 * calling thread's (_sf_task_priority_set): the thread that plans a step sets it around
 * the tasks it gives one. */
#include "tasks/submit.h"

#include "common/error.h"

static _Thread_local int priority = STARPU_DEFAULT_PRIO;

int _sf_task_priority_set(int prio)
{
	int was = priority;
	priority = prio;
	return was;
}

int _sf_task_submit_flops(struct starpu_codelet *cl, const struct starpu_data_descr *buf, int nbuf,
                          const void *arg, size_t arg_size, bool arg_copy, int worker, double flops,
                          const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr *d = (struct starpu_data_descr *)buf;
	int rc =
	    arg_copy
	        ? starpu_task_insert(cl, STARPU_DATA_MODE_ARRAY, d, nbuf, STARPU_VALUE, (void *)arg,
	                             arg_size, STARPU_EXECUTE_ON_WORKER, worker, STARPU_PRIORITY,
	                             priority, STARPU_FLOPS, flops, STARPU_NAME, name,
	                             STARPU_CALLBACK_WITH_ARG_NFREE, done.fn, done.arg, 0)
	        : starpu_task_insert(cl, STARPU_DATA_MODE_ARRAY, d, nbuf, STARPU_CL_ARGS_NFREE,
	                             (void *)arg, arg_size, STARPU_EXECUTE_ON_WORKER, worker,
	                             STARPU_PRIORITY, priority, STARPU_FLOPS, flops, STARPU_NAME,
	                             name, STARPU_CALLBACK_WITH_ARG_NFREE, done.fn, done.arg, 0);
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

uint32_t _sf_task_footprint(struct starpu_task *task)
{
	uint32_t fp = 0;
	unsigned n = STARPU_TASK_GET_NBUFFERS(task);
	for (unsigned b = 0; b < n; b++) {
		starpu_data_handle_t h = STARPU_TASK_GET_HANDLE(task, b);
		enum starpu_data_interface_id id = starpu_data_get_interface_id(h);
		if (id != STARPU_VECTOR_INTERFACE_ID) /* not ours to key: StarPU's own */
			return starpu_task_data_footprint(task);
		const struct _sf_footprint_as *as = starpu_data_get_user_data(h);
		uint32_t nx = as ? (uint32_t)as->nx : starpu_vector_get_nx(h);
		/* as the vector interface keys a handle, then as StarPU folds them */
		uint32_t hfp = starpu_hash_crc32c_be(starpu_hash_crc32c_be(nx, 0), (uint32_t)id);
		fp = starpu_hash_crc32c_be(hfp, fp);
	}
	return fp;
}
