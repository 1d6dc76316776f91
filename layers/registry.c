/*
 * registry.c — the table of layer types, built-in and user-registered.
 *
 * A type is checked and copied here once; the table never shrinks, so entries (and
 * the codelets tasks/ builds from them) stay valid for the life of the process.
 * Adding a built-in op = its family of files plus one line in SF_BUILTIN_TYPES.
 * A type of layer API version 3 is its struct without the fields version 4 added at
 * the end (the accepted config sizes): only that much of it is read, and the rest
 * left 0 (configs unchecked), so a program built against version 3 still registers.
 */
#include "layers/layer.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The built-in types, one line each (X(name): the family's _sf_<name>_type), in the
 * order sf_graph_layer's unknown-type message lists them. */
#define SF_BUILTIN_TYPES(X)                                                                        \
	X(linear)                                                                                  \
	X(relu)                                                                                    \
	X(gelu)                                                                                    \
	X(add)                                                                                     \
	X(layernorm)                                                                               \
	X(linear_nobias)                                                                           \
	X(embedding)                                                                               \
	X(attention)                                                                               \
	X(pos_embedding)                                                                           \
	X(rmsnorm)                                                                                 \
	X(silu)                                                                                    \
	X(mul)                                                                                     \
	X(rope)                                                                                    \
	X(attention_gqa)                                                                           \
	X(linear_split)                                                                            \
	X(linear_col)                                                                              \
	X(linear_row)                                                                              \
	X(embedding_vp)

#define SF_TYPE_DECLARE(name) extern const struct sf_layer_type _sf_##name##_type;
SF_BUILTIN_TYPES(SF_TYPE_DECLARE)
#define SF_TYPE_ADDRESS(name) &_sf_##name##_type,
static const struct sf_layer_type *const builtin_types[] = {SF_BUILTIN_TYPES(SF_TYPE_ADDRESS)};

static struct _sf_layer_entry table[SF_MAX_LAYER_TYPES];

/* How a built-in type takes a tensor-parallel split (layers/tp.c); a user's type runs
 * replicated. */
static enum _sf_tp_kind _sf_builtin_tp_kind(const struct sf_layer_type *t)
{
	if (t == &_sf_linear_col_type)
		return SF_TP_COL;
	if (t == &_sf_linear_row_type)
		return SF_TP_ROW;
	if (t == &_sf_embedding_vp_type)
		return SF_TP_VOCAB;
	if (t == &_sf_attention_type || t == &_sf_attention_gqa_type)
		return SF_TP_HEADS;
	if (t == &_sf_rope_type)
		return SF_TP_ROPE;
	if (t == &_sf_relu_type || t == &_sf_gelu_type || t == &_sf_silu_type ||
	    t == &_sf_mul_type || t == &_sf_add_type)
		return SF_TP_ELEMENTWISE;
	return SF_TP_NONE;
}
static int ntypes;

const struct _sf_layer_entry *_sf_layer_find(const char *name)
{
	if (_sf_layers_builtin_init() < 0 || !name)
		return NULL;
	for (int i = 0; i < ntypes; i++)
		if (strcmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

void _sf_layer_type_names(char *out, size_t size)
{
	size_t k = 0;
	if (size)
		out[0] = '\0';
	if (_sf_layers_builtin_init() < 0)
		return;
	for (int i = 0; i < ntypes && k < size; i++) {
		int w = snprintf(out + k, size - k, "%s%s", i ? ", " : "", table[i].name);
		if (w < 0)
			return;
		k += (size_t)w;
	}
}

static int check_type(const struct sf_layer_type *t)
{
	if (!t || !t->name || !t->name[0])
		return SF_ERR(SF_ERR_INVALID, "sf_layer_type_register: NULL type or empty name");
	if (t->api_version < 3 || t->api_version > SF_LAYER_API_VERSION)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_layer_type_register(\"%s\"): api_version is %d, this library "
		              "takes %d (or 3 to 5): set .api_version = SF_LAYER_API_VERSION and "
		              "rebuild the type against this shardflow.h",
		              t->name, t->api_version, SF_LAYER_API_VERSION);
	if (strlen(t->name) >= SF_NAME_MAX)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_layer_type_register: name \"%s\" is longer than %d characters",
		              t->name, SF_NAME_MAX - 1);
	for (int i = 0; i < ntypes; i++)
		if (strcmp(table[i].name, t->name) == 0)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_layer_type_register: a layer type named \"%s\" is "
			              "already registered",
			              t->name);
	if (!t->infer || !t->forward_cpu || !t->backward_cpu)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_layer_type_register(\"%s\"): infer, forward_cpu and "
		              "backward_cpu are required",
		              t->name);
	if ((t->forward_cuda == NULL) != (t->backward_cuda == NULL))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_layer_type_register(\"%s\"): forward_cuda and backward_cuda "
		              "are both set or both NULL",
		              t->name);
	if (t->min_inputs < 1 || t->max_inputs > SF_MAX_INPUTS || t->min_inputs > t->max_inputs)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_layer_type_register(\"%s\"): inputs must satisfy 1 <= "
		              "min_inputs (%d) <= max_inputs (%d) <= %d",
		              t->name, t->min_inputs, t->max_inputs, SF_MAX_INPUTS);
	if (t->int_inputs >> t->max_inputs)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_layer_type_register(\"%s\"): int_inputs 0x%x names inputs "
		              "beyond max_inputs (%d)",
		              t->name, t->int_inputs, t->max_inputs);
	if (t->api_version >= 4 && (t->nconfig_sizes < 0 || t->nconfig_sizes > SF_MAX_CONFIG_SIZES))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_layer_type_register(\"%s\"): nconfig_sizes must be 0 (any "
		              "config) to %d (got %d)",
		              t->name, SF_MAX_CONFIG_SIZES, t->nconfig_sizes);
	if (ntypes == SF_MAX_LAYER_TYPES)
		return SF_ERR(SF_ERR_NOMEM, "sf_layer_type_register: at most %d layer types",
		              SF_MAX_LAYER_TYPES);
	return SF_OK;
}

static int register_type(const struct sf_layer_type *t)
{
	int rc = check_type(t);
	if (rc < 0)
		return rc;
	struct _sf_layer_entry *e = &table[ntypes];
	memset(e, 0, sizeof *e);
	memcpy(&e->type, t,
	       t->api_version == 3 ? offsetof(struct sf_layer_type, nconfig_sizes) : sizeof *t);
	strcpy(e->name, t->name);
	e->type.name = e->name;
	e->layout = e->name;
	e->index = ntypes++;
	e->bwd_reads_inputs = e->bwd_reads_output = true;
	return SF_OK;
}

int _sf_layers_builtin_init(void)
{
	static int done;
	if (done)
		return SF_OK;
	done = 1;
	for (size_t i = 0; i < sizeof builtin_types / sizeof builtin_types[0]; i++) {
		int rc = register_type(builtin_types[i]);
		if (rc < 0)
			return rc;
		/* the linear types' backward honours info->dparams_absent (layers/linear.c) */
		const struct sf_layer_type *t = builtin_types[i];
		table[ntypes - 1].splits_backward = t == &_sf_linear_type ||
		                                    t == &_sf_linear_nobias_type ||
		                                    t == &_sf_linear_split_type;
		table[ntypes - 1].tp = _sf_builtin_tp_kind(t);
		table[ntypes - 1].builtin = true;
		/* each output row from its input rows alone (no position, no other row): with
		 * SHARDFLOW_SEQUENCE_PARALLEL it runs on a TP rank's slice of the rows */
		table[ntypes - 1].rows_alone = table[ntypes - 1].tp == SF_TP_ELEMENTWISE ||
		                               t == &_sf_layernorm_type || t == &_sf_rmsnorm_type;
		bool linear = t == &_sf_linear_type || t == &_sf_linear_nobias_type ||
		              t == &_sf_linear_split_type || t == &_sf_linear_col_type ||
		              t == &_sf_linear_row_type;
		if (linear)
			table[ntypes - 1].layout = "linear";
		/* a linear's backward reads x and dy (layers/linear.c's bwd_with), an add's dy
		 * alone (layers/add.c) */
		table[ntypes - 1].bwd_reads_output = !linear && t != &_sf_add_type;
		table[ntypes - 1].bwd_reads_inputs = t != &_sf_add_type;
		if (t == &_sf_embedding_vp_type) /* an embedding's W, whatever the layout */
			table[ntypes - 1].layout = "embedding";
	}
	return SF_OK;
}

SF_API int sf_layer_type_register(const struct sf_layer_type *t)
{
	int rc = _sf_layers_builtin_init();
	if (rc < 0)
		return rc;
	return register_type(t);
}

int _sf_same_width_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                         size_t *nparams)
{
	(void)config;
	for (int i = 1; i < nin; i++)
		if (in_dims[i] != in_dims[0])
			return SF_ERR(SF_ERR_INVALID,
			              "inputs must have the same width (input 0 has %d, "
			              "input %d has %d)",
			              in_dims[0], i, in_dims[i]);
	*out_dim = in_dims[0];
	*nparams = 0;
	return SF_OK;
}

int _sf_node_param_owner(const struct _sf_node *nodes, int n)
{
	return nodes[n].tied_to >= 0 ? nodes[n].tied_to : n;
}

int _sf_node_param_tensors(const struct _sf_node *nd, const struct sf_layer_info *li,
                           struct sf_param_tensor *out)
{
	if (nd->type && nd->type->type.param_tensors)
		return nd->type->type.param_tensors(li, out);
	out[0] = (struct sf_param_tensor){"params", 0, 1, {nd->nparams, 0}};
	return 1;
}

SF_API float sf_rng_uniform(struct sf_rng *rng)
{
	/* splitmix64: counter-based, so a seed names the whole stream */
	uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	return (float)((double)(z >> 40) / (double)(1ull << 23) - 1.0);
}

SF_API float sf_rng_normal(struct sf_rng *rng)
{
	/* Box-Muller on (0, 1] x [0, 1): u1 never 0, so the log is finite */
	double u1 = 0.5 * ((double)sf_rng_uniform(rng) + 1.0);
	double u2 = 0.5 * ((double)sf_rng_uniform(rng) + 1.0);
	u1 = 1.0 - u1;
	return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
