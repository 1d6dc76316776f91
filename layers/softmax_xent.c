/*
 * softmax_xent.c — the loss node's CPU (and CUDA) codelet body (the codelet itself is built in
 * tasks/, like every op's). Labels were range-checked by sf_model_step; the assert
 * guards the codelet against a planner bug, not user input.
 */
#include "config.h"

#include "layers/softmax_xent.h"

#include <starpu.h>

void _sf_softmax_xent_cpu(void *buffers[], void *cl_arg)
{
	const struct _sf_loss_args *a = cl_arg;
	const float *z = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
	const int32_t *y = (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *dz = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	double *loss = (double *)STARPU_VECTOR_GET_PTR(buffers[3]);
	for (int r = 0; r < a->rows; r++)
		STARPU_ASSERT_MSG(
		    (y[r] >= 0 && y[r] < a->classes) || y[r] == a->ignore,
		    "label %d of row %d outside [0, %d) (sf_model_step checks labels)", (int)y[r],
		    r, a->classes);
	*loss = _sf_softmax_xent(a->rows, a->classes, z, y, a->ignore, a->scale, dz);
}

#ifdef SF_HAVE_CUDA
void _sf_softmax_xent_cuda(void *buffers[], void *cl_arg)
{
	const struct _sf_loss_args *a = cl_arg;
	_sf_softmax_xent_dev(a->rows, a->classes, (const float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	                     (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[1]), a->ignore, a->scale,
	                     (float *)STARPU_VECTOR_GET_PTR(buffers[2]),
	                     (double *)STARPU_VECTOR_GET_PTR(buffers[3]));
}
#endif
