/* pos_embedding_cpu.c — the position embedding and its gradient on plain pointers. */
#include "layers/pos_embedding.h"

#include <string.h>

void _sf_pos_embedding_fwd(int B, int T, int C, const float *x, const float *w, float *y)
{
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++) {
			size_t r = ((size_t)b * T + t) * C;
			const float *wt = w + (size_t)t * C;
			for (int c = 0; c < C; c++)
				y[r + c] = x[r + c] + wt[c];
		}
}

void _sf_pos_embedding_bwd(int B, int T, int NP, int C, const float *dy, float *dx, int acc,
                           float *dw, int pacc)
{
	size_t n = (size_t)B * T * C;
	if (dx && acc)
		for (size_t i = 0; i < n; i++)
			dx[i] += dy[i];
	else if (dx)
		memcpy(dx, dy, sizeof(float) * n);
	if (!pacc)
		memset(dw, 0, sizeof(float) * (size_t)NP * (size_t)C);
	/* samples in order, so the sums are the same whatever the run */
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++) {
			const float *d = dy + ((size_t)b * T + t) * C;
			float *wt = dw + (size_t)t * C;
			for (int c = 0; c < C; c++)
				wt[c] += d[c];
		}
}
