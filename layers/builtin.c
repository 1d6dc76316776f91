/*
 * builtin.c — the built-in layer types: shapes, parameter counts and initialisation.
 *
 * linear: y = x W^T + b with W (O, I) then b (O) in the flat parameter vector,
 * initialised U(-1/sqrt(I), 1/sqrt(I)) like PyTorch's nn.Linear. relu, gelu and add
 * have no parameters. Their kernels live in tasks/layers_cpu.c.
 */
#include "scheduler/internal.h"

#include <math.h>

int _sf_layer_register_raw(const struct sf_layer_type *t);

static int linear_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                        size_t *nparams)
{
	(void)nin;
	int O = config ? *(const int *)config : 0;
	if (O <= 0)
		return sf_error_set(SF_ERR_INVALID, "linear: output width must be > 0 (got %d)", O);
	*out_dim = O;
	*nparams = (size_t)O * (size_t)in_dims[0] + (size_t)O;
	return SF_OK;
}

static void linear_init(const struct sf_layer_info *li, struct sf_rng *rng, float *p)
{
	float bound = 1.0f / sqrtf((float)li->in_dim[0]);
	for (size_t i = 0; i < li->nparams; i++)
		p[i] = bound * sf_rng_uniform(rng);
}

static double linear_flops(const struct sf_layer_info *li)
{
	return 2.0 * li->rows * li->in_dim[0] * li->out_dim;
}

static int same_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                      size_t *nparams)
{
	(void)config;
	for (int i = 1; i < nin; i++)
		if (in_dims[i] != in_dims[0])
			return sf_error_set(SF_ERR_INVALID,
			                    "inputs must have the same width (input 0 "
			                    "has %d, input %d has %d)",
			                    in_dims[0], i, in_dims[i]);
	*out_dim = in_dims[0];
	*nparams = 0;
	return SF_OK;
}

int _sf_layers_builtin_init(void)
{
	static int done;
	if (done)
		return SF_OK;
	done = 1;
	const struct sf_layer_type types[] = {
	    {"linear", 1, 1, linear_infer, linear_init, _sf_linear_fwd_cpu, _sf_linear_bwd_cpu,
	     linear_flops, 1},
	    {"relu", 1, 1, same_infer, NULL, _sf_relu_fwd_cpu, _sf_relu_bwd_cpu, NULL, 0},
	    {"gelu", 1, 1, same_infer, NULL, _sf_gelu_fwd_cpu, _sf_gelu_bwd_cpu, NULL, 0},
	    {"add", 2, 2, same_infer, NULL, _sf_add_fwd_cpu, _sf_add_bwd_cpu, NULL, 0},
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		int rc = _sf_layer_register_raw(&types[i]);
		if (rc < 0)
			return rc;
	}
	return SF_OK;
}
