/*
 * softmax_xent.h — the loss op: softmax cross-entropy of logits against labels.
 *
 * Shape letters: B rows (tokens, with a sequence), C classes. The loss is the mean
 * over the global batch: each rank sums its rows times scale = 1 / (global rows) and
 * the ranks' values are summed by a scalar reduction.
 */
#ifndef SF_LAYERS_SOFTMAX_XENT_H
#define SF_LAYERS_SOFTMAX_XENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The loss codelet's cl_arg. */
struct _sf_loss_args {
	int rows, classes;
	int32_t ignore; /* a label that counts for nothing (sf_loss_config::ignore_index) */
	float scale;    /* 1 / the global batch's rows whose label is not `ignore` (0 when
	                   none is: the step's loss and gradient are 0) */
};

/* Softmax cross-entropy over rows: returns scale * sum_rows -log softmax(z)[label]
 * (in double) and writes dz (B,C) = scale * (softmax(z) - onehot(label)); a row whose
 * label is `ignore` adds 0 and gets dz = 0. Other labels must lie in [0, C) (checked
 * by the caller). */
double _sf_softmax_xent(int B, int C, const float *z, const int32_t *labels, int32_t ignore,
                        float scale, float *dz);

/* The CPU codelet body: logits[R] labels[R] dlogits[W] loss[W] (one double). */
void _sf_softmax_xent_cpu(void *buffers[], void *cl_arg);

#ifdef SF_HAVE_CUDA
/* The CUDA codelet body, same buffers (device pointers). */
void _sf_softmax_xent_cuda(void *buffers[], void *cl_arg);
/* layers/softmax_xent_cuda.cu: _sf_softmax_xent on the worker's stream, the result in
 * *loss (device memory) */
void _sf_softmax_xent_dev(int B, int C, const float *z, const int32_t *labels, int32_t ignore,
                          float scale, float *dz, double *loss);
#endif

#ifdef __cplusplus
}
#endif

#endif
