/*
 * grad.c — the gradient codelets (tasks/grad.h): thin bodies over tasks/grad_cpu.c
 * (or, on a CUDA worker, tasks/grad_cuda.cu). Compute codelets: never on the comm
 * worker, on the GPU when the rank has one.
 */
#include "config.h"

#include "layers/kernel_bodies.h"
#include "tasks/grad.h"
#include "tasks/worker.h"

typedef void (*pair_fn)(size_t, float *, const float *);
typedef void (*sq_fn)(size_t, const float *, double *);

static struct _sf_grad_args unpack(void *cl_arg)
{
	struct _sf_grad_args a;
	starpu_codelet_unpack_args(cl_arg, &a);
	return a;
}

/* dst src */
static void pair_with(void *buffers[], void *cl_arg, pair_fn f)
{
	struct _sf_grad_args a = unpack(cl_arg);
	f(a.n, (float *)STARPU_VECTOR_GET_PTR(buffers[0]) + a.off,
	  (const float *)STARPU_VECTOR_GET_PTR(buffers[1]) + a.off);
}

/* g sq */
static void sq_with(void *buffers[], void *cl_arg, sq_fn f)
{
	struct _sf_grad_args a = unpack(cl_arg);
	const float *g = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
	double *sq = (double *)STARPU_VECTOR_GET_PTR(buffers[1]);
	if (a.nsegs == 0) {
		f(a.n, g + a.off, sq);
		return;
	}
	for (int k = 0; k < a.nsegs; k++)
		f(a.segs[k].n, g + a.segs[k].off, sq + k);
}

SF_BODIES(grad_add, pair_with, _sf_grad_add, _sf_grad_add_cuda)
SF_BODIES(grad_copy, pair_with, _sf_grad_copy, _sf_grad_copy_cuda)
SF_BODIES(grad_sqnorm, sq_with, _sf_grad_sqnorm, _sf_grad_sqnorm_cuda)

/* keyed by _sf_task_footprint: a gradient slot's history is not its capacity's */
static struct starpu_perfmodel add_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "sf_grad_add", .footprint = _sf_task_footprint};
static struct starpu_perfmodel copy_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "sf_grad_copy", .footprint = _sf_task_footprint};
static struct starpu_perfmodel sq_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "sf_grad_sqnorm", .footprint = _sf_task_footprint};

#ifdef SF_HAVE_CUDA
#define SF_GRAD_CODELET(var, base, m0, m1, pm)                                                     \
	struct starpu_codelet var = {                                                              \
	    .where = STARPU_CPU | STARPU_CUDA,                                                     \
	    .cpu_funcs = {base##_cpu},                                                             \
	    .cpu_funcs_name = {#base "_cpu"},                                                      \
	    .cuda_funcs = {base##_cuda},                                                           \
	    .cuda_flags = {STARPU_CUDA_ASYNC},                                                     \
	    .nbuffers = 2,                                                                         \
	    .modes = {m0, m1},                                                                     \
	    .can_execute = _sf_compute_can_execute,                                                \
	    .model = &pm,                                                                          \
	    .name = #base,                                                                         \
	}
#else
#define SF_GRAD_CODELET(var, base, m0, m1, pm)                                                     \
	struct starpu_codelet var = {                                                              \
	    .where = STARPU_CPU,                                                                   \
	    .cpu_funcs = {base##_cpu},                                                             \
	    .cpu_funcs_name = {#base "_cpu"},                                                      \
	    .nbuffers = 2,                                                                         \
	    .modes = {m0, m1},                                                                     \
	    .can_execute = _sf_compute_can_execute,                                                \
	    .model = &pm,                                                                          \
	    .name = #base,                                                                         \
	}
#endif

SF_GRAD_CODELET(_sf_cl_grad_add, grad_add, STARPU_RW, STARPU_R, add_model);
SF_GRAD_CODELET(_sf_cl_grad_copy, grad_copy, STARPU_W, STARPU_R, copy_model);
SF_GRAD_CODELET(_sf_cl_grad_sqnorm, grad_sqnorm, STARPU_R, STARPU_W, sq_model);

void _sf_grad_codelets_configure(bool skip)
{
	_sf_codelet_bodies(&_sf_cl_grad_add, skip, grad_add_cpu, SF_CUDA_BODY(grad_add_cuda));
	_sf_codelet_bodies(&_sf_cl_grad_copy, skip, grad_copy_cpu, SF_CUDA_BODY(grad_copy_cuda));
	_sf_codelet_bodies(&_sf_cl_grad_sqnorm, skip, grad_sqnorm_cpu,
	                   SF_CUDA_BODY(grad_sqnorm_cuda));
}

/* --- submitting them ------------------------------------------------------------------ */

int _sf_submit_grad_acc(bool copy, starpu_data_handle_t dst, starpu_data_handle_t src,
                        struct _sf_grad_args a, const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{dst, copy ? STARPU_W : STARPU_RW}, {src, STARPU_R}};
	return _sf_task_submit_flops(copy ? &_sf_cl_grad_copy : &_sf_cl_grad_add, d, 2, &a,
	                             sizeof a, true, -1, copy ? 0.0 : (double)a.n, name, done);
}

int _sf_submit_grad_sqnorm(starpu_data_handle_t g, starpu_data_handle_t sq, struct _sf_grad_args a,
                           const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{g, STARPU_R}, {sq, STARPU_W}};
	return _sf_task_submit_flops(&_sf_cl_grad_sqnorm, d, 2, &a, sizeof a, true, -1,
	                             2.0 * (double)a.n, name, done);
}
