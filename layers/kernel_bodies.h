/*
 * kernel_bodies.h — one codelet body, two implementations.
 *
 * An op's <op>.c reads its buffers once, in a function `with(buffers, cl_arg, impl)`
 * that calls impl on plain pointers; impl is the CPU math (<op>_cpu.c) or the CUDA
 * launcher of the same signature (<op>_cuda.cu, device pointers, enqueued on
 * starpu_cuda_get_local_stream()). SF_BODIES(name, with, cpu, cuda) defines
 * name_cpu and, when configure found CUDA (SF_HAVE_CUDA, config.h), name_cuda;
 * SF_CUDA_BODY(name_cuda) is that body, or NULL in a CPU build, for the type's
 * forward_cuda / backward_cuda. Include config.h before this header.
 */
#ifndef SF_LAYERS_KERNEL_BODIES_H
#define SF_LAYERS_KERNEL_BODIES_H

#ifdef SF_HAVE_CUDA
#define SF_BODIES(name, with, cpu_impl, cuda_impl)                                         \
	static void name##_cpu(void *buffers[], void *cl_arg)                                  \
	{                                                                                      \
		with(buffers, cl_arg, cpu_impl);                                                   \
	}                                                                                      \
	static void name##_cuda(void *buffers[], void *cl_arg)                                 \
	{                                                                                      \
		with(buffers, cl_arg, cuda_impl);                                                  \
	}
#define SF_CUDA_BODY(f) f
#else
#define SF_BODIES(name, with, cpu_impl, cuda_impl)                                         \
	static void name##_cpu(void *buffers[], void *cl_arg)                                  \
	{                                                                                      \
		with(buffers, cl_arg, cpu_impl);                                                   \
	}
#define SF_CUDA_BODY(f) NULL
#endif

#endif
