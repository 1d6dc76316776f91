/*
 * model_layout.h — a model's layout (scheduler/model_layout.c): its nodes' shapes and
 * infos, each unit's geometry, names and optimizer runs, and tensor parallelism's
 * shapes and plan, before any buffer. Shape letters: N ranks of the shard group, P
 * parameters of a unit, S = ceil(P / N) its shard.
 */
#ifndef SF_SCHEDULER_MODEL_LAYOUT_H
#define SF_SCHEDULER_MODEL_LAYOUT_H

#include "scheduler/model.h"

/* The graph has a loss and no open unit: SF_OK, or an error naming the graph. */
int _sf_check_graph(const sf_graph *g);
/* Copies the graph's nodes (configs owned by the model) and gives each this rank's
 * shapes (with SHARDFLOW_TP: its slice, the whole shapes kept), its kernels' info, its
 * tasks' names and its place among the inputs. */
int _sf_build_nodes(struct sf_model *m, const sf_graph *g);
/* Warns (rank 0) when SHARDFLOW_TP > 1 but no node's output is split: every TP rank
 * then computes the whole model; says (SF_LOG_INFO) when the loss is
 * vocabulary-parallel. */
void _sf_tp_warn_unsplit(const struct sf_model *m, const char *graph);
/* Tensor parallelism, once the gradients are planned: which all-reduces each node has
 * and the largest activation they sum (m->tp_max). */
void _sf_tp_plan(struct sf_model *m);
/* Every unit's S, offsets, collective arguments, tasks' names and (with TP) the runs
 * of its gradient this rank counts in the norm; the model's totals (nparams_total,
 * nparams_whole, largest_P, largest_NS). */
int _sf_size_units(struct sf_model *m);
/* The sharding a unit's storage follows: hybrid shards as full does, inside a node. */
enum sf_sharding _sf_unit_sharding(const struct sf_model *m);
/* This rank's block of unit u: elements [*lo, *lo + *n) of its P parameters, block
 * m->shard_rank of S = ceil(P / m->shard_size), clipped to P (padding not counted; *n
 * may be 0). It is where the shard's real elements sit, and with replicated parameters
 * the rank's share of work over them (the gradient norm). */
void _sf_unit_block(const struct sf_model *m, int u, size_t *lo, size_t *n);
/* (Re)builds unit u's optimizer runs (struct _sf_opt_run): each tensor's weight decay
 * and learning-rate scale over the unit's optimizer vector, alike runs merged. */
int _sf_unit_opt_runs(struct sf_model *m, int u);
/* Sets the learning-rate scale of unit u's parameters [off, off + count) (a tensor) and
 * rebuilds the unit's optimizer runs. After sf_model_sync(). */
int _sf_unit_set_lr_scale(struct sf_model *m, int u, size_t off, size_t count, float scale);
/* Node n's info with the whole layer's shapes (with SHARDFLOW_TP: its graph's widths
 * and parameter count, not this rank's slice's; else its info) */
void _sf_node_whole_info(const struct sf_model *m, int n, struct sf_layer_info *li);
/* Frees what the layout and the planner allocated (nodes, units and their tables);
 * after _sf_storage_release. */
void _sf_layout_release(struct sf_model *m);

#endif
