/*
 * stall_driver.c — a 2-rank job whose rank 1 stops (SIGSTOP: alive and silent, as a
 * hung or cut-off peer) at a chosen point, for tests/watchdog.sh: the other ranks must
 * end the job within SHARDFLOW_COMM_TIMEOUT, naming what they waited in, with their
 * flight records written.
 *
 *   stall_driver --stop PHASE [--steps N] [--save DIR] [--mark FILE]
 *
 * PHASE (where rank 1 stops; the others go on into the next collective):
 *   init          before sf_init (the others wait in MPI's start-up)
 *   step          before its 3rd sf_model_step (the others in the batch agreement)
 *   save          before its sf_checkpoint_save after step 2 (the others inside the
 *                 save's first agreement)
 *   save-shards   inside that save, as it renames its rank file into place (the others
 *                 in the save's later coordination); rename(3) is interposed, as
 *                 tests/ckpt_driver.c does: the library has no hook
 *   finalize      before sf_finalize (the others in its last barrier)
 *   mid-step      inside the first matrix product of step N/2 + 1, on a StarPU worker
 *                 (the others' comm workers in a step collective); cblas_sgemm is
 *                 interposed, as rename(3) is: the library has no hook
 *   none          nobody stops (the job must succeed)
 * The MLP of tests/test_models.h trains N steps (default 5) of synthetic batches;
 * with --save DIR each step is checkpointed. The stopping rank writes its pid to
 * --mark FILE just before it stops, so that the test knows when the others wait.
 * Exit status: 0 success, 1 a library error, 2 a bad command line.
 */
#include "examples/synthetic.h"
#include "shardflow.h"
#include "tests/interpose.h"
#include "tests/test_models.h"

#include <cblas.h>
#undef I /* OpenBLAS pulls in <complex.h> */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "stall_driver"

static const char *const phases[] = {"none",        "init",     "step",    "save",
                                     "save-shards", "finalize", "mid-step"};
enum phase { P_NONE, P_INIT, P_STEP, P_SAVE, P_SAVE_SHARDS, P_FINALIZE, P_MID_STEP, P_COUNT };

static const char *mark;
static int me = -1; /* this rank (mpirun's environment) */
static enum phase stop_at = P_NONE;
static int armed;              /* save-shards: the save of step 2 runs */
static volatile int armed_mid; /* mid-step: the step rank 1 stops in runs */

/* Rank 1 stops here when the phase is `p` */
static void stop_point(enum phase p)
{
	if (me != 1 || stop_at != p)
		return;
	if (mark) {
		FILE *f = fopen(mark, "w");
		if (f) {
			fprintf(f, "%ld\n", (long)getpid());
			fclose(f);
		}
	}
	raise(SIGSTOP);
}

SF_INTERPOSE int rename(const char *from, const char *to)
{
	int r = sf_real_rename(from, to);
	if (armed && strstr(to, "/rank-"))
		stop_point(P_SAVE_SHARDS);
	return r;
}

SF_INTERPOSE void
cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE ta,
            OPENBLAS_CONST enum CBLAS_TRANSPOSE tb, OPENBLAS_CONST blasint M,
            OPENBLAS_CONST blasint N, OPENBLAS_CONST blasint K, OPENBLAS_CONST float alpha,
            OPENBLAS_CONST float *A, OPENBLAS_CONST blasint lda, OPENBLAS_CONST float *B,
            OPENBLAS_CONST blasint ldb, OPENBLAS_CONST float beta, float *C,
            OPENBLAS_CONST blasint ldc)
{
	static void (*real)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
	                    blasint, blasint, float, const float *, blasint, const float *, blasint,
	                    float, float *, blasint);
	SF_NEXT(real, "cblas_sgemm");
	if (armed_mid)
		stop_point(P_MID_STEP);
	if (real)
		real(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " --stop none|init|step|save|save-shards|finalize|mid-step "
	           "[--steps N] [--save DIR] [--mark FILE]\n");
}

struct options {
	int steps;
	const char *save;
};

static const char *const option_names[] = {"--stop", "--steps", "--save", "--mark"};

static int on_value(int k, char *val, void *ctx)
{
	struct options *o = ctx;
	switch (k) {
	case 0:
		for (int p = 0; p < P_COUNT; p++)
			if (!strcmp(val, phases[p])) {
				stop_at = (enum phase)p;
				return 0;
			}
		return cli_bad_usage("--stop \"%s\" is invalid: accepted values are none, init, "
		                     "step, save, save-shards, finalize, mid-step",
		                     val);
	case 1: return cli_int("--steps", val, 3, 1000, &o->steps);
	case 2: o->save = val; return 0;
	default: mark = val; return 0;
	}
}

int main(int argc, char **argv)
{
	struct options opt = {.steps = 5};
	const struct cli_spec sp = {option_names, 4, NULL, 0, on_value, NULL};
	cli_prog = PROG;
	cli_usage = usage;
	int prc = cli_parse(argc, argv, &sp, &opt);
	if (prc)
		return prc == 1 ? 0 : prc;
	int steps = opt.steps;
	const char *save = opt.save;
	if ((stop_at == P_SAVE || stop_at == P_SAVE_SHARDS) && !save)
		return cli_bad_usage("--stop %s needs --save DIR", phases[stop_at]);
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	me = r ? atoi(r) : 0;

	stop_point(P_INIT);
	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	int rank = 0, size = 1, D, C, T, first, rows;
	CLI_CHECK_GOTO(sf_init(&argc, &argv, &ctx), fail);
	CLI_CHECK_GOTO(sf_context_world(ctx, &rank, &size), fail);
	if (build_model(MODEL_MLP, &g, &D, &C, &T))
		return 1;
	struct sf_model_options o;
	CLI_CHECK_GOTO(sf_model_options_init(&o), fail);
	o.batch = 12;
	CLI_CHECK_GOTO(sf_model_create(ctx, g, &o, &m), fail);
	CLI_CHECK_GOTO(sf_model_local_rows(m, &first, &rows), fail);
	float *x = malloc(sizeof(float) * (size_t)(rows * D + 1));
	int32_t *y = malloc(sizeof(int32_t) * (size_t)(rows + 1));
	if (!x || !y)
		return 1;
	for (int k = 1; k <= steps; k++) {
		if (k == 3)
			stop_point(P_STEP);
		if (sf_synth_rows(1, k, first, rows, D, C, x, y))
			return 1;
		struct sf_batch b = {
		    .ninputs = 1, .inputs = (const float *const[]){x}, .labels = y};
		int64_t t;
		double loss;
		armed_mid = k == steps / 2 + 1;
		CLI_CHECK_GOTO(sf_model_step(m, &b, &t), fail);
		CLI_CHECK_GOTO(sf_model_loss(m, t, &loss), fail);
		armed_mid = 0;
		if (save) {
			struct sf_checkpoint_info info = {
			    .step = k, .batch = k + 1, .data_seed = 1};
			if (k == 2)
				stop_point(P_SAVE);
			armed = k == 2;
			CLI_CHECK_GOTO(sf_checkpoint_save(m, save, &info), fail);
			armed = 0;
		}
		if (rank == 0)
			printf("step %d loss %.6f\n", k, loss);
	}
	free(x);
	free(y);
	CLI_CHECK_GOTO(sf_model_destroy(m), fail);
	CLI_CHECK_GOTO(sf_graph_destroy(g), fail);
	stop_point(P_FINALIZE);
	CLI_CHECK_GOTO(sf_finalize(ctx), fail);
	return 0;
fail:
	return 1;
}
