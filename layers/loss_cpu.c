/* loss_cpu.c — the regression losses on plain pointers (no StarPU: the
 * finite-difference test links it alone); the element's math is layers/loss_math.h's. */
#include "layers/loss.h"
#include "layers/loss_math.h"

double _sf_reg_loss(const struct _sf_reg_loss_args *a, const float *pred, const float *target,
                    float *dpred)
{
	size_t n = (size_t)a->rows * (size_t)a->width;
	double sum = 0.0;
	for (size_t i = 0; i < n; i++) {
		float g;
		float t = a->kind == SF_LOSS_MEAN_KIND ? 0.0f : target[i];
		sum += sf_loss_elem(a->kind, pred[i] - t, a->delta, &g);
		dpred[i] = a->scale * g;
	}
	return sum * a->scale;
}
