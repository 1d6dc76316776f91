/*
 * lion.h — Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms",
 * algorithm 2; decoupled weight decay), on the gradient g (already multiplied:
 * tasks/optim_math.h's sf_grad_mult):
 *   c = b1 m + (1-b1) g;  p -= lr (sign(c) + wd p);  m = b2 m + (1-b2) g
 * sign(0) = 0. One state vector, m.
 * Flops a parameter: c: 3, its sign: 1, p -= lr (sgn + wd p): 4, m: 3, and the
 * gradient's multiplier: 12.
 */

/* one element, on the CPU and the GPU */
SF_HD void sf_lion_elem(float *p, float g, float *m, float *unused, const struct _sf_opt_hyper *h)
{
	(void)unused;
	float c = h->b1 * *m + (1.0f - h->b1) * g;
	float sgn = c > 0.0f ? 1.0f : c < 0.0f ? -1.0f : 0.0f;
	*p -= h->lr * (sgn + h->wd * *p);
	*m = h->b2 * *m + (1.0f - h->b2) * g;
}

#ifdef SF_OPTIM_CPU
/* four elements at a time: sf_lion_elem's operations in its order */
static size_t lion_lanes(size_t n, float *p, const float *g, float *m, float *unused, float s,
                         const struct _sf_opt_hyper *h)
{
	(void)unused;
	v4f vs = v4f_set(s), vb1 = v4f_set(h->b1), vb2 = v4f_set(h->b2),
	    vb1c = v4f_set(1.0f - h->b1), vb2c = v4f_set(1.0f - h->b2), vlr = v4f_set(h->lr),
	    vwd = v4f_set(h->wd), zero = v4f_set(0.0f), one = v4f_set(1.0f), mone = v4f_set(-1.0f);
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		v4f gg = load4(g + i) * vs, mm = load4(m + i), pp = load4(p + i);
		v4f c = vb1 * mm + vb1c * gg;
		v4f sgn = v4f_select(c > zero, one, v4f_select(c < zero, mone, zero));
		store4(p + i, pp - vlr * (sgn + vwd * pp));
		store4(m + i, vb2 * mm + vb2c * gg);
	}
	return i;
}
#endif

SF_OPTIMIZER(lion, 1, 12)
