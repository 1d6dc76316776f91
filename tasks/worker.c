/*
 * worker.c — the comm worker's identity, the compute codelets' placement rule, the
 * benchmark skip mode, the comm worker's CPU clock and the rank's GPU.
 *
 * The codelet families call this file (placement, the no-op body) and it calls none of
 * them: configuring them at sf_init is tasks/configure.c's, above both.
 */
#include "config.h"

#include "tasks/worker.h"
#include "common/error.h"
#include "layers/gpu_math.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef SF_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <starpu_cublas.h>
#include <starpu_cublas_v2.h>
#include <stdatomic.h>
#endif

int _sf_comm_worker = -1;
enum sf_skip _sf_skip = SF_SKIP_NONE;

/* CUDA compute workers exist (a GPU besides the comm worker): the codelets that have
 * a CUDA implementation run there, the rest on CPU workers. */
static bool gpu_compute;
static enum sf_optimizer_on optimizer_on = SF_OPT_ON_DEVICE;

static int placed(unsigned workerid, const struct starpu_codelet *cl, bool host_only)
{
	if ((int)workerid == _sf_comm_worker)
		return 0;
	bool cuda = starpu_worker_get_type((int)workerid) == STARPU_CUDA_WORKER;
	/* where, not cuda_funcs: SHARDFLOW_SKIP=compute puts a no-op body in every slot */
	if (host_only || !gpu_compute || !cl || !(cl->where & STARPU_CUDA))
		return !cuda;
	return cuda;
}

int _sf_compute_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl)
{
	(void)nimpl;
	return placed(workerid, task->cl, false);
}

int _sf_opt_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl)
{
	(void)nimpl;
	return placed(workerid, task->cl, optimizer_on == SF_OPT_ON_HOST);
}

void _sf_noop_kernel(void *buffers[], void *cl_arg)
{
	(void)buffers;
	(void)cl_arg;
}

static _sf_codelet_timing_fn timing;

void _sf_codelet_timing_set(_sf_codelet_timing_fn fn)
{
	timing = fn;
}

void _sf_codelet_timing(struct starpu_codelet *cl, bool skipped)
{
	if (timing)
		timing(cl, skipped);
}

void _sf_codelet_bodies(struct starpu_codelet *cl, bool skip, starpu_cpu_func_t cpu,
                        starpu_cuda_func_t cuda)
{
	cl->cpu_funcs[0] = skip ? _sf_noop_kernel : cpu;
	_sf_codelet_timing(cl, skip);
#ifdef SF_HAVE_CUDA
	cl->cuda_funcs[0] = skip ? _sf_noop_kernel : cuda;
#else
	(void)cuda;
#endif
}

void _sf_workers_configure(int comm_worker, enum sf_skip skip, enum sf_optimizer_on opt_on)
{
	_sf_comm_worker = comm_worker;
	_sf_skip = skip;
	optimizer_on = opt_on;
	int ncuda = (int)starpu_cuda_worker_get_count();
	if (comm_worker >= 0 && starpu_worker_get_type(comm_worker) == STARPU_CUDA_WORKER)
		ncuda--;
	gpu_compute = ncuda > 0;
}

void _sf_workers_reset(void)
{
	_sf_comm_worker = -1;
	_sf_skip = SF_SKIP_NONE;
	gpu_compute = false;
	optimizer_on = SF_OPT_ON_DEVICE;
	timing = NULL;
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
#ifdef SF_HAVE_CUDA
    .where = STARPU_CPU | STARPU_CUDA, /* the comm worker may be a CUDA worker (NCCL) */
    .cuda_funcs = {clock_cpu},
#else
    .where = STARPU_CPU,
#endif
    .cpu_funcs = {clock_cpu},
    .cpu_funcs_name = {"clock_cpu"},
    .nbuffers = 0,
    .flags = SF_SIM_EXECUTE,
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

int _sf_cuda_device(int node_rank, int ndev)
{
	return node_rank % ndev; /* one visible device (per-rank CUDA_VISIBLE_DEVICES): 0 */
}

int _sf_cuda_conf(struct starpu_conf *conf, int node_rank, bool comm_stream)
{
	conf->ncuda = 0;
#ifdef SF_HAVE_CUDA
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
		(void)cudaGetLastError(); /* "no CUDA-capable device": not an error here */
		if (comm_stream)
			return SF_ERR(SF_ERR_CONFIG, "SHARDFLOW_COMM=nccl: no CUDA device");
		_sf_log(SF_LOG_INFO, "no CUDA device: CPU workers only");
		return SF_OK;
	}
	if (comm_stream) {
#ifndef STARPU_NON_BLOCKING_DRIVERS
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_COMM=nccl needs two StarPU workers on the GPU (compute and "
		              "comm streams), and this StarPU was built with --enable-blocking-drivers, "
		              "which allows one: use a StarPU built by scripts/build-starpu.sh "
		              "--with-cuda without --enable-blocking-drivers");
#else
		setenv("STARPU_NWORKER_PER_CUDA", "2", 1);
		setenv("STARPU_CUDA_THREAD_PER_WORKER", "1", 1);
		unsetenv("STARPU_CUDA_THREAD_PER_DEV");
#endif
	}
	int dev = _sf_cuda_device(node_rank, n);
	conf->ncuda = 1;
	conf->use_explicit_workers_cuda_gpuid = 1;
	conf->workers_cuda_gpuid[0] = (unsigned)dev;
	_sf_log(SF_LOG_INFO, "node-local rank %d: CUDA device %d of %d%s", node_rank, dev, n,
	        comm_stream ? ", a compute and a comm worker" : "");
	return SF_OK;
#else
	(void)node_rank;
	if (comm_stream)
		return SF_ERR(SF_ERR_CONFIG, "SHARDFLOW_COMM=nccl: this shardflow has no CUDA");
	return SF_OK;
#endif
}

#ifdef SF_HAVE_CUDA
/* on each CUDA worker: its cuBLAS handle's math (SHARDFLOW_GPU_MATH) */
static _Atomic int math_failed;
static void set_math(void *arg)
{
	cublasMath_t mode = *(const cublasMath_t *)arg;
	if (cublasSetMathMode(starpu_cublas_get_local_handle(), mode) != CUBLAS_STATUS_SUCCESS)
		atomic_store(&math_failed, 1);
}
#endif

int _sf_cuda_start(enum sf_gpu_math math, const char *name)
{
	_sf_gpu_math_set(math);
#ifdef SF_HAVE_CUDA
	int w;
	if (starpu_worker_get_ids_by_type(STARPU_CUDA_WORKER, &w, 1) == 0) {
		if (math != SF_GPU_MATH_FP32)
			_sf_log(SF_LOG_INFO, "SHARDFLOW_GPU_MATH=%s: no CUDA worker, no effect", name);
		return SF_OK;
	}
	/* starpu_cublas_init also makes a handle on this thread, in its current device's
	 * context: the rank's GPU, not device 0 (where every rank would open a context) */
	int dev = starpu_worker_get_devid(w);
	cudaError_t ce = cudaSetDevice(dev);
	if (ce != cudaSuccess)
		return SF_ERR(SF_ERR_STARPU, "cudaSetDevice(%d) on the main thread failed: %s", dev,
		              cudaGetErrorString(ce));
	if (math != SF_GPU_MATH_FP32) {
		struct cudaDeviceProp prop;
		ce = cudaGetDeviceProperties(&prop, dev);
		if (ce != cudaSuccess)
			return SF_ERR(SF_ERR_STARPU, "cudaGetDeviceProperties(%d) failed: %s", dev,
			              cudaGetErrorString(ce));
		if (prop.major < 8)
			return SF_ERR(SF_ERR_CONFIG,
			              "SHARDFLOW_GPU_MATH=%s needs a GPU of compute capability 8.0 or "
			              "newer (device %d, %s, is %d.%d); fp32 runs on any",
			              name, dev, prop.name, prop.major, prop.minor);
	}
	starpu_cublas_init();
	if (math == SF_GPU_MATH_TF32) {
		cublasMath_t mode = CUBLAS_TF32_TENSOR_OP_MATH;
		atomic_store(&math_failed, 0);
		starpu_execute_on_each_worker(set_math, &mode, STARPU_CUDA);
		if (atomic_load(&math_failed))
			return SF_ERR(SF_ERR_STARPU,
			              "SHARDFLOW_GPU_MATH=tf32: cublasSetMathMode failed on a CUDA "
			              "worker (TF32 needs compute capability 8.0 or newer)");
		_sf_log(SF_LOG_INFO, "GPU products in TF32 (SHARDFLOW_GPU_MATH=tf32)");
	} else if (math == SF_GPU_MATH_BF16) {
		_sf_log(SF_LOG_INFO, "GPU products and attention in bf16 with fp32 sums "
		                     "(SHARDFLOW_GPU_MATH=bf16)");
	}
#else
	if (math != SF_GPU_MATH_FP32)
		_sf_log(SF_LOG_INFO, "SHARDFLOW_GPU_MATH=%s: this shardflow has no CUDA, no effect",
		        name);
#endif
	return SF_OK;
}

void _sf_cuda_stop(void)
{
#ifdef SF_HAVE_CUDA
	if (starpu_cuda_worker_get_count() > 0)
		starpu_cublas_shutdown();
#endif
}
