/* optim_cpu.c — the optimizer updates on plain pointers (tasks/optim.h).
 *
 * Each element is tasks/optim_math.h's (which the GPU runs), four at a time
 * (common/vec4.h): the same float operations in the same order, so the same bits
 * (tests/test_kernels_fd.c, tests/test_hd_nvcc.cu); the last n % 4 go through the header.
 * AdamW's divisions and square root, scalar, took 80 ms for GPT-2 124M's tied unit
 * (19.3 M elements of a rank's shard) on one core, 20 ms in lanes
 * (docs/performance.md). */
#include "tasks/optim.h"
#include "tasks/optim_math.h"

#include "common/vec4.h"

#include <math.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

/* sqrtf of each lane (correctly rounded, as sqrtf) */
static inline v4f sqrt_v4(v4f x)
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

void _sf_sgd(size_t n, float *p, const float *g, float *buf, float lr, float mu, float wd,
             float scale, const double *clip)
{
	float s = sf_grad_mult(scale, clip);
	v4f vs = v4f_set(s), vwd = v4f_set(wd), vmu = v4f_set(mu), vlr = v4f_set(lr);
	size_t i = 0;
	for (; i + 4 <= n; i += 4) { /* sf_sgd_elem */
		v4f pp = load4(p + i), d = load4(g + i) * vs + vwd * pp;
		v4f b = vmu * load4(buf + i) + d;
		store4(buf + i, b);
		store4(p + i, pp - vlr * b);
	}
	for (; i < n; i++)
		sf_sgd_elem(&p[i], g[i] * s, &buf[i], lr, mu, wd);
}

void _sf_adamw(size_t n, float *p, const float *g, float *m, float *v, float lr, float b1, float b2,
               float eps, float wd, int64_t t, float scale, const double *clip)
{
	float c1, c2;
	_sf_adamw_corrections(b1, b2, t, &c1, &c2);
	float s = sf_grad_mult(scale, clip);
	v4f vs = v4f_set(s), vlr = v4f_set(lr), vlrwd = v4f_set(lr * wd), vb1 = v4f_set(b1),
	    vb2 = v4f_set(b2), vb1c = v4f_set(1.0f - b1), vb2c = v4f_set(1.0f - b2),
	    vc1 = v4f_set(c1), vc2 = v4f_set(c2), veps = v4f_set(eps);
	size_t i = 0;
	for (; i + 4 <= n; i += 4) { /* sf_adamw_elem */
		v4f gg = load4(g + i) * vs, pp = load4(p + i);
		pp = pp - vlrwd * pp;
		v4f mm = vb1 * load4(m + i) + vb1c * gg;
		v4f vv = vb2 * load4(v + i) + vb2c * gg * gg;
		pp = pp - vlr * (mm / vc1) / (sqrt_v4(vv / vc2) + veps);
		store4(m + i, mm);
		store4(v + i, vv);
		store4(p + i, pp);
	}
	for (; i < n; i++)
		sf_adamw_elem(&p[i], g[i] * s, &m[i], &v[i], lr, b1, b2, eps, wd, c1, c2);
}

void _sf_lion(size_t n, float *p, const float *g, float *m, float lr, float b1, float b2, float wd,
              float scale, const double *clip)
{
	float s = sf_grad_mult(scale, clip);
	v4f vs = v4f_set(s), vb1 = v4f_set(b1), vb2 = v4f_set(b2), vb1c = v4f_set(1.0f - b1),
	    vb2c = v4f_set(1.0f - b2), vlr = v4f_set(lr), vwd = v4f_set(wd), zero = v4f_set(0.0f),
	    one = v4f_set(1.0f), mone = v4f_set(-1.0f);
	size_t i = 0;
	for (; i + 4 <= n; i += 4) { /* sf_lion_elem */
		v4f gg = load4(g + i) * vs, mm = load4(m + i), pp = load4(p + i);
		v4f c = vb1 * mm + vb1c * gg;
		v4f sgn = v4f_select(c > zero, one, v4f_select(c < zero, mone, zero));
		store4(p + i, pp - vlr * (sgn + vwd * pp));
		store4(m + i, vb2 * mm + vb2c * gg);
	}
	for (; i < n; i++)
		sf_lion_elem(&p[i], g[i] * s, &m[i], lr, b1, b2, wd);
}

void _sf_adamw_corrections(float b1, float b2, int64_t t, float *c1, float *c2)
{
	/* 1 - b^t in double: in float, 1 - 0.999^2 keeps only ~4 significant digits */
	*c1 = (float)(1.0 - pow((double)b1, (double)t));
	*c2 = (float)(1.0 - pow((double)b2, (double)t));
}
