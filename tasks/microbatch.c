/*
 * microbatch.c — the loss_mean codelet (tasks/microbatch.h). A handful of doubles: a
 * CPU body only, on a compute worker (never the comm worker); in a CUDA build StarPU
 * brings the losses to RAM for it; in a simulation build it runs (SF_SIM_EXECUTE), as
 * the other bookkeeping codelets.
 */
#include "config.h"

#include "tasks/microbatch.h"
#include "tasks/worker.h"

static void loss_mean_cpu(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	int M = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current()) - 1;
	double sum = 0.0;
	for (int k = 0; k < M; k++)
		sum += *(const double *)STARPU_VECTOR_GET_PTR(buffers[1 + k]);
	*(double *)STARPU_VECTOR_GET_PTR(buffers[0]) = M > 0 ? sum / M : 0.0;
}

struct starpu_codelet _sf_cl_loss_mean = {
    .where = STARPU_CPU,
    .cpu_funcs = {loss_mean_cpu},
    .cpu_funcs_name = {"loss_mean_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .can_execute = _sf_compute_can_execute,
    .flags = SF_SIM_EXECUTE, /* bookkeeping: it runs in simulated time too */
    .name = "loss_mean",
};

int _sf_submit_loss_mean(starpu_data_handle_t out, const starpu_data_handle_t *loss, int M,
                         struct starpu_data_descr *descr, const char *name,
                         struct _sf_task_done done)
{
	descr[0] = (struct starpu_data_descr){out, STARPU_W};
	for (int k = 0; k < M; k++)
		descr[1 + k] = (struct starpu_data_descr){loss[k], STARPU_R};
	return _sf_task_submit(&_sf_cl_loss_mean, descr, M + 1, NULL, 0, false, -1, name, done);
}
