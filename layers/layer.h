/*
 * layer.h — graphs and the table of layer types, as the rest of the library sees them.
 *
 * layers/ knows what each op is and computes: one family of files per op
 * (<op>.c: shape, init, parameter names and the thin CPU codelet bodies; <op>_cpu.c:
 * the math on plain pointers; <op>.h: both, declared), the registry of types
 * (registry.c) and the graph builder (graph.c). It knows nothing of units, shards,
 * StarPU tasks or communication. Adding an op: its family, plus one line in
 * registry.c's list of built-in types.
 */
#ifndef SF_LAYERS_LAYER_H
#define SF_LAYERS_LAYER_H

#include "common/error.h"

#include <stdbool.h>
#include <stddef.h>

enum _sf_node_kind {
	SF_NODE_INPUT,     /* float input (rows, dim) */
	SF_NODE_INT_INPUT, /* integer ids (rows), in [0, dim) */
	SF_NODE_LABELS,    /* class labels (rows), in [0, dim) */
	SF_NODE_LAYER,     /* a node of a registered layer type */
	SF_NODE_LOSS,      /* softmax cross-entropy of in[0] against in[1] (labels) */
};

#define SF_MAX_LAYER_TYPES 64

/* A built-in type's accepted config sizes (sf_layer_type::config_sizes), in its
 * initialiser: SF_CONFIG_SIZES(0, sizeof(struct sf_layernorm_config)); 0 is "no
 * config". Every built-in lists its sizes, so none reads past a short config. */
#define SF_CONFIG_SIZES(...)                                                                       \
	.nconfig_sizes = (int)(sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t)),                  \
	.config_sizes = {__VA_ARGS__}

/* How a node takes a tensor-parallel split of its inputs (layers/tp.c): a split
 * activation holds this rank's slice of its columns. */
enum _sf_tp_kind {
	SF_TP_NONE,        /* whole inputs only (a user's type, the norms, embeddings) */
	SF_TP_ELEMENTWISE, /* inputs all split or all whole; the output as they are */
	SF_TP_HEADS,       /* attention: a split input holds this rank's heads */
	SF_TP_ROPE,        /* rope: a split input holds this rank's heads, rotated alike */
	SF_TP_COL,         /* linear_col: a whole input, a split output */
	SF_TP_ROW,         /* linear_row: a split input, a whole output (all-reduced) */
	SF_TP_VOCAB,       /* embedding_vp: a slice of the rows of W; its partial output
	                      (zeros for the ids of other slices) all-reduced */
};

/* A registered layer type. The table never shrinks: entries stay valid. */
struct _sf_layer_entry {
	struct sf_layer_type type;
	char name[SF_NAME_MAX];
	int index;            /* position in the table */
	bool splits_backward; /* built-in: its backward can run as an input-gradient half
	                         (info.dparams_absent) and a weight-gradient half */
	enum _sf_tp_kind tp;  /* built-in: how it takes a TP split; else SF_TP_NONE */
	bool builtin;         /* one of the library's own types (SHARDFLOW_CP knows them) */
	bool rows_alone;      /* built-in: each output row depends on its input rows only (the
	                         norms, the element-wise ops): SHARDFLOW_SEQUENCE_PARALLEL's */
	/* what its backward kernels read of the forward's activations: its inputs', its own
	 * output (true for a user's type: not known; false for the built-ins that do not,
	 * add and the linears' output), so that SHARDFLOW_RECOMPUTE runs again only the
	 * forwards whose results a backward reads (scheduler/plan.c) */
	bool bwd_reads_inputs, bwd_reads_output;
	/* the name of its whole parameters' layout, which a checkpoint's structure hash
	 * takes: "linear" for every linear type (linear, linear_nobias, linear_split,
	 * linear_col, linear_row: W (out x in) rows, then the bias if any), so that a model
	 * built with linear_col/linear_row at tp > 1 resumes at tp 1 where its builder takes
	 * linear/linear_split, and back; the type's own name otherwise */
	const char *layout;
};

struct _sf_node {
	enum _sf_node_kind kind;
	char name[SF_NAME_MAX];
	const struct _sf_layer_entry *type; /* SF_NODE_LAYER */
	int nin;
	int in[SF_MAX_INPUTS];
	int dim;        /* output width (labels, int inputs: the id range) */
	size_t nparams; /* P read by this node (its own, or its owner's when tied) */
	int tied_to;    /* -1, or the node whose parameters this node uses */
	int group;      /* sf_graph_unit_begin group, or -1 (a unit of its own) */
	void *config;   /* owned copy of the user's config */
	size_t config_size;
	/* a unit of its own (group -1, parameters of its own): its sf_graph_unit_options */
	struct sf_unit_options unit_opts;
};

struct sf_graph {
	char name[SF_NAME_MAX];
	int n, cap;
	struct _sf_node *nodes;
	int seq_len;     /* T, default 1 */
	int ninputs;     /* float inputs */
	int nint_inputs; /* integer inputs */
	int labels;      /* node id or -1 */
	int loss;        /* node id or -1 */
	int ngroups;
	char (*group_names)[SF_NAME_MAX];
	struct sf_unit_options *group_opts; /* each group's (sf_graph_unit_options) */
	int open_group; /* -1 or the group being filled */
	/* sf_model_create made a model of it: its unit options are fixed from then on */
	bool model_made;
};

/* sf_model_create's record that it made a model of g: from then on the graph refuses
 * unit options (the model has copied them, and is not changed by its graph). */
void _sf_graph_model_made(const sf_graph *g);
/* The type named `name`, or NULL (after making sure the built-ins are registered). */
const struct _sf_layer_entry *_sf_layer_find(const char *name);
/* "linear, linear_nobias, ...": every registered type's name, built-in ones first, in
 * out (truncated to size). */
void _sf_layer_type_names(char *out, size_t size);
/* Registers the built-in types once (every op family's line is in registry.c). */
int _sf_layers_builtin_init(void);
/* The node owning the parameters node n reads: n itself, or the node it is tied to. */
int _sf_node_param_owner(const struct _sf_node *nodes, int n);
/* The named tensors of a node's parameters (struct sf_param_tensor), at most
 * SF_MAX_PARAM_TENSORS; a type without param_tensors gives one "params" tensor. */
int _sf_node_param_tensors(const struct _sf_node *nd, const struct sf_layer_info *li,
                           struct sf_param_tensor *out);

/* Tensor parallelism (layers/tp.c). A node's shapes on one TP rank of K: from its
 * inputs' whole widths (in_local on entry, in input order) and whether each input is
 * split (in_split), the widths this rank's kernels see (in_local on return,
 * *out_local), its parameters' count (*np_local) and whether its output is split;
 * SF_ERR_INVALID naming the node when it cannot take its inputs so (nodes: the graph's,
 * for the names and configs). K = 1: the whole shapes, nothing split. */
int _sf_tp_local(const struct _sf_node *nodes, int n, int K, const bool *in_split, int *in_local,
                 int *out_local, size_t *np_local, bool *out_split);
/* Node n is tied to an embedding_vp (layers/tp.c): a head reading this TP rank's rows
 * of the embedding, so computing their columns of the logits (a split output, and a
 * partial input gradient all-reduced as a linear_col's) */
bool _sf_tp_tied_vocab(const struct _sf_node *nodes, int n);
/* Node n is a cross-entropy loss (logits and labels), which takes split logits: the
 * vocabulary-parallel loss (layers/xent_vp.h) */
bool _sf_tp_vocab_parallel_loss(const struct _sf_node *nodes, int n);
/* The vocabulary-parallel slice of TP rank r of K over V classes (an embedding_vp's
 * rows, the columns of the logits of a head tied to it, the loss's classes): every
 * rank holds ceil(V / K) rows, rank r from class r ceil(V / K); where K does not
 * divide V the last ranks' rows at or past V are padding (Megatron's padded
 * vocabulary, but internal): held at zero, their logits never counted in the loss,
 * never in the model's parameters, exports or norm. */
struct _sf_vocab_slice {
	int rows;  /* ceil(V / K), padding included */
	int first; /* the first class: r rows */
	int valid; /* the rows below V: rows, fewer on the last ranks (0 when V is small) */
};
struct _sf_vocab_slice _sf_tp_vocab_slice(int V, int K, int r);
/* linear_col's columns on TP rank r of K as runs: its local output columns [local,
 * local + n) are the whole output's [whole, whole + n), one run a block of rows (at
 * most SF_MAX_PARAM_TENSORS); returns their number (gather_output's all-gather and
 * the backward's slice of the output's gradient move them) */
struct _sf_tp_run {
	size_t local, whole, n;
};
int _sf_tp_col_runs(const struct _sf_node *nd, int K, int r, struct _sf_tp_run *runs);
/* Between a TP node's whole parameters (whole_info: the node's whole shapes) and
 * TP rank r's slice of them (K ranks): to_local copies the slice out of whole, else
 * into it. A node that is not split (not linear_col, linear_row or embedding_vp)
 * copies all. */
void _sf_tp_params(const struct _sf_node *nd, const struct sf_layer_info *whole_info, int K, int r,
                   float *whole, float *local, bool to_local);

#endif
