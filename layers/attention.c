/*
 * attention.c — the "attention" layer type: causal multi-head self-attention on the
 * output of a QKV projection. Config: the number of heads NH (an int). One float
 * input of width 3C, output width C, no parameters, a saved buffer of B*NH*T*2 floats
 * (each query row's max and inverse sum: the probabilities themselves are computed
 * again in the backward); the codelet bodies call layers/attention_cpu.c.
 */
#include "config.h"

#include "layers/attention.h"
#include "layers/kernel_bodies.h"
#include "layers/layer.h"

#include <starpu.h>
#include <stdlib.h>

static int attention_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                           size_t *nparams)
{
	(void)nin;
	int NH = config ? *(const int *)config : 0;
	if (NH <= 0)
		return SF_ERR(SF_ERR_INVALID, "attention: the number of heads must be > 0 (got %d)",
		              NH);
	if (in_dims[0] % 3)
		return SF_ERR(SF_ERR_INVALID,
		              "attention: the input holds q, k and v side by side, so its "
		              "width must be divisible by 3 (got %d)",
		              in_dims[0]);
	int C = in_dims[0] / 3;
	if (C % NH)
		return SF_ERR(SF_ERR_INVALID,
		              "attention: C = %d (input width %d / 3) is not divisible by "
		              "the %d heads",
		              C, in_dims[0], NH);
	*out_dim = C;
	*nparams = 0;
	return SF_OK;
}

/* attention_gqa: W = (NH + 2 NKV) hs, so hs = W / (NH + 2 NKV) and C = NH hs */
static int attention_gqa_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                               size_t *nparams)
{
	(void)nin;
	if (!config)
		return SF_ERR(SF_ERR_INVALID,
		              "attention_gqa: a struct sf_attention_config is required");
	const struct sf_attention_config *c = config;
	if (c->heads <= 0 || c->kv_heads <= 0 || c->heads % c->kv_heads)
		return SF_ERR(SF_ERR_INVALID,
		              "attention_gqa: kv_heads must be > 0 and divide heads (got heads "
		              "%d, kv_heads %d)",
		              c->heads, c->kv_heads);
	int parts = c->heads + 2 * c->kv_heads;
	if (in_dims[0] % parts)
		return SF_ERR(SF_ERR_INVALID,
		              "attention_gqa: the input holds %d query, %d key and %d value heads "
		              "of one size side by side, so its width %d must be divisible by %d",
		              c->heads, c->kv_heads, c->kv_heads, in_dims[0], parts);
	*out_dim = in_dims[0] / parts * c->heads;
	*nparams = 0;
	return SF_OK;
}

/* the query and key/value heads of a node of either type */
static void heads_of(const struct sf_layer_info *li, int *NH, int *NKV)
{
	if (li->config_size == sizeof(int)) { /* "attention": NH, one key/value head each */
		*NH = *NKV = *(const int *)li->config;
	} else {
		const struct sf_attention_config *c = li->config;
		*NH = c->heads, *NKV = c->kv_heads;
	}
	if (li->tp_split) /* this TP rank's heads (layers/tp.c checked they divide) */
		*NH /= li->tp_size, *NKV /= li->tp_size;
}

static size_t attention_saved(const struct sf_layer_info *li)
{
	size_t T = (size_t)li->seq_len;
	int NH, NKV;
	heads_of(li, &NH, &NKV);
	return (size_t)li->samples * (size_t)NH * T * 2;
}

/* The backward is counted as twice what this returns: its five products (the scores
 * again, dV, dP, dQ, dK) are 2.5 times the forward's two. */
static double attention_flops(const struct sf_layer_info *li)
{
	double f = _sf_attention_fwd_flops(li->samples, li->seq_len, li->out_dim,
	                                   SF_ATTENTION_ROW_BLOCK);
	return li->backward ? 1.25 * f : f;
}

/* A block of query rows' probabilities (nblocks = 1) or those and its dS (2): rb x T
 * floats each. A kernel cannot report an error and the layer API gives kernels no
 * writable scratch, so it is allocated in the body: 256 KiB a block at T = 1024. */
static float *block_scratch(int T, int nblocks)
{
	int rb = SF_ATTENTION_ROW_BLOCK < T ? SF_ATTENTION_ROW_BLOCK : T;
	float *s = malloc(sizeof(float) * (size_t)nblocks * (size_t)rb * (size_t)T);
	STARPU_ASSERT_MSG(s, "attention: out of memory for %d x %d x %d floats of scratch",
	                  nblocks, rb, T);
	return s;
}

/* qkv (B*T, 3C) y(W) (B*T, C) saved(W) (B, NH, T, 2) */
static void attention_fwd_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	int NH, NKV;
	heads_of(li, &NH, &NKV);
	float *scratch = block_scratch(li->seq_len, 1);
	_sf_attention_fwd(li->samples, li->seq_len, li->out_dim, NH, NKV, SF_ATTENTION_ROW_BLOCK,
	                  sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li),
	                  sf_kernel_saved(buffers, li), scratch);
	free(scratch);
}

/* qkv y dy saved(R) [dqkv] */
static void attention_bwd_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	float *dqkv = sf_kernel_dinput(buffers, li, 0);
	if (!dqkv) /* the input needs no gradient (a graph input): nothing to compute */
		return;
	int NH, NKV;
	heads_of(li, &NH, &NKV);
	float *scratch = block_scratch(li->seq_len, 2);
	_sf_attention_bwd(li->samples, li->seq_len, li->out_dim, NH, NKV, SF_ATTENTION_ROW_BLOCK,
	                  sf_kernel_input(buffers, li, 0),
	                  sf_kernel_saved(buffers, li), sf_kernel_doutput(buffers, li), dqkv,
	                  li->accumulate[0], scratch);
	free(scratch);
}

#ifdef SF_HAVE_CUDA
/* the same buffers; the whole T x T scores per head (the masked half is zeroed by the
 * softmax rows), no row blocks: cuBLAS batches the heads of a sample */
static void attention_fwd_cuda(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	int NH, NKV;
	heads_of(li, &NH, &NKV);
	_sf_attention_fwd_cuda(li->samples, li->seq_len, li->out_dim, NH, NKV,
	                       sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li),
	                       sf_kernel_saved(buffers, li));
}

static void attention_bwd_cuda(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	float *dqkv = sf_kernel_dinput(buffers, li, 0);
	if (!dqkv)
		return;
	int NH, NKV;
	heads_of(li, &NH, &NKV);
	_sf_attention_bwd_cuda(li->samples, li->seq_len, li->out_dim, NH, NKV,
	                       sf_kernel_input(buffers, li, 0), sf_kernel_output(buffers, li),
	                       sf_kernel_saved(buffers, li), sf_kernel_doutput(buffers, li), dqkv,
	                       li->accumulate[0]);
}
#endif

/* The two attention types share the bodies; only their config, and so infer, differ
 * (the bodies tell them apart by the config's size). */
#define ATTENTION_TYPE(var, type_name, infer_fn, config_size)                                      \
	const struct sf_layer_type var = {                                                         \
	    .api_version = SF_LAYER_API_VERSION,                                                   \
	    .name = type_name,                                                                     \
	    .min_inputs = 1,                                                                       \
	    .max_inputs = 1,                                                                       \
	    .infer = infer_fn,                                                                     \
	    SF_CONFIG_SIZES(config_size),                                                          \
	    .forward_cpu = attention_fwd_cpu,                                                      \
	    .backward_cpu = attention_bwd_cpu,                                                     \
	    .forward_cuda = SF_CUDA_BODY(attention_fwd_cuda),                                      \
	    .backward_cuda = SF_CUDA_BODY(attention_bwd_cuda),                                     \
	    .flops = attention_flops,                                                              \
	    .saved_floats = attention_saved,                                                       \
	};

ATTENTION_TYPE(_sf_attention_type, "attention", attention_infer, sizeof(int)) /* heads */
ATTENTION_TYPE(_sf_attention_gqa_type, "attention_gqa", attention_gqa_infer,
               sizeof(struct sf_attention_config))
