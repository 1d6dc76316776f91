/*
 * runtime.c — sf_init / sf_finalize: the communicator, StarPU and the comm worker.
 *
 * StarPU gets compute workers for the cores of the rank's cpuset and one more: the
 * comm worker, the only worker that ever enters a collective, so compute workers
 * never block in communication (plan_workers() gives the exact layout; the reasons
 * for it, measured, are in docs/performance.md).
 *
 * Binding: by default StarPU binds worker i to core i in every process, so ranks that
 * share a machine would pile onto the same cores. Unless the user set StarPU's
 * binding variables, we ask StarPU to honour the binding mpirun gave the rank
 * (STARPU_WORKERS_GETBIND=1).
 */
#include "scheduler/runtime.h"
#include "layers/layer.h"
#include "scheduler/fxt.h"
#include "sim/sim_device.h"
#include "tasks/worker.h"

#include "config.h"

#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <fenv.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#ifdef SF_HAVE_FXT
#define CONFIG_FUT /* enables the recording macros, as StarPU does */
#include <fxt/fut.h>
#endif
#include <stdlib.h>
#include <string.h>

static sf_context *the_context;

bool _sf_runtime_active(void)
{
	return the_context != NULL;
}

static bool env_set(const char *v)
{
	const char *s = getenv(v);
	return s && s[0];
}

/* Cores this process may run on (mpirun's binding, taskset, cgroup). */
static int allowed_cpus(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 1;
	int n = CPU_COUNT(&set);
	return n > 0 ? n : 1;
}

/* Total StarPU CPU workers: compute workers plus the comm worker. */
static int plan_workers(int *total)
{
	const char *s = getenv("STARPU_NCPU");
	if (!s)
		s = getenv("STARPU_NCPUS");
	int rc = _sf_starpu_env_check(STARPU_MAXCPUS);
	if (rc < 0)
		return rc;
	if (s) {
		long v = 0;
		_sf_parse_long(s, 2, STARPU_MAXCPUS, &v);
		*total = (int)v;
		return SF_OK;
	}
	/* Idle workers of a StarPU without blocking drivers spin, so the comm worker
	 * gets a core of its own when there are cores enough (docs/performance.md). */
	int ncompute = allowed_cpus() - 1;
	if (ncompute < 1)
		ncompute = 1;
	if (ncompute > STARPU_MAXCPUS - 1)
		ncompute = STARPU_MAXCPUS - 1;
	*total = ncompute + 1;
	return SF_OK;
}

/*
 * starpu_fxt_tool learns each trace file's MPI rank, and aligns the ranks' clocks,
 * from a "barrier" event that StarPU-MPI records at its initialisation. shardflow
 * does its own communication, so it records that event itself (same code and parameters:
 * rank, world size, a key shared by the run, thread id) right after a barrier.
 * Without it, tasks.rec would carry no usable MPIRank.
 */
static int fxt_sync_point(sf_context *ctx)
{
#ifdef SF_HAVE_FXT
	int rc = SF_OK;
	if (!starpu_fxt_is_enabled())
		return SF_OK;
	int key = ctx->rank == 0 ? (int)(time(NULL) & 0x7fffffff) : 0;
	SF_CHECK_GOTO(ctx->comm->ops->bcast(ctx->comm, &key, sizeof key, 0), out);
	SF_CHECK_GOTO(ctx->comm->ops->barrier(ctx->comm, false), out);
	FUT_DO_ALWAYS_PROBE4(0x5203 /* _STARPU_MPI_FUT_BARRIER */, ctx->rank, ctx->size, key,
	                     (long)syscall(SYS_gettid));
out:
	return rc;
#else
	(void)ctx;
	return SF_OK;
#endif
}

/*
 * FxT. In a StarPU built with FxT, STARPU_FXT_TRACE defaults to 1: every run would
 * write a trace. Unless the user set STARPU_FXT_TRACE, shardflow records one only when
 * asked for a trace (SHARDFLOW_TRACE=<prefix>): each rank then writes
 * <prefix>.fxt/prof_file_<user>_<rank>, and at sf_finalize, once StarPU has flushed
 * every rank's file (starpu_shutdown, then a barrier), rank 0 merges them with
 * starpu_fxt_tool into <prefix>.fxt/tasks.rec (paje.trace, ... beside it) and writes
 * the overlap report of that trace: <prefix>.fxt.overlap.txt, .overlap.json and
 * .timeline.svg (the built-in trace's are <prefix>.overlap.*; scheduler/fxt.c). Sets
 * *auto_fxt when shardflow records FxT itself (and so merges it at sf_finalize).
 */
static int fxt_setup(const sf_context *ctx, bool *auto_fxt)
{
	*auto_fxt = false;
#ifdef SF_HAVE_FXT
	if (env_set("STARPU_FXT_TRACE"))
		return SF_OK; /* the user's choice, and the user's files */
	if (!ctx->cfg.trace[0]) {
		setenv("STARPU_FXT_TRACE", "0", 1);
		return SF_OK;
	}
	char dir[SF_PATH_MAX];
	snprintf(dir, sizeof dir, "%s.fxt", ctx->cfg.trace);
	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
		return SF_ERR(SF_ERR_IO, "SHARDFLOW_TRACE: cannot create the FxT directory \"%s\": %s",
		              dir, strerror(errno));
	setenv("STARPU_FXT_TRACE", "1", 1);
	setenv("STARPU_FXT_PREFIX", dir, 1);
	unsetenv("STARPU_FXT_SUFFIX");
	*auto_fxt = true;
#else
	(void)ctx;
#endif
	return SF_OK;
}

/* The StarPU variables the library sets when the user did not. */
static void starpu_defaults(const sf_context *ctx)
{
	if (!env_set("STARPU_WORKERS_GETBIND") && !env_set("STARPU_WORKERS_CPUID") &&
	    !env_set("STARPU_WORKERS_COREID") && !env_set("STARPU_WORKERS_NOBIND"))
		setenv("STARPU_WORKERS_GETBIND", "1", 1);
	/* StarPU warns that the comm worker shares a core with a compute worker; that
	 * is by design (it sleeps in its collectives most of the time), so StarPU is kept quiet
	 * unless the user asks for debug output or set STARPU_SILENT. */
	if (!env_set("STARPU_SILENT") && ctx->cfg.log_level < SF_LOG_DEBUG)
		setenv("STARPU_SILENT", "1", 1);
	/* StarPU keeps 5 to 10 % of a GPU's buffers "clean" by copying dirty ones back to
	 * their home in RAM in the background (starpu_memchunk_tidy). A step rewrites every
	 * activation and gradient on the device, so those copies never end, and the CUDA
	 * worker's thread makes them between tasks: no buffer of a step has to go back to
	 * RAM, so none is copied (docs/gpu.md, runs 7 and 8). */
	if (!env_set("STARPU_MINIMUM_CLEAN_BUFFERS"))
		setenv("STARPU_MINIMUM_CLEAN_BUFFERS", "0", 1);
	if (!env_set("STARPU_TARGET_CLEAN_BUFFERS"))
		setenv("STARPU_TARGET_CLEAN_BUFFERS", "0", 1);
}

/*
 * Perfmodels. StarPU records a codelet's history-based model (its time per data size
 * and its tasks' flops: what starpu_perfmodel_display and starpu_perfmodel_plot show)
 * only while it calibrates: when told to (STARPU_CALIBRATE, starpu_conf::calibrate) or
 * when a scheduler that reads the models (dm, dmda) meets one not calibrated yet; the
 * default scheduler, lws, reads none, so by StarPU's defaults nothing is recorded.
 * Calibrating changes no scheduling decision: each task is timed (two clock reads),
 * its time added to its model's entry, and the models are written at starpu_shutdown.
 * So shardflow calibrates by default, where StarPU can save the models: it aborts at
 * shutdown when it cannot write one. The user's STARPU_CALIBRATE wins (StarPU reads it
 * over starpu_conf::calibrate); docs/profiling.md has how to read them.
 */
static bool perfmodels_writable(void)
{
	char path[SF_PATH_MAX];
	/* the path of a model "sf" in StarPU's model directory, which it creates if needed
	 * (as starpu_init does for its bus calibration) */
	starpu_perfmodel_get_model_path("sf", path, sizeof path);
	char *slash = strrchr(path, '/');
	if (!slash)
		return false;
	*slash = '\0';
	return access(path, W_OK) == 0;
}

/* A history model file whole, as StarPU wrote it: every line ends in '\n', and each
 * "# number of entries" N is followed by its table's header and N rows. StarPU
 * truncates a model and rewrites it at starpu_shutdown; a process killed meanwhile (a
 * job ending on one rank's error kills the others) leaves the file cut short, and
 * StarPU's reader then asserts in every later run on the machine. */
static bool perfmodel_whole(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return true; /* nothing to judge: StarPU will say */
	char line[1024];
	bool whole = true, ended = true;
	long want = -1, rows = 0; /* the table being read: N, rows seen */
	int expect_n = 0, in_table = 0;
	while (fgets(line, sizeof line, f)) {
		size_t n = strlen(line);
		ended = n > 0 && line[n - 1] == '\n';
		if (!ended && n + 1 < sizeof line)
			break; /* a last line without its end */
		if (expect_n) {
			want = strtol(line, NULL, 10);
			expect_n = 0;
		} else if (!strncmp(line, "# number of entries", 19)) {
			if (in_table && rows < want)
				whole = false;
			expect_n = 1, in_table = 0, rows = 0;
		} else if (!strncmp(line, "# hash", 6) && want >= 0) {
			in_table = 1;
		} else if (line[0] == '#') {
			if (in_table && rows < want)
				whole = false;
			in_table = 0;
		} else if (in_table) {
			rows++;
		}
	}
	if (in_table && rows < want)
		whole = false;
	if (expect_n)
		whole = false;
	fclose(f);
	return whole && ended;
}

/* Moves aside every model file of the directory that is not whole (perfmodel_whole),
 * with a warning: StarPU then calibrates that codelet anew. */
static void repair_perfmodels(void)
{
	char dir[SF_PATH_MAX];
	starpu_perfmodel_get_model_path("sf", dir, sizeof dir);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));) {
		char path[SF_PATH_MAX], aside[SF_PATH_MAX + 16];
		if (e->d_name[0] == '.' || strstr(e->d_name, ".corrupt") ||
		    snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
			continue;
		if (perfmodel_whole(path))
			continue;
		snprintf(aside, sizeof aside, "%s.corrupt", path);
		if (rename(path, aside) == 0)
			_sf_log(SF_LOG_WARN,
			        "StarPU performance model %s was cut short (a process killed while "
			        "StarPU wrote it); moved aside to %s: StarPU calibrates it anew",
			        path, aside);
	}
	closedir(d);
}

/* starpu_init, the first rank of each machine alone, then the others: StarPU rewrites
 * its calibration files under $STARPU_HOME when the CPU layout it sees changes, and
 * ranks of one machine starting together could read a file another one rewrites. */
static int start_starpu(sf_context *ctx, int ncpus)
{
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.ncpus = ncpus;
	if (perfmodels_writable())
		conf.calibrate = 1;
	/* no CUDA, or no device: CPU workers only */
	int crc = _sf_cuda_conf(&conf, ctx->comm->node_rank, ctx->comm->ops->device);
	if (crc < 0)
		return crc;
	conf.nopencl = 0;
	int ret = 0;
	if (ctx->comm->node_rank == 0) {
		repair_perfmodels();
		ret = starpu_init(&conf);
	}
	int brc = ctx->comm->ops->barrier(ctx->comm, true);
	if (ctx->comm->node_rank != 0)
		ret = starpu_init(&conf);
	if (brc < 0 && ret == 0)
		starpu_shutdown();
	if (brc < 0)
		return brc;
	if (ret != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_init failed (%d): %s", ret, strerror(-ret));
	int rc = _sf_cuda_start(ctx->cfg.gpu_math, sf_gpu_math_name(ctx->cfg.gpu_math));
	if (rc < 0)
		starpu_shutdown();
	return rc;
}

/* The comm worker (the last CPU worker) and what the tasks need to know. */
/* SHARDFLOW_ROUNDING: run on each CPU worker's thread, whose floating-point
 * environment (SSE's MXCSR, the x87 control word) is its own. */
static void set_rounding(void *arg)
{
	int *rc = arg;
	if (fesetround(rc[0]) != 0)
		rc[1] = -1; /* a race between workers only ever writes -1 */
}

/* Every CPU worker in the rounding direction SHARDFLOW_ROUNDING names; the main thread
 * keeps rounding to nearest (it draws the initial parameters and sums the losses in
 * double: neither changes with the layout). A GPU's kernels round to nearest whatever
 * the host does, so GPU ranks refuse a directed rounding. */
static int setup_rounding(sf_context *ctx, int ncuda)
{
	static const int modes[SF_ROUNDING_COUNT] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD};
	if (ctx->cfg.rounding == SF_ROUND_NEAREST)
		return SF_OK;
	const char *name = sf_rounding_name(ctx->cfg.rounding);
	if (ncuda > 0)
		return SF_ERR(SF_ERR_INVALID,
		              "SHARDFLOW_ROUNDING=%s: a GPU's kernels round to nearest whatever the "
		              "host does; a directed rounding is for CPU ranks (accepted here: nearest)",
		              name);
	int arg[2] = {modes[ctx->cfg.rounding], 0};
	starpu_execute_on_each_worker(set_rounding, arg, STARPU_CPU);
	if (arg[1])
		return SF_ERR(SF_ERR_STARPU, "SHARDFLOW_ROUNDING=%s: fesetround refused it", name);
	_sf_log(SF_LOG_INFO, "SHARDFLOW_ROUNDING=%s: every CPU worker rounds %s", name, name);
	return SF_OK;
}

static int setup_workers(sf_context *ctx)
{
	int ncpu = (int)starpu_cpu_worker_get_count(), ncuda = (int)starpu_cuda_worker_get_count();
	int ids[STARPU_NMAXWORKERS];
	if (ctx->comm->ops->device) {
		/* the GPU's second worker (its own stream and thread) runs the collectives */
		unsigned got =
		    starpu_worker_get_ids_by_type(STARPU_CUDA_WORKER, ids, STARPU_NMAXWORKERS);
		if (got < 2)
			return SF_ERR(SF_ERR_STARPU,
			              "SHARDFLOW_COMM=%s: StarPU started %u CUDA worker(s); the "
			              "collectives need a second worker on the GPU "
			              "(STARPU_NWORKER_PER_CUDA=2)",
			              ctx->comm->ops->name, got);
		ctx->comm_worker = ids[got - 1];
	} else {
		if (ncpu < 2)
			return SF_ERR(SF_ERR_STARPU,
			              "StarPU started %d CPU worker(s); shardflow needs at least 2 "
			              "(compute + comm)",
			              ncpu);
		unsigned got =
		    starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, ids, STARPU_NMAXWORKERS);
		ctx->comm_worker = ids[got - 1];
	}
	ctx->ncompute = ncpu + ncuda - 1; /* every worker but the comm worker */
	SF_CHECK(setup_rounding(ctx, ncuda));
	SF_CHECK(_sf_worker_cpu_clock(ctx->comm_worker, &ctx->comm_clock));
	SF_CHECK(fxt_sync_point(ctx));
	const char *sim_device = NULL, *sim_shared = NULL;
	SF_CHECK(_sf_sim_device_setup(ctx->comm->rank, &sim_device, &sim_shared));
	_sf_codelet_timing_set(_sf_sim_model); /* the simulation's device model, below tasks/ */
	if (sim_device)
		_sf_log(SF_LOG_INFO,
		        "simulated time: compute tasks take the roofline time of a %s "
		        "(SHARDFLOW_SIM_DEVICE)",
		        sim_device);
	if (_sf_sim_calibration())
		_sf_log(SF_LOG_INFO,
		        "simulated time: compute tasks take the efficiencies measured on %s "
		        "(SHARDFLOW_SIM_CALIBRATION=%s)",
		        _sf_sim_calibration()->label[0] ? _sf_sim_calibration()->label
		                                        : "an unnamed device",
		        getenv("SHARDFLOW_SIM_CALIBRATION"));
	if (sim_shared)
		_sf_log(SF_LOG_INFO,
		        "simulated time: every rank's compute tasks share the cores of host %s "
		        "(SHARDFLOW_SIM_SHARED_CPUS)",
		        sim_shared);
	SF_CHECK(_sf_tasks_configure(ctx->comm_worker, ctx->cfg.skip, ctx->cfg.optimizer_on));
	if (ctx->comm->ops->attach)
		SF_CHECK(ctx->comm->ops->attach(ctx->comm, ctx->comm_worker));
	/* the built-in trace reads each task's profiling info in its callback */
	starpu_profiling_status_set(ctx->cfg.trace[0] ? STARPU_PROFILING_ENABLE
	                                              : STARPU_PROFILING_DISABLE);
	SF_CHECK(_sf_layers_builtin_init());
	/* a GPU compute worker runs every codelet that has a CUDA body, the linear
	 * layers' included (tasks/worker.c): its products are cuBLAS's, in fp32 */
	int ngpu = ncuda - (ctx->comm->ops->device ? 1 : 0);
	_sf_log(SF_LOG_INFO, "rank %d/%d: %d compute worker(s) (%d CUDA) + comm worker %d (%s)",
	        ctx->rank, ctx->size, ctx->ncompute, ngpu, ctx->comm_worker, ctx->comm->ops->name);
#ifdef STARPU_NON_BLOCKING_DRIVERS
	if (ncpu > allowed_cpus())
		_sf_log(SF_LOG_INFO,
		        "%d StarPU workers share %d core(s), and this StarPU's idle workers spin "
		        "(non-blocking drivers), so the comm and compute workers take the core "
		        "from each other; a StarPU built by scripts/build-starpu.sh "
		        "--enable-blocking-drivers lets idle workers sleep (docs/performance.md)",
		        ncpu, allowed_cpus());
#endif
	return SF_OK;
}

SF_API int sf_init(int *argc, char ***argv, sf_context **out)
{
	return sf_init_config(argc, argv, NULL, out);
}

/* This process's rank as its launcher gives it (Open MPI, PMIx, PMI), before MPI is up;
 * 0 without one */
static int launcher_rank(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return atoi(v);
	}
	return 0;
}

/* The configuration from the program and the environment. Every rank reads the same
 * variables (a launcher gives them all the same environment), so a bad one is said
 * once, by the launcher's rank 0; the others return the same status quietly
 * (issue 46: each of N ranks printed the same message). The one check that depends on
 * the rank's machine, SHARDFLOW_TRACE's directory, is said by every rank it fails on. */
static int resolve_config(const struct sf_config *cfg, sf_context *ctx)
{
	return _sf_config_resolve(cfg, "sf_init_config", &ctx->cfg, &ctx->cfg_from_env,
	                          launcher_rank() != 0);
}

SF_API int sf_init_config(int *argc, char ***argv, const struct sf_config *cfg, sf_context **out)
{
	int rc = SF_OK;
	sf_context *ctx = NULL;
	bool starpu_up = false;

	if (!out)
		return SF_ERR(SF_ERR_INVALID, "sf_init: out is NULL");
	*out = NULL;
	if (the_context)
		return SF_ERR(SF_ERR_STATE, "sf_init: shardflow is already initialised in this "
		                            "process (one context per process)");
	ctx = calloc(1, sizeof *ctx);
	if (!ctx)
		return SF_ERR(SF_ERR_NOMEM, "sf_init: out of memory");

	SF_CHECK_GOTO(resolve_config(cfg, ctx), fail);
	if (cfg)
		ctx->cfg_program = *cfg;
	else
		sf_config_init(&ctx->cfg_program);
	_sf_log_level = ctx->cfg.log_level;
	if (ctx->cfg.skip != SF_SKIP_NONE)
		_sf_log(SF_LOG_WARN,
		        "SHARDFLOW_SKIP=%s: benchmark mode, the %s is skipped and the model's "
		        "numbers are meaningless",
		        ctx->cfg.skip == SF_SKIP_COMM ? "comm" : "compute",
		        ctx->cfg.skip == SF_SKIP_COMM ? "communication" : "computation");
	const struct _sf_comm_ops *backend = NULL;
	SF_CHECK_GOTO(_sf_comm_backend(ctx->cfg.comm, &backend), fail);
	SF_CHECK_GOTO(_sf_comm_create(backend, &ctx->cfg, argc, argv, &ctx->comm), fail);
	ctx->rank = ctx->comm->rank;
	ctx->size = ctx->comm->size;
	if (ctx->size > 1)
		_sf_log_rank = ctx->rank;
	if (ctx->rank == 0)
		_sf_config_log(cfg, &ctx->cfg, ctx->cfg_from_env, NULL);

	starpu_defaults(ctx);
	SF_CHECK_GOTO(fxt_setup(ctx, &ctx->auto_fxt), fail);
	int total = 0;
	SF_CHECK_GOTO(plan_workers(&total), fail);
#ifdef SF_HAVE_FXT
	/* each rank writes its own prof_file_<user>_<rank> (only FxT builds have this) */
	starpu_profiling_set_id(ctx->rank);
#endif
	/* One BLAS thread per worker: parallelism comes from the task graph, and a
	 * single-threaded sgemm is deterministic whichever worker runs it. */
	openblas_set_num_threads(1);
	SF_CHECK_GOTO(start_starpu(ctx, total), fail);
	starpu_up = true;
	SF_CHECK_GOTO(setup_workers(ctx), fail);
	the_context = ctx;
	*out = ctx;
	return SF_OK;
fail:
	if (starpu_up) {
		_sf_cuda_stop();
		starpu_shutdown();
	}
	_sf_tasks_reset();
	_sf_comm_destroy(ctx->comm);
	_sf_log_rank = -1;
	free(ctx);
	return rc;
}

SF_API int sf_finalize(sf_context *ctx)
{
	if (!ctx)
		return SF_OK;
	if (ctx != the_context)
		return SF_ERR(SF_ERR_INVALID, "sf_finalize: not the context made by sf_init");
	if (ctx->nmodels > 0)
		return SF_ERR(SF_ERR_STATE,
		              "sf_finalize: %d model(s) still exist; call "
		              "sf_model_destroy() first",
		              ctx->nmodels);
	starpu_task_wait_for_all();
	_sf_sim_host_fini();
	if (ctx->comm->ops->detach)
		ctx->comm->ops->detach(ctx->comm, ctx->comm_worker);
	_sf_cuda_stop();
	starpu_shutdown(); /* writes this rank's FxT file */
	_sf_tasks_reset();
	int rc = SF_OK, frc = SF_OK;
	if (ctx->auto_fxt)
		rc = ctx->comm->ops->barrier(ctx->comm, false); /* every rank's file complete */
	int crc = _sf_comm_destroy(ctx->comm);
	if (rc == SF_OK)
		rc = crc;
	/* after MPI_Finalize: no process is spawned from inside MPI */
	if (ctx->auto_fxt && ctx->rank == 0 && rc == SF_OK)
		frc = _sf_fxt_merge(ctx->cfg.trace, ctx->size);
	if (rc == SF_OK)
		rc = frc;
	the_context = NULL;
	_sf_log_rank = -1;
	free(ctx);
	return rc;
}

SF_API int sf_context_world(const sf_context *ctx, int *rank, int *size)
{
	if (!ctx || (!rank && !size))
		return SF_ERR(SF_ERR_INVALID, "sf_context_world: NULL context or outputs");
	if (rank)
		*rank = ctx->rank;
	if (size)
		*size = ctx->size;
	return SF_OK;
}

SF_API int sf_clock(double *seconds)
{
	if (!seconds)
		return SF_ERR(SF_ERR_INVALID, "sf_clock: NULL output");
	/* StarPU's clock is SimGrid's in a simulation build, the monotonic one otherwise */
	*seconds = starpu_timing_now() * 1e-6;
	return SF_OK;
}

SF_API int sf_context_config(const sf_context *ctx, struct sf_config *out)
{
	if (!ctx || !out)
		return SF_ERR(SF_ERR_INVALID, "sf_context_config: NULL context or output");
	*out = ctx->cfg;
	return SF_OK;
}
