/*
 * loss.h — the regression losses (MSE, L1, Huber: enum sf_loss_kind), the loss node's
 * other family beside softmax cross-entropy (layers/softmax_xent.h).
 *
 * Shape letters: B rows (tokens, with a sequence), W the prediction's width. The loss
 * is the mean over every element of the global batch: each rank sums its elements'
 * losses times scale = 1 / (global rows x W), and the ranks' values are summed by a
 * scalar reduction, as for cross-entropy.
 */
#ifndef SF_LAYERS_LOSS_H
#define SF_LAYERS_LOSS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The codelet's cl_arg */
struct _sf_reg_loss_args {
	int rows, width;
	int kind;    /* enum sf_loss_kind: SF_LOSS_MSE, _L1, _HUBER or _MEAN (no target) */
	float delta; /* Huber's threshold */
	float scale; /* 1 / (global rows x width) */
};

/* Returns scale x the sum of the elements' losses (in double, in row order) and
 * writes dpred = scale x each element's derivative. */
double _sf_reg_loss(const struct _sf_reg_loss_args *a, const float *pred, const float *target,
                    float *dpred);

/* The CPU codelet body: pred[R] target[R] dpred[W] loss[W] (one double). */
void _sf_reg_loss_cpu(void *buffers[], void *cl_arg);

#ifdef SF_HAVE_CUDA
/* The CUDA codelet body, same buffers (device pointers). */
void _sf_reg_loss_cuda(void *buffers[], void *cl_arg);
/* layers/loss_cuda.cu: _sf_reg_loss on the worker's stream, dpred and *loss in device
 * memory (a's fields are read on the host) */
void _sf_reg_loss_dev(const struct _sf_reg_loss_args *a, const float *pred, const float *target,
                      float *dpred, double *loss);
#endif

#ifdef __cplusplus
}
#endif

#endif
