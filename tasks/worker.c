/*
 * worker.c — the comm worker's identity, the compute codelets' placement rule, the
 * benchmark skip mode, the comm worker's CPU clock and the rank's GPU.
 */
#include "config.h"

#include "tasks/worker.h"
#include "common/error.h"
#include "tasks/layer_codelets.h"
#include "tasks/optim.h"

#include <pthread.h>
#include <string.h>
#ifdef SF_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <starpu_cublas.h>
#endif

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

int _sf_cuda_conf(struct starpu_conf *conf, int node_rank)
{
	conf->ncuda = 0;
#ifdef SF_HAVE_CUDA
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
		(void)cudaGetLastError(); /* "no CUDA-capable device": not an error here */
		_sf_log(SF_LOG_INFO, "no CUDA device: CPU workers only");
		return -1;
	}
	int dev = node_rank % n;
	conf->ncuda = 1;
	conf->use_explicit_workers_cuda_gpuid = 1;
	conf->workers_cuda_gpuid[0] = (unsigned)dev;
	_sf_log(SF_LOG_INFO, "node-local rank %d: CUDA device %d of %d", node_rank, dev, n);
	return dev;
#else
	(void)node_rank;
	return -1;
#endif
}

void _sf_cuda_start(void)
{
#ifdef SF_HAVE_CUDA
	if (starpu_cuda_worker_get_count() > 0)
		starpu_cublas_init();
#endif
}

void _sf_cuda_stop(void)
{
#ifdef SF_HAVE_CUDA
	if (starpu_cuda_worker_get_count() > 0)
		starpu_cublas_shutdown();
#endif
}
