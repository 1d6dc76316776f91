/*
 * embedding_math.h — the token and position embeddings' per-element math, for the
 * CPU loops and the CUDA kernels alike (common/hd.h). Both backwards are sums over
 * rows; the CPU and the GPU (a thread per column, or per position and column) take
 * them in row order, so they are deterministic.
 */
#ifndef SF_LAYERS_EMBEDDING_MATH_H
#define SF_LAYERS_EMBEDDING_MATH_H

#include "common/hd.h"

#include <stddef.h>
#include <stdint.h>

/* dw[:, c] += dy[r, c] for the rows r in order, at row ids[r] of dw (V x C) */
SF_HD void sf_embedding_dw_col(int B, int C, int c, const int32_t *ids, const float *dy, float *dw)
{
	for (int r = 0; r < B; r++)
		dw[(size_t)ids[r] * C + c] += dy[(size_t)r * C + c];
}

/* The same sums by segments: keys[0..B) are the ids sorted stably (equal ids keep their
 * rows' order) and rows[j] the row whose id keys[j] is. For the segment of one id that
 * starts at j0: dw[id, c] += dy[r, c] for its rows r in increasing order, the additions
 * sf_embedding_dw_col makes for that entry, in its order: the same bits. Returns the
 * segment's end. */
SF_HD int sf_embedding_dw_segment(int B, int C, int c, int j0, const int32_t *keys,
                                  const int32_t *rows, const float *dy, float *dw)
{
	int32_t id = keys[j0];
	float *d = dw + (size_t)id * C + c;
	float s = *d;
	int j = j0;
	for (; j < B && keys[j] == id; j++)
		s += dy[(size_t)rows[j] * C + c];
	*d = s;
	return j;
}

/* dw[t, c] += dy[b, t, c] for the samples b in order */
SF_HD void sf_pos_embedding_dw_elem(int B, int T, int C, int t, int c, const float *dy, float *dw)
{
	float s = dw[(size_t)t * C + c];
	for (int b = 0; b < B; b++)
		s += dy[((size_t)b * T + t) * C + c];
	dw[(size_t)t * C + c] = s;
}

#endif
