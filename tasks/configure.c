/*
 * configure.c — _sf_tasks_configure and _sf_tasks_reset (declared in worker.h): sf_init's
 * one call that sets up every codelet family for the running context, and
 * sf_finalize's that undoes it.
 *
 * It sits above the families (layer_codelets.c, optim.c, grad.c), the worker rules
 * (worker.c) and the bf16 products (layers/gemm_bf16.c): the families call worker.c's
 * placement and no-op body, so worker.c must not call them back.
 */
#include "layers/gemm_bf16.h"
#include "tasks/cp_attention.h"
#include "tasks/grad.h"
#include "tasks/layer_codelets.h"
#include "tasks/loss.h"
#include "tasks/optim.h"
#include "tasks/worker.h"

int _sf_tasks_configure(int comm_worker, enum sf_skip skip, enum sf_optimizer_on opt_on)
{
	_sf_workers_configure(comm_worker, skip, opt_on);
	_sf_optim_codelets_configure(skip == SF_SKIP_COMPUTE);
	_sf_grad_codelets_configure(skip == SF_SKIP_COMPUTE);
	_sf_loss_codelets_configure(skip == SF_SKIP_COMPUTE);
	_sf_cp_attn_codelets_configure(skip == SF_SKIP_COMPUTE);
	return _sf_layer_codelets_configure(skip == SF_SKIP_COMPUTE);
}

void _sf_tasks_reset(void)
{
	_sf_workers_reset();
	_sf_gemm_bf16_release(); /* StarPU's workers are gone: their caches too */
}
