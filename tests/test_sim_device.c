/*
 * test_sim_device.c — the roofline of simulated GPUs (tasks/sim_device.c): the
 * SHARDFLOW_SIM_DEVICE parser accepts what docs/scale.md lists and names what it
 * refuses, and a task's time is the launch cost plus the larger of its compute and
 * memory times at the stated efficiencies.
 */
#include "tasks/sim_device.h"
#include "shardflow.h"
#include "tests/tap.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b);
}

int main(void)
{
	const struct _sf_sim_device *d = NULL;
	enum _sf_sim_math m = SF_SIM_MATH_COUNT;
	plan(9);

	ok(_sf_sim_device_find("h100", &d, &m) == SF_OK && d && !strcmp(d->name, "h100") &&
	       m == SF_SIM_BF16,
	   "\"h100\": the H100, bf16 products by default");
	/* 1 TFLOP of products: 1e12 / (989.4e12 * 0.7) s, plus the launch */
	ok(near(_sf_sim_roofline_us(d, SF_SIM_BF16, 1e12, 0),
	        SF_SIM_LAUNCH_US + 1e6 / (989.4 * SF_SIM_GEMM_EFF)),
	   "h100 bf16: 1 TFLOP takes 1e6 / (989.4 x %.1f) us + the launch", SF_SIM_GEMM_EFF);
	/* 1 GB moved: 1e9 / (3.35e12 * 0.8) s */
	ok(near(_sf_sim_roofline_us(d, SF_SIM_BF16, 1e6, 1e9),
	        SF_SIM_LAUNCH_US + 1e6 * 1e9 / (3.35e12 * SF_SIM_MEM_EFF)),
	   "h100: a memory-bound task (1 GB, 1 MFLOP) takes its bytes' time");
	ok(near(_sf_sim_roofline_us(d, SF_SIM_BF16, 0, 0), SF_SIM_LAUNCH_US),
	   "an empty task costs the launch");
	ok(_sf_sim_device_find("h200:fp32", &d, &m) == SF_OK && !strcmp(d->name, "h200") &&
	       m == SF_SIM_FP32 &&
	       near(_sf_sim_roofline_us(d, m, 1e12, 0),
	            SF_SIM_LAUNCH_US + 1e6 / (66.9 * SF_SIM_GEMM_EFF)),
	   "\"h200:fp32\": fp32 products at 66.9 TFLOP/s");
	ok(_sf_sim_device_find("a100:tf32", &d, &m) == SF_OK && !strcmp(d->name, "a100") &&
	       m == SF_SIM_TF32,
	   "\"a100:tf32\"");
	ok(_sf_sim_device_find("h100", &d, &m) == SF_OK && d->hbm_tbs < 4.8 &&
	       _sf_sim_device_find("h200", &d, &m) == SF_OK && d->hbm_tbs == 4.8 &&
	       d->memory_gib == 141,
	   "the H200 differs from the H100 by its memory: 4.8 TB/s, 141 GiB");
	int rc = _sf_sim_device_find("v100", &d, &m);
	ok(rc == SF_ERR_CONFIG && !d && strstr(sf_last_error(), "accepted: h100, h200, a100"),
	   "\"v100\": refused, naming what is accepted (%s)", sf_last_error());
	rc = _sf_sim_device_find("h100:fp8", &d, &m);
	ok(rc == SF_ERR_CONFIG && strstr(sf_last_error(), "\"fp8\"") &&
	       strstr(sf_last_error(), "bf16, tf32, fp32"),
	   "\"h100:fp8\": the math refused, naming what is accepted");
	return done_testing();
}
