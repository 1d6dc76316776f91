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
 */
#include "config.h"

#include "tasks/sim_device.h"
#include "common/error.h"

#include <math.h>
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

static double cost(struct starpu_task *task, struct starpu_perfmodel_arch *arch, unsigned nimpl)
{
	(void)arch;
	(void)nimpl;
	double bytes = 0;
	unsigned n = STARPU_TASK_GET_NBUFFERS(task);
	for (unsigned i = 0; i < n; i++)
		bytes += (double)starpu_data_get_size(STARPU_TASK_GET_HANDLE(task, i));
	double flops = isnan(task->flops) ? 0.0 : task->flops;
	return _sf_sim_roofline_us(active, active_math, flops, bytes);
}

int _sf_sim_device_setup(const char **name)
{
	*name = NULL;
	active = NULL;
#ifdef SF_SIMULATION
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

void _sf_sim_model(struct starpu_codelet *cl, bool skipped)
{
#ifdef SF_SIMULATION
	if (skipped)
		cl->flags |= STARPU_CODELET_SIMGRID_EXECUTE;
	else
		cl->flags &= ~STARPU_CODELET_SIMGRID_EXECUTE;
#endif
	if (skipped || !active || !cl->model)
		return;
	cl->model->type = STARPU_PER_ARCH;
	cl->model->arch_cost_function = cost;
}
