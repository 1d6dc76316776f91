/*
 * embedding_vp.c — the vocabulary-parallel embedding type: as "embedding" (one integer
 * input of ids in [0, V), config the width C, V*C parameters "weight" (V, C), the same
 * initial values), its kernels on this TP rank's ceil(V / K) rows (info->tp_split: the
 * model's slice, layers/tp.c's _sf_tp_vocab_slice; a vocabulary K does not divide
 * padded, its padding rows never looked up since ids are below V). No CUDA body: CUDA
 * ranks run it on a CPU worker.
 */
#include "config.h"

#include "layers/embedding_vp.h"
#include "layers/kernel_bodies.h"
#include "layers/layer.h"

#include <starpu.h>

static int vp_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                    size_t *nparams)
{
	(void)nin;
	int C = config ? *(const int *)config : 0;
	if (C <= 0)
		return SF_ERR(SF_ERR_INVALID, "embedding_vp: width must be > 0 (got %d)", C);
	*out_dim = C;
	*nparams = (size_t)in_dims[0] * (size_t)C; /* in_dims[0]: the id range V */
	return SF_OK;
}

static void vp_init(const struct sf_layer_info *li, struct sf_rng *rng, float *p)
{
	for (size_t i = 0; i < li->nparams; i++)
		p[i] = 0.02f * sf_rng_normal(rng);
}

/* the rows li's shapes hold: the whole vocabulary, or a TP rank's slice */
static struct _sf_vocab_slice slice_of(const struct sf_layer_info *li)
{
	if (!li->tp_split)
		return (struct _sf_vocab_slice){li->in_range[0], 0, li->in_range[0]};
	return _sf_tp_vocab_slice(li->in_range[0], li->tp_size, li->tp_rank);
}

static int vp_tensors(const struct sf_layer_info *li, struct sf_param_tensor *t)
{
	t[0] = (struct sf_param_tensor){
	    "weight", 0, 2, {(size_t)slice_of(li).rows, (size_t)li->out_dim}};
	return 1;
}

static void fwd_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	struct _sf_vocab_slice v = slice_of(li);
	_sf_embedding_vp_fwd(li->rows, v.rows, v.first, li->out_dim,
	                     sf_kernel_input_int(buffers, li, 0), sf_kernel_params(buffers, li),
	                     sf_kernel_output(buffers, li));
}

static void bwd_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	struct _sf_vocab_slice v = slice_of(li);
	_sf_embedding_vp_bwd(li->rows, v.rows, v.first, li->out_dim,
	                     sf_kernel_input_int(buffers, li, 0), sf_kernel_doutput(buffers, li),
	                     sf_kernel_dparams(buffers, li), li->accumulate_dparams);
}

/* as embedding's: the backward's B C adds */
static double vp_flops(const struct sf_layer_info *li)
{
	return li->backward ? (double)li->rows * li->out_dim : 0.0;
}

const struct sf_layer_type _sf_embedding_vp_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "embedding_vp",
    .min_inputs = 1,
    .max_inputs = 1,
    .int_inputs = 1u,
    .infer = vp_infer,
    SF_CONFIG_SIZES(sizeof(int)), /* the width C */
    .init = vp_init,
    .forward_cpu = fwd_cpu,
    .backward_cpu = bwd_cpu,
    .param_tensors = vp_tensors,
    .flops = vp_flops,
    .backward_params_for_dinput_only = 1,
};
