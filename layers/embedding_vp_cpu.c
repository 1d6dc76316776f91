/* embedding_vp_cpu.c — the masked lookup of a vocabulary slice and its gradient on
 * plain pointers (the same row sums in the same order as embedding_cpu.c's, so K = 1
 * is an embedding bitwise). */
#include "layers/embedding_vp.h"

#include <string.h>

void _sf_embedding_vp_fwd(int B, int V, int first, int C, const int32_t *ids, const float *w,
                          float *y)
{
	for (int r = 0; r < B; r++) {
		float *yr = y + (size_t)r * C;
		int32_t i = ids[r] - first;
		if (i >= 0 && i < V)
			memcpy(yr, w + (size_t)i * C, sizeof(float) * (size_t)C);
		else
			memset(yr, 0, sizeof(float) * (size_t)C);
	}
}

void _sf_embedding_vp_bwd(int B, int V, int first, int C, const int32_t *ids, const float *dy,
                          float *dw, int pacc)
{
	if (!pacc)
		memset(dw, 0, sizeof(float) * (size_t)V * (size_t)C);
	for (int r = 0; r < B; r++) {
		int32_t i = ids[r] - first;
		if (i < 0 || i >= V)
			continue;
		float *row = dw + (size_t)i * C;
		const float *d = dy + (size_t)r * C;
		for (int c = 0; c < C; c++)
			row[c] += d[c];
	}
}
