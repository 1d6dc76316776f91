/*
 * layer_codelets.c — codelets built from layer types, and the loss codelet.
 *
 * The codelets live in a table parallel to the type registry (same index), so they
 * stay valid for the life of the process as the types do.
 */
#include "config.h"

#include "tasks/layer_codelets.h"
#include "layers/softmax_xent.h"
#include "tasks/worker.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

struct layer_codelets {
	bool built;
	struct starpu_codelet cl[2]; /* forward, backward */
	struct starpu_perfmodel model[2];
	char symbol[2][SF_NAME_MAX + 16];
	const struct _sf_layer_entry *e;
};

static struct layer_codelets table[SF_MAX_LAYER_TYPES];
static bool skip_compute;

static void point(struct layer_codelets *c)
{
	const struct sf_layer_type *t = &c->e->type;
	c->cl[0].cpu_funcs[0] = skip_compute ? _sf_noop_kernel : t->forward_cpu;
	c->cl[1].cpu_funcs[0] = skip_compute ? _sf_noop_kernel : t->backward_cpu;
	c->cl[0].cuda_funcs[0] = skip_compute ? _sf_noop_kernel : t->forward_cuda;
	c->cl[1].cuda_funcs[0] = skip_compute ? _sf_noop_kernel : t->backward_cuda;
}

static void build(struct layer_codelets *c, const struct _sf_layer_entry *e)
{
	static const char *const dir[2] = {"fwd", "bwd"};
	memset(c, 0, sizeof *c);
	c->e = e;
	for (int k = 0; k < 2; k++) {
		struct starpu_codelet *cl = &c->cl[k];
		/* StarPU names the model's file after the symbol: keep [A-Za-z0-9_] of the
		 * user's type name, as a '/' or a blank would break the path */
		snprintf(c->symbol[k], sizeof c->symbol[k], "sf_%s_%s", e->name, dir[k]);
		for (char *p = c->symbol[k]; *p; p++)
			if (!isalnum((unsigned char)*p) && *p != '_')
				*p = '_';
		c->model[k].type = STARPU_HISTORY_BASED;
		c->model[k].symbol = c->symbol[k];
		cl->where = STARPU_CPU;
		if (e->type.forward_cuda) {
			cl->where |= STARPU_CUDA;
			cl->cuda_flags[0] = STARPU_CUDA_ASYNC;
		}
		cl->cpu_funcs_name[0] = c->symbol[k];
		cl->nbuffers = STARPU_VARIABLE_NBUFFERS;
		cl->can_execute = _sf_compute_can_execute;
		cl->name = e->name;
		cl->model = &c->model[k];
	}
	point(c);
	c->built = true;
}

struct starpu_codelet *_sf_layer_codelet(const struct _sf_layer_entry *e, bool backward)
{
	struct layer_codelets *c = &table[e->index];
	if (!c->built)
		build(c, e);
	return &c->cl[backward ? 1 : 0];
}

static struct starpu_perfmodel loss_model = {
    .type = STARPU_HISTORY_BASED,
    .symbol = "sf_softmax_xent",
};

struct starpu_codelet _sf_cl_loss = {
#ifdef SF_HAVE_CUDA
    .where = STARPU_CPU | STARPU_CUDA,
    .cuda_funcs = {_sf_softmax_xent_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#else
    .where = STARPU_CPU,
#endif
    .cpu_funcs = {_sf_softmax_xent_cpu},
    .cpu_funcs_name = {"sf_softmax_xent"},
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .can_execute = _sf_compute_can_execute,
    .model = &loss_model,
    .name = "loss",
};

int _sf_layer_codelets_configure(bool skip)
{
	skip_compute = skip;
	for (int i = 0; i < SF_MAX_LAYER_TYPES; i++)
		if (table[i].built)
			point(&table[i]);
	_sf_cl_loss.cpu_funcs[0] = skip ? _sf_noop_kernel : _sf_softmax_xent_cpu;
#ifdef SF_HAVE_CUDA
	_sf_cl_loss.cuda_funcs[0] = skip ? _sf_noop_kernel : _sf_softmax_xent_cuda;
#endif
	return SF_OK;
}
