/*
 * worker.c — the comm worker's identity, the compute codelets' placement rule, the
 * benchmark skip mode and the comm worker's CPU clock.
 */
#include "tasks/worker.h"
#include "common/error.h"
#include "tasks/layer_codelets.h"
#include "tasks/optim.h"

#include <pthread.h>
#include <string.h>

int _sf_comm_worker = -1;
enum sf_skip _sf_skip = SF_SKIP_NONE;

int _sf_compute_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl)
{
	(void)task;
	(void)nimpl;
	return (int)workerid != _sf_comm_worker;
}

void _sf_noop_kernel(void *buffers[], void *cl_arg)
{
	(void)buffers;
	(void)cl_arg;
}

int _sf_tasks_configure(int comm_worker, enum sf_skip skip)
{
	_sf_comm_worker = comm_worker;
	_sf_skip = skip;
	_sf_optim_codelets_configure(skip == SF_SKIP_COMPUTE);
	return _sf_layer_codelets_configure(skip == SF_SKIP_COMPUTE);
}

void _sf_tasks_reset(void)
{
	_sf_comm_worker = -1;
	_sf_skip = SF_SKIP_NONE;
}

struct clock_query {
	clockid_t id;
	int err;
};

static void clock_cpu(void *buffers[], void *cl_arg)
{
	struct clock_query *q = cl_arg;
	(void)buffers;
	q->err = pthread_getcpuclockid(pthread_self(), &q->id);
}

static struct starpu_codelet clock_cl = {
    .where = STARPU_CPU,
    .cpu_funcs = {clock_cpu},
    .cpu_funcs_name = {"clock_cpu"},
    .nbuffers = 0,
    .name = "worker clock",
};

int _sf_worker_cpu_clock(int worker, clockid_t *out)
{
	struct clock_query q = {.err = -1};
	struct starpu_task *t = starpu_task_create();
	if (!t)
		return SF_ERR(SF_ERR_NOMEM, "starpu_task_create failed");
	t->cl = &clock_cl;
	t->cl_arg = &q;
	t->execute_on_a_specific_worker = 1;
	t->workerid = (unsigned)worker;
	t->synchronous = 1;
	t->name = "worker clock";
	int ret = starpu_task_submit(t);
	if (ret != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_task_submit(worker clock) failed (%d)", ret);
	if (q.err != 0)
		return SF_ERR(SF_ERR_STARPU, "pthread_getcpuclockid on the comm worker failed: %s",
		              strerror(q.err));
	*out = q.id;
	return SF_OK;
}

double _sf_clock_seconds(clockid_t c)
{
	struct timespec t;
	if (clock_gettime(c, &t) != 0)
		return 0;
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
