/* softmax_xent_cpu.c — softmax cross-entropy and its gradient on plain pointers, the
 * log-sum-exp of each row in double. */
#include "layers/softmax_xent.h"
#include "layers/softmax_xent_math.h" /* the row, shared with the GPU */

#include <math.h>

double _sf_softmax_xent(int B, int C, const float *z, const int32_t *labels, int32_t ignore,
                        float scale, float *dz)
{
	double loss = 0.0;
	for (int r = 0; r < B; r++)
		loss += sf_softmax_xent_row_or_ignore(C, z + (size_t)r * C, labels[r], ignore, scale,
		                                      dz + (size_t)r * C);
	return loss * scale;
}
