/*
 * internal.h — what the library's modules share and users never see.
 *
 * The layout follows DESIGN.md: layers/ knows graphs and shapes, tasks/ holds the
 * codelets, scheduler/ owns the runtime, the model's data and the order in which a
 * step's tasks are submitted (which is the communication schedule).
 */
#ifndef SF_SCHEDULER_INTERNAL_H
#define SF_SCHEDULER_INTERNAL_H

#include "shardflow.h"

#include <mpi.h>
#include <starpu.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

/* ---- errors and logging (scheduler/error.c) ------------------------------- */

int _sf_err(int status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define SF_ERR(status, ...) _sf_err((status), __FILE__, __LINE__, __VA_ARGS__)

/* Propagates a negative status to the enclosing function's `fail:` label. */
#define SF_CHECK(call)                                                                             \
	do {                                                                                       \
		int sf_check_rc_ = (call);                                                         \
		if (sf_check_rc_ < 0) {                                                            \
			rc = sf_check_rc_;                                                         \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

int _sf_mpi_err(int mpirc, const char *what, const char *file, int line);
#define SF_MPI_CHECK(call)                                                                         \
	do {                                                                                       \
		int sf_mpi_rc_ = (call);                                                           \
		if (sf_mpi_rc_ != MPI_SUCCESS) {                                                   \
			rc = _sf_mpi_err(sf_mpi_rc_, #call, __FILE__, __LINE__);                   \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

void _sf_log(enum sf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
extern enum sf_log_level _sf_log_level;
extern int _sf_log_rank;

/* ---- runtime (scheduler/runtime.c) ----------------------------------------- */

struct sf_context {
	struct sf_config cfg;
	int rank, size;
	MPI_Comm comm;        /* collectives of steps; used by the comm worker only */
	MPI_Comm ctl_comm;    /* host-side collectives (model setup, params_get) */
	bool own_mpi;         /* sf_init started MPI, so sf_finalize stops it */
	int comm_worker;      /* StarPU worker id running every collective */
	clockid_t comm_clock; /* CPU-time clock of the comm worker's thread */
	int ncompute;         /* compute workers */
	int nmodels;          /* live models: sf_finalize refuses while > 0 */
};

/* SHARDFLOW_SKIP of the runtime, read by the codelets (benchmarks only). */
extern enum sf_skip _sf_skip;
/* SHARDFLOW_COMM_CHUNK in floats (0: one message per ring step), set by sf_init */
extern size_t _sf_comm_chunk;

/* Reads the CPU-time clock of the thread of StarPU worker `worker` (a task run there,
 * synchronously). */
int _sf_worker_cpu_clock(int worker, clockid_t *out);
/* Seconds of CPU time on clock c (0 if it cannot be read). */
double _sf_clock_seconds(clockid_t c);

/* Worker id of the comm worker, read by codelets' can_execute (-1 before init). */
extern int _sf_comm_worker;
/* can_execute of every compute codelet: anywhere but the comm worker. */
int _sf_compute_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl);
bool _sf_runtime_active(void);

/* ---- graphs and layer types (layers/) ----------------------------------------- */

enum _sf_node_kind { SF_NODE_INPUT, SF_NODE_LABELS, SF_NODE_LAYER, SF_NODE_LOSS };

#define SF_NAME_MAX 64

struct _sf_node {
	enum _sf_node_kind kind;
	char name[SF_NAME_MAX];
	const struct _sf_layer_entry *type; /* SF_NODE_LAYER */
	int nin;
	int in[SF_MAX_INPUTS];
	int dim;        /* output width (labels: number of classes) */
	size_t nparams; /* P of this node (0: no unit) */
	void *config;   /* owned copy of the user's config */
	size_t config_size;
};

struct sf_graph {
	char name[SF_NAME_MAX];
	int n, cap;
	struct _sf_node *nodes;
	int ninputs; /* float inputs */
	int labels;  /* node id or -1 */
	int loss;    /* node id or -1 */
};

/* A registered layer type and the two codelets made from it once. */
struct _sf_layer_entry {
	struct sf_layer_type type;
	char name[SF_NAME_MAX];
	struct starpu_codelet fwd_cl;
	struct starpu_codelet bwd_cl;
};

const struct _sf_layer_entry *_sf_layer_find(const char *name);
int _sf_layers_builtin_init(void); /* registers linear, relu, gelu, add once */

/* ---- model (scheduler/model.c, scheduler/step.c) ------------------------------- */

#define SF_LOSS_SLOTS 16
#define SF_GRAD_SLOTS 2
#define SF_MAX_DEPTH 64

struct _sf_model;

/* Time the comm worker spent in a model's collective tasks (written by the comm
 * worker only, read by the host after a sync). */
struct _sf_comm_acct {
	double wall, cpu; /* seconds: CLOCK_MONOTONIC, the thread's CPU clock */
};

/* Static arguments of a unit's collectives (pointer handed as cl_arg). */
struct _sf_comm_args {
	MPI_Comm comm;
	struct _sf_comm_acct *acct;
	int nranks;
	size_t P;                            /* unpadded parameters of the unit */
	size_t S;                            /* shard size: ceil(P / nranks) */
	atomic_int *resident, *max_resident; /* gathered-unit counter (gather, free) */
	float *scratch;                      /* S_max floats: the ring reduce-scatter's
	                                        receive buffer (one per model; the comm
	                                        worker runs one collective at a time) */
};

struct _sf_unit {
	int node;
	size_t P, S, off; /* off: first parameter in the model's unpadded vector */
	size_t opt_n;     /* elements the optimizer updates: S (sharded) or P */
	float *shard;     /* S: owned parameters (full, grad_op) */
	float *full;      /* N*S or P: resident parameters (grad_op, none) */
	float *gshard;    /* S: reduced gradient (full, grad_op) */
	float *m, *v;     /* optimizer state, opt_n each (v: AdamW only) */
	starpu_data_handle_t h_shard, h_full, h_gshard, h_m, h_v;
	struct _sf_comm_args comm;
	char gather_name[SF_NAME_MAX + 16], rs_name[SF_NAME_MAX + 16];
	char opt_name[SF_NAME_MAX + 16], free_name[SF_NAME_MAX + 16];
	char ag_name[SF_NAME_MAX + 16];
};

struct _sf_node_state {
	float *act, *dact; /* (B, dim) */
	starpu_data_handle_t h_act, h_dact;
	struct sf_layer_info info;
	struct sf_layer_info bwd_info; /* info, with params_absent when the backward of a
	                                  unit's node does not read its parameters */
	int unit;                      /* index in units or -1 */
	bool needs_grad;               /* some parameter depends on this node's output */
	char fwd_name[SF_NAME_MAX + 32], bwd_name[SF_NAME_MAX + 32];
};

struct _sf_loss_args {
	int rows, classes;
	float scale; /* 1 / global batch */
};

struct _sf_opt_args {
	size_t n;
	float lr, momentum, weight_decay, beta1, beta2, eps;
	int64_t t; /* AdamW step, from 1 */
};

struct sf_model {
	sf_context *ctx;
	struct sf_config cfg;
	struct sf_model_options opt;
	int nranks, rank;
	int nnodes;
	struct _sf_node *gnodes; /* copy of the graph's nodes (configs owned) */
	struct _sf_node_state *nodes;
	int loss_node, labels_node;
	int ninputs;
	int *input_nodes; /* ninputs node ids in creation order */
	int nunits;
	struct _sf_unit *units;
	size_t nparams_total, largest_P, largest_NS;
	int B_global, B_local, row0;

	/* gather ring (full sharding): R slots of N*S_max floats */
	int R;
	float *ring;
	starpu_data_handle_t h_ring[SF_MAX_DEPTH + 1];
	int ring_unit[SF_MAX_DEPTH + 1]; /* planner state while submitting a step */

	float *comm_scratch; /* see struct _sf_comm_args::scratch */

	/* gradient ring: bwd(u) writes slot (backward index) % SF_GRAD_SLOTS */
	float *grad;
	starpu_data_handle_t h_grad[SF_GRAD_SLOTS];

	starpu_data_handle_t h_order; /* comm order: every collective accesses it RW */
	float noparams;               /* stands for the parameters of a backward without */
	starpu_data_handle_t h_noparams;

	int32_t *labels;
	starpu_data_handle_t h_labels;
	struct _sf_loss_args loss_args;
	struct _sf_comm_args loss_comm;
	double loss_val[SF_LOSS_SLOTS];
	starpu_data_handle_t h_loss[SF_LOSS_SLOTS];

	int64_t nsteps;
	float lr;
	struct _sf_trace *trace; /* NULL unless SHARDFLOW_TRACE is set */
	atomic_int resident, max_resident;
	struct _sf_comm_acct comm_acct;
	double comm_worker_cpu0; /* the comm worker thread's CPU clock at model creation */
};

int _sf_step_submit(struct sf_model *m);

/* ---- host access to a unit's state (scheduler/model.c), for checkpoints --------- */

/* The logical vectors of a unit, each P floats whatever the sharding: parameters,
 * first moment (AdamW m, SGD momentum buffer) and second moment (AdamW v). */
enum _sf_vec { SF_VEC_PARAM = 0, SF_VEC_M, SF_VEC_V };

/* true when the model's optimizer keeps vector `which` (V: AdamW only). */
bool _sf_vec_exists(const struct sf_model *m, enum _sf_vec which);
/* Copies this rank's slice [rank*S, rank*S + S) of vector `which` of unit u into
 * dst (S floats; zeros past P). Call after sf_model_sync(). */
int _sf_unit_get_slice(struct sf_model *m, int u, enum _sf_vec which, float *dst);
/* Sets this rank's copy of vector `which` of unit u (its shard, or the whole
 * replica) from src, the unit's whole logical vector (P floats). Call after
 * sf_model_sync(). */
int _sf_unit_set_full(struct sf_model *m, int u, enum _sf_vec which, const float *src);

/* Writes all n bytes / reads exactly n bytes at offset off (scheduler/fileio.c); a
 * short write or read is an SF_ERR_IO naming `path`. */
int _sf_write_all(int fd, const void *buf, size_t n, const char *path);
int _sf_read_at(int fd, void *buf, size_t n, off_t off, const char *path);
/* Syncs a directory, so that a rename in it is durable. */
int _sf_fsync_dir(const char *dir);
/* The end of an atomic write: syncs and closes fd (always closed), renames tmp to
 * path, syncs `dir`; on failure tmp is removed and path untouched. */
int _sf_commit_file(int fd, const char *tmp, const char *path, const char *dir);

/* Every rank returns the same status; the failing rank's message is recorded on the
 * others (scheduler/checkpoint.c). Collective on ctl_comm. */
int _sf_agree(struct sf_model *m, int rc, const char *what);

/* ---- built-in trace (scheduler/trace.c) ------------------------------------------ */

struct sf_event;
int _sf_trace_init(struct sf_model *m);
void _sf_trace_free(struct sf_model *m);
/* A record for a task about to be submitted, or NULL when not tracing. */
struct sf_event *_sf_trace_reserve(struct sf_model *m, const char *name, int kind, int layer);
void _sf_trace_task_done(void *record); /* the task's callback */
bool _sf_trace_pending(const struct sf_model *m);

/* ---- codelets (tasks/) -------------------------------------------------------------- */
#include "tasks/codelets.h"

#endif
