/*
 * registry.c — the table of layer types, built-in and user-registered.
 *
 * Each type's forward and backward kernels are wrapped into two StarPU codelets
 * here, once, when the type is registered: variable buffer count (the layout is in
 * shardflow.h), CPU only, kept off the comm worker by can_execute. The table never
 * shrinks, so codelets stay valid for the life of the process.
 */
#include "scheduler/internal.h"

#include <stdlib.h>
#include <string.h>

#define SF_MAX_LAYER_TYPES 64

static struct _sf_layer_entry table[SF_MAX_LAYER_TYPES];
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

static void make_codelet(struct starpu_codelet *cl, sf_kernel_fn fn, const char *name)
{
	memset(cl, 0, sizeof *cl);
	cl->where = STARPU_CPU;
	cl->cpu_funcs[0] = fn;
	cl->cpu_funcs_name[0] = name;
	cl->nbuffers = STARPU_VARIABLE_NBUFFERS;
	cl->can_execute = _sf_compute_can_execute;
	cl->name = name;
}

/* Registration without the lazy built-in initialisation (used by it). */
int _sf_layer_register_raw(const struct sf_layer_type *t);
int _sf_layer_register_raw(const struct sf_layer_type *t)
{
	if (!t || !t->name || !t->name[0])
		return SF_ERR(SF_ERR_INVALID, "sf_layer_type_register: NULL type or empty name");
	if (strlen(t->name) >= SF_NAME_MAX)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_layer_type_register: name \"%s\" is longer than %d "
		              "characters",
		              t->name, SF_NAME_MAX - 1);
	for (int i = 0; i < ntypes; i++)
		if (strcmp(table[i].name, t->name) == 0)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_layer_type_register: a layer type named "
			              "\"%s\" is already registered",
			              t->name);
	if (!t->infer || !t->forward_cpu || !t->backward_cpu)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_layer_type_register(\"%s\"): infer, forward_cpu "
		              "and backward_cpu are required",
		              t->name);
	if (t->min_inputs < 1 || t->max_inputs > SF_MAX_INPUTS || t->min_inputs > t->max_inputs)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_layer_type_register(\"%s\"): inputs must satisfy 1 "
		              "<= min_inputs (%d) <= max_inputs (%d) <= %d",
		              t->name, t->min_inputs, t->max_inputs, SF_MAX_INPUTS);
	if (ntypes == SF_MAX_LAYER_TYPES)
		return SF_ERR(SF_ERR_NOMEM, "sf_layer_type_register: at most %d layer types",
		              SF_MAX_LAYER_TYPES);
	struct _sf_layer_entry *e = &table[ntypes];
	memset(e, 0, sizeof *e);
	e->type = *t;
	strcpy(e->name, t->name);
	e->type.name = e->name;
	make_codelet(&e->fwd_cl, t->forward_cpu, e->name);
	make_codelet(&e->bwd_cl, t->backward_cpu, e->name);
	ntypes++;
	return SF_OK;
}

SF_API int sf_layer_type_register(const struct sf_layer_type *t)
{
	int rc = _sf_layers_builtin_init();
	if (rc < 0)
		return rc;
	return _sf_layer_register_raw(t);
}

/* ---- buffer accessors for kernels: the layout of shardflow.h, in one place ---- */

static int n_dinputs_before(const struct sf_layer_info *li, int i)
{
	int k = 0;
	for (int j = 0; j < i; j++)
		k += li->need_dinput[j] != 0;
	return k;
}

static float *buf(void *buffers[], int i)
{
	return (float *)STARPU_VECTOR_GET_PTR(buffers[i]);
}

SF_API float *sf_kernel_params(void *buffers[], const struct sf_layer_info *li)
{
	return li->nparams && !li->params_absent ? buf(buffers, 0) : NULL;
}

SF_API float *sf_kernel_input(void *buffers[], const struct sf_layer_info *li, int i)
{
	return buf(buffers, (li->nparams ? 1 : 0) + i);
}

SF_API float *sf_kernel_output(void *buffers[], const struct sf_layer_info *li)
{
	return buf(buffers, (li->nparams ? 1 : 0) + li->nin);
}

SF_API float *sf_kernel_doutput(void *buffers[], const struct sf_layer_info *li)
{
	return buf(buffers, (li->nparams ? 1 : 0) + li->nin + 1);
}

SF_API float *sf_kernel_dinput(void *buffers[], const struct sf_layer_info *li, int i)
{
	if (i < 0 || i >= li->nin || !li->need_dinput[i])
		return NULL;
	return buf(buffers, (li->nparams ? 1 : 0) + li->nin + 2 + n_dinputs_before(li, i));
}

SF_API float *sf_kernel_dparams(void *buffers[], const struct sf_layer_info *li)
{
	if (!li->nparams)
		return NULL;
	return buf(buffers, 1 + li->nin + 2 + n_dinputs_before(li, li->nin));
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
