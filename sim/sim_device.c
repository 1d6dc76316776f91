/*
 * sim_device.c — the compute tasks' time on a named GPU, for simulated runs
 * (docs/scale.md): a roofline of each task's flops and bytes.
 *
 * SHARDFLOW_SIM_DEVICE=NAME[:MATH] (a simulation build) turns every compute codelet's
 * performance model into a per-architecture cost function:
 *
 *   t = launch + max(flops / (peak(MATH) * gemm_eff), bytes / (hbm * mem_eff))
 *
 * flops are what the task was submitted with (every codelet counts its own:
 * tasks/submit.c), bytes the sum of its buffers' sizes. Without the variable the
 * codelets keep their history models, calibrated by real runs with the same
 * STARPU_HOSTNAME. The table's numbers are the vendors' dense peaks; the efficiencies
 * and the launch cost are assumptions stated in docs/scale.md until a GPU window
 * measures them. The math and the table are compiled in every build (test_api checks
 * them); only a simulation build applies them.
 *
 * SHARDFLOW_SIM_CALIBRATION=FILE (a simulation build) replaces the roofline's assumed
 * efficiencies by measured ones: FILE, written by bench/sim_calibrate.py from the built-in
 * trace of a real run, holds the ceilings of the device that ran it and, per codelet
 * model, the median of its tasks' efficiency against them; a task then takes
 * max(flops / peak, bytes / bandwidth) / efficiency (no launch term: the measured times
 * include it). A model the file lacks takes the median of all its tasks. It takes
 * precedence over SHARDFLOW_SIM_DEVICE's roofline, whose GPU still names the peak of
 * shardflow-sim's MFU and the memory.
 *
 * SHARDFLOW_SIM_SHARED_CPUS=HOST[,HOST...] (a simulation build) runs rank r's compute
 * tasks on host r mod the list's length, which the ranks it gets share as processes
 * share a machine's cores: SimGrid gives each running task a core of the host while
 * there are cores enough, else an equal share of them. It is for an emulated cluster
 * whose ranks run on fewer cores than ranks (bench/sim_validate.sh: one host of one
 * core per core, as scripts/cluster.sh binds rank i to core i mod nproc). Each task's
 * length is still its model's (calibrated, or the roofline), and a task whose model
 * has no value for its size stops the simulation, as StarPU's own simulated
 * execution does.
 *
 * SHARDFLOW_SIM_HOST_CPU=MAIN_MS[,BG_MS] (with SHARDFLOW_SIM_SHARED_CPUS) charges the
 * host CPU that runs outside tasks, per sf_model_step or sf_model_accumulate call, to
 * the rank's shared host: MAIN_MS of the calling thread (the program's batch, the
 * graph's submission), which waits for it before submitting, as the real thread does
 * that work before its tasks exist; and BG_MS of work beside the tasks (the comm
 * worker between collectives, the kernel's), which shares the host with them until
 * done. Real runs measure both (bench/sim_validate.sh takes them from its
 * calibration run).
 */
#include "config.h"

#include "sim/sim_device.h"
#include "common/error.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#ifdef SF_SIMULATION
#include <simgrid/actor.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct _sf_sim_device devices[] = {
    /* name, fp32, tf32, bf16 (dense TFLOP/s), HBM (TB/s), memory (GiB) */
    {"h100", 66.9, 494.7, 989.4, 3.35, 80},
    {"h200", 66.9, 494.7, 989.4, 4.8, 141},
    {"a100", 19.5, 156.0, 312.0, 2.039, 80},
};

static const char *const maths[SF_SIM_MATH_COUNT] = {"bf16", "tf32", "fp32"};

/* the one in force (a simulation build, SHARDFLOW_SIM_DEVICE set), or NULL */
static const struct _sf_sim_device *active;
static enum _sf_sim_math active_math;
/* SHARDFLOW_SIM_CALIBRATION's, or NULL */
static struct _sf_sim_calibration *calibration;
#ifdef SF_SIMULATION
/* this rank's host of SHARDFLOW_SIM_SHARED_CPUS, or NULL */
static sg_host_t shared_cpus;
/* SHARDFLOW_SIM_HOST_CPU: seconds a step of the main thread and beside the tasks, and
 * the last step's work beside the tasks while it runs */
static double host_main_s, host_bg_s;
static sg_exec_t host_bg;
#endif

int _sf_sim_device_find(const char *spec, const struct _sf_sim_device **dev,
                        enum _sf_sim_math *math)
{
	char name[32];
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	*dev = NULL;
	*math = SF_SIM_BF16;
	if (n < sizeof name) {
		memcpy(name, spec, n);
		name[n] = '\0';
		for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++)
			if (!strcmp(devices[i].name, name))
				*dev = &devices[i];
	}
	if (!*dev)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_SIM_DEVICE=\"%s\": unknown GPU; accepted: h100, h200, "
		              "a100, each optionally :bf16 (the default), :tf32 or :fp32 (the "
		              "matrix products' math)",
		              spec);
	if (colon) {
		int found = -1;
		for (int m = 0; m < SF_SIM_MATH_COUNT; m++)
			if (!strcmp(colon + 1, maths[m]))
				found = m;
		if (found < 0)
			return SF_ERR(SF_ERR_CONFIG,
			              "SHARDFLOW_SIM_DEVICE=\"%s\": unknown math \"%s\"; accepted: "
			              "bf16, tf32, fp32",
			              spec, colon + 1);
		*math = (enum _sf_sim_math)found;
	}
	return SF_OK;
}

double _sf_sim_roofline_us(const struct _sf_sim_device *d, enum _sf_sim_math math, double flops,
                           double bytes)
{
	double peak = math == SF_SIM_FP32   ? d->fp32_tflops
	              : math == SF_SIM_TF32 ? d->tf32_tflops
	                                    : d->bf16_tflops;
	double compute = flops > 0 ? flops / (peak * 1e12 * SF_SIM_GEMM_EFF) : 0.0;
	double memory = bytes > 0 ? bytes / (d->hbm_tbs * 1e12 * SF_SIM_MEM_EFF) : 0.0;
	return SF_SIM_LAUNCH_US + 1e6 * (compute > memory ? compute : memory);
}

/*
 * NCCL's tuning model (NCCL's src/graph/tuning.cc, release 2.8: its latency table, its
 * protocols' bandwidth factors and its ring and tree step counts), for H100-class nodes
 * (NVLink inside a node, one NIC a GPU between nodes):
 *
 *   latency = base[a][p] + intra steps x hw[intra][a][p] + inter steps x hw[net][a][p]
 *     ring: n - 1 steps for an all-gather or reduce-scatter, 2 (n - 1) for an
 *           all-reduce, of which (nodes - 1), 2 (nodes - 1) cross the network;
 *     tree (all-reduce): 2 ((n / nodes - 1) intra + log2(nodes) inter);
 *     LL's intra-node step 1.8 times longer when the ranks span nodes;
 *   bus bandwidth = the link's, x 1/3 for ring LL (1/4 across nodes or for an
 *     all-reduce), x 0.92 for ring LL128; tree: x 0.9, and x 1/3.8 (LL) or x 7/9 (one
 *     node), 0.915 (across nodes) for LL128;
 *   algorithm bandwidth = bus x n / steps (ring), x 1/2 (tree);
 *   time = latency + bytes / algorithm bandwidth, the fastest (algorithm, protocol).
 *
 * A step's latency is at least the platform's link latency. Left out: NCCL's channel
 * count and per-channel caps (the link's bandwidth stands for all its channels), the
 * tree's per-size correction factors, the ring's all-reduce plateau, PAT and NVLS (newer
 * releases), and which protocols a given GPU and topology enable (all three here).
 */
static const double nccl_base_us[2][3] = {{4.4, 4.4, 0.0}, {3.6, 10.0, 8.4}};
static const double nccl_hw_us[2][2][3] = {
    /* NVLink: tree, ring */ {{0.52, 1.2, 28.0}, {0.47, 1.9, 3.4}},
    /* network: tree, ring */ {{5.0, 8.5, 50.0}, {2.7, 4.0, 9.6}},
};

double _sf_nccl_time(enum _sf_nccl_coll coll, const struct _sf_nccl_link *l, double bytes,
                     enum _sf_nccl_algo *algo, enum _sf_nccl_proto *proto)
{
	int n = l->nranks, nodes = l->nnodes < 1 ? 1 : l->nnodes;
	double best = -1.0;
	if (n <= 1) {
		if (algo)
			*algo = SF_NCCL_RING;
		if (proto)
			*proto = SF_NCCL_SIMPLE;
		return 0.0;
	}
	bool ar = coll == SF_NCCL_ALL_REDUCE;
	double steps = ar ? 2.0 * (n - 1) : (double)(n - 1);
	double inter_steps = ar ? 2.0 * (nodes - 1) : (double)(nodes - 1);
	int log2_nodes = 0;
	while ((1 << (log2_nodes + 1)) <= nodes)
		log2_nodes++;
	for (int a = SF_NCCL_TREE; a <= SF_NCCL_RING; a++) {
		if (a == SF_NCCL_TREE && !ar)
			continue; /* all-gather and reduce-scatter are rings */
		for (int p = SF_NCCL_LL; p <= SF_NCCL_SIMPLE; p++) {
			double intra = nccl_hw_us[0][a][p] * 1e-6, inter = nccl_hw_us[1][a][p] * 1e-6;
			if (nodes > 1 && p == SF_NCCL_LL)
				intra *= 1.8;
			intra = intra > l->intra_lat ? intra : l->intra_lat;
			inter = inter > l->inter_lat ? inter : l->inter_lat;
			double lat = nccl_base_us[a][p] * 1e-6, bus = l->bw, alg;
			if (a == SF_NCCL_RING) {
				lat += (steps - inter_steps) * intra + inter_steps * inter;
				if (p == SF_NCCL_LL)
					bus *= nodes > 1 || ar ? 0.25 : 1.0 / 3.0;
				else if (p == SF_NCCL_LL128)
					bus *= 0.92;
				alg = bus * n / steps;
			} else {
				lat += 2.0 * ((n / nodes - 1) * intra + log2_nodes * inter);
				bus *= 0.9;
				if (p == SF_NCCL_LL)
					bus /= 3.8;
				else if (p == SF_NCCL_LL128)
					bus *= nodes == 1 ? 7.0 / 9.0 : 0.915;
				alg = bus * 0.5;
			}
			double t = lat + bytes / alg;
			if (best < 0 || t < best) {
				best = t;
				if (algo)
					*algo = (enum _sf_nccl_algo)a;
				if (proto)
					*proto = (enum _sf_nccl_proto)p;
			}
		}
	}
	return best;
}

/* "<file>:<line>: <what>" */
static int cal_fail(const char *path, int line, const char *what, const char *text)
{
	return SF_ERR(SF_ERR_CONFIG,
	              "SHARDFLOW_SIM_CALIBRATION=\"%s\": line %d: %s (\"%.60s\"); accepted: "
	              "what bench/sim_calibrate.py writes: \"# peak_tflops X\", \"# "
	              "bandwidth_gbs X\", \"# fallback E\" (positive numbers), then lines "
	              "\"MODEL TASKS EFFICIENCY MEDIAN_US\"",
	              path, line, what, text);
}

static bool positive(const char *t, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(t, &end);
	while (isspace((unsigned char)*end))
		end++;
	return t != end && !*end && errno == 0 && isfinite(*v) && *v > 0;
}

int _sf_sim_calibration_load(const char *path, struct _sf_sim_calibration **out)
{
	int rc = SF_OK, ln = 0;
	char line[512];
	*out = NULL;
	struct _sf_sim_calibration *c = calloc(1, sizeof *c);
	FILE *f = fopen(path, "r");
	if (!c || !f) {
		rc = c ? SF_ERR(SF_ERR_CONFIG, "SHARDFLOW_SIM_CALIBRATION=\"%s\": cannot read it: %s",
		                path, strerror(errno))
		       : SF_ERR(SF_ERR_NOMEM, "SHARDFLOW_SIM_CALIBRATION: out of memory");
		goto out;
	}
	while (fgets(line, sizeof line, f)) {
		ln++;
		size_t len = strlen(line);
		if (len == sizeof line - 1 && line[len - 1] != '\n') {
			rc = cal_fail(path, ln, "a line longer than 510 characters", line);
			goto out;
		}
		line[strcspn(line, "\r\n")] = '\0';
		char key[32], rest[400];
		if (line[0] == '#') {
			if (sscanf(line, "# %31s %399[^\n]", key, rest) != 2)
				continue; /* a comment */
			double v = 0;
			double *dst = !strcmp(key, "peak_tflops")     ? &c->peak_flops
			              : !strcmp(key, "bandwidth_gbs") ? &c->bandwidth
			              : !strcmp(key, "fallback")      ? &c->fallback
			                                              : NULL;
			if (!strcmp(key, "device"))
				snprintf(c->label, sizeof c->label, "%.127s", rest);
			else if (dst && !positive(rest, &v)) {
				rc = cal_fail(path, ln, "not a positive number", line);
				goto out;
			} else if (dst)
				*dst = v * (dst == &c->peak_flops ? 1e12 : dst == &c->bandwidth ? 1e9 : 1.0);
			continue;
		}
		char model[64], tasks[32], eff[64], us[64], extra[8];
		int got = sscanf(line, "%63s %31s %63s %63s %7s", model, tasks, eff, us, extra);
		if (got <= 0 || !strcmp(model, "model"))
			continue; /* a blank line or the column names */
		double e = 0, t = 0, m = 0;
		bool name_ok = strlen(model) < sizeof c->entry[0].model;
		for (const char *q = model; *q && name_ok; q++)
			name_ok = isalnum((unsigned char)*q) || *q == '_';
		if (got != 4 || !name_ok || !positive(tasks, &t) || !positive(eff, &e) ||
		    !(positive(us, &m) || !strcmp(us, "0"))) {
			rc = cal_fail(path, ln, "not a row of a model ([A-Za-z0-9_], under 40), its task "
			              "count, its efficiency and its median microseconds", line);
			goto out;
		}
		if (c->n == SF_SIM_CAL_MAX) {
			rc = cal_fail(path, ln, "more than 64 models", line);
			goto out;
		}
		snprintf(c->entry[c->n].model, sizeof c->entry[c->n].model, "%s", model);
		c->entry[c->n].efficiency = e;
		c->n++;
	}
	if (ferror(f)) {
		rc = SF_ERR(SF_ERR_CONFIG, "SHARDFLOW_SIM_CALIBRATION=\"%s\": read error", path);
		goto out;
	}
	if (c->peak_flops <= 0 || c->bandwidth <= 0 || c->fallback <= 0 || c->n == 0) {
		rc = SF_ERR(SF_ERR_CONFIG,
		            "SHARDFLOW_SIM_CALIBRATION=\"%s\": %s is missing; accepted: what "
		            "bench/sim_calibrate.py writes (# peak_tflops, # bandwidth_gbs, # "
		            "fallback, then a row per model)",
		            path,
		            c->peak_flops <= 0  ? "\"# peak_tflops\""
		            : c->bandwidth <= 0 ? "\"# bandwidth_gbs\""
		            : c->fallback <= 0  ? "\"# fallback\""
		                                : "a model's row");
		goto out;
	}
	*out = c;
	c = NULL;
out:
	if (f)
		fclose(f);
	free(c);
	return rc;
}

void _sf_sim_calibration_free(struct _sf_sim_calibration *c)
{
	free(c);
}

double _sf_sim_calibrated_us(const struct _sf_sim_calibration *c, const char *model,
                             double flops, double bytes, bool *known)
{
	double e = c->fallback;
	*known = false;
	for (int i = 0; model && i < c->n; i++)
		if (!strcmp(c->entry[i].model, model)) {
			e = c->entry[i].efficiency;
			*known = true;
		}
	double compute = flops / c->peak_flops, memory = bytes / c->bandwidth;
	return 1e6 * (compute > memory ? compute : memory) / e;
}

const struct _sf_sim_calibration *_sf_sim_calibration(void)
{
	return calibration;
}

static double cost(struct starpu_task *task, struct starpu_perfmodel_arch *arch, unsigned nimpl)
{
	(void)arch;
	(void)nimpl;
	double bytes = 0;
	unsigned n = STARPU_TASK_GET_NBUFFERS(task);
	for (unsigned i = 0; i < n; i++)
		bytes += (double)starpu_data_get_size(STARPU_TASK_GET_HANDLE(task, i));
	double flops = isnan(task->flops) ? 0.0 : task->flops;
	if (calibration) {
		const char *model = task->cl && task->cl->model ? task->cl->model->symbol : NULL;
		bool known;
		double us = _sf_sim_calibrated_us(calibration, model, flops, bytes, &known);
		if (!known) { /* said once a model (one process runs every simulated rank) */
			static char said[SF_SIM_CAL_MAX][40];
			static int nsaid;
			bool seen = false;
			for (int i = 0; i < nsaid && !seen; i++)
				seen = !strcmp(said[i], model ? model : "");
			if (!seen && nsaid < SF_SIM_CAL_MAX) {
				snprintf(said[nsaid++], sizeof said[0], "%s", model ? model : "");
				_sf_log(SF_LOG_WARN,
				        "SHARDFLOW_SIM_CALIBRATION: no row for codelet model \"%s\": its "
				        "tasks take the file's median efficiency (%.3g)",
				        model ? model : "(none)", calibration->fallback);
			}
		}
		return us;
	}
	return _sf_sim_roofline_us(active, active_math, flops, bytes);
}

#ifdef SF_SIMULATION
/* SHARDFLOW_SIM_HOST_CPU: one or two numbers of milliseconds >= 0, with a shared host */
static int host_cpu_setup(void)
{
	const char *s = getenv("SHARDFLOW_SIM_HOST_CPU");
	host_main_s = host_bg_s = 0;
	host_bg = NULL;
	if (!s || !*s)
		return SF_OK;
	/* "A" or "A,B": B after the comma, or 0; end: where the parse stopped */
	double v[2] = {0, 0};
	char *end = (char *)s;
	v[0] = strtod(s, &end);
	bool ok = end != s;
	if (ok && *end == ',') {
		const char *b = end + 1;
		v[1] = strtod(b, &end);
		ok = end != b;
	}
	if (!ok || *end != '\0' || !(v[0] >= 0 && v[0] <= 1e6) || !(v[1] >= 0 && v[1] <= 1e6))
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_SIM_HOST_CPU=\"%s\" is invalid: accepted is MAIN_MS or "
		              "MAIN_MS,BG_MS: the milliseconds of host CPU a step costs on the "
		              "thread that submits it and beside the tasks, numbers from 0 to 1e6",
		              s);
	if (!shared_cpus)
		return SF_ERR(SF_ERR_CONFIG,
		              "SHARDFLOW_SIM_HOST_CPU=\"%s\" needs SHARDFLOW_SIM_SHARED_CPUS: the "
		              "CPU is charged to the rank's shared host",
		              s);
	host_main_s = v[0] * 1e-3;
	host_bg_s = v[1] * 1e-3;
	return SF_OK;
}
#endif

void _sf_sim_host_step(void)
{
#ifdef SF_SIMULATION
	if (!shared_cpus)
		return;
	if (host_bg_s > 0) {
		if (host_bg) /* the last step's, done by now unless the host is that busy */
			sg_exec_wait(host_bg);
		host_bg = _sf_sim_host_exec(host_bg_s);
	}
	if (host_main_s > 0)
		sg_exec_wait(_sf_sim_host_exec(host_main_s));
#endif
}

void _sf_sim_host_fini(void)
{
#ifdef SF_SIMULATION
	if (host_bg)
		sg_exec_wait(host_bg);
	host_bg = NULL;
#endif
}

int _sf_sim_device_setup(int rank, const char **name, const char **shared)
{
	*name = NULL;
	*shared = NULL;
	active = NULL;
#ifndef SF_SIMULATION
	(void)rank;
#else
	shared_cpus = NULL;
	const char *hosts = getenv("SHARDFLOW_SIM_SHARED_CPUS");
	if (hosts && *hosts) {
		/* rank r computes on the list's host r mod its length */
		int n = 1;
		for (const char *p = hosts; *p; p++)
			n += *p == ',';
		int k = rank % n;
		const char *h = hosts;
		for (int i = 0; i < k; i++)
			h = strchr(h, ',') + 1;
		char name[256];
		size_t len = strcspn(h, ",");
		snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1),
		         h);
		shared_cpus = len && len < sizeof name ? sg_host_by_name(name) : NULL;
		if (!shared_cpus)
			return SF_ERR(SF_ERR_CONFIG,
			              "SHARDFLOW_SIM_SHARED_CPUS=\"%s\": the platform has no host "
			              "\"%s\"; accepted: ids of <host>s of the -platform file, comma "
			              "separated (rank r computes on host r mod their count; give each "
			              "core=\"N\", the cores its ranks share)",
			              hosts, name);
		*shared = sg_host_get_name(shared_cpus);
	}
	int hrc = host_cpu_setup();
	if (hrc < 0)
		return hrc;
	/* every simulated rank is an actor of this one process and comes here: the file is
	 * read by the first, the others keep it (unless the variable names another) */
	static char cal_path[4096];
	const char *cal = getenv("SHARDFLOW_SIM_CALIBRATION");
	if (!cal || !*cal || !calibration || strcmp(cal, cal_path) != 0) {
		_sf_sim_calibration_free(calibration);
		calibration = NULL;
		if (cal && *cal) {
			int crc = _sf_sim_calibration_load(cal, &calibration);
			if (crc < 0)
				return crc;
			snprintf(cal_path, sizeof cal_path, "%s", cal);
		}
	}
	const char *spec = getenv("SHARDFLOW_SIM_DEVICE");
	if (!spec || !*spec)
		return SF_OK;
	int rc = _sf_sim_device_find(spec, &active, &active_math);
	if (rc < 0)
		return rc;
	*name = active->name;
#endif
	return SF_OK;
}

#ifdef SF_SIMULATION
sg_host_t _sf_sim_shared_host(void)
{
	return shared_cpus;
}

sg_exec_t _sf_sim_host_exec(double seconds)
{
	sg_exec_t e = sg_actor_exec_init(seconds * sg_host_get_speed(shared_cpus));
	sg_exec_set_host(e, shared_cpus);
	sg_exec_start(e);
	return e;
}

/* A compute task's body under SHARDFLOW_SIM_SHARED_CPUS: its model's length, executed
 * on the shared host (the worker's actor waits for it in simulated time). */
static void shared_body(void *buffers[], void *cl_arg)
{
	(void)buffers;
	(void)cl_arg;
	struct starpu_task *task = starpu_task_get_current();
	int w = starpu_worker_get_id();
	struct starpu_perfmodel_arch *arch = starpu_worker_get_perf_archtype(w, task->sched_ctx);
	double us = starpu_task_expected_length(task, arch, starpu_task_get_implementation(task));
	if (isnan(us) || us < 0) {
		const char *dir = getenv("STARPU_PERF_MODEL_DIR");
		fprintf(stderr,
		        "shardflow: error: simulation: codelet %s has no calibrated model for a "
		        "task of footprint %08x in %s: calibrate it by a real run "
		        "(STARPU_CALIBRATE=1, the same STARPU_HOSTNAME) of these sizes\n",
		        task->cl->model && task->cl->model->symbol ? task->cl->model->symbol
		                                                   : "(unnamed)",
		        starpu_task_footprint(task->cl->model, task, arch,
		                              starpu_task_get_implementation(task)),
		        dir ? dir : "$STARPU_HOME/.starpu/sampling");
		abort(); /* StarPU's simulated execution stops so too */
	}
	if (us == 0)
		return;
	sg_exec_wait(_sf_sim_host_exec(us * 1e-6));
}
#endif

void _sf_sim_model(struct starpu_codelet *cl, bool skipped)
{
#ifdef SF_SIMULATION
	if (skipped)
		cl->flags |= STARPU_CODELET_SIMGRID_EXECUTE;
	else
		cl->flags &= ~STARPU_CODELET_SIMGRID_EXECUTE;
	if (!skipped && shared_cpus) {
		cl->flags |= STARPU_CODELET_SIMGRID_EXECUTE;
		cl->cpu_funcs[0] = shared_body;
	}
#endif
	if (skipped || !(active || calibration) || !cl->model)
		return;
	cl->model->type = STARPU_PER_ARCH;
	cl->model->arch_cost_function = cost;
}
