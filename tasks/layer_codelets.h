/*
 * layer_codelets.h — the StarPU codelets of layer types and of the loss.
 *
 * Each registered type gets two codelets, forward and backward, built once from its
 * kernels: CPU (and CUDA when the type has CUDA kernels), a variable number of buffers
 * (layout: layers/kernel_api.c), kept off the comm worker, and a history-based
 * performance model per codelet named "sf_<op>_fwd" / "sf_<op>_bwd", which StarPU's
 * dmda schedulers use and FxT traces show. Each task carries its flops, from the
 * type's flops() (the forward's; a backward counts twice that, once when it computes
 * no input gradient), so that the models give GFlop/s (docs/profiling.md); the loss
 * carries its own.
 */
#ifndef SF_TASKS_LAYER_CODELETS_H
#define SF_TASKS_LAYER_CODELETS_H

#include "layers/layer.h"
#include "layers/softmax_xent.h"
#include "tasks/submit.h"

#include <starpu.h>
#include <stdbool.h>

/* The forward or backward codelet of a registered type (built on first use). */
struct starpu_codelet *_sf_layer_codelet(const struct _sf_layer_entry *e, bool backward);

/* loss: logits[R] labels[R] dlogits[W] loss[W]; cl_arg struct _sf_loss_args */
extern struct starpu_codelet _sf_cl_loss;

/* Points every codelet (built or to be built) at its kernels, or at a body that
 * returns at once when skip is set (SHARDFLOW_SKIP=compute). */
int _sf_layer_codelets_configure(bool skip);

/* The floating-point operations of a node's forward (backward false) or backward task,
 * from its type's count (0 when the type has none, or its count is not a positive
 * number): StarPU's models, the simulation and a pipeline's cut by flops read it. */
double _sf_layer_flops(const struct _sf_layer_entry *type, const struct sf_layer_info *info,
                       bool backward);

/* Submitting them (tasks/submit.h), in the buffer order of layers/kernel_api.c; info
 * is passed by pointer (the model keeps it for the task's life).
 * forward: params[R] (NULL: the node has none) in[R] x nin out[W] saved[W] (NULL:
 * the type saves nothing) */
int _sf_submit_layer_fwd(const struct _sf_layer_entry *type, const struct sf_layer_info *info,
                         starpu_data_handle_t params, const starpu_data_handle_t *in, int nin,
                         starpu_data_handle_t out, starpu_data_handle_t saved, const char *name,
                         struct _sf_task_done done);
/* backward: params[R] in[R] x nin out[R] dout[R] saved[R] (NULLs skipped as above),
 * then din[i] for each input info->need_dinput asks for (W for its first consumer,
 * RW where info->accumulate[i]: "+="), then dparams (NULL: none; W when
 * dparams_first, this node the first writer of the unit's gradient in the pass, else
 * RW), then `after` (NULL: none; R, read by no kernel: the task waits for its writers,
 * as a split backward's weight-gradient half does) */
int _sf_submit_layer_bwd(const struct _sf_layer_entry *type, const struct sf_layer_info *info,
                         starpu_data_handle_t params, const starpu_data_handle_t *in, int nin,
                         starpu_data_handle_t out, starpu_data_handle_t dout,
                         starpu_data_handle_t saved, const starpu_data_handle_t *din,
                         starpu_data_handle_t dparams, bool dparams_first,
                         starpu_data_handle_t after, const char *name, struct _sf_task_done done);
/* the loss: logits[R] labels[R] dlogits[W] loss[W] */
int _sf_submit_loss(const struct _sf_loss_args *a, starpu_data_handle_t logits,
                    starpu_data_handle_t labels, starpu_data_handle_t dlogits,
                    starpu_data_handle_t loss, const char *name, struct _sf_task_done done);

#endif
