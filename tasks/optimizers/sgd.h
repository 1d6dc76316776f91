/*
 * sgd.h — SGD with momentum and L2 weight decay (PyTorch's formulation), on the
 * gradient g (already multiplied: tasks/optim_math.h's sf_grad_mult):
 *   g' = g + wd p;  buf = mu buf + g';  p -= lr buf
 * One state vector, buf ("m" in checkpoints). buf starts at zero, so the first step
 * gives buf = g' exactly.
 * Flops a parameter: d = g + wd p, buf = mu buf + d, p -= lr buf: 2 + 2 + 2, and the
 * gradient's multiplier: 7.
 */

/* one element, on the CPU and the GPU */
SF_HD void sf_sgd_elem(float *p, float g, float *buf, float *unused,
                       const struct _sf_opt_hyper *h)
{
	(void)unused;
	float d = g + h->wd * *p;
	*buf = h->mu * *buf + d;
	*p -= h->lr * *buf;
}

#ifdef SF_OPTIM_CPU
/* four elements at a time (common/vec4.h): sf_sgd_elem's operations in its order, so
 * its bits; returns how many it did (the caller finishes with the element) */
static size_t sgd_lanes(size_t n, float *p, const float *g, float *buf, float *unused, float s,
                        const struct _sf_opt_hyper *h)
{
	(void)unused;
	v4f vs = v4f_set(s), vwd = v4f_set(h->wd), vmu = v4f_set(h->mu), vlr = v4f_set(h->lr);
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		v4f pp = load4(p + i), d = load4(g + i) * vs + vwd * pp;
		v4f b = vmu * load4(buf + i) + d;
		store4(buf + i, b);
		store4(p + i, pp - vlr * b);
	}
	return i;
}
#endif

SF_OPTIMIZER(sgd, 1, 7)
