/*
 * kernel_api.c — the buffer layout of layer codelets, in one place: the sf_kernel_*
 * accessors that kernels read their buffers with. scheduler/step.c submits the
 * buffers in this order (shardflow.h, struct sf_layer_type):
 *   forward : [params]  in_0 .. in_{n-1}  out  [saved]
 *   backward: [params]  in_0 .. in_{n-1}  out  dout  [saved]  [din_i ...]  [dparams]
 * A node's parameters are its slice of the unit's flat vector: the accessors add
 * sf_layer_info::param_offset. sf_kernel_buffers_create makes such buffers around a
 * program's own arrays, so that a kernel can be checked without a runtime and without
 * StarPU's header.
 */
#include "layers/gpu_math.h"
#include "layers/layer.h"

#include <starpu.h>
#include <stdlib.h>

static int n_dinputs_before(const struct sf_layer_info *li, int i)
{
	int k = 0;
	for (int j = 0; j < i; j++)
		k += li->need_dinput[j] != 0;
	return k;
}

static void *buf(void *buffers[], int i)
{
	return (void *)STARPU_VECTOR_GET_PTR(buffers[i]);
}

static int first_input(const struct sf_layer_info *li)
{
	return li->nparams ? 1 : 0;
}

SF_API float *sf_kernel_params(void *buffers[], const struct sf_layer_info *li)
{
	if (!li->nparams || li->params_absent)
		return NULL;
	return (float *)buf(buffers, 0) + li->param_offset;
}

SF_API float *sf_kernel_input(void *buffers[], const struct sf_layer_info *li, int i)
{
	if (i < 0 || i >= li->nin || li->in_int[i])
		return NULL;
	return buf(buffers, first_input(li) + i);
}

SF_API const int32_t *sf_kernel_input_int(void *buffers[], const struct sf_layer_info *li, int i)
{
	if (i < 0 || i >= li->nin || !li->in_int[i])
		return NULL;
	return buf(buffers, first_input(li) + i);
}

SF_API float *sf_kernel_output(void *buffers[], const struct sf_layer_info *li)
{
	return buf(buffers, first_input(li) + li->nin);
}

SF_API float *sf_kernel_doutput(void *buffers[], const struct sf_layer_info *li)
{
	return buf(buffers, first_input(li) + li->nin + 1);
}

SF_API float *sf_kernel_saved(void *buffers[], const struct sf_layer_info *li)
{
	if (!li->nsaved)
		return NULL;
	/* after out in forward, after dout in backward */
	return buf(buffers, first_input(li) + li->nin + (li->backward ? 2 : 1));
}

SF_API float *sf_kernel_dinput(void *buffers[], const struct sf_layer_info *li, int i)
{
	if (i < 0 || i >= li->nin || !li->need_dinput[i])
		return NULL;
	return buf(buffers, first_input(li) + li->nin + 2 + (li->nsaved ? 1 : 0) +
	                        n_dinputs_before(li, i));
}

SF_API float *sf_kernel_dparams(void *buffers[], const struct sf_layer_info *li)
{
	if (!li->nparams || li->dparams_absent)
		return NULL;
	return (float *)buf(buffers, 1 + li->nin + 2 + (li->nsaved ? 1 : 0) +
	                                 n_dinputs_before(li, li->nin)) +
	       li->param_offset;
}

/* One allocation: the n pointers a kernel is given, then the n vector interfaces they
 * point to (only ptr set: the accessors read nothing else). */
SF_API int sf_kernel_buffers_create(void *const ptrs[], int n, void ***out)
{
	if (!out)
		return SF_ERR(SF_ERR_INVALID, "sf_kernel_buffers_create: out is NULL");
	*out = NULL;
	if (!ptrs)
		return SF_ERR(SF_ERR_INVALID, "sf_kernel_buffers_create: ptrs is NULL");
	if (n < 1)
		return SF_ERR(SF_ERR_INVALID, "sf_kernel_buffers_create: n must be >= 1 (got %d)",
		              n);
	const size_t align = _Alignof(struct starpu_vector_interface);
	size_t head = (sizeof(void *) * (size_t)n + align - 1) / align * align;
	char *mem = calloc(1, head + sizeof(struct starpu_vector_interface) * (size_t)n);
	if (!mem)
		return SF_ERR(SF_ERR_NOMEM, "sf_kernel_buffers_create: out of memory");
	void **buffers = (void **)mem;
	struct starpu_vector_interface *v = (struct starpu_vector_interface *)(mem + head);
	for (int i = 0; i < n; i++) {
		v[i].id = STARPU_VECTOR_INTERFACE_ID;
		v[i].ptr = (uintptr_t)ptrs[i];
		buffers[i] = &v[i];
	}
	*out = buffers;
	return SF_OK;
}

SF_API void sf_kernel_buffers_destroy(void **buffers)
{
	free(buffers);
}

/* layers/gpu_math.h: written by sf_init before the first task, read by the CUDA bodies */
static enum sf_gpu_math gpu_math = SF_GPU_MATH_FP32;

void _sf_gpu_math_set(enum sf_gpu_math math)
{
	gpu_math = math;
}

enum sf_gpu_math _sf_gpu_math(void)
{
	return gpu_math;
}
