/*
 * loss.c — the regression losses' CPU (and CUDA) codelet bodies (the codelet is built
 * in tasks/loss.c; the math is layers/loss_cpu.c's and layers/loss_cuda.cu's, both on
 * layers/loss_math.h).
 */
#include "config.h"

#include "layers/loss.h"

#include <starpu.h>

void _sf_reg_loss_cpu(void *buffers[], void *cl_arg)
{
	const struct _sf_reg_loss_args *a = cl_arg;
	*(double *)STARPU_VECTOR_GET_PTR(buffers[3]) =
	    _sf_reg_loss(a, (const float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	                 (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
	                 (float *)STARPU_VECTOR_GET_PTR(buffers[2]));
}

#ifdef SF_HAVE_CUDA
void _sf_reg_loss_cuda(void *buffers[], void *cl_arg)
{
	_sf_reg_loss_dev((const struct _sf_reg_loss_args *)cl_arg,
	                 (const float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	                 (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
	                 (float *)STARPU_VECTOR_GET_PTR(buffers[2]),
	                 (double *)STARPU_VECTOR_GET_PTR(buffers[3]));
}
#endif
