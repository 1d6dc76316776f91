/*
 * linear.c — the linear layer type: shapes, initialisation, parameter names and the
 * CPU codelet bodies (unpack the buffers, call layers/linear_cpu.c).
 *
 * Initialised U(-1/sqrt(I), 1/sqrt(I)) like PyTorch's nn.Linear, or — the long config,
 * struct sf_linear_config with init_std > 0 — W normal(0, init_std) and b = 0 as GPT-2
 * (the short config is a bare int, the output width). Its backward reads W
 * only for dx, so a linear layer reading a graph input gets no parameters in backward
 * and its unit is not gathered a second time (backward_params_for_dinput_only).
 */
#include "config.h"

#include "layers/gemm_bf16.h"
#include "layers/linear.h"
#include "layers/kernel_bodies.h"
#include "layers/layer.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <starpu.h>
#include <string.h>

static int linear_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                        size_t *nparams)
{
	(void)nin;
	int O = config ? *(const int *)config : 0;
	if (O <= 0)
		return SF_ERR(SF_ERR_INVALID, "linear: output width must be > 0 (got %d)", O);
	*out_dim = O;
	*nparams = (size_t)O * (size_t)in_dims[0] + (size_t)O;
	return SF_OK;
}

static int nobias_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                        size_t *nparams)
{
	int rc = linear_infer(in_dims, nin, config, out_dim, nparams);
	*nparams -= rc == SF_OK ? (size_t)*out_dim : 0;
	return rc;
}

static void linear_init(const struct sf_layer_info *li, struct sf_rng *rng, float *p)
{
	const struct sf_linear_config *c = li->config;
	if (li->config_size >= sizeof *c && c->init_std > 0.0f) {
		size_t nw = (size_t)li->out_dim * (size_t)li->in_dim[0];
		for (size_t i = 0; i < li->nparams; i++)
			p[i] = i < nw ? c->init_std * sf_rng_normal(rng) : 0.0f;
		return;
	}
	float bound = 1.0f / sqrtf((float)li->in_dim[0]);
	for (size_t i = 0; i < li->nparams; i++)
		p[i] = bound * sf_rng_uniform(rng);
}

static double linear_flops(const struct sf_layer_info *li)
{
	return 2.0 * li->rows * li->in_dim[0] * li->out_dim;
}

static int linear_tensors(const struct sf_layer_info *li, struct sf_param_tensor *t)
{
	size_t I = (size_t)li->in_dim[0], O = (size_t)li->out_dim;
	t[0] = (struct sf_param_tensor){"weight", 0, 2, {O, I}};
	t[1] = (struct sf_param_tensor){"bias", O * I, 1, {O, 0}};
	return li->nparams > O * I ? 2 : 1;
}

/* Both types: a bias follows W when the layer has one (nparams = O*I + O). */
static bool has_bias(const struct sf_layer_info *li)
{
	return li->nparams > (size_t)li->out_dim * (size_t)li->in_dim[0];
}

typedef void (*fwd_fn)(int, int, int, const float *, const float *, const float *, float *);
typedef void (*bwd_fn)(int, int, int, const float *, const float *, const float *, float *, int,
                       float *, float *, int);

/* params (P) x (B,I) y(W) (B,O) */
static void fwd_with(void *buffers[], void *cl_arg, fwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	int B = li->rows, I = li->in_dim[0], O = li->out_dim;
	const float *p = sf_kernel_params(buffers, li);
	STARPU_ASSERT_MSG(STARPU_VECTOR_GET_NX(buffers[0]) >= li->param_offset + li->nparams,
	                  "linear: parameter buffer holds %u floats, the layer needs %zu at %zu",
	                  (unsigned)STARPU_VECTOR_GET_NX(buffers[0]), li->nparams,
	                  li->param_offset);
	bool was = _sf_gemm_bf16_use(li->param_bf16);
	f(B, I, O, sf_kernel_input(buffers, li, 0), p, has_bias(li) ? p + (size_t)O * I : NULL,
	  sf_kernel_output(buffers, li));
	_sf_gemm_bf16_use(was);
}

/* [params] x y dy [dx] [dparams] (W, or RW when tied; absent in a split backward's
 * input-gradient half) */
static void bwd_with(void *buffers[], void *cl_arg, bwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	int B = li->rows, I = li->in_dim[0], O = li->out_dim;
	const float *p = sf_kernel_params(buffers, li);
	float *dp = sf_kernel_dparams(buffers, li);
	bool was = _sf_gemm_bf16_use(li->param_bf16);
	f(B, I, O, sf_kernel_input(buffers, li, 0), p, sf_kernel_doutput(buffers, li),
	  sf_kernel_dinput(buffers, li, 0), li->accumulate[0], dp,
	  dp && has_bias(li) ? dp + (size_t)O * I : NULL, li->accumulate_dparams);
	_sf_gemm_bf16_use(was);
}

SF_BODIES(linear_fwd, fwd_with, _sf_linear_fwd, _sf_linear_fwd_cuda)
SF_BODIES(linear_bwd, bwd_with, _sf_linear_bwd, _sf_linear_bwd_cuda)

/* The three linear types share the GEMM bodies, the flop count and a backward that reads
 * W only for dx; they differ in shapes, initialisation, parameter names and configs (the
 * sizes they accept, the last arguments). */
#define LINEAR_TYPE(var, type_name, infer_fn, init_fn, tensors_fn, ...)                            \
	const struct sf_layer_type var = {                                                         \
	    .api_version = SF_LAYER_API_VERSION,                                                   \
	    .name = type_name,                                                                     \
	    .min_inputs = 1,                                                                       \
	    .max_inputs = 1,                                                                       \
	    .infer = infer_fn,                                                                     \
	    SF_CONFIG_SIZES(__VA_ARGS__),                                                          \
	    .init = init_fn,                                                                       \
	    .forward_cpu = linear_fwd_cpu,                                                         \
	    .backward_cpu = linear_bwd_cpu,                                                        \
	    .forward_cuda = SF_CUDA_BODY(linear_fwd_cuda),                                         \
	    .backward_cuda = SF_CUDA_BODY(linear_bwd_cuda),                                        \
	    .flops = linear_flops,                                                                 \
	    .param_tensors = tensors_fn,                                                           \
	    .backward_params_for_dinput_only = 1,                                                  \
	};

/* config: the output width O (an int), or a struct sf_linear_config */
LINEAR_TYPE(_sf_linear_type, "linear", linear_infer, linear_init, linear_tensors, sizeof(int),
            sizeof(struct sf_linear_config))
LINEAR_TYPE(_sf_linear_nobias_type, "linear_nobias", nobias_infer, linear_init, linear_tensors,
            sizeof(int), sizeof(struct sf_linear_config))

/* --- linear_split: one GEMM, several named row blocks of W -------------------------- */

static int split_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                       size_t *nparams)
{
	(void)nin;
	const struct sf_linear_split_config *c = config;
	if (!c || c->nparts < 1 || c->nparts > SF_MAX_PARAM_TENSORS)
		return SF_ERR(SF_ERR_INVALID,
		              "linear_split: a struct sf_linear_split_config with 1 to %d parts "
		              "is required (got %d)",
		              SF_MAX_PARAM_TENSORS, c ? c->nparts : 0);
	long long O = 0;
	for (int k = 0; k < c->nparts; k++) {
		if (c->rows[k] <= 0 || !c->names[k][0] ||
		    memchr(c->names[k], 0, sizeof c->names[k]) == NULL)
			return SF_ERR(SF_ERR_INVALID,
			              "linear_split: part %d needs rows > 0 (got %d) and a name of "
			              "1 to %zu characters",
			              k, c->rows[k], sizeof c->names[k] - 1);
		O += c->rows[k];
	}
	if (O > INT_MAX || !(c->init_std >= 0.0f) || !isfinite(c->init_std))
		return SF_ERR(SF_ERR_INVALID,
		              "linear_split: the parts' rows must sum below 2^31 and init_std "
		              "must be finite and >= 0");
	*out_dim = (int)O;
	*nparams = (size_t)O * (size_t)in_dims[0];
	return SF_OK;
}

static void split_init(const struct sf_layer_info *li, struct sf_rng *rng, float *p)
{
	const struct sf_linear_split_config *c = li->config;
	float bound = 1.0f / sqrtf((float)li->in_dim[0]);
	for (size_t i = 0; i < li->nparams; i++)
		p[i] = c->init_std > 0.0f ? c->init_std * sf_rng_normal(rng)
		                          : bound * sf_rng_uniform(rng);
}

static int split_tensors(const struct sf_layer_info *li, struct sf_param_tensor *t)
{
	const struct sf_linear_split_config *c = li->config;
	size_t I = (size_t)li->in_dim[0], off = 0;
	for (int k = 0; k < c->nparts; k++) {
		t[k] = (struct sf_param_tensor){"", off, 2, {(size_t)c->rows[k], I}};
		memcpy(t[k].suffix, c->names[k], sizeof t[k].suffix);
		off += (size_t)c->rows[k] * I;
	}
	return c->nparts;
}

LINEAR_TYPE(_sf_linear_split_type, "linear_split", split_infer, split_init, split_tensors,
            sizeof(struct sf_linear_split_config))

/* --- linear_col and linear_row: tensor-parallel slices of one linear layer ----------
 * A graph holds the whole layer; a model of TP degree K hands each rank's kernels its
 * slice's shapes (info->tp_split, layers/tp.c), so the GEMM bodies above serve both.
 * linear_row's forward adds the bias on TP rank 0 only: the partial outputs are then
 * summed over the TP group (a comm task), and the bias counts once. */

static int tp_config_check(const char *type, const struct sf_linear_tp_config *c, bool col)
{
	if (!c || c->out_dim <= 0 || (c->bias != 0 && c->bias != 1) || !(c->init_std >= 0.0f) ||
	    !isfinite(c->init_std))
		return SF_ERR(SF_ERR_INVALID,
		              "%s: a struct sf_linear_tp_config with out_dim > 0 (got %d), bias 0 "
		              "or 1 (got %d) and a finite init_std >= 0 is required",
		              type, c ? c->out_dim : 0, c ? c->bias : 0);
	int np = c->nparts > 1 ? c->nparts : 1;
	bool rows = false, names = false;
	long long sum = 0;
	for (int k = 0; k < SF_MAX_PARAM_TENSORS; k++) {
		rows |= c->part_rows[k] != 0;
		names |= c->part_names[k][0] != '\0';
		sum += k < np ? c->part_rows[k] : 0;
	}
	if (c->nparts < 0 || c->nparts > SF_MAX_PARAM_TENSORS ||
	    (!col && (np != 1 || rows || names)) || (!rows && c->out_dim % np != 0))
		return SF_ERR(SF_ERR_INVALID, "%s: nparts must be %s (got %d, out_dim %d)", type,
		              col ? "0, 1 or up to 4 blocks of rows (equal ones: dividing out_dim)"
		                  : "0, with no part_rows or part_names (linear_row splits its "
		                    "input, not blocks of rows)",
		              c->nparts, c->out_dim);
	for (int k = 0; col && k < SF_MAX_PARAM_TENSORS; k++) {
		bool in = k < np;
		if ((rows && in && c->part_rows[k] <= 0) || (!in && c->part_rows[k] != 0) ||
		    (names && in &&
		     (!c->part_names[k][0] ||
		      !memchr(c->part_names[k], 0, sizeof c->part_names[k]))) ||
		    (!in && c->part_names[k][0]))
			return SF_ERR(
			    SF_ERR_INVALID,
			    "%s: part %d: part_rows must be > 0 for each of the nparts %d "
			    "blocks (or all 0) and part_names 1 to 23 characters for each "
			    "(or all empty), nothing past nparts",
			    type, k, np);
	}
	if (rows && sum != c->out_dim)
		return SF_ERR(SF_ERR_INVALID, "%s: part_rows sum to %lld, out_dim is %d", type, sum,
		              c->out_dim);
	if (names && c->bias)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: named parts (part_names) take no bias: set bias 0", type);
	if (c->gather_output != 0 && (c->gather_output != 1 || !col))
		return SF_ERR(SF_ERR_INVALID, "%s: gather_output must be %s (got %d)", type,
		              col ? "0 or 1" : "0 (a linear_row's output is whole)",
		              c->gather_output);
	return SF_OK;
}

/* linear_col's block k's rows in the shapes li has (the whole layer's, or a TP rank's
 * slice when li->tp_split) */
int _sf_linear_col_part_rows(const struct sf_layer_info *li, int k)
{
	const struct sf_linear_tp_config *c = li->config;
	int np = c->nparts > 1 ? c->nparts : 1, K = li->tp_split ? li->tp_size : 1;
	int whole = c->part_rows[0] ? c->part_rows[k] : c->out_dim / np;
	return whole / K;
}

static int tp_infer(const char *type, bool col, const int *in_dims, const void *config,
                    int *out_dim, size_t *nparams)
{
	const struct sf_linear_tp_config *c = config;
	int rc = tp_config_check(type, c, col);
	if (rc < 0)
		return rc;
	*out_dim = c->out_dim;
	*nparams = (size_t)c->out_dim * (size_t)in_dims[0] + (c->bias ? (size_t)c->out_dim : 0);
	return SF_OK;
}

static int col_infer(const int *in_dims, int nin, const void *config, int *out_dim, size_t *nparams)
{
	(void)nin;
	return tp_infer("linear_col", true, in_dims, config, out_dim, nparams);
}

static int row_infer(const int *in_dims, int nin, const void *config, int *out_dim, size_t *nparams)
{
	(void)nin;
	return tp_infer("linear_row", false, in_dims, config, out_dim, nparams);
}

/* as linear_init, on the whole layer (the model slices it: layers/tp.c) */
static void tp_init(const struct sf_layer_info *li, struct sf_rng *rng, float *p)
{
	const struct sf_linear_tp_config *c = li->config;
	size_t nw = (size_t)li->out_dim * (size_t)li->in_dim[0];
	float bound = 1.0f / sqrtf((float)li->in_dim[0]);
	for (size_t i = 0; i < li->nparams; i++)
		p[i] = c->init_std > 0.0f ? (i < nw ? c->init_std * sf_rng_normal(rng) : 0.0f)
		                          : bound * sf_rng_uniform(rng);
}

/* linear_row: the bias by TP rank 0 only (the others' partial outputs have none) */
static void row_fwd_with(void *buffers[], void *cl_arg, fwd_fn f)
{
	const struct sf_layer_info *li = cl_arg;
	int B = li->rows, I = li->in_dim[0], O = li->out_dim;
	const float *p = sf_kernel_params(buffers, li);
	bool was = _sf_gemm_bf16_use(li->param_bf16);
	bool bias = has_bias(li) && (!li->tp_split || li->tp_rank == 0);
	f(B, I, O, sf_kernel_input(buffers, li, 0), p, bias ? p + (size_t)O * I : NULL,
	  sf_kernel_output(buffers, li));
	_sf_gemm_bf16_use(was);
}

SF_BODIES(linear_row_fwd, row_fwd_with, _sf_linear_fwd, _sf_linear_fwd_cuda)

/* linear_col's tensors: "weight" and "bias", or one per named block (no bias) */
static int col_tensors(const struct sf_layer_info *li, struct sf_param_tensor *t)
{
	const struct sf_linear_tp_config *c = li->config;
	if (!c->part_names[0][0])
		return linear_tensors(li, t);
	int np = c->nparts > 1 ? c->nparts : 1;
	size_t I = (size_t)li->in_dim[0], off = 0;
	for (int k = 0; k < np; k++) {
		size_t rows = (size_t)_sf_linear_col_part_rows(li, k);
		t[k] = (struct sf_param_tensor){"", off, 2, {rows, I}};
		memcpy(t[k].suffix, c->part_names[k], sizeof t[k].suffix);
		off += rows * I;
	}
	return np;
}

const struct sf_layer_type _sf_linear_col_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "linear_col",
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = col_infer,
    SF_CONFIG_SIZES(sizeof(struct sf_linear_tp_config)),
    .init = tp_init,
    .forward_cpu = linear_fwd_cpu,
    .backward_cpu = linear_bwd_cpu,
    .forward_cuda = SF_CUDA_BODY(linear_fwd_cuda),
    .backward_cuda = SF_CUDA_BODY(linear_bwd_cuda),
    .flops = linear_flops,
    .param_tensors = col_tensors,
    .backward_params_for_dinput_only = 1,
};

const struct sf_layer_type _sf_linear_row_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "linear_row",
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = row_infer,
    SF_CONFIG_SIZES(sizeof(struct sf_linear_tp_config)),
    .init = tp_init,
    .forward_cpu = linear_row_fwd_cpu,
    .backward_cpu = linear_bwd_cpu,
    .forward_cuda = SF_CUDA_BODY(linear_row_fwd_cuda),
    .backward_cuda = SF_CUDA_BODY(linear_bwd_cuda),
    .flops = linear_flops,
    .param_tensors = linear_tensors,
    .backward_params_for_dinput_only = 1,
};
