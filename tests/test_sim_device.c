/*
 * test_sim_device.c — the roofline of simulated GPUs (sim/sim_device.c): the
 * SHARDFLOW_SIM_DEVICE parser accepts what docs/scale.md lists and names what it
 * refuses, and a task's time is the launch cost plus the larger of its compute and
 * memory times at the stated efficiencies; a calibration file (bench/sim_calibrate.py's)
 * is read as written, a task of a model it lists takes max(flops / peak, bytes /
 * bandwidth) / that model's efficiency, another model the file's median, and a
 * malformed file is refused naming the line and what is accepted.
 */
#include "sim/sim_device.h"
#include "shardflow.h"
#include "tests/tap.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b);
}

int main(void)
{
	const struct _sf_sim_device *d = NULL;
	enum _sf_sim_math m = SF_SIM_MATH_COUNT;
	plan(19);

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

	/* calibration files */
	char path[] = "/tmp/test_sim_device_XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	struct _sf_sim_calibration *c = NULL;
	if (f) {
		fputs("# shardflow-sim calibration\n# device NVIDIA H100 80GB HBM3, fp32\n"
		      "# peak_tflops 50\n# bandwidth_gbs 2000\n# steps 3\n# fallback 0.25\n"
		      "model\ttasks\tefficiency\tmedian_us\n"
		      "sf_linear_fwd\t144\t0.5\t1023.4\nsf_gelu_bwd\t36\t0.8\t12.5\n",
		      f);
		fclose(f);
	}
	rc = _sf_sim_calibration_load(path, &c);
	ok(rc == SF_OK && c && c->n == 2 && c->peak_flops == 50e12 && c->bandwidth == 2000e9 &&
	       c->fallback == 0.25 && !strcmp(c->label, "NVIDIA H100 80GB HBM3, fp32"),
	   "a calibration file: its ceilings, fallback, device and 2 models read (%s)",
	   rc == SF_OK ? "ok" : sf_last_error());
	bool known = false;
	/* 1 TFLOP at 50 TFLOP/s is 20 ms, at an efficiency of 0.5 40 ms */
	ok(c && near(_sf_sim_calibrated_us(c, "sf_linear_fwd", 1e12, 1e6, &known), 40000.0) &&
	       known,
	   "sf_linear_fwd, 1 TFLOP: 1e12 / 50e12 / 0.5 s = 40 ms");
	/* 2 GB at 2000 GB/s is 1 ms, at 0.8 1.25 ms */
	ok(c && near(_sf_sim_calibrated_us(c, "sf_gelu_bwd", 1e6, 2e9, &known), 1250.0) && known,
	   "sf_gelu_bwd, 2 GB: memory-bound, 1 ms / 0.8");
	ok(c && near(_sf_sim_calibrated_us(c, "sf_rope_fwd", 1e12, 0, &known), 80000.0) && !known,
	   "a model the file lacks takes the fallback efficiency (0.25: 80 ms)");
	_sf_sim_calibration_free(c);
	c = NULL;
	static const char *const bad[][2] = {
	    {"# peak_tflops 50\n# fallback 0.5\nsf_a 1 0.5 10\n", "\"# bandwidth_gbs\" is missing"},
	    {"# peak_tflops fast\n", "line 1: not a positive number"},
	};
	bool refused = true;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		f = fopen(path, "w");
		if (f) {
			fputs(bad[i][0], f);
			fclose(f);
		}
		rc = _sf_sim_calibration_load(path, &c);
		if (rc != SF_ERR_CONFIG || c || !strstr(sf_last_error(), bad[i][1])) {
			diag("file %zu: %s", i, sf_last_error());
			refused = false;
		}
	}
	ok(refused, "a file without its bandwidth, or with a peak that is not a number: refused, "
	            "naming the line or the key");
	f = fopen(path, "w");
	if (f) {
		fputs("# peak_tflops 50\n# bandwidth_gbs 2000\n# fallback 0.5\nsf-linear 12 0.5 10\n",
		      f);
		fclose(f);
	}
	rc = _sf_sim_calibration_load(path, &c);
	ok(rc == SF_ERR_CONFIG && !c && strstr(sf_last_error(), "line 4") &&
	       strstr(sf_last_error(), "accepted"),
	   "a row whose model is not a codelet's name: refused at its line (%s)", sf_last_error());
	unlink(path);

	/* NCCL's tuning model */
	enum _sf_nccl_algo al;
	enum _sf_nccl_proto pr;
	struct _sf_nccl_link node = {.nranks = 8, .nnodes = 1, .bw = 450e9, .intra_lat = 1e-6,
	                             .inter_lat = 5e-6};
	/* 8 GB gathered on 8 GPUs of a node: ring Simple, 8.4 us + 7 steps of 3.4 us + 7/8 of
	 * the bytes at the link's rate */
	double t = _sf_nccl_time(SF_NCCL_ALL_GATHER, &node, 8e9, &al, &pr);
	ok(al == SF_NCCL_RING && pr == SF_NCCL_SIMPLE &&
	       near(t, 8.4e-6 + 7 * 3.4e-6 + 8e9 / (450e9 * 8.0 / 7.0)),
	   "NCCL model: 8 GB all-gathered on 8 NVLink GPUs: ring, Simple, %.6f s", t);
	t = _sf_nccl_time(SF_NCCL_REDUCE_SCATTER, &node, 8192, &al, &pr);
	ok(al == SF_NCCL_RING && pr == SF_NCCL_LL && near(t, 3.6e-6 + 7 * 1e-6 + 8192 / (450e9 / 3 * 8 / 7)),
	   "8 KB reduce-scattered there: LL (its 0.47 us steps floored at the link's 1 us), %.2f us",
	   t * 1e6);
	struct _sf_nccl_link wide = {.nranks = 1024, .nnodes = 128, .bw = 50e9, .intra_lat = 1e-6,
	                             .inter_lat = 5e-6};
	double small = _sf_nccl_time(SF_NCCL_ALL_REDUCE, &wide, 1 << 20, &al, &pr);
	bool tree_small = al == SF_NCCL_TREE;
	double big = _sf_nccl_time(SF_NCCL_ALL_REDUCE, &wide, 4e9, &al, &pr);
	ok(tree_small && al == SF_NCCL_RING && pr == SF_NCCL_SIMPLE && small < 1e-3 && big > 0.15,
	   "1024 GPUs on 128 nodes: a 1 MiB all-reduce takes the tree (%.0f us), 4 GB the ring, "
	   "Simple (%.3f s)",
	   small * 1e6, big);
	struct _sf_nccl_link one = {.nranks = 1, .nnodes = 1, .bw = 450e9};
	ok(_sf_nccl_time(SF_NCCL_ALL_REDUCE, &one, 1e9, NULL, NULL) == 0.0,
	   "one rank: no time");
	return done_testing();
}
