/*
 * adamw.h — AdamW (decoupled weight decay; Loshchilov and Hutter 2019), step t >= 1,
 * on the gradient g (already multiplied: tasks/optim_math.h's sf_grad_mult):
 *   p -= lr wd p;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   p -= lr (m / c1) / (sqrt(v / c2) + eps),  c1 = 1 - b1^t, c2 = 1 - b2^t
 * Two state vectors, m and v.
 * Flops a parameter: p -= (lr wd) p: 2, m: 3, v: 4, the update: 7 (a sqrt as one),
 * and the gradient's multiplier: 17.
 */

/* one element, on the CPU and the GPU */
SF_HD void sf_adamw_elem(float *p, float g, float *m, float *v, const struct _sf_opt_hyper *h)
{
	*p -= h->lr * h->wd * *p;
	*m = h->b1 * *m + (1.0f - h->b1) * g;
	*v = h->b2 * *v + (1.0f - h->b2) * g * g;
	*p -= h->lr * (*m / h->c1) / (sqrtf(*v / h->c2) + h->eps);
}

#ifdef SF_OPTIM_CPU
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

/* sqrtf of each lane (correctly rounded, as sqrtf) */
static inline v4f adamw_sqrt4(v4f x)
{
#if defined(__SSE__)
	__m128 r;
	memcpy(&r, &x, sizeof r);
	r = _mm_sqrt_ps(r);
	memcpy(&x, &r, sizeof x);
	return x;
#else
	float l[4];
	store4(l, x);
	for (int k = 0; k < 4; k++)
		l[k] = sqrtf(l[k]);
	return load4(l);
#endif
}

/* four elements at a time: sf_adamw_elem's operations in its order. Its divisions
 * and square root, scalar, took 80 ms for GPT-2 124M's tied unit (19.3 M elements of
 * a rank's shard) on one core, 20 ms in lanes (docs/performance.md). */
static size_t adamw_lanes(size_t n, float *p, const float *g, float *m, float *v, float s,
                          const struct _sf_opt_hyper *h)
{
	v4f vs = v4f_set(s), vlr = v4f_set(h->lr), vlrwd = v4f_set(h->lr * h->wd),
	    vb1 = v4f_set(h->b1), vb2 = v4f_set(h->b2), vb1c = v4f_set(1.0f - h->b1),
	    vb2c = v4f_set(1.0f - h->b2), vc1 = v4f_set(h->c1), vc2 = v4f_set(h->c2),
	    veps = v4f_set(h->eps);
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		v4f gg = load4(g + i) * vs, pp = load4(p + i);
		pp = pp - vlrwd * pp;
		v4f mm = vb1 * load4(m + i) + vb1c * gg;
		v4f vv = vb2 * load4(v + i) + vb2c * gg * gg;
		pp = pp - vlr * (mm / vc1) / (adamw_sqrt4(vv / vc2) + veps);
		store4(m + i, mm);
		store4(v + i, vv);
		store4(p + i, pp);
	}
	return i;
}
#endif

SF_OPTIMIZER(adamw, 2, 17)
