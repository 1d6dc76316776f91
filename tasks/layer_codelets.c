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
	_sf_codelet_timing(&c->cl[0], skip_compute);
	_sf_codelet_timing(&c->cl[1], skip_compute);
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
		c->model[k].footprint = _sf_task_footprint;
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
    .footprint = _sf_task_footprint,
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
	_sf_codelet_timing(&_sf_cl_loss, skip);
#ifdef SF_HAVE_CUDA
	_sf_cl_loss.cuda_funcs[0] = skip ? _sf_noop_kernel : _sf_softmax_xent_cuda;
#endif
	return SF_OK;
}

/* --- submitting them ------------------------------------------------------------------ */

/* The floating-point operations of a node's task, from its type's count of the
 * forward's (0 when the type has none). A backward is counted as twice its forward, the
 * usual estimate (a linear layer's dX and dW are one forward's product each; attention
 * makes four products for the forward's two), and as one forward when it computes no
 * input gradient (the node reads only the graph's inputs: dW alone). */
double _sf_layer_flops(const struct _sf_layer_entry *type, const struct sf_layer_info *info,
                       bool backward)
{
	double f = type->type.flops ? type->type.flops(info) : 0.0;
	if (!(f > 0))
		return 0.0; /* no count (or not a number): StarPU's "none" */
	bool dinput = false;
	for (int i = 0; i < info->nin; i++)
		dinput |= info->need_dinput[i] != 0;
	/* a split backward's input-gradient half (dparams_absent) has one product; a
	 * backward without parameters keeps the convention (twice: attention's flops()
	 * returns half its backward's, tasks' models and the simulation read them so) */
	return backward && dinput && !info->dparams_absent ? 2 * f : f;
}

int _sf_submit_layer_fwd(const struct _sf_layer_entry *type, const struct sf_layer_info *info,
                         starpu_data_handle_t params, const starpu_data_handle_t *in, int nin,
                         starpu_data_handle_t out, starpu_data_handle_t saved, const char *name,
                         struct _sf_task_done done)
{
	struct starpu_data_descr d[SF_MAX_INPUTS + 3];
	int k = 0;
	if (params)
		d[k++] = (struct starpu_data_descr){params, STARPU_R};
	for (int i = 0; i < nin; i++)
		d[k++] = (struct starpu_data_descr){in[i], STARPU_R};
	d[k++] = (struct starpu_data_descr){out, STARPU_W};
	if (saved)
		d[k++] = (struct starpu_data_descr){saved, STARPU_W};
	return _sf_task_submit_flops(_sf_layer_codelet(type, false), d, k, info, sizeof *info,
	                             false, -1, _sf_layer_flops(type, info, false), name, done);
}

int _sf_submit_layer_bwd(const struct _sf_layer_entry *type, const struct sf_layer_info *info,
                         starpu_data_handle_t params, const starpu_data_handle_t *in, int nin,
                         starpu_data_handle_t out, starpu_data_handle_t dout,
                         starpu_data_handle_t saved, const starpu_data_handle_t *din,
                         starpu_data_handle_t dparams, bool dparams_first,
                         starpu_data_handle_t after, const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[2 * SF_MAX_INPUTS + 6];
	int k = 0;
	if (params)
		d[k++] = (struct starpu_data_descr){params, STARPU_R};
	for (int i = 0; i < nin; i++)
		d[k++] = (struct starpu_data_descr){in[i], STARPU_R};
	d[k++] = (struct starpu_data_descr){out, STARPU_R};
	d[k++] = (struct starpu_data_descr){dout, STARPU_R};
	if (saved)
		d[k++] = (struct starpu_data_descr){saved, STARPU_R};
	for (int i = 0; i < nin; i++)
		if (info->need_dinput[i])
			d[k++] = (struct starpu_data_descr){din[i], info->accumulate[i] ? STARPU_RW
			                                                                : STARPU_W};
	if (dparams)
		d[k++] = (struct starpu_data_descr){dparams, dparams_first ? STARPU_W : STARPU_RW};
	if (after) /* read by no kernel: the task waits for that buffer's writers */
		d[k++] = (struct starpu_data_descr){after, STARPU_R};
	return _sf_task_submit_flops(_sf_layer_codelet(type, true), d, k, info, sizeof *info, false,
	                             -1, _sf_layer_flops(type, info, true), name, done);
}

int _sf_submit_loss(const struct _sf_loss_args *a, starpu_data_handle_t logits,
                    starpu_data_handle_t labels, starpu_data_handle_t dlogits,
                    starpu_data_handle_t loss, const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {
	    {logits, STARPU_R}, {labels, STARPU_R}, {dlogits, STARPU_W}, {loss, STARPU_W}};
	/* per logit: the max, exp and sum of the log-sum-exp, exp and scale of the
	 * gradient (layers/softmax_xent_math.h), an exp counted as one */
	double flops = 7.0 * a->rows * a->classes;
	return _sf_task_submit_flops(&_sf_cl_loss, d, 4, a, sizeof *a, false, -1, flops, name,
	                             done);
}
