/*
 * xent_vp.c — the vocabulary-parallel cross-entropy's CPU codelet bodies (the codelets
 * are tasks/loss.c's; the math is layers/xent_vp_cpu.c's). No CUDA body: in a CUDA
 * build its tasks run on a CPU worker, StarPU bringing the logits to the host. Labels
 * were range-checked by sf_model_step against the whole vocabulary.
 */
#include "config.h"

#include "layers/xent_vp.h"

#include <starpu.h>

void _sf_xent_vp_partials_cpu(void *buffers[], void *cl_arg)
{
	const struct _sf_xent_vp_args *a = cl_arg;
	STARPU_ASSERT_MSG(STARPU_VECTOR_GET_NX(buffers[2]) == (size_t)a->rows * SF_XENT_VP_STATS,
	                  "xent_vp: the partials' buffer holds %u floats, %d rows need %d",
	                  (unsigned)STARPU_VECTOR_GET_NX(buffers[2]), a->rows,
	                  a->rows * SF_XENT_VP_STATS);
	_sf_xent_vp_partials(a->rows, a->classes, a->valid, a->first,
	                     (const float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	                     (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[1]), a->ignore,
	                     (float *)STARPU_VECTOR_GET_PTR(buffers[2]));
}

void _sf_xent_vp_finish_cpu(void *buffers[], void *cl_arg)
{
	const struct _sf_xent_vp_args *a = cl_arg;
	*(double *)STARPU_VECTOR_GET_PTR(buffers[4]) =
	    _sf_xent_vp_finish(a->rows, a->classes, a->valid, a->first, a->tp,
	                       (const float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	                       (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[1]), a->ignore,
	                       a->scale, (const float *)STARPU_VECTOR_GET_PTR(buffers[2]),
	                       (float *)STARPU_VECTOR_GET_PTR(buffers[3]));
}
