/*
 * worker.h — what every codelet of shardflow's needs to know about the workers.
 *
 * One StarPU CPU worker is the comm worker: every collective runs there, and no
 * compute codelet may (can_execute keeps them off it), so a compute worker never
 * blocks in a collective. SHARDFLOW_SKIP (benchmarks) is applied here too: the
 * codelets of the skipped kind are built with a body that returns at once.
 */
#ifndef SF_TASKS_WORKER_H
#define SF_TASKS_WORKER_H

#include "common/clock.h"
#include "shardflow.h"

#include <starpu.h>
#include <stdbool.h>
#include <time.h>

/* Worker id of the comm worker (-1 while no runtime is up). */
extern int _sf_comm_worker;
/* SHARDFLOW_SKIP of the running context. */
extern enum sf_skip _sf_skip;

/* Called by sf_init once StarPU is up: the comm worker and the benchmark skip mode
 * every codelet built from now on (and every one built before) follows. These two are
 * tasks/configure.c's, which configures every codelet family. */
int _sf_tasks_configure(int comm_worker, enum sf_skip skip, enum sf_optimizer_on opt_on);
/* Called by sf_finalize. */
void _sf_tasks_reset(void);

/* The state of the placement rule below (worker.c), set by _sf_tasks_configure and
 * cleared by _sf_tasks_reset. */
void _sf_workers_configure(int comm_worker, enum sf_skip skip, enum sf_optimizer_on opt_on);
void _sf_workers_reset(void);

/* can_execute of every compute codelet: anywhere but the comm worker; when the rank
 * has a GPU for compute, on it if the codelet has a CUDA implementation (so a
 * unit's buffers stay on the device), else on CPU workers. */
int _sf_compute_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl);
/* The optimizer codelets': as compute, or CPU workers only with
 * SHARDFLOW_OPTIMIZER_ON=host (the shard's step and state in host memory). */
int _sf_opt_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl);

/* The GPU of a rank (CUDA builds; without CUDA: none, and these do nothing).
 * _sf_cuda_device: the device a rank uses among the ndev it sees, one process per GPU
 * as with PyTorch's torchrun: the only one when the launcher shows each rank its own
 * (CUDA_VISIBLE_DEVICES per rank, as SLURM does), else node_rank mod ndev.
 * _sf_cuda_conf asks StarPU for one CUDA worker on that device; with no device (this
 * project's build machines) StarPU starts CPU workers only. comm_stream (NCCL): two
 * workers on the GPU, a thread and a stream each (STARPU_NWORKER_PER_CUDA=2,
 * STARPU_CUDA_THREAD_PER_WORKER=1), the second for the collectives; that needs a
 * device and a StarPU with non-blocking drivers (an error otherwise).
 * _sf_cuda_start (after starpu_init) makes the rank's device the calling thread's and
 * gives the CUDA workers their cuBLAS handles on their streams, in the math of
 * SHARDFLOW_GPU_MATH (name: its value's name, for the messages; layers/gpu_math.h
 * tells the launchers); _sf_cuda_stop (before starpu_shutdown) releases them. */
int _sf_cuda_device(int node_rank, int ndev);
int _sf_cuda_conf(struct starpu_conf *conf, int node_rank, bool comm_stream);
int _sf_cuda_start(enum sf_gpu_math math, const char *name);
void _sf_cuda_stop(void);

/* A codelet body that does nothing (SHARDFLOW_SKIP=compute). */
void _sf_noop_kernel(void *buffers[], void *cl_arg);
/* Points cl's CPU body at cpu and, in CUDA builds, its CUDA body at cuda (pass
 * SF_CUDA_BODY(f), NULL in a CPU build); both at _sf_noop_kernel when skip. */
void _sf_codelet_bodies(struct starpu_codelet *cl, bool skip, starpu_cpu_func_t cpu,
                        starpu_cuda_func_t cuda);
/* The compute codelets' timing in simulated time (the device model's roofline or
 * calibration, a shared host's cores): a hook that sim/sim_device.c plugs in at sf_init,
 * before the codelets are configured, and _sf_workers_reset unplugs, so that tasks/
 * never calls into sim/. _sf_codelet_timing applies it to a compute codelet once its
 * bodies are set (_sf_codelet_bodies does); with no hook it does nothing. */
typedef void (*_sf_codelet_timing_fn)(struct starpu_codelet *cl, bool skipped);
void _sf_codelet_timing_set(_sf_codelet_timing_fn fn);
void _sf_codelet_timing(struct starpu_codelet *cl, bool skipped);

/* Reads the CPU-time clock of the thread of StarPU worker `worker` (a task run there,
 * synchronously). */
int _sf_worker_cpu_clock(int worker, clockid_t *out);
/* Seconds of CPU time on clock c (0 if it cannot be read). */
double _sf_clock_seconds(clockid_t c);

/* Codelets that must run even in simulated time (a build with --enable-simulation,
 * docs/scale.md): the collectives, whose time SMPI simulates, and the bookkeeping
 * ones; the compute codelets take their performance model's time instead. */
#ifdef SF_SIMULATION
#define SF_SIM_EXECUTE STARPU_CODELET_SIMGRID_EXECUTE
#else
#define SF_SIM_EXECUTE 0
#endif

#endif
