/*
 * optim.c — the optimizers' codelets and table: for each file of tasks/optimizers/,
 * thin bodies that unpack the buffers and the packed per-step arguments and call its
 * CPU loop (tasks/optim_cpu.c) or, on a CUDA worker, its launcher
 * (tasks/optim_cuda.cu), its codelet, and its row of _sf_optim_families.
 */
#include "config.h"

#include "layers/kernel_bodies.h"
#include "tasks/optim.h"
#include "tasks/worker.h"

struct _sf_opt_hyper _sf_opt_hyper_of(const struct _sf_opt_args *a, int run)
{
	struct _sf_opt_hyper h = {
	    .lr = a->lr * a->runs[run].lr_scale,
	    .wd = a->runs[run].decay ? a->weight_decay : 0.0f,
	    .mu = a->momentum,
	    .b1 = a->beta1,
	    .b2 = a->beta2,
	    .eps = a->eps,
	};
	_sf_adamw_corrections(a->beta1, a->beta2, a->t, &h.c1, &h.c2);
	return h;
}

/* param[RW] grad[R] s0[RW] (s1[RW]) clip[R]: f on each non-empty run of the
 * parameter groups (struct _sf_opt_run), with the run's learning rate and decay. The
 * update is element-wise, so a split changes no bit of it (and lr x 1 is lr). */
static void opt_body(void *buffers[], void *cl_arg, int nstate, _sf_opt_loop f)
{
	struct _sf_opt_args a;
	starpu_codelet_unpack_args(cl_arg, &a);
	float *p = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
	const float *g = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *s0 = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	float *s1 = nstate > 1 ? (float *)STARPU_VECTOR_GET_PTR(buffers[3]) : NULL;
	const double *clip = (const double *)STARPU_VECTOR_GET_PTR(buffers[2 + nstate]);
	size_t b = 0;
	for (int r = 0; r < a.nruns; r++) {
		size_t e = a.runs[r].end;
		if (e > b) {
			struct _sf_opt_hyper h = _sf_opt_hyper_of(&a, r);
			f(e - b, p + b, g + b, s0 + b, s1 ? s1 + b : NULL, &h, a.grad_scale, clip);
		}
		b = e;
	}
}

#ifdef SF_HAVE_CUDA
#define SF_OPT_WHERE (STARPU_CPU | STARPU_CUDA)
#define SF_OPT_CUDA(f) .cuda_funcs = {f}, .cuda_flags = {STARPU_CUDA_ASYNC},
#define SF_OPT_CUDA_BODY(opt)                                                                     \
	static void opt##_cuda(void *buffers[], void *cl_arg)                                     \
	{                                                                                          \
		opt_body(buffers, cl_arg, opt##_nstate, _sf_opt_cuda_##opt);                     \
	}
#else
#define SF_OPT_WHERE STARPU_CPU
#define SF_OPT_CUDA(f)
#define SF_OPT_CUDA_BODY(opt)
#endif

/* An optimizer file's codelet: its bodies, perfmodel (sf_<name>) and modes */
#define SF_OPTIMIZER(opt, nstate, flops)                                                          \
	enum { opt##_nstate = (nstate), opt##_flops = (flops) };                                 \
	_Static_assert((nstate) == 1 || (nstate) == 2, #opt ": 1 or 2 state vectors");            \
	static void opt##_cpu(void *buffers[], void *cl_arg)                                      \
	{                                                                                          \
		opt_body(buffers, cl_arg, opt##_nstate, _sf_opt_cpu_##opt);                      \
	}                                                                                          \
	SF_OPT_CUDA_BODY(opt)                                                                     \
	static struct starpu_perfmodel opt##_model = {.type = STARPU_HISTORY_BASED,               \
	                                               .symbol = "sf_" #opt,                      \
	                                               .footprint = _sf_task_footprint};          \
	static struct starpu_codelet opt##_cl = {                                                 \
	    .where = SF_OPT_WHERE,                                                                 \
	    .cpu_funcs = {opt##_cpu},                                                             \
	    .cpu_funcs_name = {#opt "_cpu"},                                                      \
	    SF_OPT_CUDA(opt##_cuda).nbuffers = 3 + (nstate),                                      \
	    .modes = {STARPU_RW, STARPU_R, STARPU_RW, (nstate) > 1 ? STARPU_RW : STARPU_R,         \
	              STARPU_R},                                                                   \
	    .can_execute = _sf_opt_can_execute,                                                    \
	    .model = &opt##_model,                                                                \
	    .name = #opt,                                                                         \
	};
#include "tasks/optimizers/list.h"

/* Flops per parameter: each file counts its update's operations on one element and
 * the gradient's multiplier (g x s), a sqrt or a sign as one, and not the step's
 * constants the compiler hoists (lr wd, 1 - b1, 1 - b2). */
#define SF_OPT_ROW(opt, NAME)                                                                     \
	[SF_OPT_##NAME] = {.name = #opt,                                                          \
	                   .cl = &opt##_cl,                                                       \
	                   .nstate = opt##_nstate,                                                \
	                   .flops = opt##_flops,                                                  \
	                   .cpu = _sf_opt_cpu_##opt},
const struct _sf_optim_family _sf_optim_families[SF_OPT_COUNT] = {SF_OPTIMIZER_LIST(SF_OPT_ROW)};
#define SF_OPT_ONE(name, NAME) +1
_Static_assert(0 SF_OPTIMIZER_LIST(SF_OPT_ONE) == SF_OPT_COUNT,
               "one file of tasks/optimizers/ per enum sf_optimizer value (and ./autogen.sh "
               "run since the last was added)");

void _sf_optim_codelets_configure(bool skip)
{
#ifdef SF_HAVE_CUDA
#define SF_OPT_CONFIGURE(opt, NAME) _sf_codelet_bodies(&opt##_cl, skip, opt##_cpu, opt##_cuda);
#else
#define SF_OPT_CONFIGURE(opt, NAME) _sf_codelet_bodies(&opt##_cl, skip, opt##_cpu, NULL);
#endif
	SF_OPTIMIZER_LIST(SF_OPT_CONFIGURE)
}

int _sf_submit_opt(int opt, const struct _sf_opt_args *a, starpu_data_handle_t param,
                   starpu_data_handle_t grad, starpu_data_handle_t m, starpu_data_handle_t v,
                   starpu_data_handle_t clip, const char *name, struct _sf_task_done done)
{
	const struct _sf_optim_family *f = &_sf_optim_families[opt];
	struct starpu_data_descr d[5] = {{param, STARPU_RW}, {grad, STARPU_R}, {m, STARPU_RW}};
	int k = 3;
	if (f->nstate == 2)
		d[k++] = (struct starpu_data_descr){v, STARPU_RW};
	d[k++] = (struct starpu_data_descr){clip, STARPU_R};
	return _sf_task_submit_flops(f->cl, d, k, a, sizeof *a, true, -1,
	                             (double)f->flops * (double)a->n, name, done);
}
