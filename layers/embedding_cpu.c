/* embedding_cpu.c — the token embedding and its gradient on plain pointers. */
#include "layers/embedding.h"

/* The backward's sums go row by row here (the GPU's thread per column,
 * layers/embedding_math.h, takes the same sums in the same order: tests/test_hd_nvcc
 * checks they agree bitwise). */

#include <string.h>

void _sf_embedding_fwd(int B, int C, const int32_t *ids, const float *w, float *y)
{
	for (int r = 0; r < B; r++)
		memcpy(y + (size_t)r * C, w + (size_t)ids[r] * C, sizeof(float) * (size_t)C);
}

void _sf_embedding_bwd(int B, int V, int C, const int32_t *ids, const float *dy, float *dw,
                       int pacc)
{
	if (!pacc)
		memset(dw, 0, sizeof(float) * (size_t)V * (size_t)C);
	for (int r = 0; r < B; r++) {
		float *row = dw + (size_t)ids[r] * C;
		const float *d = dy + (size_t)r * C;
		for (int c = 0; c < C; c++)
			row[c] += d[c];
	}
}
