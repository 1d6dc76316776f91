/*
 * trace_write.c — sf_model_trace_write: every rank writes its Chrome trace, rank 0
 * collects every rank's records and writes the overlap report and the timeline
 * (trace/recorder.h has the records and the writers).
 */
#include "scheduler/model.h"
#include "trace/recorder.h"

#include <stdlib.h>

/* Rank 0 receives every rank's records (*all, *total; malloc'ed). Collective. */
static int collect(struct sf_model *m, const struct _sf_event *mine, size_t n,
                   struct _sf_event **all, size_t *total)
{
	int rc = SF_OK;
	struct _sf_comm *c = m->comm;
	size_t bytes = n * sizeof *mine, *counts = NULL;
	if (m->rank == 0) {
		counts = calloc((size_t)m->nranks, sizeof *counts);
		if (!counts)
			rc = SF_ERR(SF_ERR_NOMEM, "SHARDFLOW_TRACE: out of memory");
	}
	/* every rank takes part in the gathers whatever failed locally */
	int grc = c->ops->gather_bytes(c, &bytes, sizeof bytes, counts, 0);
	SF_CHECK_GOTO(grc, out);
	size_t sum = 0;
	for (int r = 0; counts && r < m->nranks; r++)
		sum += counts[r];
	if (m->rank == 0 && rc == SF_OK) {
		*all = malloc(sum ? sum : 1);
		if (!*all)
			rc = SF_ERR(SF_ERR_NOMEM, "SHARDFLOW_TRACE: out of memory");
	}
	grc = c->ops->gatherv_bytes(c, mine, bytes, m->rank == 0 ? *all : NULL, counts, 0);
	if (rc == SF_OK)
		rc = grc;
	*total = sum / sizeof **all;
out:
	free(counts);
	return rc;
}

SF_API int sf_model_trace_write(sf_model *m)
{
	int rc = SF_OK;
	struct _sf_event *mine = NULL, *all = NULL;
	size_t n = 0, total = 0;
	if (!m)
		return SF_ERR(SF_ERR_INVALID, "sf_model_trace_write: model is NULL");
	if (!m->trace)
		return SF_OK;
	SF_CHECK_GOTO(sf_model_sync(m), out);
	int lrc = _sf_recorder_events(m->trace, &mine, &n);
	if (lrc == SF_OK) {
		char path[SF_PATH_MAX];
		snprintf(path, sizeof path, "%s.rank%d.json", m->cfg.trace, m->rank);
		lrc = _sf_trace_write_chrome(path, m->rank, (int)starpu_worker_get_count(),
		                             m->ctx->comm_worker, mine, n);
	}
	SF_CHECK_GOTO(collect(m, mine, n, &all, &total), out);
	m->trace_written = m->nsteps;
	SF_CHECK_GOTO(lrc, out);
	if (m->rank == 0) {
		/* what was measured (issue 46: the report did not say) */
		char settings[1536], config[1700];
		if (sf_config_describe(&m->cfg, 1, settings, sizeof settings) < 0)
			settings[0] = '\0';
		char cps[32] = ""; /* context parallelism: world = dp x cp x tp */
		if (m->cp > 1)
			snprintf(cps, sizeof cps, "cp %d x ", m->cp);
		snprintf(config, sizeof config, "%d rank(s), dp %d x %stp %d; settings: %s",
		         m->nranks, m->dp_size, cps, m->tp, settings);
		SF_CHECK_GOTO(_sf_trace_write_report(m->cfg.trace, config, all, total), out);
		/* where it went (issue 46: no line said so) */
		_sf_log(SF_LOG_INFO,
		        "SHARDFLOW_TRACE: each rank's trace in %s.rank<r>.json (Perfetto, "
		        "chrome://tracing), the overlap report in %s.overlap.txt and .json, the "
		        "timeline in %s.timeline.svg",
		        m->cfg.trace, m->cfg.trace, m->cfg.trace);
	}
	if (_sf_recorder_incomplete(m->trace))
		_sf_log(SF_LOG_WARN, "SHARDFLOW_TRACE: the trace is incomplete (out of memory)");
out:
	free(mine);
	free(all);
	return rc;
}
