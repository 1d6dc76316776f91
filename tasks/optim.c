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

typedef void (*sgd_fn)(size_t, float *, const float *, float *, float, float, float, float,
                       const double *);
typedef void (*lion_fn)(size_t, float *, const float *, float *, float, float, float, float, float,
                        const double *);
typedef void (*adamw_fn)(size_t, float *, const float *, float *, float *, float, float, float,
                         float, float, int64_t, float, const double *);

/* The parameter groups' runs of [0, a->n) (struct _sf_opt_run): runs body on each
 * non-empty one, [b_, e_) with its learning rate lr_ and weight decay wd_. The update
 * is element-wise, so a split changes no bit of it (and lr x 1 is lr). */
#define FOR_EACH_RUN(a, b_, e_, lr_, wd_, body)                                                    \
	do {                                                                                       \
		size_t at_ = 0;                                                                    \
		for (int i_ = 0; i_ < (a).nruns; i_++) {                                           \
			size_t b_ = at_, e_ = (a).runs[i_].end;                                    \
			float lr_ = (a).lr * (a).runs[i_].lr_scale;                                \
			float wd_ = (a).runs[i_].decay ? (a).weight_decay : 0.0f;                  \
			if (e_ > b_) {                                                             \
				body;                                                              \
			}                                                                          \
			at_ = e_;                                                                  \
		}                                                                                  \
	} while (0)

/* param[RW] grad[R] buf[RW] clip[R] */
static void sgd_with(void *buffers[], void *cl_arg, sgd_fn f)
{
	struct _sf_opt_args a = unpack(cl_arg);
	float *p = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
	const float *g = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *buf = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	const double *clip = (const double *)STARPU_VECTOR_GET_PTR(buffers[3]);
	FOR_EACH_RUN(a, b, e, lr, wd,
	             f(e - b, p + b, g + b, buf + b, lr, a.momentum, wd, a.grad_scale, clip));
}

/* param[RW] grad[R] m[RW] v[RW] clip[R] */
static void adamw_with(void *buffers[], void *cl_arg, adamw_fn f)
{
	struct _sf_opt_args a = unpack(cl_arg);
	float *p = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
	const float *g = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *m = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	float *v = (float *)STARPU_VECTOR_GET_PTR(buffers[3]);
	const double *clip = (const double *)STARPU_VECTOR_GET_PTR(buffers[4]);
	FOR_EACH_RUN(a, b, e, lr, wd,
	             f(e - b, p + b, g + b, m + b, v + b, lr, a.beta1, a.beta2, a.eps, wd, a.t,
	               a.grad_scale, clip));
}

/* param[RW] grad[R] m[RW] clip[R] */
static void lion_with(void *buffers[], void *cl_arg, lion_fn f)
{
	struct _sf_opt_args a = unpack(cl_arg);
	float *p = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
	const float *g = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *m = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	const double *clip = (const double *)STARPU_VECTOR_GET_PTR(buffers[3]);
	FOR_EACH_RUN(a, b, e, lr, wd,
	             f(e - b, p + b, g + b, m + b, lr, a.beta1, a.beta2, wd, a.grad_scale, clip));
}

SF_BODIES(sgd, sgd_with, _sf_sgd, _sf_sgd_cuda)
SF_BODIES(adamw, adamw_with, _sf_adamw, _sf_adamw_cuda)
SF_BODIES(lion, lion_with, _sf_lion, _sf_lion_cuda)

static struct starpu_perfmodel sgd_model = {.type = STARPU_HISTORY_BASED, .symbol = "sf_sgd"};
static struct starpu_perfmodel adamw_model = {.type = STARPU_HISTORY_BASED, .symbol = "sf_adamw"};
static struct starpu_perfmodel lion_model = {.type = STARPU_HISTORY_BASED, .symbol = "sf_lion"};

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
    SF_OPT_CUDA(sgd_cuda).nbuffers = 4,
    .modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_R},
    .can_execute = _sf_opt_can_execute,
    .model = &sgd_model,
    .name = "sgd",
};

struct starpu_codelet _sf_cl_adamw = {
    .where = SF_OPT_WHERE,
    .cpu_funcs = {adamw_cpu},
    .cpu_funcs_name = {"adamw_cpu"},
    SF_OPT_CUDA(adamw_cuda).nbuffers = 5,
    .modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_RW, STARPU_R},
    .can_execute = _sf_opt_can_execute,
    .model = &adamw_model,
    .name = "adamw",
};

struct starpu_codelet _sf_cl_lion = {
    .where = SF_OPT_WHERE,
    .cpu_funcs = {lion_cpu},
    .cpu_funcs_name = {"lion_cpu"},
    SF_OPT_CUDA(lion_cuda).nbuffers = 4,
    .modes = {STARPU_RW, STARPU_R, STARPU_RW, STARPU_R},
    .can_execute = _sf_opt_can_execute,
    .model = &lion_model,
    .name = "lion",
};

/* Flops per parameter, counting each operation of tasks/optim_math.h's update on one
 * element and the gradient's multiplier (g x s), a sqrt or a sign as one, and not the
 * step's constants the compiler hoists (lr wd, 1 - b1, 1 - b2):
 * SGD: d = g + wd p, buf = mu buf + d, p -= lr buf: 2 + 2 + 2, and g x s = 7;
 * AdamW: p -= (lr wd) p: 2, m = b1 m + (1 - b1) g: 3, v = b2 v + (1 - b2) g g: 4,
 * p -= lr (m / c1) / (sqrt(v / c2) + eps): 7, and g x s = 17;
 * Lion: c = b1 m + (1 - b1) g: 3, its sign: 1, p -= lr (sgn + wd p): 4,
 * m = b2 m + (1 - b2) g: 3, and g x s = 12. */
const struct _sf_optim_family _sf_optim_families[] = {
    [SF_OPT_SGD] = {.cl = &_sf_cl_sgd, .nstate = 1, .flops = 7},
    [SF_OPT_ADAMW] = {.cl = &_sf_cl_adamw, .nstate = 2, .flops = 17},
    [SF_OPT_LION] = {.cl = &_sf_cl_lion, .nstate = 1, .flops = 12},
};
_Static_assert(sizeof _sf_optim_families / sizeof _sf_optim_families[0] == SF_OPT_COUNT,
               "one _sf_optim_families entry per enum sf_optimizer value");

void _sf_optim_codelets_configure(bool skip)
{
	_sf_codelet_bodies(&_sf_cl_sgd, skip, sgd_cpu, SF_CUDA_BODY(sgd_cuda));
	_sf_codelet_bodies(&_sf_cl_adamw, skip, adamw_cpu, SF_CUDA_BODY(adamw_cuda));
	_sf_codelet_bodies(&_sf_cl_lion, skip, lion_cpu, SF_CUDA_BODY(lion_cuda));
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
