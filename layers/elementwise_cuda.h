/*
 * elementwise_cuda.h — the CUDA codelet bodies of the element-wise ops (relu, gelu,
 * add), defined in layers/<op>_cuda.cu; the types use them when configure found CUDA
 * (SF_HAVE_CUDA). Same buffers as the CPU bodies; kernels go on
 * starpu_cuda_get_local_stream() and the codelets are STARPU_CUDA_ASYNC.
 */
#ifndef SF_LAYERS_ELEMENTWISE_CUDA_H
#define SF_LAYERS_ELEMENTWISE_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

void _sf_relu_fwd_cuda(void *buffers[], void *cl_arg);
void _sf_relu_bwd_cuda(void *buffers[], void *cl_arg);
void _sf_gelu_fwd_cuda(void *buffers[], void *cl_arg);
void _sf_gelu_bwd_cuda(void *buffers[], void *cl_arg);
void _sf_add_fwd_cuda(void *buffers[], void *cl_arg);
void _sf_add_bwd_cuda(void *buffers[], void *cl_arg);

#ifdef __cplusplus
}
#endif

#endif
