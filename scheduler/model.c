/*
 * model.c — turning a graph into a model: the options, and sf_model_create's passes in
 * their order; sf_model_destroy undoes them. The layout first (model_layout.c: the
 * nodes, tensor parallelism's shapes, each unit's geometry), the planner's decisions
 * (plan.c: units, gradients, recompute), then the memory check and the storage
 * (model_storage.c: every buffer and handle a step touches, the initial parameters).
 * Also the small getters and sf_model_stats; the host's access to the vectors is
 * model_access.c.
 *
 * Calls point one way: model.c and model_access.c call model_storage.c and
 * model_layout.c, model_storage.c calls model_layout.c, and model_layout.c none of
 * them.
 */
#include "config.h"

#include "scheduler/model.h"
#include "scheduler/model_layout.h"
#include "scheduler/model_storage.h"
#include "scheduler/ctxpar.h"
#include "scheduler/pipeline.h"
#include "scheduler/seqpar.h"
#include "scheduler/vocabdp.h"
#include "layers/gemm_bf16.h"
#include "tasks/worker.h"
#include "trace/recorder.h"

#include <math.h>
#include <stdlib.h>

SF_API int sf_model_options_init(struct sf_model_options *o)
{
	if (!o)
		return SF_ERR(SF_ERR_INVALID, "sf_model_options_init: o is NULL");
	*o = (struct sf_model_options){
	    .batch = 64,
	    .seed = 1,
	    .optimizer = SF_OPT_SGD,
	    .lr = 0.01f,
	    .momentum = 0.9f,
	    .weight_decay = 0.0f,
	    .beta1 = 0.9f,
	    .beta2 = 0.999f,
	    .eps = 1e-8f,
	    .max_grad_norm = 0.0f,
	    .no_decay = SF_NO_DECAY_DEFAULT,
	};
	return SF_OK;
}

static int check_options(const struct sf_model_options *o, int nranks)
{
	if (o->batch < nranks)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: batch %d is smaller than the %d data-parallel "
		              "ranks; every rank needs at least one row",
		              o->batch, nranks);
	if ((int)o->optimizer < 0 || o->optimizer >= SF_OPT_COUNT)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: optimizer %d is not SF_OPT_SGD, SF_OPT_ADAMW or "
		              "SF_OPT_LION",
		              (int)o->optimizer);
	if (!(o->lr > 0.0f) || !isfinite(o->lr))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: lr must be a finite number > 0 (got "
		              "%g)",
		              (double)o->lr);
	if (!(o->momentum >= 0.0f && o->momentum < 1.0f))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: momentum must be in [0, 1) (got %g)",
		              (double)o->momentum);
	if (!(o->weight_decay >= 0.0f) || !isfinite(o->weight_decay))
		return SF_ERR(SF_ERR_INVALID, "sf_model_create: weight_decay must be >= 0 (got %g)",
		              (double)o->weight_decay);
	if (!(o->beta1 >= 0.0f && o->beta1 < 1.0f && o->beta2 >= 0.0f && o->beta2 < 1.0f))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: beta1 and beta2 must be in [0, 1) (got "
		              "%g, %g)",
		              (double)o->beta1, (double)o->beta2);
	if (!(o->eps > 0.0f))
		return SF_ERR(SF_ERR_INVALID, "sf_model_create: eps must be > 0 (got %g)",
		              (double)o->eps);
	if (!(o->max_grad_norm >= 0.0f))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_create: max_grad_norm must be >= 0 (0: no clipping; "
		              "INFINITY: the norm without clipping) (got %g)",
		              (double)o->max_grad_norm);
	if (o->no_decay & ~SF_NO_DECAY_DEFAULT)
		return SF_ERR(
		    SF_ERR_INVALID,
		    "sf_model_create: no_decay 0x%x has bits other than SF_NO_DECAY_BIAS, "
		    "SF_NO_DECAY_NORM and SF_NO_DECAY_EMBED (0x%x)",
		    o->no_decay, SF_NO_DECAY_DEFAULT);
	return SF_OK;
}

/* Mixed precision needs collectives that move bf16: gathers and reduce-scatters of a
 * backend that has them. */
static int check_dtypes(const sf_context *ctx, const struct sf_config *c)
{
	const char *var = c->param_dtype == SF_DTYPE_BF16    ? "SHARDFLOW_PARAM_DTYPE"
	                  : c->reduce_dtype == SF_DTYPE_BF16 ? "SHARDFLOW_REDUCE_DTYPE"
	                                                     : NULL;
	if (!var)
		return SF_OK;
	if (c->sharding == SF_SHARD_NONE)
		return SF_ERR(
		    SF_ERR_CONFIG,
		    "sf_model_create: %s=bf16 changes what gathers and reduce-scatters "
		    "move, and SHARDFLOW_SHARDING=none has neither (it all-reduces fp32); "
		    "use sharding full or grad_op, or %s=fp32",
		    var, var);
	const struct _sf_comm_ops *ops = ctx->comm->ops;
	if (!ops->all_gather16 || !ops->reduce_scatter16)
		return SF_ERR(
		    SF_ERR_CONFIG,
		    "sf_model_create: %s=bf16: the %s backend (SHARDFLOW_COMM) has no bf16 "
		    "collectives yet; use SHARDFLOW_COMM=mpi or %s=fp32",
		    var, ops->name, var);
	return SF_OK;
}

/* What mixed precision does in this model (the log, at info) */
static void log_precision(const struct sf_model *m, const char *name)
{
	int kept = 0;
	if (m->cfg.param_dtype != SF_DTYPE_BF16 && m->cfg.reduce_dtype != SF_DTYPE_BF16)
		return;
	for (int u = 0; u < m->nunits; u++)
		kept += m->units[u].keep_fp32;
	int ngpu = (int)starpu_cuda_worker_get_count() - (m->comm->ops->device ? 1 : 0);
	if (m->cfg.param_dtype == SF_DTYPE_BF16)
		_sf_log(SF_LOG_INFO,
		        "model \"%s\": param_dtype bf16: gathers move bf16; the linear layers' "
		        "products %s",
		        name,
		        ngpu > 0 ? "in fp32 through cuBLAS on the GPU (bf16 only on the wire)"
		        : _sf_gemm_bf16_available() ? "in bf16 through oneDNN (fp32 sums)"
		                                    : "in fp32 (this build has no oneDNN)");
	if (kept)
		_sf_log(SF_LOG_INFO, "model \"%s\": %d of %d units kept in fp32 (keep_fp32)", name,
		        kept, m->nunits);
}

/* A new model's fields from its context (the layout of its ranks), graph, options and
 * knobs: what the passes of sf_model_create start from */
static void model_fields(struct sf_model *m, sf_context *ctx, const sf_graph *g,
                         const struct sf_model_options *o, const struct sf_config *cfg)
{
	const struct _sf_comm *c = ctx->comm;
	m->ctx = ctx;
	m->comm = ctx->comm;
	m->cfg = *cfg;
	m->opt = *o;
	m->lr = o->lr;
	m->nranks = ctx->size;
	m->rank = ctx->rank;
	m->tp = c->tp_size;
	m->tp_rank = c->tp_rank;
	m->pp_size = c->pp_size;
	m->pp_stage = c->pp_rank;
	m->pp_micro = 1;
	m->act_sets = 1;
	/* the batch's split: over dp = world / (tp pp cp); a CP group shares its samples */
	m->dp_size = m->nranks / m->tp / m->pp_size / c->cp_size;
	m->dp_rank = (m->pp_size > 1 ? c->shard_rank : m->rank / m->tp) / c->cp_size;
	m->shard_size = c->shard_size;
	m->shard_rank = c->shard_rank;
	m->nrep = c->rep_size;
	m->loss_node = g->loss;
	m->labels_node = g->labels;
	m->B_global = o->batch;
	atomic_init(&m->resident, 0);
	atomic_init(&m->max_resident, 0);
}

SF_API int sf_model_create(sf_context *ctx, const sf_graph *g, const struct sf_model_options *o,
                           sf_model **out)
{
	int rc = SF_OK;
	struct sf_model *m = NULL;
	struct sf_model_options defaults;

	if (!out)
		return SF_ERR(SF_ERR_INVALID, "sf_model_create: out is NULL");
	*out = NULL;
	if (!ctx || !_sf_runtime_active())
		return SF_ERR(SF_ERR_STATE, "sf_model_create: no runtime; call sf_init first");
	SF_CHECK_GOTO(_sf_check_graph(g), fail);
	if (!o) {
		sf_model_options_init(&defaults);
		o = &defaults;
	}
	SF_CHECK_GOTO(check_options(o, ctx->size / ctx->comm->tp_size / ctx->comm->pp_size /
	                                   ctx->comm->cp_size),
	              fail);
	struct sf_config cfg;
	SF_CHECK_GOTO(_sf_config_for_model(ctx, o->config, &cfg), fail);
	SF_CHECK_GOTO(check_dtypes(ctx, &cfg), fail);
	if (o->config && ctx->rank == 0)
		_sf_config_log(o->config, &cfg, ctx->cfg_from_env, g->name);

	m = calloc(1, sizeof *m);
	if (!m)
		return SF_ERR(SF_ERR_NOMEM, "sf_model_create: out of memory");
	model_fields(m, ctx, g, o, &cfg);
	ctx->nmodels++; /* sf_model_destroy below undoes it */
	SF_CHECK_GOTO(_sf_cp_layout(m, g), fail); /* m->T: this rank's rows of a sample */
	int base = o->batch / m->dp_size, extra = o->batch % m->dp_size, r = m->dp_rank;
	m->B_local = base + (r < extra);
	m->row0 = r * base + (r < extra ? r : extra);
	m->rows_local = (size_t)m->B_local * (size_t)m->T;
	/* a pipeline's micro-batches: B_local becomes one micro-batch's */
	SF_CHECK_GOTO(_sf_pipeline_layout(m), fail);

	SF_CHECK_GOTO(_sf_build_nodes(m, g), fail);
	SF_CHECK_GOTO(_sf_sp_plan(m), fail);
	_sf_tp_warn_unsplit(m, g->name);
	SF_CHECK_GOTO(_sf_plan_units(m, g), fail);
	if (m->nunits == 0) {
		rc = SF_ERR(SF_ERR_INVALID,
		            "sf_model_create: graph \"%s\" has no layer with parameters; there "
		            "is nothing to train",
		            g->name);
		goto fail;
	}
	SF_CHECK_GOTO(_sf_plan_gradients(m), fail);
	SF_CHECK_GOTO(_sf_plan_recompute(m), fail);
	_sf_plan_split_backward(m);
	SF_CHECK_GOTO(_sf_pipeline_plan(m, g->name), fail);
	_sf_tp_plan(m);
	SF_CHECK_GOTO(_sf_dpv_plan(m), fail); /* before the units' sizes: its shard */
	SF_CHECK_GOTO(_sf_cp_plan(m), fail); /* after the gradients' plan: dqkv's mode */
	SF_CHECK_GOTO(_sf_sp_plan_comm(m), fail);
	SF_CHECK_GOTO(_sf_size_units(m), fail);
	_sf_plan_slots(m);
	SF_CHECK_GOTO(_sf_sq_register(m), fail);
	SF_CHECK_GOTO(_sf_check_memory(m), fail);
	SF_CHECK_GOTO(_sf_alloc_nodes(m), fail);
	SF_CHECK_GOTO(_sf_build_units(m), fail);
	if (m->cfg.grad_accum > 1) /* micro-batches announced: their buffers now too */
		SF_CHECK_GOTO(_sf_model_accum_buffers(m), fail);
	SF_CHECK_GOTO(_sf_build_buffers(m), fail);
	_sf_sp_comm_args(m);
	_sf_dpv_comm_args(m);
	SF_CHECK_GOTO(_sf_pipeline_build(m), fail);
	log_precision(m, g->name);
	m->comm_worker_cpu0 = _sf_clock_seconds(ctx->comm_clock);
	if (m->cfg.trace[0]) {
		SF_CHECK_GOTO(m->comm->ops->barrier(m->comm, false), fail);
		SF_CHECK_GOTO(_sf_recorder_create(m->rank, &m->trace), fail);
	}
	_sf_log(SF_LOG_INFO,
	        "model \"%s\": %d units, %zu parameters, batch %d (%d local samples of %d "
	        "rows), sharding %s, ring %d",
	        g->name, m->nunits, m->nparams_whole, m->B_global, m->B_local, m->T,
	        _sf_sharding_names[m->cfg.sharding], m->R);
	_sf_graph_model_made(g);
	*out = m;
	return SF_OK;
fail:
	if (m)
		sf_model_destroy(m);
	return rc;
}

SF_API int sf_model_destroy(sf_model *m)
{
	int rc = SF_OK;
	if (!m)
		return SF_OK;
	if (m->trace && m->trace_written != m->nsteps)
		rc = sf_model_trace_write(m);
	starpu_task_wait_for_all();
	_sf_recorder_destroy(m->trace);
	_sf_pipeline_release(m);
	_sf_storage_release(m);
	_sf_cp_release(m);
	_sf_layout_release(m);
	if (m->ckpt_async_end)
		m->ckpt_async_end(m);
	if (m->ckpt_unlock)
		m->ckpt_unlock(m);
	m->ctx->nmodels--;
	free(m);
	return rc;
}

SF_API int sf_model_local_rows(const sf_model *m, int *first, int *rows)
{
	if (!m || (!first && !rows))
		return SF_ERR(SF_ERR_INVALID, "sf_model_local_rows: NULL model or outputs");
	if (first)
		*first = m->row0;
	if (rows)
		*rows = m->B_local * m->pp_micro; /* a pipeline's step: all its micro-batches */
	return SF_OK;
}

SF_API int sf_model_param_count(const sf_model *m, size_t *n)
{
	if (!m || !n)
		return SF_ERR(SF_ERR_INVALID, "sf_model_param_count: NULL model or output");
	*n = m->nparams_whole;
	return SF_OK;
}

SF_API int sf_model_set_lr(sf_model *m, float lr)
{
	if (!m)
		return SF_ERR(SF_ERR_INVALID, "sf_model_set_lr: model is NULL");
	if (!(lr > 0.0f) || !isfinite(lr))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_model_set_lr: lr must be a finite number > 0 (got "
		              "%g)",
		              (double)lr);
	m->lr = lr;
	return SF_OK;
}

SF_API int sf_model_stats(sf_model *m, struct sf_model_stats *out)
{
	if (!m || !out)
		return SF_ERR(SF_ERR_INVALID, "sf_model_stats: NULL model or output");
	SF_CHECK(sf_model_sync(m));
	out->nunits = m->nunits;
	out->largest_unit = m->largest_P;
	out->steps = m->nsteps;
	out->updates = m->nupdates;
	out->accumulated = m->accum_k;
	out->max_resident_units = atomic_load(&m->max_resident);
	out->ring_slots = m->R;
	struct _sf_held_floats held;
	_sf_model_held_floats(m, &held);
	out->param_bytes = held.params * sizeof(float);
	out->grad_bytes = held.grads * sizeof(float);
	out->optimizer_bytes = held.optim * sizeof(float);
	out->activation_bytes = m->act_bytes;
	out->buffer_bytes = held.buffers * sizeof(float);
	out->comm_seconds = m->comm_acct.wall;
	out->comm_cpu_seconds = m->comm_acct.cpu;
	out->comm_bytes = m->comm_acct.bytes;
	out->comm_bytes_inter = m->comm_acct.bytes_inter;
	out->tp = m->tp;
	out->dp = m->dp_size;
	out->model_bytes = m->nparams_whole * sizeof(float);
	out->tp_slice_bytes = m->nparams_total * sizeof(float);
	out->tp_comm_bytes = m->comm_acct.bytes_tp;
	out->comm_worker_cpu_seconds = _sf_clock_seconds(m->ctx->comm_clock) - m->comm_worker_cpu0;
	return SF_OK;
}
