/*
 * loss.c — the regression losses' CPU codelet body (the codelet is built in
 * tasks/loss.c; the math is layers/loss_cpu.c's).
 */
#include "layers/loss.h"

#include <starpu.h>

void _sf_reg_loss_cpu(void *buffers[], void *cl_arg)
{
	const struct _sf_reg_loss_args *a = cl_arg;
	*(double *)STARPU_VECTOR_GET_PTR(buffers[3]) = _sf_reg_loss(
	    a, (const float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	    (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
	    (float *)STARPU_VECTOR_GET_PTR(buffers[2]));
}
