/*
 * tensors.h — a model's named tensors (io/tensors.c): the names and shapes the
 * safetensors files use, where each lies in the flat parameter vector; for
 * io/safetensors.c and the by-name calls of include/shardflow.h.
 */
#ifndef SF_IO_TENSORS_H
#define SF_IO_TENSORS_H

#include "scheduler/model_access.h"

#include <stddef.h>
#include <stdint.h>

/* One named tensor: a node's struct sf_param_tensor ("fc1.weight" (O, I), "fc1.bias"
 * (O); a type without names, "<node>.params"), placed in the model. */
struct _sf_tensor {
	char name[SF_TENSOR_NAME_MAX];
	int ndim;
	int64_t shape[2];
	size_t off, count;   /* floats, in the whole model's flat parameter vector (with
	                        SHARDFLOW_TP, every TP rank's slices together: its shape's) */
	size_t loff, lcount; /* this rank's part, in its own flat vector (with TP, its
	                        slice; else off and count) */
	int unit;          /* the unit holding it; off - its off is the place in the unit */
};
#define SF_UNIT_TENSORS_MAX 64 /* tensors of one unit */

/* The tensors of unit u, in its flat vector's order (at most SF_UNIT_TENSORS_MAX; more
 * is an error): their number, or a negative status. */
int _sf_unit_tensors(const struct sf_model *m, int u, struct _sf_tensor *t);
/* Every named tensor of the model, in unit order (*out: *n entries, to free). */
int _sf_model_tensors(const struct sf_model *m, struct _sf_tensor **out, size_t *n);

/* SF_OK, or SF_ERR_STATE when micro-batches are accumulated (fn names the caller): a
 * model's parameters are replaced only between steps. */
int _sf_model_load_check(const struct sf_model *m, const char *fn);
/* Every rank has every parameter (params: nparams_total floats, sf_model_params_get's
 * order): sets them, zeroes the optimizer's state and restarts its step count (AdamW's
 * bias correction), as loading weights into a fresh model would. After sf_model_sync(). */
int _sf_model_load(struct sf_model *m, const float *params);

#endif
