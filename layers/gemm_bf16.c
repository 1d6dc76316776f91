/*
 * gemm_bf16.c — bf16 products through oneDNN (layers/gemm_bf16.h).
 *
 * Each StarPU worker thread keeps its own cache of primitives, one per shape and
 * transposition (a model has a handful: three per linear layer's shape), each with
 * its reorders fp32 -> bf16 of A and B, its bf16 buffers and its stream: built at the
 * first product of that shape, reused by every later step (nothing is allocated per
 * call). The caches are listed globally so sf_finalize can release them.
 */
#include "config.h"

#include "layers/gemm_bf16.h"
#include "common/bf16.h"
#include "common/error.h"
#include <fenv.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

/* the choice of the node whose products this worker thread is computing */
static _Thread_local bool node_bf16;

#ifdef SF_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

void omp_set_num_threads(int n); /* libgomp, which libdnnl is built on */

struct entry {
	bool ta, tb, sum;
	int M, N, K, lda, ldb, ldc;
	dnnl_primitive_t mat, ra, rb;
	dnnl_memory_t a32, b32, a16, b16, c;
	struct entry *next_all; /* the global list */
};

struct cache {
	dnnl_stream_t stream;
	int n;
	struct entry *e[64];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;
static struct entry *all;             /* every entry of every thread */
static struct cache *caches[256];     /* every thread's cache */
static int ncaches;
static _Thread_local struct cache *mine;
static atomic_bool warned;

static void refuse(const char *what, dnnl_status_t s)
{
	if (!atomic_exchange(&warned, true))
		_sf_log(SF_LOG_WARN,
		        "bf16 products through oneDNN unavailable (%s: status %d): the linear "
		        "layers use fp32 sgemm",
		        what, (int)s);
}

#define TRY(call)                                                                          \
	do {                                                                               \
		dnnl_status_t s_ = (call);                                                 \
		if (s_ != dnnl_success) {                                                  \
			refuse(#call, s_);                                                 \
			goto fail;                                                         \
		}                                                                          \
	} while (0)

static struct cache *my_cache(void)
{
	if (mine)
		return mine;
	struct cache *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	pthread_mutex_lock(&lock);
	bool ok = ncaches < 256;
	if (ok && !engine && dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success)
		ok = false;
	if (ok && dnnl_stream_create(&c->stream, engine, dnnl_stream_default_flags) != dnnl_success)
		ok = false;
	if (ok)
		caches[ncaches++] = c;
	pthread_mutex_unlock(&lock);
	if (!ok) {
		free(c);
		refuse("the engine or a stream", dnnl_runtime_error);
		return NULL;
	}
	omp_set_num_threads(1); /* this worker's products on this worker's core */
	mine = c;
	return c;
}

/* a logical rows x cols matrix at p, stored with leading dimension ld, transposed */
static dnnl_status_t desc(dnnl_memory_desc_t *d, int rows, int cols, int ld, bool t,
                          dnnl_data_type_t type)
{
	dnnl_dims_t dims = {rows, cols};
	dnnl_dims_t strides = {t ? 1 : ld, t ? ld : 1};
	return dnnl_memory_desc_init_by_strides(d, 2, dims, type, strides);
}

static void entry_free(struct entry *e)
{
	dnnl_primitive_t ps[] = {e->mat, e->ra, e->rb};
	dnnl_memory_t ms[] = {e->a32, e->b32, e->a16, e->b16, e->c};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
		if (ps[i])
			dnnl_primitive_destroy(ps[i]);
	for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
		if (ms[i])
			dnnl_memory_destroy(ms[i]);
	free(e);
}

static struct entry *entry_new(bool ta, bool tb, int M, int N, int K, int lda, int ldb, int ldc,
                               bool sum)
{
	struct entry *e = calloc(1, sizeof *e);
	dnnl_primitive_desc_t pd = NULL;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	if (!e)
		return NULL;
	*e = (struct entry){.ta = ta, .tb = tb, .sum = sum, .M = M, .N = N, .K = K, .lda = lda,
	                    .ldb = ldb, .ldc = ldc};
	dnnl_memory_desc_t a32, b32, a16, b16, c;
	dnnl_dims_t ad = {M, K}, bd = {K, N};
	TRY(desc(&a32, M, K, lda, ta, dnnl_f32));
	TRY(desc(&b32, K, N, ldb, tb, dnnl_f32));
	TRY(dnnl_memory_desc_init_by_tag(&a16, 2, ad, dnnl_bf16, dnnl_ab));
	TRY(dnnl_memory_desc_init_by_tag(&b16, 2, bd, dnnl_bf16, dnnl_ab));
	TRY(desc(&c, M, N, ldc, false, dnnl_f32));
	TRY(dnnl_memory_create(&e->a32, &a32, engine, DNNL_MEMORY_NONE));
	TRY(dnnl_memory_create(&e->b32, &b32, engine, DNNL_MEMORY_NONE));
	TRY(dnnl_memory_create(&e->a16, &a16, engine, DNNL_MEMORY_ALLOCATE));
	TRY(dnnl_memory_create(&e->b16, &b16, engine, DNNL_MEMORY_ALLOCATE));
	TRY(dnnl_memory_create(&e->c, &c, engine, DNNL_MEMORY_NONE));
	TRY(dnnl_primitive_attr_create(&attr));
	if (sum) { /* C += the product */
		TRY(dnnl_post_ops_create(&po));
		TRY(dnnl_post_ops_append_sum(po, 1.0f));
		TRY(dnnl_primitive_attr_set_post_ops(attr, po));
	}
	dnnl_matmul_desc_t md;
	TRY(dnnl_matmul_desc_init(&md, &a16, &b16, NULL, &c));
	TRY(dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL));
	TRY(dnnl_primitive_create(&e->mat, pd));
	dnnl_primitive_desc_destroy(pd);
	pd = NULL;
	TRY(dnnl_reorder_primitive_desc_create(&pd, &a32, engine, &a16, engine, NULL));
	TRY(dnnl_primitive_create(&e->ra, pd));
	dnnl_primitive_desc_destroy(pd);
	pd = NULL;
	TRY(dnnl_reorder_primitive_desc_create(&pd, &b32, engine, &b16, engine, NULL));
	TRY(dnnl_primitive_create(&e->rb, pd));
	dnnl_primitive_desc_destroy(pd);
	dnnl_primitive_attr_destroy(attr);
	if (po)
		dnnl_post_ops_destroy(po);
	pthread_mutex_lock(&lock);
	e->next_all = all;
	all = e;
	pthread_mutex_unlock(&lock);
	return e;
fail:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	if (po)
		dnnl_post_ops_destroy(po);
	entry_free(e);
	return NULL;
}

/* dst (rows x cols, dense) = the logical matrix at src (desc's layout) rounded to bf16
 * toward +inf (up) or -inf: SHARDFLOW_ROUNDING's direction, which oneDNN's reorder (to
 * nearest) would not take */
static void round_directed(uint16_t *dst, const float *src, int rows, int cols, int ld, bool t,
                           bool up)
{
	size_t rs = t ? 1 : (size_t)ld, cs = t ? (size_t)ld : 1;
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			dst[(size_t)r * cols + c] =
			    sf_bf16_from_float_directed(src[r * rs + c * cs], up);
}

int _sf_gemm_bf16(bool ta, bool tb, int M, int N, int K, const float *A, int lda, const float *B,
                  int ldb, float beta, float *C, int ldc)
{
	struct cache *c = my_cache();
	if (!c)
		return -1;
	bool sum = beta != 0.0f;
	struct entry *e = NULL;
	for (int i = 0; i < c->n && !e; i++) {
		struct entry *x = c->e[i];
		if (x->ta == ta && x->tb == tb && x->sum == sum && x->M == M && x->N == N &&
		    x->K == K && x->lda == lda && x->ldb == ldb && x->ldc == ldc)
			e = x;
	}
	if (!e) {
		if (c->n == 64 || !(e = entry_new(ta, tb, M, N, K, lda, ldb, ldc, sum)))
			return -1;
		c->e[c->n++] = e;
	}
	TRY(dnnl_memory_set_data_handle(e->a32, (void *)A));
	TRY(dnnl_memory_set_data_handle(e->b32, (void *)B));
	TRY(dnnl_memory_set_data_handle(e->c, C));
	dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, e->a32}, {DNNL_ARG_TO, e->a16}};
	dnnl_exec_arg_t rb[2] = {{DNNL_ARG_FROM, e->b32}, {DNNL_ARG_TO, e->b16}};
	dnnl_exec_arg_t mm[3] = {
	    {DNNL_ARG_SRC, e->a16}, {DNNL_ARG_WEIGHTS, e->b16}, {DNNL_ARG_DST, e->c}};
	int dir = fegetround();
	if (dir == FE_UPWARD || dir == FE_DOWNWARD) {
		void *a16 = NULL, *b16 = NULL;
		TRY(dnnl_memory_get_data_handle(e->a16, &a16));
		TRY(dnnl_memory_get_data_handle(e->b16, &b16));
		round_directed(a16, A, M, K, lda, ta, dir == FE_UPWARD);
		round_directed(b16, B, K, N, ldb, tb, dir == FE_UPWARD);
	} else {
		TRY(dnnl_primitive_execute(e->ra, c->stream, 2, ra));
		TRY(dnnl_primitive_execute(e->rb, c->stream, 2, rb));
	}
	TRY(dnnl_primitive_execute(e->mat, c->stream, 3, mm));
	TRY(dnnl_stream_wait(c->stream));
	return 0;
fail:
	return -1;
}

void _sf_gemm_bf16_release(void)
{
	pthread_mutex_lock(&lock);
	while (all) {
		struct entry *e = all;
		all = e->next_all;
		entry_free(e);
	}
	for (int i = 0; i < ncaches; i++) {
		dnnl_stream_destroy(caches[i]->stream);
		free(caches[i]);
	}
	ncaches = 0;
	if (engine)
		dnnl_engine_destroy(engine);
	engine = NULL;
	pthread_mutex_unlock(&lock);
	/* threads that run on (the main thread) look their cache up again */
	mine = NULL;
}

#else

/* dst (rows x cols, dense) = the logical matrix at src (desc's layout) rounded to bf16
 * toward +inf (up) or -inf: SHARDFLOW_ROUNDING's direction, which oneDNN's reorder (to
 * nearest) would not take */
static void round_directed(uint16_t *dst, const float *src, int rows, int cols, int ld, bool t,
                           bool up)
{
	size_t rs = t ? 1 : (size_t)ld, cs = t ? (size_t)ld : 1;
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			dst[(size_t)r * cols + c] =
			    sf_bf16_from_float_directed(src[r * rs + c * cs], up);
}

int _sf_gemm_bf16(bool ta, bool tb, int M, int N, int K, const float *A, int lda, const float *B,
                  int ldb, float beta, float *C, int ldc)
{
	(void)ta, (void)tb, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb;
	(void)beta, (void)C, (void)ldc;
	return -1;
}

void _sf_gemm_bf16_release(void)
{
}

#endif

bool _sf_gemm_bf16_available(void)
{
#ifdef SF_HAVE_DNNL
	return true;
#else
	return false;
#endif
}

bool _sf_gemm_bf16_use(bool on)
{
	bool was = node_bf16;
	node_bf16 = on && _sf_gemm_bf16_available();
	return was;
}

bool _sf_gemm_bf16_enabled(void)
{
	return node_bf16;
}
