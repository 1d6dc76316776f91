/*
 * trace.c — the built-in trace (SHARDFLOW_TRACE=<prefix>), for any StarPU.
 *
 * Every task of a step gets a record, reserved on the submitting thread (name,
 * kind, layer, step) and completed in the task's callback from StarPU's profiling
 * info (start, end, worker). Records live in fixed-size chunks that never move, so
 * a callback can write its record while the main thread reserves new ones.
 * sf_model_trace_write() turns them into one Chrome trace per rank and, on rank 0,
 * the overlap report and the timeline of every rank (scheduler/report.c, svg.c).
 *
 * Times are microseconds from an origin taken on each rank right after a barrier at
 * model creation, so ranks line up in the viewer to within the barrier's skew.
 */
#include "scheduler/internal.h"
#include "scheduler/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 4096

struct _sf_trace_rec {
	struct sf_event ev;
	atomic_int done;
};

struct _sf_trace {
	struct _sf_trace_rec **chunks;
	size_t nchunks, n;
	double origin;   /* starpu_timing_now() after the creation barrier */
	int64_t written; /* m->nsteps at the last sf_model_trace_write */
	bool failed;     /* a reservation failed: the trace is incomplete */
};

int _sf_trace_init(struct sf_model *m)
{
	if (!m->cfg.trace[0])
		return SF_OK;
	m->trace = calloc(1, sizeof *m->trace);
	if (!m->trace)
		return SF_ERR(SF_ERR_NOMEM, "SHARDFLOW_TRACE: out of memory");
	int mrc = MPI_Barrier(m->ctx->ctl_comm);
	if (mrc != MPI_SUCCESS)
		return _sf_mpi_err(mrc, "MPI_Barrier(trace origin)", __FILE__, __LINE__);
	m->trace->origin = starpu_timing_now();
	return SF_OK;
}

void _sf_trace_free(struct sf_model *m)
{
	if (!m->trace)
		return;
	for (size_t c = 0; c < m->trace->nchunks; c++)
		free(m->trace->chunks[c]);
	free(m->trace->chunks);
	free(m->trace);
	m->trace = NULL;
}

struct sf_event *_sf_trace_reserve(struct sf_model *m, const char *name, int kind, int layer)
{
	struct _sf_trace *t = m->trace;
	if (!t || t->failed)
		return NULL;
	if (t->n == t->nchunks * CHUNK) {
		struct _sf_trace_rec **p = realloc(t->chunks, (t->nchunks + 1) * sizeof *p);
		struct _sf_trace_rec *c = p ? calloc(CHUNK, sizeof *c) : NULL;
		if (p)
			t->chunks = p;
		if (!c) {
			t->failed = true;
			_sf_log(SF_LOG_WARN,
			        "SHARDFLOW_TRACE: out of memory after %zu tasks; the "
			        "trace stops here",
			        t->n);
			return NULL;
		}
		t->chunks[t->nchunks++] = c;
	}
	struct _sf_trace_rec *r = &t->chunks[t->n / CHUNK][t->n % CHUNK];
	t->n++;
	memset(&r->ev, 0, sizeof r->ev);
	r->ev.rank = m->rank;
	r->ev.step = (int)m->nsteps;
	r->ev.layer = layer;
	r->ev.kind = (enum sf_ev_kind)kind;
	snprintf(r->ev.name, sizeof r->ev.name, "%s", name);
	atomic_store(&r->done, 0);
	/* the callback needs the origin: carried in start until the task ends */
	r->ev.start = t->origin;
	return &r->ev;
}

/* Task callback (any worker): fills the record from StarPU's profiling info. */
void _sf_trace_task_done(void *arg)
{
	struct _sf_trace_rec *r = arg; /* ev is the first member */
	struct starpu_task *task = starpu_task_get_current();
	struct starpu_profiling_task_info *pi = task ? task->profiling_info : NULL;
	if (!pi)
		return;
	double origin = r->ev.start;
	r->ev.start = starpu_timing_timespec_to_us(&pi->start_time) - origin;
	r->ev.end = starpu_timing_timespec_to_us(&pi->end_time) - origin;
	r->ev.worker = pi->workerid;
	atomic_store(&r->done, 1);
}

static const char *color(enum sf_ev_kind k)
{
	/* Chrome trace reserved colour names: comm warm, compute cool, bookkeeping grey */
	if (sf_ev_is_comm(k))
		return "terrible";
	if (sf_ev_is_compute(k))
		return "rail_response";
	return "grey";
}

/* One event per line, so that line-oriented tools can read it too. */
static int write_chrome(const struct sf_model *m, const struct sf_event *ev, size_t n,
                        const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return SF_ERR(SF_ERR_IO, "SHARDFLOW_TRACE: cannot write %s: %s", path,
		              strerror(errno));
	fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
	fprintf(f,
	        "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": "
	        "\"rank %d\"}},\n",
	        m->rank, m->rank);
	fprintf(f,
	        "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, \"args\": "
	        "{\"sort_index\": %d}},\n",
	        m->rank, m->rank);
	int nw = (int)starpu_worker_get_count();
	for (int w = 0; w < nw; w++)
		fprintf(f,
		        "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
		        "\"args\": {\"name\": \"worker %d (%s)\"}},\n",
		        m->rank, w, w, w == m->ctx->comm_worker ? "comm" : "compute");
	for (size_t i = 0; i < n; i++) {
		const struct sf_event *e = &ev[i];
		fprintf(
		    f,
		    "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": "
		    "%.3f, \"pid\": %d, \"tid\": %d, \"cname\": \"%s\", \"args\": {\"step\": %d, "
		    "\"layer\": %d, \"kind\": \"%s\"}}%s\n",
		    e->name,
		    sf_ev_is_comm(e->kind)      ? "comm"
		    : sf_ev_is_compute(e->kind) ? "compute"
		                                : "other",
		    e->start, e->end - e->start, e->rank, e->worker, color(e->kind), e->step,
		    e->layer, sf_ev_kind_name(e->kind), i + 1 < n ? "," : "");
	}
	fprintf(f, "]}\n");
	int bad = ferror(f);
	if (fclose(f) != 0 || bad)
		return SF_ERR(SF_ERR_IO, "SHARDFLOW_TRACE: error writing %s", path);
	return SF_OK;
}

static int write_report(const struct sf_model *m, const struct sf_event *all, size_t n)
{
	int rc = SF_OK;
	struct sf_report r;
	char err[256], path[600], src[600];
	snprintf(src, sizeof src, "built-in trace %s.rank*.json", m->cfg.trace);
	if (sf_report_build(all, n, &r, err, sizeof err) != 0)
		return SF_ERR(SF_ERR_INVALID, "SHARDFLOW_TRACE: no overlap report: %s", err);
	static const char *const ext[] = {"overlap.txt", "overlap.json", "timeline.svg"};
	for (int k = 0; k < 3 && rc == SF_OK; k++) {
		snprintf(path, sizeof path, "%s.%s", m->cfg.trace, ext[k]);
		FILE *f = fopen(path, "w");
		if (!f) {
			rc = SF_ERR(SF_ERR_IO, "SHARDFLOW_TRACE: cannot write %s: %s", path,
			            strerror(errno));
			break;
		}
		int wrc = k == 0   ? sf_report_write_text(&r, src, f)
		          : k == 1 ? sf_report_write_json(&r, src, f)
		                   : sf_timeline_write_svg(all, n, &r, src, f, err, sizeof err);
		if (fclose(f) != 0 || wrc != 0)
			rc = SF_ERR(SF_ERR_IO, "SHARDFLOW_TRACE: error writing %s%s%s", path,
			            k == 2 ? ": " : "", k == 2 ? err : "");
	}
	sf_report_free(&r);
	return rc;
}

SF_API int sf_model_trace_write(sf_model *m)
{
	int rc = SF_OK;
	struct sf_event *mine = NULL, *all = NULL;
	int *counts = NULL, *displs = NULL;
	if (!m)
		return SF_ERR(SF_ERR_INVALID, "sf_model_trace_write: model is NULL");
	if (!m->trace)
		return SF_OK;
	SF_CHECK(sf_model_sync(m));
	struct _sf_trace *t = m->trace;
	mine = malloc((t->n ? t->n : 1) * sizeof *mine);
	if (!mine) {
		rc = SF_ERR(SF_ERR_NOMEM, "SHARDFLOW_TRACE: out of memory");
		goto fail;
	}
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct _sf_trace_rec *r = &t->chunks[i / CHUNK][i % CHUNK];
		if (atomic_load(&r->done))
			mine[n++] = r->ev;
	}
	char path[600];
	snprintf(path, sizeof path, "%s.rank%d.json", m->cfg.trace, m->rank);
	int wrc = write_chrome(m, mine, n, path);

	/* every rank takes part in the gather even if its own file failed */
	int nbytes = (int)(n * sizeof *mine);
	if (m->rank == 0) {
		counts = calloc((size_t)m->nranks, sizeof *counts);
		displs = calloc((size_t)m->nranks, sizeof *displs);
		if (!counts || !displs) {
			rc = SF_ERR(SF_ERR_NOMEM, "SHARDFLOW_TRACE: out of memory");
			goto fail;
		}
	}
	SF_MPI_CHECK(MPI_Gather(&nbytes, 1, MPI_INT, counts, 1, MPI_INT, 0, m->ctx->ctl_comm));
	size_t total = 0;
	if (m->rank == 0) {
		for (int r = 0; r < m->nranks; r++) {
			displs[r] = (int)total;
			total += (size_t)counts[r];
		}
		all = malloc(total ? total : 1);
		if (!all) {
			rc = SF_ERR(SF_ERR_NOMEM, "SHARDFLOW_TRACE: out of memory");
			goto fail;
		}
	}
	SF_MPI_CHECK(MPI_Gatherv(mine, nbytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0,
	                         m->ctx->ctl_comm));
	t->written = m->nsteps;
	SF_CHECK(wrc);
	if (m->rank == 0)
		SF_CHECK(write_report(m, all, total / sizeof *all));
	if (t->failed)
		_sf_log(SF_LOG_WARN, "SHARDFLOW_TRACE: the trace is incomplete (out of memory)");
fail:
	free(mine);
	free(all);
	free(counts);
	free(displs);
	return rc;
}

bool _sf_trace_pending(const struct sf_model *m)
{
	return m->trace && m->trace->written != m->nsteps;
}
