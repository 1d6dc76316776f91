/*
 * optim.c — the optimizer codelets: thin bodies that unpack the buffers and the
 * packed per-step arguments and call tasks/optim_cpu.c (or, on a CUDA worker,
 * tasks/optim_cuda.cu).
 */
#include "config.h"

#include "layers/kernel_bodies.h"
#include "tasks/optim.h"
#include "tasks/worker.h"

static struct _sf_opt_args unpack(void *cl_arg)
{
	struct _sf_opt_args a;
	starpu_codelet_unpack_args(cl_arg, &a);
	return a;
}

typedef void (*sgd_fn)(size_t, float *, const float *, float *, float, float, float);
typedef void (*adamw_fn)(size_t, float *, const float *, float *, float *, float, float, float,
                         float, float, int64_t);

/* param[RW] grad[R] buf[RW] */
static void sgd_with(void *buffers[], void *cl_arg, sgd_fn f)
{
	struct _sf_opt_args a = unpack(cl_arg);
	f(a.n, (float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	  (const float *)STARPU_VECTOR_GET_PTR(buffers[1]), (float *)STARPU_VECTOR_GET_PTR(buffers[2]),
	  a.lr, a.momentum, a.weight_decay);
}

/* param[RW] grad[R] m[RW] v[RW] */
static void adamw_with(void *buffers[], void *cl_arg, adamw_fn f)
{
	struct _sf_opt_args a = unpack(cl_arg);
	f(a.n, (float *)STARPU_VECTOR_GET_PTR(buffers[0]),
	  (const float *)STARPU_VECTOR_GET_PTR(buffers[1]), (float *)STARPU_VECTOR_GET_PTR(buffers[2]),
	  (float *)STARPU_VECTOR_GET_PTR(buffers[3]), a.lr, a.beta1, a.beta2, a.eps, a.weight_decay,
	  a.t);
}

SF_BODIES(sgd, sgd_with, _sf_sgd, _sf_sgd_cuda)
SF_BODIES(adamw, adamw_with, _sf_adamw, _sf_adamw_cuda)

static struct starpu_perfmodel sgd_model = {.type = STARPU_HISTORY_BASED, .symbol = "sf_sgd"};
static struct starpu_perfmodel adamw_model = {.type = STARPU_HISTORY_BASED,
                                              .symbol = "sf_adamw"};

#ifdef SF_HAVE_CUDA
#define SF_OPT_WHERE (STARPU_CPU | STARPU_CUDA)
#define SF_OPT_CUDA(f) .cuda_funcs = {f}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define SF_OPT_WHERE STARPU_CPU
#define SF_OPT_CUDA(f)
#endif

struct starpu_codelet _sf_cl_sgd = {
    .where = SF_OPT_WHERE,
    .cpu_funcs = {sgd_cpu},
    .cpu_funcs_name = {"sgd_cpu"},
    SF_OPT_CUDA(sgd_cuda)
    .nbuffers = 3,
    .modes = {STARPU_RW, STARPU_R, STARPU_RW},
    .can_execute = _sf_opt_can_execute,
    .model = &sgd_model,
    .name = "sgd",
};

struct starpu_codelet _sf_cl_adamw = {
    .where = SF_OPT_WHERE,
    .cpu_funcs = {adamw_cpu},
    .cpu_funcs_name = {"adamw_cpu"},
    SF_OPT_CUDA(adamw_cuda)
    .nbuffers = 4,
    .modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW},
    .can_execute = _sf_opt_can_execute,
    .model = &adamw_model,
    .name = "adamw",
};

void _sf_optim_codelets_configure(bool skip)
{
	_sf_cl_sgd.cpu_funcs[0] = skip ? _sf_noop_kernel : sgd_cpu;
	_sf_cl_adamw.cpu_funcs[0] = skip ? _sf_noop_kernel : adamw_cpu;
#ifdef SF_HAVE_CUDA
	_sf_cl_sgd.cuda_funcs[0] = skip ? _sf_noop_kernel : sgd_cuda;
	_sf_cl_adamw.cuda_funcs[0] = skip ? _sf_noop_kernel : adamw_cuda;
#endif
}
