/*
 * model.h — a graph made into a model: units, shards, buffers and handles
 * (scheduler/model.c; its layout, storage and host access: model_layout.h,
 * model_storage.h, model_access.h), and the step planner that submits its tasks
 * (step.c, plan.c).
 *
 * Shape letters: B local samples, T rows per sample, N ranks, P parameters of a unit,
 * S = ceil(P / N) its shard. A unit is the set of parameters gathered, reduced and
 * updated together: by default one node with parameters, or a group of nodes
 * (sf_graph_unit_begin). Units are numbered by first use in forward order.
 */
#ifndef SF_SCHEDULER_MODEL_H
#define SF_SCHEDULER_MODEL_H

#include "layers/layer.h"
#include "layers/loss.h"
#include "layers/softmax_xent.h"
#include "layers/xent_vp.h"
#include "scheduler/runtime.h"
#include "comm/comm.h"
#include "comm/comm_codelets.h"
#include "tasks/cp_attention.h"
#include "tasks/grad.h"
#include "tasks/optim.h"

#include <starpu.h>
#include <stdatomic.h>
#include <stdbool.h>

#define SF_LOSS_SLOTS 16
#define SF_GRAD_SLOTS 2 /* gradient slots of a chain of units, used in turn */
#define SF_DW_DEFER (-2) /* dw_before: a weight gradient of the pass's deferred tasks */
/* The most units in use at once (sf_model::width) that a model may have: it bounds the
 * ring (depth + width slots) and the gradient slots (SF_GRAD_SLOTS + width - 1), whose
 * handle arrays below are sized for it; sf_model_create refuses a wider graph. */
#define SF_MAX_WIDTH 8

struct _sf_recorder;
struct _sf_pipeline;

/* A run of the graph a pass walks (scheduler/pipeline.c): nodes [node_lo, node_hi),
 * their units fwd_order[unit_lo .. unit_hi) and bwd_order[bwd_lo .. bwd_hi) */
struct _sf_span {
	int node_lo, node_hi, unit_lo, unit_hi, bwd_lo, bwd_hi;
};
struct _sf_ckpt_lock;
struct _sf_ckpt_async;

struct _sf_unit {
	char name[SF_NAME_MAX]; /* the group's name, or its node's */
	int first;              /* first node (forward order) reading the unit */
	int last;               /* last node (forward order) reading the unit */
	bool bwd_params;        /* some node's backward reads the parameters */
	bool keep;              /* stays gathered from forward to backward (full) */
	bool no_reshard;        /* its options: kept gathered whatever the ring (full) */
	bool keep_fp32;         /* its options: fp32 on the wire and in products */
	bool frozen;            /* its options: no gradient, no optimizer state, no update */
	int bwd_first, bwd_last; /* the first and last node its backward runs (reverse
	                            order: bwd_first > bwd_last), -1: none (_sf_plan_gradients) */
	bool recompute;         /* its segment's inner activations are recomputed */
	bool bwd_wrote;         /* backward(): a task of this pass has written its gradient
	                           slot (the next writes add or fill other slices) */
	int seg_end;            /* its segment: nodes [first, seg_end) (recompute) */
	size_t P, S, off; /* off: first parameter in the model's unpadded vector */
	size_t Pw, woff;  /* the same in the whole model's layout (with TP, every TP rank's
	                     slices together; else P and off) */
	size_t opt_n;     /* elements the optimizer updates: S (sharded) or P */
	int stage;        /* SHARDFLOW_PP: the pipeline stage holding it (0 without one) */
	bool elsewhere;   /* SHARDFLOW_PP: another stage's: this rank keeps none of its
	                     vectors (model_storage.c) */
	/* SHARDFLOW_PP: read on the first and the last stage (a tied embedding and head;
	 * GPT's wpe and ln_f): both stages hold it (stage 0, whose files hold it), each
	 * reduces its readers' gradient, the two sums are added point to point at the
	 * step's end and both apply the same update (scheduler/pipeline.c) */
	bool pp_shared;
	/* this rank's passes (step.c, plan.c's replays): its place in fwd_order, and its
	 * last reader in the forward (last; with a pipeline, the stage's last) */
	int fwd_pos, fwd_last;
	/* FSDP's vocabulary-parallel tied unit (scheduler/vocabdp.c): its shard is whole
	 * rows of the vocabulary (S a multiple of vocab_row_len floats), which the
	 * embedding and the head read in place: never gathered (no ring slot, no h_full),
	 * its gradient this rank's rows' whole sum (no reduce-scatter) */
	bool vocab_rows;
	size_t vocab_row_len;
	float *shard;     /* S: owned parameters (full, grad_op) */
	float *full;      /* N*S or P: resident parameters (grad_op, none) */
	float *gshard;    /* S: reduced gradient (full, grad_op) */
	float *m, *v;     /* optimizer state, opt_n each (v: AdamW only) */
	float *acc;       /* P: the micro-batches' local sum (SHARDFLOW_ACCUM_MODE=local) */
	double sq;        /* this rank's share of the squared gradient norm (clipping) */
	/* SHARDFLOW_TP > 1: the runs of its gradient buffer this rank counts in the norm
	 * (a parameter every TP rank holds counts on TP rank 0 only), and their sums
	 * (h_sq: nsq_segs doubles); 0 runs: sq, the shard's (or block's) whole sum */
	struct _sf_seg *sq_segs;
	int nsq_segs;
	double *sqv;
	struct _sf_opt_run *runs; /* the parameter groups' runs of [0, opt_n) (_sf_opt_args) */
	int nruns;
	struct _sf_lr_range *lr;  /* nlr tensors' learning-rate scales (not 1) */
	int nlr;
	starpu_data_handle_t h_shard, h_full, h_gshard, h_m, h_v, h_acc, h_sq;
	struct _sf_comm_args comm;
	/* its tasks' names, "gather <name> (L<first>)" (trace/event.h) */
	char gather_name[SF_NAME_MAX + 32], rs_name[SF_NAME_MAX + 32];
	char opt_name[SF_NAME_MAX + 32], free_name[SF_NAME_MAX + 32];
	char ag_name[SF_NAME_MAX + 32], acc_name[SF_NAME_MAX + 32], sq_name[SF_NAME_MAX + 32];
	char ar_name[SF_NAME_MAX + 32];
};

/* The floats of unit u's gradient a pass computes on this rank: its P, or a
 * vocabulary-parallel unit's shard of whole rows (scheduler/vocabdp.c), S */
static inline size_t _sf_unit_grad_n(const struct _sf_unit *u)
{
	return u->vocab_rows ? u->S : u->P;
}

/* A tensor's learning-rate scale (sf_model_tensor_lr_scale): parameters [off, off +
 * count) of its unit */
struct _sf_lr_range {
	size_t off, count;
	float scale;
};

/* What of a node's buffers this rank keeps: all (without a pipeline, every node);
 * with SHARDFLOW_PP (scheduler/pipeline.c) a stage keeps its own nodes' and the inputs
 * it reads, the activation and its gradient of what it reads from the stage before
 * (the boundary), and nothing of the other nodes. */
enum _sf_node_hold { SF_HOLD_ALL = 0, SF_HOLD_BOUNDARY, SF_HOLD_NONE };

struct _sf_node_state {
	float *act, *dact; /* (B*T, dim); int inputs and labels: act holds int32 */
	float *saved;      /* info.nsaved floats, or NULL */
	starpu_data_handle_t h_act, h_dact, h_saved;
	struct sf_layer_info info;     /* what the forward kernel receives */
	struct sf_layer_info bwd_info; /* what the backward kernel receives */
	int unit;                      /* unit whose parameters the node reads, or -1 */
	bool needs_grad;               /* some parameter depends on this node's output */
	enum _sf_node_hold hold;       /* which of the buffers above this rank keeps */
	int recomp_buf;                    /* SHARDFLOW_RECOMPUTE: the shared buffers its act,
	                                  dact and saved are in (m->recomp_bufs), or -1: its own */
	bool rerun; /* a recomputed node whose forward runs again before its backward: some
	               backward, or another rerun, reads what it writes (plan.c) */
	/* its tasks' names, "fwd <name> (<type> L<n>)" (trace/event.h) */
	char fwd_name[2 * SF_NAME_MAX + 32], bwd_name[2 * SF_NAME_MAX + 32];
	char rc_name[2 * SF_NAME_MAX + 32];
	/* SHARDFLOW_SPLIT_BACKWARD (scheduler/plan.c): the node before whose backward this
	 * node's weight-gradient half runs, SF_DW_DEFER (the zero-bubble schedule) when it
	 * runs in the pass's weight-gradient tasks after the input gradients, or -1 when
	 * its backward is one task; when split, bwd_info is the input-gradient half
	 * (dparams_absent) and dw_info the other */
	int dw_before;
	struct sf_layer_info dw_info;
	char dw_name[2 * SF_NAME_MAX + 40];
	/* tensor parallelism (layers/tp.c): the graph's whole width and parameter count
	 * (the node's gnodes entry holds this rank's), whether its output is split over
	 * the TP group, and its activation all-reduce: a linear_row's (or an
	 * embedding_vp's) output after its forward, or a linear_col's input gradient, which its backward writes (a
	 * partial sum) into tpbuf (rows x the input's width) to be summed into the
	 * input's gradient (tp_comm.tp_acc: added to it) */
	int whole_dim;
	size_t whole_nparams;
	size_t wpoff; /* where its whole parameters start in its unit's whole vector */
	bool tp_out_split;
	bool tp_fwd_ar, tp_bwd_ar;
	float *tpbuf;
	starpu_data_handle_t h_tpbuf;
	struct _sf_comm_args tp_comm;
	/* a linear_col's gather_output: its kernel's own output (rows x O / K) and the
	 * gradient of it the backward reads, the all-gather's and the slice's arguments and
	 * every TP rank's runs of columns */
	bool tp_gather;
	float *tpbuf_o, *tpbuf_do;
	starpu_data_handle_t h_tpbuf_o, h_tpbuf_do;
	struct _sf_comm_args tp_gcomm;
	struct _sf_tp_run *tp_runs;
	char tp_ag_name[2 * SF_NAME_MAX + 40], tp_sl_name[2 * SF_NAME_MAX + 40];
	char tp_name[2 * SF_NAME_MAX + 40];
	/* sequence parallelism (scheduler/seqpar.c): act_rows, the rows of its activation,
	 * its gradient (and, sp, its saved buffer): rows_local, or this TP rank's
	 * rows_local / K when sp (a row-split node). sp_rs: a linear_row's (embedding_vp's)
	 * partial output, written whole into m->sp_out and reduce-scattered into its rows;
	 * its dout's rows all-gathered into m->sp_out for its backward (sp_rows). sp_in: a
	 * linear_col (a tied vocabulary head) of a row-split input, all-gathered into
	 * m->sp_in before its forward and again before its backward (sp_irows), its
	 * partial input gradient reduce-scattered. sp_scatter: whole, read by row-split
	 * nodes: its rows copied into sp_act after its forward, and sp_dact (their
	 * gradients) all-gathered into its gradient before its backward (sp_rows).
	 * sp_gather: row-split, read by whole layers: its rows all-gathered into sp_act
	 * (whole) after its forward, and its rows of sp_dact (their gradient) copied into
	 * its gradient before its backward (sp_rows). sp_psum:
	 * row-split with parameters: their gradient, a sum over this rank's rows only, is
	 * all-reduced over the TP group after its backward (sp_pcomm). */
	size_t act_rows;
	bool sp, sp_rs, sp_in, sp_scatter, sp_gather, sp_psum;
	float *sp_act, *sp_dact;
	starpu_data_handle_t h_sp_act, h_sp_dact;
	struct _sf_comm_args sp_rows, sp_irows, sp_pcomm;
	struct _sf_tp_run *sp_runs; /* K runs of sp_rows, then K of sp_irows */
	char sp_rs_name[2 * SF_NAME_MAX + 40];
	/* context parallelism (scheduler/ctxpar.c): an attention node's ring (cp_ring): its
	 * shapes, its K forward and K backward parts' arguments (cp_args: part j at j,
	 * the backward's at K + j, the pack and unpack's at 2K), the ring steps' (cp_comm:
	 * P the packed block's floats) */
	bool cp_ring;
	struct _sf_cp_attn_geom cp_geom;
	struct _sf_cp_attn_args *cp_args;
	struct _sf_comm_args cp_comm;
	char cp_ring_name[2 * SF_NAME_MAX + 40], cp_pack_name[2 * SF_NAME_MAX + 40];
	/* FSDP's vocabulary-parallel tied unit (scheduler/vocabdp.c): the embedding's or
	 * the head's kernels see the shard group's rows and this rank's classes (dpv_info,
	 * dpv_bwd_info), while info keeps the node's own shapes (the whole layer's) */
	bool dpv;
	struct sf_layer_info dpv_info, dpv_bwd_info;
};

/* Activation recompute: one position of a group of like segments, in one of its two
 * sets (see scheduler/plan.c). */
struct _sf_recomp_buf {
	size_t nact, nsaved; /* floats */
	float *act, *dact, *saved;
	starpu_data_handle_t h_act, h_dact, h_saved;
};

/* The planner's state while submitting a pass (scheduler/plan.c): which unit holds
 * each ring slot and gradient slot, and the free slots in the order they were freed
 * (first freed, first reused: a chain of units uses the slots in turn). */
struct _sf_slots {
	int n;
	int holder[SF_MAX_DEPTH + SF_MAX_WIDTH]; /* unit in slot s, or -1 */
	int fifo[SF_MAX_DEPTH + SF_MAX_WIDTH];   /* free slots, oldest first */
	int nfree;
};

struct sf_model {
	sf_context *ctx;
	struct _sf_comm *comm;
	struct sf_config cfg;
	struct sf_model_options opt;
	int nranks, rank; /* the world */
	/* SHARDFLOW_TP: K ranks of a TP group, this rank's place in it; the data-parallel
	 * ranks (world / K, this rank's rank / K): the batch is split over them */
	int tp, tp_rank, dp_size, dp_rank;
	size_t tp_max;              /* floats of the largest activation a TP all-reduce sums */
	float *tp_scratch;          /* the TP ring's copy and block (tp_comm.tp_scratch) */
	/* SHARDFLOW_SEQUENCE_PARALLEL (scheduler/seqpar.c): on; the whole rows (rows_local x
	 * the widest) a linear_col's gathered input (sp_in) and a linear_row's partial
	 * output or gathered output gradient (sp_out) take, one each, shared in turn */
	/* SHARDFLOW_CP (scheduler/ctxpar.c): the CP group's size and this rank's place in
	 * it; T is then this rank's rows of a sample, T_ctx / cp (T_ctx: the graph's
	 * context). The ring's buffers, shared by the attention nodes in turn: two packed
	 * key/value blocks, two of their gradients and two of a part's share of one
	 * (cp_kv_n floats each: the largest node's), the backward's row sums (cp_dsum_n); cp_batch: this rank's chunks of a
	 * batch (its inputs, ids and labels), sliced from the whole samples a caller gives */
	int cp, cp_rank, T_ctx;
	size_t cp_kv_n, cp_dsum_n;
	float *cp_kv, *cp_dkv, *cp_dloc, *cp_dsum; /* two slots each of the first three */
	starpu_data_handle_t h_cp_kv[2], h_cp_dkv[2], h_cp_dloc[2], h_cp_dsum;
	void **cp_in;               /* the slices: inputs, ids, then labels */
	const float **cp_inp;       /* the slice's struct sf_batch arrays */
	const int32_t **cp_idp;
	bool sp;
	size_t sp_in_n, sp_out_n;
	float *sp_in, *sp_out;
	starpu_data_handle_t h_sp_in, h_sp_out;
	int shard_size, shard_rank; /* the shard group (the world, or a node with hybrid sharding) */
	/* FSDP's vocabulary-parallel tied unit (scheduler/vocabdp.c): on; the embedding
	 * and the tied head (their unit is marked vocab_rows); the TP codelets' scratch
	 * over the shard group
	 * (tp_scratch's floats); the group's ids (shard_size x rows_local), which the
	 * embedding reads (the labels buffer then holds the group's labels too) */
	bool dpv;
	int dpv_emb, dpv_head;
	size_t dpv_scratch_n;
	int32_t *dpv_ids;
	starpu_data_handle_t h_dpv_ids;
	/* SHARDFLOW_PP (scheduler/pipeline.c): pp_size stages, this rank's pp_stage, the
	 * micro-batches a step takes (pp_micro; 1 without a pipeline: B_local and
	 * rows_local are then a micro-batch's), and the span the passes of step.c and
	 * plan.c's replays walk: the stage's nodes [node_lo, node_hi), its units
	 * fwd_order[unit_lo .. unit_hi) and bwd_order[bwd_lo .. bwd_hi) (without a
	 * pipeline: the whole graph). pp_step: the pipeline's step, which sf_model_step hands a step to
	 * (set by the pipeline, which step.c does not call), pp_predict the same for
	 * sf_model_predict; pp_loss: where the loss task
	 * writes (a micro-batch's loss), NULL: the step's loss slot. */
	int pp_size, pp_stage, pp_micro;
	/* the sets of the layers' activations, gradients and saved buffers this rank
	 * keeps (1 without a pipeline; the inputs have pp_micro): the memory plan's */
	int act_sets;
	/* the zero-bubble schedule: a backward pass submits its input gradients only
	 * (_sf_backward_submit, every unit's gradient slot kept) and the pipeline its
	 * weight gradients and reductions after (_sf_backward_dw_submit) */
	bool dw_defer;
	int node_lo, node_hi, unit_lo, unit_hi, bwd_lo, bwd_hi;
	/* the spans this rank's passes walk (_sf_span_set): one (the stage's, or without a
	 * pipeline the whole graph), or under the interleaved schedule one a chunk */
	struct _sf_span spans[SF_MAX_PP_VIRTUAL];
	int nspans;
	int pp_emax; /* the most tensors crossing from one chunk (or stage) to the next */
	struct _sf_pipeline *pp;
	int (*pp_step)(struct sf_model *m, const struct sf_batch *b, int64_t *ticket);
	int (*pp_predict)(struct sf_model *m, const struct sf_batch *b, float *logits);
	starpu_data_handle_t pp_loss;
	int nrep;         /* replicas of each shard (hybrid: nodes; else 1) */
	int nnodes;
	/* simulation: the unit vectors and model_bufs are mappings nothing writes
	 * (scheduler/model_storage.c, alloc_task_only) */
	bool bufs_task_only;
	struct _sf_node *gnodes; /* copy of the graph's nodes (configs owned) */
	struct _sf_node_state *nodes;
	int loss_node, labels_node;
	int ninputs, nint_inputs;
	int *input_nodes;     /* ninputs float input node ids in creation order */
	int *int_input_nodes; /* nint_inputs integer input node ids */
	int nunits;
	struct _sf_unit *units;
	int *bwd_order; /* units in the order the backward pass first meets them */
	int *fwd_order; /* units in the order the forward pass first meets them (0 .. U - 1;
	                   a pipeline: its stage's, [unit_lo, unit_hi)) */
	int width;      /* most units in use at once (1 for a chain) */
	size_t nparams_total, largest_P, largest_NS;
	size_t nparams_whole; /* the model's (with TP: nparams_total is this rank's slices') */
	int T;                           /* rows per sample */
	int B_global, B_local, row0;     /* samples */
	int sample_base;                 /* messages: the pass's first sample (infer.c) */
	size_t rows_local;               /* B_local * T */
	size_t act_bytes;                /* activations, their gradients, saved buffers */
	int *seg_of;                     /* node -> the unit whose segment holds it, or -1 */
	int nrecomp_bufs;                    /* SHARDFLOW_RECOMPUTE's shared buffers */
	struct _sf_recomp_buf *recomp_bufs;

	/* gather ring (full sharding): R = depth + width slots, slot s of ring_len[s]
	 * floats: N*S of the largest unit it ever holds (plan.c, _sf_plan_slots) */
	int R;
	float *ring;
	size_t ring_len[SF_MAX_DEPTH + SF_MAX_WIDTH];
	starpu_data_handle_t h_ring[SF_MAX_DEPTH + SF_MAX_WIDTH];
	struct _sf_slots ring_slots;
	struct _sf_footprint_as ring_fp; /* every ring slot's performance-model key: the
	                                    largest slot's length (tasks/submit.h) */

	float *comm_scratch; /* see struct _sf_comm_args::scratch */
	float *stage16; /* N S_max bf16 (in floats): gathers with SHARDFLOW_PARAM_DTYPE=bf16 */
	float *rep_scratch;  /* hybrid: see struct _sf_comm_args::rep_scratch */

	/* gradient slots: G = SF_GRAD_SLOTS + width - 1, slot s of grad_len[s] floats: the
	 * whole gradient of the largest unit it ever holds (plan.c, _sf_plan_slots) */
	int G;
	float *grad;
	size_t grad_len[SF_GRAD_SLOTS + SF_MAX_DEPTH + SF_MAX_WIDTH];
	starpu_data_handle_t h_grad[SF_GRAD_SLOTS + SF_MAX_DEPTH + SF_MAX_WIDTH];
	struct _sf_slots grad_slots;
	struct _sf_footprint_as grad_fp; /* the same for the gradient slots */

	starpu_data_handle_t h_order; /* comm order: every collective accesses it RW */
	float noparams;               /* stands for the parameters of a backward without */
	starpu_data_handle_t h_noparams;

	int32_t *labels;
	starpu_data_handle_t h_labels;
	int loss_kind;                         /* enum sf_loss_kind of the graph's loss */
	struct _sf_loss_args loss_args;        /* cross-entropy's */
	int64_t counted; /* the last staged batch's rows that count, over the ranks */
	struct _sf_reg_loss_args reg_loss_args; /* MSE, L1, Huber's */
	struct _sf_comm_args loss_comm;
	/* the vocabulary-parallel cross-entropy (SHARDFLOW_TP, the logits split over the TP
	 * group: layers/xent_vp.h): its kernels' arguments, this rank's partials (rows x 3)
	 * and the group's all-gathered (K x rows x 3), the all-gather's arguments (one run a
	 * TP rank: vp_runs) */
	bool vp;
	struct _sf_xent_vp_args vp_args;
	float *vp_stats, *vp_all;
	starpu_data_handle_t h_vp_stats, h_vp_all;
	struct _sf_comm_args vp_comm;
	struct _sf_tp_run *vp_runs;
	char vp_fwd_name[48], vp_ag_name[48]; /* "fwd loss (xent_vp L<n>)", "tp_ag loss ..." */
	double loss_val[SF_LOSS_SLOTS];
	starpu_data_handle_t h_loss[SF_LOSS_SLOTS];

	int64_t nsteps;   /* tickets issued: steps and accumulated micro-batches */
	int64_t nupdates; /* optimizer updates (sf_model_step calls): AdamW's t - 1 */
	int accum_k;      /* micro-batches accumulated since the last update */
	int grad_mean_of; /* micro-batches the last update's gradient summed (0: none yet) */
	bool update;      /* the pass being submitted ends in an update (a step) */
	float *rstmp;     /* S_max: a micro-batch's reduced shard before it is added */
	starpu_data_handle_t h_rstmp;

	/* clipping: {norm, factor} of each step, slots as the losses; h_one = {0, 1} is
	 * what the optimizer reads when the model does not clip */
	double clip_val[SF_LOSS_SLOTS][2];
	int64_t clip_ticket[SF_LOSS_SLOTS];
	starpu_data_handle_t h_clip[SF_LOSS_SLOTS];
	double one[2];
	starpu_data_handle_t h_one;
	/* the norm task's inputs: every unit's h_sq in order, and room for its nunits + 2
	 * buffer descriptors (comm/comm_codelets.h), made once */
	starpu_data_handle_t *h_sqs;
	struct starpu_data_descr *norm_descr;
	float lr;
	struct _sf_recorder *trace; /* NULL unless SHARDFLOW_TRACE is set */
	int64_t trace_written;      /* nsteps at the last sf_model_trace_write */
	atomic_int resident, max_resident;
	struct _sf_comm_acct comm_acct;
	double comm_worker_cpu0; /* the comm worker thread's CPU clock at model creation */
	/* the checkpoint directories rank 0 holds locked (io/checkpoint_lock.c, through
	 * model_access.h), released at destroy through ckpt_unlock: a pointer io sets
	 * (_sf_model_ckpt_hook_set), as scheduler/ calls nothing in io/ */
	struct _sf_ckpt_lock *ckpt_locks;
	void (*ckpt_unlock)(struct sf_model *m);
	/* the asynchronous save (io/checkpoint_save.c): its snapshot and writer, ended
	 * at destroy through ckpt_async_end, before the locks go */
	struct _sf_ckpt_async *ckpt_async;
	void (*ckpt_async_end)(struct sf_model *m);
};

/* ---- the planner (scheduler/plan.c: units and slots; step.c: the passes) -------- */

/* Numbers the units, groups their nodes, sets each node's unit and parameter offset,
 * and derives the forward/backward orders, the width and what stays gathered. */
int _sf_plan_units(struct sf_model *m, const struct sf_graph *g);
/* Which node inputs and parameters need a gradient, "=" or "+=" (backward order). */
int _sf_plan_gradients(struct sf_model *m);
/* SHARDFLOW_RECOMPUTE=units: the segments, the nodes whose activations are dropped
 * and the shared buffers they use (sizes only: model_storage.c allocates). */
int _sf_plan_recompute(struct sf_model *m);
/* SHARDFLOW_SPLIT_BACKWARD and the zero-bubble schedule: which nodes' backward runs as
 * two tasks (dw_before), and m->dw_defer. */
void _sf_plan_split_backward(struct sf_model *m);
/* Each ring slot's and gradient slot's length (ring_len, grad_len): the passes' slot
 * bookkeeping replayed, each slot sized by the largest unit it ever holds. After the
 * units' geometry (_sf_size_units), before the memory plan. */
void _sf_plan_slots(struct sf_model *m);
/* Floats unit u needs in a ring slot and in a gradient slot */
size_t _sf_ring_need(const struct sf_model *m, int u);
size_t _sf_grad_need(const struct sf_model *m, int u);

void _sf_slots_reset(struct _sf_slots *s, int n);
/* A free slot for unit u (the oldest freed), or -1 when none is free. */
int _sf_slots_take(struct _sf_slots *s, int u);
void _sf_slots_release(struct _sf_slots *s, int slot);
/* The slot holding unit u, or -1. */
int _sf_slots_find(const struct _sf_slots *s, int u);

/* The passes' span (m->node_lo ..): span i of m->spans, or (i < 0) the first span's
 * nodes and every span's units, for what walks this rank's units, not its nodes (the
 * step's end: updates, gathers after them; plan.c's ring sizes) */
static inline void _sf_span_set(struct sf_model *m, int i)
{
	const struct _sf_span *a = &m->spans[i < 0 ? 0 : i], *z = &m->spans[m->nspans - 1];
	m->node_lo = a->node_lo, m->node_hi = a->node_hi;
	m->unit_lo = a->unit_lo, m->unit_hi = i < 0 ? z->unit_hi : a->unit_hi;
	m->bwd_lo = a->bwd_lo, m->bwd_hi = i < 0 ? z->bwd_hi : a->bwd_hi;
}

/* The sets of node n's buffers a pipeline keeps (scheduler/pipeline.c; 1 without
 * one): an input's pp_micro (a step stages them all first), a layer's act_sets, but
 * under the interleaved schedule the boundary's pp_micro (the gradient it sends back is
 * waited for at the step's end only, never before a rewrite) */
static inline int _sf_node_sets(const struct sf_model *m, int n)
{
	if (m->gnodes[n].kind != SF_NODE_LAYER ||
	    (m->cfg.pp_schedule == SF_PP_INTERLEAVED && m->nodes[n].hold == SF_HOLD_BOUNDARY))
		return m->pp_micro;
	return m->act_sets;
}

int _sf_step_submit(struct sf_model *m);
int _sf_forward_submit(struct sf_model *m, bool train);
/* A training step's backward pass alone (_sf_step_submit's second part), without
 * the step's end; then _sf_update_submit: with clipping the norm's all-reduce and
 * every update, with grad_op the updated shards' gathers (when m->update). The
 * pipeline (scheduler/pipeline.c) runs them apart: its stages' transfers go between. */
int _sf_backward_submit(struct sf_model *m);
/* With m->dw_defer, after _sf_backward_submit: the pass's deferred weight-gradient
 * tasks, then each unit's reduction (and update) and its gradient slot's release. */
int _sf_backward_dw_submit(struct sf_model *m);
int _sf_update_submit(struct sf_model *m);
/* A pipeline's shared unit u (pp_shared), its whole gradient in its shard's buffer
 * (both stages' sums added, at the step's end): its update, or with clipping its
 * share of the norm where `counted` (the first stage's; the update then comes with
 * every unit's in _sf_update_submit). finish_reduction's, which leaves such a unit. */
int _sf_unit_reduced(struct sf_model *m, int u, bool counted);
/* The step's loss summed over the ranks (into its slot, m->nsteps) */
int _sf_loss_sum_submit(struct sf_model *m);
/* Checks a batch of this rank's rows on every rank, agrees on the outcome (one rank's
 * bad batch fails every rank with its message) and copies it into the model's input
 * handles (and labels, with `labels`); fn names the caller in messages. */
int _sf_stage_batch(struct sf_model *m, const struct sf_batch *b, bool labels, const char *fn);

#endif
