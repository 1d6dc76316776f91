/*
 * loss.c — the regression losses' codelet (MSE, L1, Huber: layers/loss.c's bodies, on
 * CPU workers and, in a CUDA build, GPU workers), the vocabulary-parallel
 * cross-entropy's two codelets (layers/xent_vp.c's bodies, CPU workers only), and the
 * functions that submit their tasks.
 */
#include "config.h"

#include "layers/kernel_bodies.h"
#include "layers/loss_math.h"
#include "layers/xent_vp.h"
#include "tasks/loss.h"
#include "tasks/worker.h"

_Static_assert(SF_LOSS_MEAN == SF_LOSS_MEAN_KIND, "loss_math.h's mean is sf_loss_kind's");

/* A footprint of the buffers' sizes and the loss's kind: MSE, L1 and Huber on the same
 * shapes take their own times and flops (StarPU marks an entry's flops NaN when two
 * tasks of one footprint give different counts). The cl_arg is the model's struct
 * _sf_reg_loss_args, passed by pointer. */
static uint32_t reg_loss_footprint(struct starpu_task *task)
{
	const struct _sf_reg_loss_args *a = task->cl_arg;
	return starpu_hash_crc32c_be((uint32_t)a->kind, starpu_task_data_footprint(task));
}

static struct starpu_perfmodel reg_loss_model = {
    .type = STARPU_HISTORY_BASED,
    .symbol = "sf_reg_loss",
    .footprint = reg_loss_footprint,
};

struct starpu_codelet _sf_cl_reg_loss = {
#ifdef SF_HAVE_CUDA
    .where = STARPU_CPU | STARPU_CUDA,
    .cuda_funcs = {_sf_reg_loss_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#else
    .where = STARPU_CPU,
#endif
    .cpu_funcs = {_sf_reg_loss_cpu},
    .cpu_funcs_name = {"sf_reg_loss"},
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .can_execute = _sf_compute_can_execute,
    .model = &reg_loss_model,
    .name = "loss",
};

static struct starpu_perfmodel xent_vp_partials_model = {
    .type = STARPU_HISTORY_BASED,
    .symbol = "sf_xent_vp_partials",
};

static struct starpu_perfmodel xent_vp_finish_model = {
    .type = STARPU_HISTORY_BASED,
    .symbol = "sf_xent_vp_finish",
};

/* No CUDA body: a CUDA build runs them on a CPU worker (StarPU moves the logits) */
struct starpu_codelet _sf_cl_xent_vp_partials = {
    .where = STARPU_CPU,
    .cpu_funcs = {_sf_xent_vp_partials_cpu},
    .cpu_funcs_name = {"sf_xent_vp_partials"},
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .can_execute = _sf_compute_can_execute,
    .model = &xent_vp_partials_model,
    .name = "loss_vp_partials",
};

struct starpu_codelet _sf_cl_xent_vp_finish = {
    .where = STARPU_CPU,
    .cpu_funcs = {_sf_xent_vp_finish_cpu},
    .cpu_funcs_name = {"sf_xent_vp_finish"},
    .nbuffers = 5,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .can_execute = _sf_compute_can_execute,
    .model = &xent_vp_finish_model,
    .name = "loss",
};

void _sf_loss_codelets_configure(bool skip)
{
	_sf_codelet_bodies(&_sf_cl_reg_loss, skip, _sf_reg_loss_cpu,
	                   SF_CUDA_BODY(_sf_reg_loss_cuda));
	_sf_codelet_bodies(&_sf_cl_xent_vp_partials, skip, _sf_xent_vp_partials_cpu, NULL);
	_sf_codelet_bodies(&_sf_cl_xent_vp_finish, skip, _sf_xent_vp_finish_cpu, NULL);
}

int _sf_submit_reg_loss(const struct _sf_reg_loss_args *a, starpu_data_handle_t pred,
                        starpu_data_handle_t target, starpu_data_handle_t dpred,
                        starpu_data_handle_t loss, const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {
	    {pred, STARPU_R}, {target, STARPU_R}, {dpred, STARPU_W}, {loss, STARPU_W}};
	/* per element (layers/loss_math.h): d = pred - target, its loss and derivative,
	 * the sum and dpred's scale. MSE: d, 2d, d d, +, x = 5; L1: d, sign, |d|, +, x = 5;
	 * Huber: d, |d| < delta (2), 0.5 d d or delta (|d| - 0.5 delta) (2), +, x = 7. */
	double per = a->kind == SF_LOSS_HUBER ? 7.0 : a->kind == SF_LOSS_MEAN ? 2.0 : 5.0;
	return _sf_task_submit_flops(&_sf_cl_reg_loss, d, 4, a, sizeof *a, false, -1,
	                             per * (double)a->rows * (double)a->width, name, done);
}

int _sf_submit_xent_vp_partials(const struct _sf_xent_vp_args *a, starpu_data_handle_t logits,
                                starpu_data_handle_t labels, starpu_data_handle_t stats,
                                const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{logits, STARPU_R}, {labels, STARPU_R}, {stats, STARPU_W}};
	/* per logit: the max, an exponential and its sum */
	return _sf_task_submit_flops(&_sf_cl_xent_vp_partials, d, 3, a, sizeof *a, false, -1,
	                             3.0 * a->rows * a->classes, name, done);
}

int _sf_submit_xent_vp_finish(const struct _sf_xent_vp_args *a, starpu_data_handle_t logits,
                              starpu_data_handle_t labels, starpu_data_handle_t all,
                              starpu_data_handle_t dlogits, starpu_data_handle_t loss,
                              const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{logits, STARPU_R},
	                                {labels, STARPU_R},
	                                {all, STARPU_R},
	                                {dlogits, STARPU_W},
	                                {loss, STARPU_W}};
	/* per logit: the subtraction, an exponential and the scale of the gradient */
	return _sf_task_submit_flops(&_sf_cl_xent_vp_finish, d, 5, a, sizeof *a, false, -1,
	                             3.0 * a->rows * a->classes, name, done);
}
