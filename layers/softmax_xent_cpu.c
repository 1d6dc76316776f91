/* softmax_xent_cpu.c — softmax cross-entropy and its gradient on plain pointers.
 *
 * The row of layers/softmax_xent_math.h (which the GPU runs a thread a row), four
 * logits at a time: the row's max, one exponential a logit (exp_v4, common/vec4.h,
 * whose lanes sf_exp_poly mirrors) kept in dz and summed in double in four lanes, dz
 * scaled by scale / sum, the log-sum-exp in double: the header's bits
 * (tests/test_hd_nvcc.cu). At GPT-2's vocabulary (512 rows of 50 257 logits a step on
 * a rank) the row of two double exponentials a logit before it took 118 ms of a step
 * whose head the link waits on (docs/performance.md); this one 35 ms. */
#include "layers/softmax_xent.h"
#include "layers/softmax_xent_math.h" /* the ignored row, shared with the GPU */

#include "common/vec4.h"

#include <math.h>

static float row_max(int C, const float *z)
{
	int c = 0;
	float mx = z[0];
	if (C >= 4) {
		v4f m = load4(z);
		for (c = 4; c + 4 <= C; c += 4) {
			v4f v = load4(z + c);
			m = v4f_select(v > m, v, m);
		}
		float l[4];
		store4(l, m);
		for (int k = 0; k < 4; k++)
			mx = l[k] > mx ? l[k] : mx;
	}
	for (; c < C; c++)
		mx = z[c] > mx ? z[c] : mx;
	return mx;
}

/* dr = scale (softmax(zr) - onehot(label)); returns logsumexp(zr) - zr[label] */
static double xent_row(int C, const float *zr, int32_t label, float scale, float *dr)
{
	float mx = row_max(C, zr);
	v4f vmx = v4f_set(mx);
	double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
	int c = 0;
	for (; c + 4 <= C; c += 4) {
		float e[4];
		store4(e, exp_v4(load4(zr + c) - vmx));
		store4(dr + c, load4(e));
		s0 += e[0];
		s1 += e[1];
		s2 += e[2];
		s3 += e[3];
	}
	if (c < C) {
		size_t m = (size_t)(C - c);
		float e[4];
		store4(e, exp_v4(load_tail(zr + c, m) - vmx));
		store_tail(dr + c, load4(e), m);
		for (size_t k = 0; k < m; k++)
			s0 += e[k];
	}
	double sum = (s0 + s1) + (s2 + s3);
	float inv = (float)(scale / sum);
	v4f vinv = v4f_set(inv);
	for (c = 0; c + 4 <= C; c += 4)
		store4(dr + c, load4(dr + c) * vinv);
	for (; c < C; c++)
		dr[c] *= inv;
	dr[label] -= scale;
	return log(sum) + mx - zr[label];
}

double _sf_softmax_xent(int B, int C, const float *z, const int32_t *labels, int32_t ignore,
                        float scale, float *dz)
{
	double loss = 0.0;
	for (int r = 0; r < B; r++) {
		const float *zr = z + (size_t)r * C;
		float *dr = dz + (size_t)r * C;
		loss += labels[r] == ignore ? sf_softmax_xent_row_or_ignore(C, zr, ignore, ignore,
		                                                            scale, dr)
		                            : xent_row(C, zr, labels[r], scale, dr);
	}
	return loss * scale;
}
