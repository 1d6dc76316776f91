/*
 * sgemm_rate.c — the single-thread OpenBLAS sgemm rate on the GEMMs of one training
 * step of an MLP, the yardstick of bench.sh's compute-efficiency table.
 *
 *   OPENBLAS_NUM_THREADS=1 bench/sgemm_rate --widths 784,1024,1024,1024,10 --rows 32
 *
 * For every linear layer (I -> O) on B rows it times exactly the calls shardflow's
 * kernels make (tasks/kernels.c): forward y = x W^T (B x O x I), backward
 * dW = dy^T x (O x I x B) and, except for the first layer (its input needs no
 * gradient), dx = dy W (B x I x O). One "step" is all of them; it runs --reps steps
 * after one warm-up and prints, on one line,
 *   sgemm_gflops <median rate> ms_per_step <median> flop_per_step <F> reps <n>
 * with F = sum over layers of 2*B*I*O*(2 or 3).
 * Build: cc -O2 -o sgemm_rate sgemm_rate.c $(BLAS_CFLAGS) -lopenblas
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static float *buf(size_t n)
{
	float *p = malloc(sizeof(float) * (n ? n : 1));
	if (!p) {
		fprintf(stderr, "sgemm_rate: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
	return p;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: sgemm_rate --widths D,H...,C [--rows B] [--reps N]\n"
	           "defaults: --rows 32 --reps 20\n");
}

struct options {
	int w[64], nw, rows, reps;
};

static const char *const option_names[] = {"--widths", "--rows", "--reps"};

static int on_value(int k, char *val, void *ctx)
{
	struct options *o = ctx;
	switch (k) {
	case 0: return cli_int_list("--widths", val, 1, 1 << 20, 2, 64, o->w, &o->nw);
	case 1: return cli_int("--rows", val, 1, 1 << 20, &o->rows);
	default: return cli_int("--reps", val, 1, 1000000, &o->reps);
	}
}

int main(int argc, char **argv)
{
	struct options o = {.rows = 32, .reps = 20};
	const struct cli_spec sp = {option_names, 3, NULL, 0, on_value, NULL};
	cli_prog = "sgemm_rate";
	cli_usage = usage;
	int prc = cli_parse(argc, argv, &sp, &o);
	if (!prc && !o.nw)
		prc = cli_bad_usage("--widths D,H...,C is required");
	if (prc)
		return prc == 1 ? 0 : prc;
	const int *w = o.w, nw = o.nw, B = o.rows, reps = o.reps;
	float *x[64], *W[64], *dy[64], *dx[64], *dW[64];
	double flop = 0;
	for (int l = 1; l < nw; l++) {
		int K_in = w[l - 1], K_out = w[l];
		x[l] = buf((size_t)B * K_in);
		W[l] = buf((size_t)K_out * K_in);
		dy[l] = buf((size_t)B * K_out);
		dx[l] = buf((size_t)B * K_in);
		dW[l] = buf((size_t)K_out * K_in);
		flop += 2.0 * B * K_in * K_out * (l == 1 ? 2 : 3);
	}
	double *t = malloc(sizeof(double) * (size_t)reps);
	for (int r = -1; r < reps; r++) {
		double t0 = now_ms();
		for (int l = 1; l < nw; l++) {
			int K_in = w[l - 1], K_out = w[l];
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, K_out, K_in, 1.0f, x[l], K_in,
			            W[l], K_in, 0.0f, dy[l], K_out);
		}
		for (int l = nw - 1; l >= 1; l--) {
			int K_in = w[l - 1], K_out = w[l];
			if (l > 1)
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, K_in, K_out, 1.0f,
				            dy[l], K_out, W[l], K_in, 0.0f, dx[l], K_in);
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K_out, K_in, B, 1.0f, dy[l], K_out,
			            x[l], K_in, 0.0f, dW[l], K_in);
		}
		if (r >= 0)
			t[r] = now_ms() - t0;
	}
	qsort(t, (size_t)reps, sizeof(double), cmp);
	double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
	printf("sgemm_gflops %.2f ms_per_step %.3f flop_per_step %.0f reps %d\n",
	       flop / (med * 1e6), med, flop, reps);
	return 0;
}
