/*
 * cp_attention.c — the codelets of context parallelism's ring attention (the order of
 * their tasks and the ring's comm tasks: scheduler/ctxpar.c; the math:
 * layers/attention_ring_cpu.c). CPU workers only: SHARDFLOW_CP is refused on GPU
 * ranks, which have no part kernels yet.
 *
 * Part j holds the key/value block of CP rank src = (rank - j) mod K, whose rows are
 * its chunks src and 2K - 1 - src: the block's positions follow from j alone, so every
 * part is the same task whatever the ring's timing, and the results are bitwise the
 * same at any prefetch depth.
 */
#include "layers/attention.h"
#include "tasks/cp_attention.h"
#include "tasks/worker.h"

#include <stdlib.h>
#include <string.h>

/* The rows of CP rank k's two chunks */
static struct sf_attn_rows rows_of(const struct _sf_cp_attn_geom *g, int k)
{
	return (struct sf_attn_rows){2 * g->c, g->c, k * g->c, (2 * g->K - 1 - k) * g->c};
}

static int src_of(const struct _sf_cp_attn_args *a)
{
	return (a->g->rank - a->j + a->g->K) % a->g->K;
}

size_t _sf_cp_attn_kv_floats(const struct _sf_cp_attn_geom *g)
{
	return (size_t)g->B * 2 * (size_t)g->c * (size_t)(g->ld - g->C);
}

static float *scratch_for(const struct _sf_cp_attn_geom *g)
{
	size_t n = _sf_attention_part_scratch(2 * g->c, 2 * g->c);
	float *s = malloc(sizeof(float) * (n ? n : 1));
	STARPU_ASSERT_MSG(s, "context-parallel attention: out of memory for %zu floats of scratch",
	                  n);
	return s;
}

static float *vec(void *buffers[], int i)
{
	return (float *)STARPU_VECTOR_GET_PTR(buffers[i]);
}

/* qkv[R] kv[W]: each row's key and value columns, packed */
static void cp_pack_cpu(void *buffers[], void *cl_arg)
{
	const struct _sf_cp_attn_geom *g = ((const struct _sf_cp_attn_args *)cl_arg)->g;
	const float *qkv = vec(buffers, 0);
	float *kv = vec(buffers, 1);
	size_t w = (size_t)(g->ld - g->C), rows = (size_t)g->B * 2 * (size_t)g->c;
	for (size_t r = 0; r < rows; r++)
		memcpy(kv + r * w, qkv + r * (size_t)g->ld + g->C, w * sizeof(float));
}

/* qkv[R] kv[R] y[W|RW] stat[W|RW]: part j into the running output, ended after the last */
static void cp_fwd_cpu(void *buffers[], void *cl_arg)
{
	const struct _sf_cp_attn_args *a = cl_arg;
	const struct _sf_cp_attn_geom *g = a->g;
	float *y = vec(buffers, 2), *stat = vec(buffers, 3), *scratch = scratch_for(g);
	int nq = 2 * g->c;
	if (a->j == 0)
		_sf_attention_part_begin(g->B, nq, g->C, g->NH, y, stat);
	_sf_attention_part_fwd(g->B, g->C, g->NH, g->NKV, rows_of(g, g->rank), vec(buffers, 0),
	                       g->ld, rows_of(g, src_of(a)), vec(buffers, 1), g->ld - g->C, y,
	                       stat, scratch);
	if (a->j == g->K - 1)
		_sf_attention_part_end(g->B, nq, g->C, g->NH, y, stat);
	free(scratch);
}

/* qkv kv stat y dy dsum dqkv dkv: part j's share of the gradient, dkv its block's
 * share alone (zeroed first; the scheduler adds it to the gradient the ring brings).
 * The first part computes the row sums and starts dqkv's query columns (unless added
 * to). */
static void cp_bwd_cpu(void *buffers[], void *cl_arg)
{
	const struct _sf_cp_attn_args *a = cl_arg;
	const struct _sf_cp_attn_geom *g = a->g;
	const float *stat = vec(buffers, 2), *dy = vec(buffers, 4);
	float *dsum = vec(buffers, 5), *dqkv = vec(buffers, 6), *dkv = vec(buffers, 7);
	int nq = 2 * g->c;
	size_t rows = (size_t)g->B * (size_t)nq;
	if (a->j == 0) {
		_sf_attention_dsum(g->B, nq, g->C, g->NH, vec(buffers, 3), dy, dsum);
		if (!g->acc)
			for (size_t r = 0; r < rows; r++)
				memset(dqkv + r * (size_t)g->ld, 0, sizeof(float) * (size_t)g->C);
	}
	memset(dkv, 0, sizeof(float) * _sf_cp_attn_kv_floats(g));
	float *scratch = scratch_for(g);
	_sf_attention_part_bwd(g->B, g->C, g->NH, g->NKV, rows_of(g, g->rank), vec(buffers, 0),
	                       g->ld, stat, dsum, dy, rows_of(g, src_of(a)), vec(buffers, 1),
	                       g->ld - g->C, dqkv, g->ld, dkv, g->ld - g->C, scratch);
	free(scratch);
}

/* dkv[R] dqkv[RW]: the rank's own key/value gradient, home from the ring, into dqkv */
static void cp_unpack_cpu(void *buffers[], void *cl_arg)
{
	const struct _sf_cp_attn_geom *g = ((const struct _sf_cp_attn_args *)cl_arg)->g;
	const float *dkv = vec(buffers, 0);
	float *dqkv = vec(buffers, 1);
	size_t w = (size_t)(g->ld - g->C), rows = (size_t)g->B * 2 * (size_t)g->c;
	for (size_t r = 0; r < rows; r++) {
		float *d = dqkv + r * (size_t)g->ld + g->C;
		const float *s = dkv + r * w;
		if (g->acc)
			for (size_t k = 0; k < w; k++)
				d[k] += s[k];
		else
			memcpy(d, s, w * sizeof(float));
	}
}

/* history-based, keyed by _sf_task_footprint as the other compute codelets (their
 * histories give GFlop/s from the flops each part is submitted with; a simulation's
 * device model replaces them) */
#define CP_MODEL(base)                                                                             \
	static struct starpu_perfmodel base##_model = {                                            \
	    .type = STARPU_HISTORY_BASED, .symbol = "sf_" #base, .footprint = _sf_task_footprint}
CP_MODEL(cp_pack);
CP_MODEL(cp_fwd);
CP_MODEL(cp_bwd);
CP_MODEL(cp_unpack);

#define CP_CODELET(var, base, n, ...)                                                              \
	struct starpu_codelet var = {                                                              \
	    .where = STARPU_CPU,                                                                   \
	    .cpu_funcs = {base##_cpu},                                                             \
	    .cpu_funcs_name = {#base "_cpu"},                                                      \
	    .nbuffers = n,                                                                         \
	    .modes = {__VA_ARGS__},                                                                \
	    .can_execute = _sf_compute_can_execute,                                                \
	    .model = &base##_model,                                                                \
	    .name = #base,                                                                         \
	}

static CP_CODELET(cl_pack, cp_pack, 2, STARPU_R, STARPU_W);
static CP_CODELET(cl_fwd_first, cp_fwd, 4, STARPU_R, STARPU_R, STARPU_W, STARPU_W);
static CP_CODELET(cl_fwd, cp_fwd, 4, STARPU_R, STARPU_R, STARPU_RW, STARPU_RW);
static CP_CODELET(cl_bwd_first, cp_bwd, 8, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R,
                  STARPU_W, STARPU_RW, STARPU_W);
static CP_CODELET(cl_bwd, cp_bwd, 8, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R,
                  STARPU_RW, STARPU_W);
static CP_CODELET(cl_unpack, cp_unpack, 2, STARPU_R, STARPU_RW);

void _sf_cp_attn_codelets_configure(bool skip)
{
	_sf_codelet_bodies(&cl_pack, skip, cp_pack_cpu, NULL);
	_sf_codelet_bodies(&cl_fwd_first, skip, cp_fwd_cpu, NULL);
	_sf_codelet_bodies(&cl_fwd, skip, cp_fwd_cpu, NULL);
	_sf_codelet_bodies(&cl_bwd_first, skip, cp_bwd_cpu, NULL);
	_sf_codelet_bodies(&cl_bwd, skip, cp_bwd_cpu, NULL);
	_sf_codelet_bodies(&cl_unpack, skip, cp_unpack_cpu, NULL);
}

/* --- submitting them ------------------------------------------------------------------ */

static double part_flops(const struct _sf_cp_attn_args *a)
{
	const struct _sf_cp_attn_geom *g = a->g;
	return _sf_attention_part_flops(g->B, g->C, rows_of(g, g->rank), rows_of(g, src_of(a)));
}

int _sf_submit_cp_pack(const struct _sf_cp_attn_args *a, starpu_data_handle_t qkv,
                       starpu_data_handle_t kv, const char *name, struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{qkv, STARPU_R}, {kv, STARPU_W}};
	return _sf_task_submit(&cl_pack, d, 2, a, sizeof *a, false, -1, name, done);
}

int _sf_submit_cp_fwd(const struct _sf_cp_attn_args *a, starpu_data_handle_t qkv,
                      starpu_data_handle_t kv, starpu_data_handle_t y,
                      starpu_data_handle_t stat, const char *name, struct _sf_task_done done)
{
	enum starpu_data_access_mode out = a->j == 0 ? STARPU_W : STARPU_RW;
	struct starpu_data_descr d[] = {{qkv, STARPU_R}, {kv, STARPU_R}, {y, out}, {stat, out}};
	return _sf_task_submit_flops(a->j == 0 ? &cl_fwd_first : &cl_fwd, d, 4, a, sizeof *a, false,
	                             -1, part_flops(a), name, done);
}

int _sf_submit_cp_bwd(const struct _sf_cp_attn_args *a, const starpu_data_handle_t h[8],
                      const char *name, struct _sf_task_done done)
{
	bool first = a->j == 0;
	struct starpu_data_descr d[8];
	for (int i = 0; i < 8; i++)
		d[i] = (struct starpu_data_descr){h[i], i < 5 ? STARPU_R : STARPU_RW};
	d[5].mode = first ? STARPU_W : STARPU_R; /* the row sums: made by the first part */
	d[7].mode = STARPU_W;                    /* the block's share, alone */
	return _sf_task_submit_flops(first ? &cl_bwd_first : &cl_bwd, d, 8, a, sizeof *a, false, -1,
	                             2.5 * part_flops(a), name, done);
}

int _sf_submit_cp_unpack(const struct _sf_cp_attn_args *a, starpu_data_handle_t dkv,
                         starpu_data_handle_t dqkv, const char *name,
                         struct _sf_task_done done)
{
	struct starpu_data_descr d[] = {{dkv, STARPU_R}, {dqkv, STARPU_RW}};
	return _sf_task_submit(&cl_unpack, d, 2, a, sizeof *a, false, -1, name, done);
}
