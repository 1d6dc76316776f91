/*
 * ckpt_driver.c — train_dump with checkpoints and safetensors, for tests/checkpoint.sh.
 *
 *   ckpt_driver [--model mlp|uneven|blocks|gpt] [--steps N] [--batch B]
 *               [--optimizer sgd|adamw|lion]
 *               [--lr X] [--seed S] [--out FILE] [--dump-losses-from K] [--out-params FILE]
 *               [--save DIR --save-every K] [--crash shards|manifest|switch|latest]
 *               [--latest DIR] [--resume DIR [--resume-may-fail]] [--init FILE]
 *               [--export FILE] [--lock DIR] [--lock-read DIR]
 *               [--pause FILE [--pause-after K]]
 *
 * Step k (1-based) trains on synthetic global batch k (examples/synthetic.h), so a run
 * resumed from a checkpoint of step s continues with batch s + 1 exactly as the
 * uninterrupted run did. The models are train_dump's mlp and uneven (see
 * tests/train_dump.c), and the dump is train_dump's format (tests/dump_compare.c
 * compares), holding the losses of the steps this process ran after step K
 * (--dump-losses-from, default 0) and the final parameters. --out-params FILE writes
 * a dump of the parameters alone (no losses), to compare models trained differently.
 *
 *   --save DIR --save-every K  sf_checkpoint_save after every K-th step (info.step = k)
 *   --crash MODE               the save after the last step dies of SIGKILL: "shards"
 *                              right after each rank renamed its rank file, "manifest"
 *                              when rank 0 is about to rename manifest.json.tmp — a
 *                              writer killed between the shards and the manifest —
 *                              "switch" when rank 0 is about to rename the complete
 *                              staging directory step-N.tmp to step-N (after moving an
 *                              old step-N aside), "latest" when it is about to rename
 *                              latest.tmp to latest. The library has no hook for this:
 *                              the driver interposes rename(3) (its definition wins
 *                              over libc's).
 *   --latest DIR               sf_checkpoint_latest before anything else; rank 0
 *                              prints "latest <found> <step directory>"
 *   --resume DIR               sf_checkpoint_load before training, then steps
 *                              info.step + 1 .. N
 *   --resume-may-fail          a refused load is reported ("resume_refused <status>:
 *                              <message>" on rank 0's stdout) and training starts from
 *                              step 1 on the untouched model
 *   --init FILE                sf_model_import_safetensors before training
 *   --export FILE              sf_model_export_safetensors after training
 *   --prune DIR --keep K       sf_checkpoint_prune(DIR, K) after training: rank 0 prints
 *                              "prune_removed <n>", or "prune_refused <status>: <msg>"
 *                              (exit 0 for SF_ERR_INVALID, so a bad keep is testable)
 *   --lock DIR, --lock-read DIR
 *                              sf_checkpoint_lock (SF_CHECKPOINT_WRITE, _READ) before
 *                              anything else, in that order (a refusal exits 1)
 *   --pause FILE               after step K (--pause-after, default 0: before the
 *                              first step, after --latest and --resume), rank 0 prints
 *                              "paused" and every rank waits until FILE exists (at most
 *                              120 s): the model, and the locks it holds, stay alive
 *                              while another job runs
 *
 * Exit status: 0 success, 1 a library or I/O error, 2 a bad command line.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "examples/synthetic.h"
#include "shardflow.h"
#include "tests/interpose.h"
#include "tests/test_models.h"

#define PROG "ckpt_driver"

enum crash_mode { CRASH_NONE, CRASH_SHARDS, CRASH_MANIFEST, CRASH_SWITCH, CRASH_LATEST };

struct options {
	struct train_options t;
	int save_every, dump_from, keep;
	const char *out, *out_params, *save, *resume, *init, *export_path, *latest, *prune;
	const char *lock, *lock_read, *pause;
	int resume_may_fail, pause_after;
	enum crash_mode crash;
};

/* ---- the simulated crash ------------------------------------------------------ */

static enum crash_mode crash_armed = CRASH_NONE;

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && !strcmp(s + n - k, tail);
}

/* step-<digits>, no suffix: a step directory's own name */
static int is_step_dir(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "step-", 5) && !strchr(base, '.');
}

SF_INTERPOSE int rename(const char *from, const char *to)
{
	if (crash_armed == CRASH_MANIFEST && ends_with(to, "/manifest.json"))
		raise(SIGKILL);
	if (crash_armed == CRASH_SWITCH && ends_with(from, ".tmp") && is_step_dir(to))
		raise(SIGKILL);
	if (crash_armed == CRASH_LATEST && ends_with(to, "/latest"))
		raise(SIGKILL);
	int r = sf_real_rename(from, to);
	if (r == 0 && crash_armed == CRASH_SHARDS && strstr(to, "/rank-") && ends_with(to, ".bin"))
		raise(SIGKILL);
	return r;
}

/* ---- command line --------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: " PROG " [--model mlp|uneven|blocks|gpt] [--steps N] [--batch B]\n"
	        "       [--optimizer sgd|adamw|lion] [--lr X] [--seed S] [--out FILE]\n"
	        "       [--dump-losses-from K] [--out-params FILE] [--save DIR --save-every K]\n"
	        "       [--crash shards|manifest|switch|latest] [--latest DIR]\n"
	        "       [--resume DIR [--resume-may-fail]] [--init FILE] [--export FILE]\n"
	        "       [--lock DIR] [--lock-read DIR] [--pause FILE [--pause-after K]]\n"
	        "       [--context T] (nanogpt, llama)\n"
	        "defaults: mlp, 6 steps, batch 24, sgd, lr 0.01 (sgd) / 0.001 (adamw) /\n"
	        "0.0001 (lion, beta2 0.99), seed 1\n");
}

static int bad(const char *opt, const char *val)
{
	return cli_bad_usage("%s \"%s\" is invalid", opt, val);
}

static const char *const option_names[] = {
    "--model",  "--steps",      "--batch",      "--optimizer",
    "--lr",     "--seed",       "--save-every", "--dump-losses-from",
    "--crash",  "--out",        "--out-params", "--save",
    "--resume", "--latest",     "--init",       "--export",
    "--prune",  "--keep",       "--lock",       "--lock-read",
    "--pause",  "--pause-after", "--context"};

/* One option's value: 0 or 2 (cli_parse's contract). */
static int on_value(int k, char *value, void *ctx)
{
	struct options *o = ctx;
	const char *opt = option_names[k], *val = value;
	int taken = train_option(&o->t, opt, val, 0);
	if (taken < 0)
		return bad(opt, val);
	if (taken > 0)
		return 0;
	if (!strcmp(opt, "--save-every")) {
		if (parse_int(val, 1, INT_MAX, &o->save_every))
			return bad(opt, val);
	} else if (!strcmp(opt, "--dump-losses-from")) {
		if (parse_int(val, 0, INT_MAX, &o->dump_from))
			return bad(opt, val);
	} else if (!strcmp(opt, "--crash")) {
		if (!strcmp(val, "shards"))
			o->crash = CRASH_SHARDS;
		else if (!strcmp(val, "manifest"))
			o->crash = CRASH_MANIFEST;
		else if (!strcmp(val, "switch"))
			o->crash = CRASH_SWITCH;
		else if (!strcmp(val, "latest"))
			o->crash = CRASH_LATEST;
		else
			return bad(opt, val);
	} else if (!strcmp(opt, "--out")) {
		o->out = val;
	} else if (!strcmp(opt, "--out-params")) {
		o->out_params = val;
	} else if (!strcmp(opt, "--save")) {
		o->save = val;
	} else if (!strcmp(opt, "--resume")) {
		o->resume = val;
	} else if (!strcmp(opt, "--latest")) {
		o->latest = val;
	} else if (!strcmp(opt, "--init")) {
		o->init = val;
	} else if (!strcmp(opt, "--export")) {
		o->export_path = val;
	} else if (!strcmp(opt, "--prune")) {
		o->prune = val;
	} else if (!strcmp(opt, "--keep")) {
		if (parse_int(val, 0, INT_MAX, &o->keep))
			return bad(opt, val);
	} else if (!strcmp(opt, "--lock")) {
		o->lock = val;
	} else if (!strcmp(opt, "--lock-read")) {
		o->lock_read = val;
	} else if (!strcmp(opt, "--pause")) {
		o->pause = val;
	} else if (!strcmp(opt, "--pause-after")) {
		if (parse_int(val, 0, INT_MAX, &o->pause_after))
			return bad(opt, val);
	}
	return 0;
}

static const char *const flag_names[] = {"--resume-may-fail"};

static int on_flag(int j, void *ctx)
{
	(void)j;
	((struct options *)ctx)->resume_may_fail = 1;
	return 0;
}

/* Returns -1 to go on, otherwise the exit status. */
static int parse_options(int argc, char **argv, struct options *o)
{
	*o = (struct options){0};
	train_options_init(&o->t);
	const struct cli_spec sp = {option_names, (int)(sizeof option_names / sizeof *option_names),
	                            flag_names,   1,
	                            on_value,     on_flag};
	cli_prog = PROG;
	cli_usage = usage;
	int rc = cli_parse(argc, argv, &sp, o);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (!!o->save != !!o->save_every)
		return cli_bad_usage("--save and --save-every go together (got only %s)",
		                     o->save ? "--save" : "--save-every");
	if (o->crash && !o->save)
		return cli_bad_usage("--crash needs --save");
	if (o->pause_after && !o->pause)
		return cli_bad_usage("--pause-after needs --pause");
	train_options_finish(&o->t);
	return -1;
}

/* --pause: rank 0 says so, every rank waits for the file (polling: no MPI call, so a
 * rank ahead of the others only waits in its next collective). */
static int pause_until(const char *file, int rank)
{
	if (rank == 0) {
		printf("paused\n");
		fflush(stdout);
	}
	for (int i = 0; i < 1200; i++) {
		if (access(file, F_OK) == 0)
			return 0;
		usleep(100000);
	}
	fprintf(stderr, PROG ": --pause: %s did not appear within 120 s\n", file);
	return -1;
}

int main(int argc, char **argv)
{
	struct options o;
	int status = parse_options(argc, argv, &o);
	if (status >= 0)
		return status;

	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	float *x = NULL, *params = NULL;
	int32_t *labels = NULL, *ids = NULL;
	double *losses = NULL;
	int rank = 0, size = 1, D = 0, C = 0, T = 1;
	status = 1;

	CLI_CHECK_GOTO(sf_init(&argc, &argv, &ctx), fail);
	CLI_CHECK_GOTO(sf_context_world(ctx, &rank, &size), fail);
	if (build_model(o.t.model, &g, &D, &C, &T))
		goto fail;
	struct sf_model_options mo;
	CLI_CHECK_GOTO(sf_model_options_init(&mo), fail);
	mo.batch = o.t.batch;
	mo.seed = o.t.seed;
	mo.optimizer = o.t.optimizer;
	if (mo.optimizer == SF_OPT_LION)
		mo.beta2 = 0.99f; /* the paper's default, as train_dump's */
	mo.lr = o.t.lr;
	CLI_CHECK_GOTO(sf_model_create(ctx, g, &mo, &m), fail);

	int first, rows;
	CLI_CHECK_GOTO(sf_model_local_rows(m, &first, &rows), fail);
	first *= T; /* samples of T rows: rows from here on */
	rows *= T;
	x = malloc(sizeof(float) * ((size_t)rows * (size_t)D + 1));
	labels = malloc(sizeof(int32_t) * ((size_t)rows + 1));
	ids = malloc(sizeof(int32_t) * ((size_t)rows + 1));
	losses = calloc((size_t)o.t.steps + 1, sizeof(double));
	if (!x || !labels || !ids || !losses) {
		fprintf(stderr, PROG ": out of memory\n");
		goto fail;
	}

	if (o.lock)
		CLI_CHECK_GOTO(sf_checkpoint_lock(m, o.lock, SF_CHECKPOINT_WRITE), fail);
	if (o.lock_read)
		CLI_CHECK_GOTO(sf_checkpoint_lock(m, o.lock_read, SF_CHECKPOINT_READ), fail);
	if (o.latest) {
		char path[4096];
		int found = -1;
		CLI_CHECK_GOTO(sf_checkpoint_latest(m, o.latest, &found, path, sizeof path), fail);
		if (rank == 0)
			printf("latest %d %s\n", found, path);
	}
	if (o.init)
		CLI_CHECK_GOTO(sf_model_import_safetensors(m, o.init), fail);
	int start = 1;
	uint64_t data_seed = o.t.seed;
	if (o.resume) {
		struct sf_checkpoint_info info;
		int rc = sf_checkpoint_load(m, o.resume, &info);
		if (rc == SF_OK) {
			start = (int)info.step + 1;
			data_seed = info.data_seed;
			if (rank == 0)
				printf("resumed step %lld batch %lld\n", (long long)info.step,
				       (long long)info.batch);
		} else if (o.resume_may_fail) {
			if (rank == 0)
				printf("resume_refused %d: %s\n", rc, sf_last_error());
		} else {
			if (sf_last_error_peer() < 0) /* else the failing rank says it */
				cli_call_failed(PROG, "sf_checkpoint_load", sf_strerror(rc));
			goto fail;
		}
	}

	if (o.pause && o.pause_after < start && pause_until(o.pause, rank) < 0)
		goto fail;
	const float *xin;
	const int32_t *idin;
	struct sf_batch batch;
	int nlosses = 0;
	for (int k = start; k <= o.t.steps; k++) {
		int64_t ticket;
		double loss;
		if (fill_batch(o.t.model, data_seed, k, first, rows, D, C, x, ids, labels, &batch, &xin,
		               &idin)) {
			fprintf(stderr, PROG ": cannot generate batch %d\n", k);
			goto fail;
		}
		CLI_CHECK_GOTO(sf_model_step(m, &batch, &ticket), fail);
		CLI_CHECK_GOTO(sf_model_loss(m, ticket, &loss), fail);
		if (k > o.dump_from)
			losses[nlosses++] = loss;
		if (o.save && k % o.save_every == 0) {
			struct sf_checkpoint_info info = {
			    .step = k, .epoch = 0, .batch = k + 1, .data_seed = data_seed};
			if (k == o.t.steps)
				crash_armed = o.crash;
			CLI_CHECK_GOTO(sf_checkpoint_save(m, o.save, &info), fail);
			crash_armed = CRASH_NONE;
		}
		if (o.pause && k == o.pause_after && pause_until(o.pause, rank) < 0)
			goto fail;
	}
	if (o.export_path)
		CLI_CHECK_GOTO(sf_model_export_safetensors(m, o.export_path), fail);
	if (o.prune) {
		int removed = -1, prc = sf_checkpoint_prune(m, o.prune, o.keep, &removed);
		if (rank == 0 && prc == SF_OK)
			printf("prune_removed %d\n", removed);
		else if (rank == 0)
			printf("prune_refused %d: %s\n", prc, sf_last_error());
		if (prc != SF_OK && prc != SF_ERR_INVALID)
			goto fail;
	}

	size_t n;
	CLI_CHECK_GOTO(sf_model_param_count(m, &n), fail);
	params = malloc(sizeof(float) * (n + 1));
	if (!params) {
		fprintf(stderr, PROG ": out of memory for %zu parameters\n", n);
		goto fail;
	}
	CLI_CHECK_GOTO(sf_model_params_get(m, params, n), fail);
	status = 0;
	if (rank == 0 && o.out && write_dump(PROG, o.out, losses, nlosses, params, (int64_t)n))
		status = 1;
	if (rank == 0 && o.out_params &&
	    write_dump(PROG, o.out_params, losses, 0, params, (int64_t)n))
		status = 1;
	if (rank == 0 && nlosses > 0)
		printf("final_loss %.9g\n", losses[nlosses - 1]);
	fflush(stdout);

fail:
	free(x);
	free(labels);
	free(ids);
	free(losses);
	free(params);
	if (sf_model_destroy(m) != SF_OK)
		status = 1;
	sf_graph_destroy(g);
	if (ctx && sf_finalize(ctx) != SF_OK)
		status = 1;
	return status;
}
