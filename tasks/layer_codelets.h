/*
 * layer_codelets.h — the StarPU codelets of layer types and of the loss.
 *
 * Each registered type gets two codelets, forward and backward, built once from its
 * kernels: CPU (and CUDA when the type has CUDA kernels), a variable number of buffers
 * (layout: layers/kernel_api.c), kept off the comm worker, and a history-based
 * performance model per codelet named "sf_<op>_fwd" / "sf_<op>_bwd", which StarPU's
 * dmda schedulers use and FxT traces show.
 */
#ifndef SF_TASKS_LAYER_CODELETS_H
#define SF_TASKS_LAYER_CODELETS_H

#include "layers/layer.h"

#include <starpu.h>
#include <stdbool.h>

/* The forward or backward codelet of a registered type (built on first use). */
struct starpu_codelet *_sf_layer_codelet(const struct _sf_layer_entry *e, bool backward);

/* loss: logits[R] labels[R] dlogits[W] loss[W]; cl_arg struct _sf_loss_args */
extern struct starpu_codelet _sf_cl_loss;

/* Points every codelet (built or to be built) at its kernels, or at a body that
 * returns at once when skip is set (SHARDFLOW_SKIP=compute). */
int _sf_layer_codelets_configure(bool skip);

#endif
