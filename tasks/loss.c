/*
 * loss.c — the regression losses' codelet (MSE, L1, Huber: layers/loss.c computes)
 * and the function that submits its task.
 */
#include "tasks/loss.h"
#include "tasks/worker.h"

static struct starpu_perfmodel reg_loss_model = {
    .type = STARPU_HISTORY_BASED,
    .symbol = "sf_reg_loss",
};

struct starpu_codelet _sf_cl_reg_loss = {
    .where = STARPU_CPU,
    .cpu_funcs = {_sf_reg_loss_cpu},
    .cpu_funcs_name = {"sf_reg_loss"},
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .can_execute = _sf_compute_can_execute,
    .model = &reg_loss_model,
    .name = "loss",
};

void _sf_loss_codelets_configure(bool skip)
{
	_sf_codelet_bodies(&_sf_cl_reg_loss, skip, _sf_reg_loss_cpu, NULL);
	_sf_cl_reg_loss.where = STARPU_CPU; /* no CUDA body: CPU workers only */
}

int _sf_submit_reg_loss(const struct _sf_reg_loss_args *a, starpu_data_handle_t pred,
                        starpu_data_handle_t target, starpu_data_handle_t dpred,
                        starpu_data_handle_t loss, const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {
	    {pred, STARPU_R}, {target, STARPU_R}, {dpred, STARPU_W}, {loss, STARPU_W}};
	return _sf_task_submit(&_sf_cl_reg_loss, d, 4, a, sizeof *a, false, -1, name, done);
}
