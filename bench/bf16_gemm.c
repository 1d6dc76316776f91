/*
 * bf16_gemm.c — is a bf16 GEMM from a library made for it faster than OpenBLAS's
 * sgemm on this CPU, for the products shardflow's linear layers compute? (issue 14:
 * keep a bf16 compute path only if it wins). Debian's OpenBLAS has no sbgemm; oneDNN
 * (libdnnl-dev) has bf16 matmul, using AVX512-BF16 (vdpbf16ps) where the CPU has it.
 *
 *   OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 bench/bf16_gemm [--reps N] [--shape M,N,K]...
 *
 * For each shape, y (M x N, fp32) = x (M x K) W^T (W: N x K, row-major as shardflow
 * stores it): the forward product of a linear layer on M rows, K -> N. Times, as the
 * median of --reps (default 15) interleaved rounds, one core:
 *   sgemm      cblas_sgemm on fp32 x and W
 *   bf16       oneDNN matmul on bf16 x and W (fp32 accumulation and output), inputs
 *              already bf16
 *   bf16+cvt   the same plus the reorders of x and W from fp32 (shardflow keeps
 *              activations and gathered parameters in fp32: this is what a bf16 path
 *              would pay per call)
 * and prints a markdown table with GFLOP/s and the ratios to sgemm, and the largest
 * relative difference of bf16's y from sgemm's (bf16 inputs carry 8 bits of mantissa).
 * Default shapes: the GPT's per-rank products (8 sequences of 128 bytes, embd 128:
 * qkv, proj, fc, fc2) and the MLP's 1024 x 1024 on 32 rows.
 * Build (bench/bf16_gemm.sh does it): cc -O2 bf16_gemm.c -lopenblas -ldnnl
 */
#include <cblas.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"

#define DNNL_CHECK_EXIT(call)                                                                      \
	do {                                                                                       \
		dnnl_status_t s_ = (call);                                                         \
		if (s_ != dnnl_success) {                                                          \
			fprintf(stderr, "bf16_gemm: %s failed (%d)\n", #call, (int)s_);            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static float *fbuf(size_t n, unsigned seed)
{
	float *p = malloc(n * sizeof *p);
	if (!p)
		exit(1);
	for (size_t i = 0; i < n; i++)
		p[i] = (float)(((i + seed) * 2654435761u) % 2000) * 1e-3f - 1.0f;
	return p;
}

struct mm {
	dnnl_primitive_t mat, rx, rw;
	dnnl_memory_t x32, w32, x16, w16, y;
};

/* matmul x16 (M x K, ab) by w16 (K x N stored N x K: tag ba) into y (M x N), and the
 * reorders fp32 -> bf16 of x and W */
static void mm_init(struct mm *p, dnnl_engine_t eng, int M, int N, int K, float *x, float *w,
                    float *y)
{
	dnnl_memory_desc_t x32d, w32d, x16d, w16d, yd;
	dnnl_dims_t xd = {M, K}, wd = {K, N}, ydims = {M, N};
	DNNL_CHECK_EXIT(dnnl_memory_desc_init_by_tag(&x32d, 2, xd, dnnl_f32, dnnl_ab));
	DNNL_CHECK_EXIT(dnnl_memory_desc_init_by_tag(&w32d, 2, wd, dnnl_f32, dnnl_ba));
	DNNL_CHECK_EXIT(dnnl_memory_desc_init_by_tag(&x16d, 2, xd, dnnl_bf16, dnnl_ab));
	DNNL_CHECK_EXIT(dnnl_memory_desc_init_by_tag(&w16d, 2, wd, dnnl_bf16, dnnl_ba));
	DNNL_CHECK_EXIT(dnnl_memory_desc_init_by_tag(&yd, 2, ydims, dnnl_f32, dnnl_ab));
	DNNL_CHECK_EXIT(dnnl_memory_create(&p->x32, &x32d, eng, x));
	DNNL_CHECK_EXIT(dnnl_memory_create(&p->w32, &w32d, eng, w));
	DNNL_CHECK_EXIT(dnnl_memory_create(&p->x16, &x16d, eng, DNNL_MEMORY_ALLOCATE));
	DNNL_CHECK_EXIT(dnnl_memory_create(&p->w16, &w16d, eng, DNNL_MEMORY_ALLOCATE));
	DNNL_CHECK_EXIT(dnnl_memory_create(&p->y, &yd, eng, y));
	dnnl_matmul_desc_t md;
	dnnl_primitive_desc_t pd;
	DNNL_CHECK_EXIT(dnnl_matmul_desc_init(&md, &x16d, &w16d, NULL, &yd));
	DNNL_CHECK_EXIT(dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL));
	const char *impl = NULL;
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	fprintf(stderr, "bf16_gemm: %d x %d x %d: oneDNN matmul %s\n", M, N, K, impl ? impl : "?");
	DNNL_CHECK_EXIT(dnnl_primitive_create(&p->mat, pd));
	dnnl_primitive_desc_destroy(pd);
	DNNL_CHECK_EXIT(dnnl_reorder_primitive_desc_create(&pd, &x32d, eng, &x16d, eng, NULL));
	DNNL_CHECK_EXIT(dnnl_primitive_create(&p->rx, pd));
	dnnl_primitive_desc_destroy(pd);
	DNNL_CHECK_EXIT(dnnl_reorder_primitive_desc_create(&pd, &w32d, eng, &w16d, eng, NULL));
	DNNL_CHECK_EXIT(dnnl_primitive_create(&p->rw, pd));
	dnnl_primitive_desc_destroy(pd);
}

static void run_reorders(struct mm *p, dnnl_stream_t st)
{
	dnnl_exec_arg_t ax[2] = {{DNNL_ARG_FROM, p->x32}, {DNNL_ARG_TO, p->x16}};
	dnnl_exec_arg_t aw[2] = {{DNNL_ARG_FROM, p->w32}, {DNNL_ARG_TO, p->w16}};
	DNNL_CHECK_EXIT(dnnl_primitive_execute(p->rx, st, 2, ax));
	DNNL_CHECK_EXIT(dnnl_primitive_execute(p->rw, st, 2, aw));
}

static void run_matmul(struct mm *p, dnnl_stream_t st)
{
	dnnl_exec_arg_t a[3] = {
	    {DNNL_ARG_SRC, p->x16}, {DNNL_ARG_WEIGHTS, p->w16}, {DNNL_ARG_DST, p->y}};
	DNNL_CHECK_EXIT(dnnl_primitive_execute(p->mat, st, 3, a));
	DNNL_CHECK_EXIT(dnnl_stream_wait(st));
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bf16_gemm [--reps N] [--shape M,N,K]...\n");
}

struct options {
	int reps, ns, shapes[32][3];
};

static const char *const option_names[] = {"--reps", "--shape"};

static int on_value(int k, char *val, void *ctx)
{
	struct options *o = ctx;
	int n;
	if (k == 0)
		return cli_int("--reps", val, 1, 1000000, &o->reps);
	if (o->ns == 32)
		return cli_bad_usage("--shape: 32 shapes at most");
	if (cli_int_list("--shape", val, 1, 1 << 20, 3, 3, o->shapes[o->ns], &n))
		return 2;
	o->ns++;
	return 0;
}

int main(int argc, char **argv)
{
	static struct options o = {.reps = 15};
	const struct cli_spec sp = {option_names, 2, NULL, 0, on_value, NULL};
	cli_prog = "bf16_gemm";
	cli_usage = usage;
	int prc = cli_parse(argc, argv, &sp, &o);
	if (prc)
		return prc == 1 ? 0 : prc;
	int reps = o.reps, ns = o.ns, (*shapes)[3] = o.shapes;
	if (!ns) {
		static const int def[5][3] = {
		    {1024, 384, 128}, {1024, 128, 128}, {1024, 512, 128}, {1024, 128, 512}, {32, 1024, 1024}};
		memcpy(shapes, def, sizeof def);
		ns = 5;
	}
	dnnl_engine_t eng;
	dnnl_stream_t st;
	DNNL_CHECK_EXIT(dnnl_engine_create(&eng, dnnl_cpu, 0));
	DNNL_CHECK_EXIT(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
	printf("| M x N x K | sgemm GFLOP/s | bf16 GFLOP/s | bf16 / sgemm | bf16+cvt GFLOP/s | bf16+cvt / sgemm | max rel diff |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- |\n");
	for (int s = 0; s < ns; s++) {
		int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
		float *x = fbuf((size_t)M * K, 1), *w = fbuf((size_t)N * K, 7);
		float *y32 = fbuf((size_t)M * N, 3), *y16 = fbuf((size_t)M * N, 5);
		struct mm p;
		mm_init(&p, eng, M, N, K, x, w, y16);
		double *t32 = malloc(sizeof(double) * reps), *t16 = malloc(sizeof(double) * reps),
		       *tc = malloc(sizeof(double) * reps);
		run_reorders(&p, st);
		run_matmul(&p, st); /* warm-up */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w, K, 0.0f,
		            y32, N);
		for (int r = 0; r < reps; r++) {
			double t0 = now_s();
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w, K,
			            0.0f, y32, N);
			double t1 = now_s();
			run_matmul(&p, st);
			double t2 = now_s();
			run_reorders(&p, st);
			run_matmul(&p, st);
			double t3 = now_s();
			t32[r] = t1 - t0, t16[r] = t2 - t1, tc[r] = t3 - t2;
		}
		double worst = 0, scale = 0;
		for (size_t i = 0; i < (size_t)M * N; i++)
			scale = fmax(scale, fabs(y32[i]));
		for (size_t i = 0; i < (size_t)M * N; i++)
			worst = fmax(worst, fabs(y32[i] - y16[i]) / scale);
		double fl = 2.0 * M * N * K * 1e-9;
		double g32 = fl / median(t32, reps), g16 = fl / median(t16, reps),
		       gc = fl / median(tc, reps);
		printf("| %d x %d x %d | %.1f | %.1f | %.2f | %.1f | %.2f | %.1e |\n", M, N, K, g32, g16,
		       g16 / g32, gc, gc / g32, worst);
		fflush(stdout);
		free(x), free(w), free(y32), free(y16), free(t32), free(t16), free(tc);
	}
	return 0;
}
