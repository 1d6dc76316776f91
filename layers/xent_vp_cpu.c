/* xent_vp_cpu.c — the vocabulary-parallel cross-entropy on plain pointers (no StarPU:
 * the finite-difference test links it alone). One exponential a logit in each kernel
 * (sf_exp_poly, the single-rank loss's), the sums in double; the partials travel as
 * floats (the TP all-gather moves floats), so s_k is rounded once to float. */
#include "layers/softmax_xent_math.h"
#include "layers/xent_vp.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>

/* Only the first `valid` columns count: the rest are a padded vocabulary's (their
 * logits as -inf; a slice of padding alone: max -FLT_MAX, whose exp(m_k - M) is 0) */
void _sf_xent_vp_partials(int B, int V, int valid, int first, const float *z,
                          const int32_t *labels, int32_t ignore, float *st)
{
	for (int r = 0; r < B; r++) {
		const float *zr = z + (size_t)r * (size_t)V;
		float mx = -FLT_MAX;
		for (int c = 0; c < valid; c++)
			mx = zr[c] > mx ? zr[c] : mx;
		double s = 0.0;
		for (int c = 0; c < valid; c++)
			s += sf_exp_poly(zr[c] - mx);
		int32_t y = labels[r];
		bool mine = y != ignore && y >= first && y < first + valid;
		float *o = st + (size_t)r * SF_XENT_VP_STATS;
		o[0] = mx;
		o[1] = (float)s;
		o[2] = mine ? zr[y - first] : 0.0f;
	}
}

double _sf_xent_vp_finish(int B, int V, int valid, int first, int K, const float *z,
                          const int32_t *labels, int32_t ignore, float scale, const float *all,
                          float *dz)
{
	double loss = 0.0;
	size_t block = (size_t)B * SF_XENT_VP_STATS;
	for (int r = 0; r < B; r++) {
		const float *zr = z + (size_t)r * (size_t)V;
		float *dr = dz ? dz + (size_t)r * (size_t)V : NULL;
		int32_t y = labels[r];
		if (y == ignore) {
			for (int c = 0; dr && c < V; c++)
				dr[c] = 0.0f;
			continue;
		}
		float M = all[(size_t)r * SF_XENT_VP_STATS];
		for (int k = 1; k < K; k++) {
			float mk = all[(size_t)k * block + (size_t)r * SF_XENT_VP_STATS];
			M = mk > M ? mk : M;
		}
		double S = 0.0, t = 0.0;
		for (int k = 0; k < K; k++) { /* rank order: every rank sums alike */
			const float *p = all + (size_t)k * block + (size_t)r * SF_XENT_VP_STATS;
			S += (double)p[1] * exp((double)p[0] - (double)M);
			t += p[2];
		}
		loss += log(S) + (double)M - t;
		if (!dr)
			continue;
		float inv = (float)(scale / S);
		for (int c = 0; c < valid; c++)
			dr[c] = sf_exp_poly(zr[c] - M) * inv;
		for (int c = valid; c < V; c++) /* padding: no class, no gradient */
			dr[c] = 0.0f;
		if (y >= first && y < first + valid)
			dr[y - first] -= scale;
	}
	return loss * scale;
}
