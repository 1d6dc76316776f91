/*
 * sim_device.h — compute time on a named GPU in simulated runs (sim/sim_device.c,
 * docs/scale.md).
 */
#ifndef SF_SIM_DEVICE_H
#define SF_SIM_DEVICE_H

#include <starpu.h>
#include <stdbool.h>

/* The efficiencies and the launch cost of the roofline: assumptions, docs/scale.md */
#define SF_SIM_GEMM_EFF 0.7 /* of the dense peak, for the flops */
#define SF_SIM_MEM_EFF 0.8  /* of the HBM bandwidth, for the bytes */
#define SF_SIM_LAUNCH_US 5.0

enum _sf_sim_math { SF_SIM_BF16, SF_SIM_TF32, SF_SIM_FP32, SF_SIM_MATH_COUNT };

struct _sf_sim_device {
	const char *name;
	double fp32_tflops, tf32_tflops, bf16_tflops; /* dense peaks */
	double hbm_tbs;                               /* memory bandwidth, TB/s */
	double memory_gib;
};

/* "h100", "h200:fp32", ... -> the device and the math (bf16 when not given) */
int _sf_sim_device_find(const char *spec, const struct _sf_sim_device **dev,
                        enum _sf_sim_math *math);
/* A task's microseconds on d: launch + max(flops at the peak, bytes at the bandwidth) */
double _sf_sim_roofline_us(const struct _sf_sim_device *d, enum _sf_sim_math math, double flops,
                           double bytes);
/* A calibration (SHARDFLOW_SIM_CALIBRATION=FILE, bench/sim_calibrate.py): the ceilings of
 * the device a traced run measured, and per codelet model the median efficiency its tasks
 * reached against them; a task then takes max(flops / peak, bytes / bandwidth) / its
 * model's efficiency, a model not in the file the median of all the file's tasks. */
#define SF_SIM_CAL_MAX 64
struct _sf_sim_calibration {
	char label[128];        /* where it was measured ("# device" line) */
	double peak_flops;      /* flop/s */
	double bandwidth;       /* bytes/s */
	double fallback;        /* efficiency of a model the file lacks */
	int n;
	struct {
		char model[40];
		double efficiency;
	} entry[SF_SIM_CAL_MAX];
};
/* Reads FILE into *out (malloc'ed; _sf_sim_calibration_free). Errors name the file, the
 * line and what is accepted. */
int _sf_sim_calibration_load(const char *path, struct _sf_sim_calibration **out);
void _sf_sim_calibration_free(struct _sf_sim_calibration *c);
/* A task's microseconds by the calibration; *known: its model is in the file */
double _sf_sim_calibrated_us(const struct _sf_sim_calibration *c, const char *model,
                             double flops, double bytes, bool *known);

/* NCCL's cost model of a collective (sim/comm_sim.c, SHARDFLOW_SIM_NCCL; docs/scale.md):
 * NCCL's own tuning model, in the form its tuning.cc states it: for each algorithm (ring;
 * for an all-reduce also tree) and protocol (LL, LL128, Simple), a latency of a base plus
 * a per-step hardware latency over the ring's or the tree's steps, and a bandwidth of
 * the link's derated by the protocol; the collective takes the fastest,
 * latency + bytes / algorithm bandwidth, as NCCL picks it. */
enum _sf_nccl_coll { SF_NCCL_ALL_GATHER, SF_NCCL_REDUCE_SCATTER, SF_NCCL_ALL_REDUCE };
enum _sf_nccl_algo { SF_NCCL_TREE, SF_NCCL_RING };
enum _sf_nccl_proto { SF_NCCL_LL, SF_NCCL_LL128, SF_NCCL_SIMPLE };
struct _sf_nccl_link {
	int nranks, nnodes; /* the communicator's ranks and the nodes they span */
	double bw;          /* bytes/s a GPU sends: NVLink's in one node, else its NIC's */
	double intra_lat;   /* seconds, at least, a step inside a node (the link's latency) */
	double inter_lat;   /* and a step between nodes */
};
/* seconds for `bytes` (the whole buffer: the gathered output, the scattered input, the
 * reduced vector); *algo and *proto (may be NULL) say what won */
double _sf_nccl_time(enum _sf_nccl_coll coll, const struct _sf_nccl_link *l, double bytes,
                     enum _sf_nccl_algo *algo, enum _sf_nccl_proto *proto);

/* sf_init, once the communicator is up (rank: the world rank): SHARDFLOW_SIM_DEVICE (a
 * simulation build) selects the device; *name is its name, or NULL when the codelets
 * keep their history models; *shared is SHARDFLOW_SIM_SHARED_CPUS's host, or NULL when
 * each worker computes on its own. */
int _sf_sim_device_setup(int rank, const char **name, const char **shared);
/* The compute codelets' timing (sf_init plugs it into tasks/ before the codelets are
 * configured: _sf_codelet_timing_set): in a simulation build, a codelet skipped
 * (SHARDFLOW_SKIP=compute) runs its empty body and takes no simulated time; else its
 * model becomes the device's roofline or the calibration when one is selected, and its
 * body the model's time on the shared host when SHARDFLOW_SIM_SHARED_CPUS names one.
 * Nothing in other builds. */
void _sf_sim_model(struct starpu_codelet *cl, bool skipped);
/* sf_model_step and sf_model_accumulate, first: SHARDFLOW_SIM_HOST_CPU's charge for the
 * step (a simulation build; nothing otherwise) */
void _sf_sim_host_step(void);
/* sf_finalize: the last step's charge beside the tasks waited for */
void _sf_sim_host_fini(void);
/* after _sf_sim_device_setup: the calibration in force (SHARDFLOW_SIM_CALIBRATION, a
 * simulation build), or NULL */
const struct _sf_sim_calibration *_sf_sim_calibration(void);
#ifdef SF_SIMULATION
#include <simgrid/exec.h>
#include <simgrid/host.h>
/* This rank's host of SHARDFLOW_SIM_SHARED_CPUS, or NULL */
sg_host_t _sf_sim_shared_host(void);
/* `seconds` of that host's time, started on it for the calling actor: the caller waits
 * for it (sg_exec_wait) when the time is its own, or later when it runs beside */
sg_exec_t _sf_sim_host_exec(double seconds);
#endif

#endif
