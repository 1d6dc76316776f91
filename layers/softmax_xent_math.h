/*
 * softmax_xent_math.h — softmax cross-entropy of one row, for the CPU loop
 * (layers/softmax_xent_cpu.c) and the CUDA kernel (layers/softmax_xent_cuda.cu)
 * alike (common/hd.h): the log-sum-exp in double; the loss is the sum of the rows'
 * returns, in row order, times scale.
 */
#ifndef SF_LAYERS_SOFTMAX_XENT_MATH_H
#define SF_LAYERS_SOFTMAX_XENT_MATH_H

#include "common/hd.h"

#include <math.h>
#include <stdint.h>

/* dr = scale (softmax(zr) - onehot(label)); returns logsumexp(zr) - zr[label] */
SF_HD double sf_softmax_xent_row(int C, const float *zr, int32_t label, float scale, float *dr)
{
	float mx = zr[0];
	for (int c = 1; c < C; c++)
		mx = zr[c] > mx ? zr[c] : mx;
	double sum = 0.0;
	for (int c = 0; c < C; c++)
		sum += exp((double)(zr[c] - mx));
	double logz = log(sum) + mx;
	for (int c = 0; c < C; c++)
		dr[c] = scale * (float)exp((double)zr[c] - logz);
	dr[label] -= scale;
	return logz - zr[label];
}

/* The same, but a row labelled `ignore` counts for nothing: dr = 0, returns 0 */
SF_HD double sf_softmax_xent_row_or_ignore(int C, const float *zr, int32_t label, int32_t ignore,
                                           float scale, float *dr)
{
	if (label == ignore) {
		for (int c = 0; c < C; c++)
			dr[c] = 0.0f;
		return 0.0;
	}
	return sf_softmax_xent_row(C, zr, label, scale, dr);
}

#endif
