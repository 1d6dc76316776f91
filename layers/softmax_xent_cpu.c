/* softmax_xent_cpu.c — softmax cross-entropy and its gradient on plain pointers, the
 * log-sum-exp of each row in double. */
#include "layers/softmax_xent.h"

#include <math.h>

double _sf_softmax_xent(int B, int C, const float *z, const int32_t *labels, float scale, float *dz)
{
	double loss = 0.0;
	for (int r = 0; r < B; r++) {
		const float *zr = z + (size_t)r * C;
		float *dr = dz + (size_t)r * C;
		float mx = zr[0];
		for (int c = 1; c < C; c++)
			mx = zr[c] > mx ? zr[c] : mx;
		double sum = 0.0;
		for (int c = 0; c < C; c++)
			sum += exp((double)(zr[c] - mx));
		double logz = log(sum) + mx;
		loss += logz - zr[labels[r]];
		for (int c = 0; c < C; c++)
			dr[c] = scale * (float)exp((double)zr[c] - logz);
		dr[labels[r]] -= scale;
	}
	return loss * scale;
}
