/*
 * layers_cpu.c — StarPU CPU codelet bodies of the built-in layers and the loss.
 *
 * Thin by rule: unpack buffers with the sf_kernel_* accessors (layout in
 * shardflow.h), check shapes, call a kernel from kernels.c. A layer's codelet is
 * made from these by layers/registry.c.
 */
#include "scheduler/internal.h"
#include "tasks/kernels.h"

static size_t nelem(const struct sf_layer_info *li)
{
	return (size_t)li->rows * (size_t)li->out_dim;
}

void _sf_linear_fwd_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	const struct sf_layer_info *li = cl_arg;
	int B = li->rows, I = li->in_dim[0], O = li->out_dim;
	const float *p = sf_kernel_params(buffers, li);
	STARPU_ASSERT_MSG(starpu_worker_get_id() != _sf_comm_worker,
	                  "a compute task ran on the comm worker");
	STARPU_ASSERT_MSG(STARPU_VECTOR_GET_NX(buffers[0]) >= li->nparams,
	                  "linear: parameter buffer holds %u floats, the layer needs %zu",
	                  (unsigned)STARPU_VECTOR_GET_NX(buffers[0]), li->nparams);
	_sf_linear_fwd(B, I, O, sf_kernel_input(buffers, li, 0), p, p + (size_t)O * I,
	               sf_kernel_output(buffers, li));
}

void _sf_linear_bwd_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	const struct sf_layer_info *li = cl_arg;
	int B = li->rows, I = li->in_dim[0], O = li->out_dim;
	const float *p = sf_kernel_params(buffers, li);
	float *dp = sf_kernel_dparams(buffers, li);
	_sf_linear_bwd(B, I, O, sf_kernel_input(buffers, li, 0), p, sf_kernel_doutput(buffers, li),
	               sf_kernel_dinput(buffers, li, 0), li->accumulate[0], dp, dp + (size_t)O * I);
}

void _sf_relu_fwd_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	const struct sf_layer_info *li = cl_arg;
	_sf_relu_fwd(nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li));
}

void _sf_relu_bwd_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	const struct sf_layer_info *li = cl_arg;
	_sf_relu_bwd(nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_doutput(buffers, li),
	             sf_kernel_dinput(buffers, li, 0), li->accumulate[0]);
}

void _sf_gelu_fwd_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	const struct sf_layer_info *li = cl_arg;
	_sf_gelu_fwd(nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li));
}

void _sf_gelu_bwd_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	const struct sf_layer_info *li = cl_arg;
	_sf_gelu_bwd(nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_doutput(buffers, li),
	             sf_kernel_dinput(buffers, li, 0), li->accumulate[0]);
}

void _sf_add_fwd_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	const struct sf_layer_info *li = cl_arg;
	_sf_add_fwd(nelem(li), sf_kernel_input(buffers, li, 0), sf_kernel_input(buffers, li, 1),
	            sf_kernel_output(buffers, li));
}

void _sf_add_bwd_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	const struct sf_layer_info *li = cl_arg;
	const float *dy = sf_kernel_doutput(buffers, li);
	for (int i = 0; i < 2; i++) {
		float *dx = sf_kernel_dinput(buffers, li, i);
		if (dx)
			_sf_pass_bwd(nelem(li), dy, dx, li->accumulate[i]);
	}
}

/* loss: logits[R] labels[R] dlogits[W] loss[W] */
static void loss_cpu(void *buffers[], void *cl_arg)
{
	if (_sf_skip == SF_SKIP_COMPUTE)
		return;
	const struct _sf_loss_args *a = cl_arg;
	const float *z = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
	const int32_t *y = (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *dz = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	double *loss = (double *)STARPU_VECTOR_GET_PTR(buffers[3]);
	for (int r = 0; r < a->rows; r++)
		STARPU_ASSERT_MSG(
		    y[r] >= 0 && y[r] < a->classes,
		    "label %d of row %d outside [0, %d) (sf_model_step checks labels)", (int)y[r],
		    r, a->classes);
	*loss = _sf_softmax_xent(a->rows, a->classes, z, y, a->scale, dz);
}

struct starpu_codelet _sf_cl_loss = {
    .where = STARPU_CPU,
    .cpu_funcs = {loss_cpu},
    .cpu_funcs_name = {"loss_cpu"},
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .can_execute = _sf_compute_can_execute,
    .name = "loss",
};
