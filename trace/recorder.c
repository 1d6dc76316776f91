/*
 * recorder.c — the built-in trace's records and its writers (trace/recorder.h).
 *
 * Records live in fixed-size chunks that never move, so a callback can complete its
 * record while the main thread reserves new ones. Times are microseconds from the
 * recorder's creation.
 */
#include "trace/recorder.h"
#include "common/error.h"
#include "trace/report.h"
#include "trace/write.h"

#include <math.h>
#include <starpu.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 4096

struct _sf_trace_rec {
	struct _sf_event ev;
	atomic_int done;
};

struct _sf_recorder {
	struct _sf_trace_rec **chunks;
	size_t nchunks, n;
	int rank;
	double origin; /* starpu_timing_now() at creation */
	bool failed;   /* a reservation failed: the trace is incomplete */
};

int _sf_recorder_create(int rank, struct _sf_recorder **out)
{
	struct _sf_recorder *r = calloc(1, sizeof *r);
	if (!r)
		return SF_ERR(SF_ERR_NOMEM, "SHARDFLOW_TRACE: out of memory");
	r->rank = rank;
	r->origin = starpu_timing_now();
	*out = r;
	return SF_OK;
}

void _sf_recorder_destroy(struct _sf_recorder *t)
{
	if (!t)
		return;
	for (size_t c = 0; c < t->nchunks; c++)
		free(t->chunks[c]);
	free(t->chunks);
	free(t);
}

struct _sf_event *_sf_recorder_reserve(struct _sf_recorder *t, int step, const char *name, int kind,
                                       int layer)
{
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
			        "SHARDFLOW_TRACE: out of memory after %zu tasks; the trace stops "
			        "here",
			        t->n);
			return NULL;
		}
		t->chunks[t->nchunks++] = c;
	}
	struct _sf_trace_rec *r = &t->chunks[t->n / CHUNK][t->n % CHUNK];
	t->n++;
	memset(&r->ev, 0, sizeof r->ev);
	r->ev.rank = t->rank;
	r->ev.step = step;
	r->ev.layer = layer;
	r->ev.kind = (enum _sf_ev_kind)kind;
	snprintf(r->ev.name, sizeof r->ev.name, "%s", name);
	atomic_store(&r->done, 0);
	/* the callback needs the origin: carried in start until the task ends */
	r->ev.start = t->origin;
	return &r->ev;
}

/* Task callback (any worker): fills the record from StarPU's profiling info. */
void _sf_recorder_task_done(void *arg)
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
	r->ev.flops = isnan(task->flops) ? 0.0 : task->flops;
	r->ev.bytes = 0.0;
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++)
		r->ev.bytes += (double)starpu_data_get_size(STARPU_TASK_GET_HANDLE(task, i));
	const char *sym = task->cl && task->cl->model ? task->cl->model->symbol : NULL;
	snprintf(r->ev.model, sizeof r->ev.model, "%s", sym ? sym : "");
	atomic_store(&r->done, 1);
}

int _sf_recorder_events(const struct _sf_recorder *t, struct _sf_event **out, size_t *n)
{
	struct _sf_event *mine = malloc((t->n ? t->n : 1) * sizeof *mine);
	if (!mine)
		return SF_ERR(SF_ERR_NOMEM, "SHARDFLOW_TRACE: out of memory");
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct _sf_trace_rec *r = &t->chunks[i / CHUNK][i % CHUNK];
		if (atomic_load(&r->done))
			mine[k++] = r->ev;
	}
	*out = mine;
	*n = k;
	return SF_OK;
}

bool _sf_recorder_incomplete(const struct _sf_recorder *t)
{
	return t->failed;
}

static const char *color(enum _sf_ev_kind k)
{
	/* Chrome trace reserved colour names: comm warm, compute cool, bookkeeping grey */
	if (_sf_ev_is_comm(k))
		return "terrible";
	if (_sf_ev_is_compute(k))
		return "rail_response";
	return "grey";
}

/* One event per line, so that line-oriented tools can read it too. Every name is a
 * JSON string (_sf_json_string): a layer type's name is the user's. */
int _sf_trace_write_chrome(const char *path, int rank, int nworkers, int comm_worker,
                           const struct _sf_event *ev, size_t n)
{
	FILE *f;
	int rc = _sf_file_create(path, &f);
	if (rc < 0)
		return rc;
	fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
	fprintf(f,
	        "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": "
	        "\"rank %d\"}},\n",
	        rank, rank);
	fprintf(f,
	        "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, \"args\": "
	        "{\"sort_index\": %d}},\n",
	        rank, rank);
	for (int w = 0; w < nworkers; w++)
		fprintf(f,
		        "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
		        "\"args\": {\"name\": \"worker %d (%s)\"}},\n",
		        rank, w, w, w == comm_worker ? "comm" : "compute");
	for (size_t i = 0; i < n; i++) {
		const struct _sf_event *e = &ev[i];
		fprintf(f, "{\"name\": ");
		_sf_json_string(f, e->name);
		fprintf(
		    f,
		    ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, "
		    "\"tid\": %d, \"cname\": \"%s\", \"args\": {\"step\": %d, \"layer\": %d, "
		    "\"kind\": \"%s\", \"flops\": %.0f, \"bytes\": %.0f, \"model\": ",
		    _sf_ev_is_comm(e->kind)      ? "comm"
		    : _sf_ev_is_compute(e->kind) ? "compute"
		                                 : "other",
		    e->start, e->end - e->start, e->rank, e->worker, color(e->kind), e->step + 1,
		    e->layer, _sf_ev_kind_name(e->kind), e->flops, e->bytes);
		_sf_json_string(f, e->model);
		fprintf(f, "}}%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "]}\n");
	return _sf_file_close(f, path);
}

/* Errors are raised where they are found (report.c, svg.c, write.c), so that each is
 * printed once; their messages name the file or say what the events lack. */
int _sf_trace_write_report(const char *prefix, const char *config, const struct _sf_event *all,
                           size_t n)
{
	int rc = SF_OK;
	struct _sf_report r;
	char src[SF_PATH_MAX + 2048];
	snprintf(src, sizeof src, "built-in trace %s.rank*.json%s%s", prefix, config ? "; " : "",
	         config ? config : "");
	SF_CHECK(_sf_report_build(all, n, &r));
	rc = _sf_report_write_files(prefix, all, n, &r, src, src);
	_sf_report_free(&r);
	return rc;
}
