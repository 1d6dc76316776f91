/*
 * shardflow-ckpt — a checkpoint looked at, verified and exported without its model:
 *
 *   shardflow-ckpt info DIR                       steps, layout, counters, tensors
 *   shardflow-ckpt verify DIR                     every rank file's size and CRC-32
 *   shardflow-ckpt export DIR --out FILE.safetensors
 *
 * DIR is a checkpoint directory (--checkpoint-dir) or one of its step directories.
 * Everything is read through io/'s own readers (io/libsfckpt.la: the manifest parser
 * of sf_checkpoint_load without the model's expectations, the same rank-file checks,
 * the same safetensors writer as sf_model_export_safetensors), so the tool and a
 * resume agree on what a good checkpoint is, and the export is bitwise the trainer's
 * --export of that step. No StarPU, no MPI, no model: the manifest names the tensors
 * (checkpoints written since 2026-11-28). Exit status: 0 success, 1 a bad or missing
 * checkpoint (one line naming the file and what is wrong), 2 a bad command line.
 * Errors are raised quietly (_sf_err_quiet) and printed once by main.
 * The format: io/checkpoint.h and docs/checkpoints.md.
 */
#include "common/error.h"
#include "io/checkpoint.h"
#include "io/manifest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "shardflow-ckpt"

static const char *const usage_text =
    "usage: shardflow-ckpt COMMAND DIR [options]\n"
    "\n"
    "DIR is a checkpoint directory (examples/gpt --checkpoint-dir) or one of its\n"
    "step directories (DIR/step-<9 digits>). Given a checkpoint directory, info and\n"
    "export take the step a resume would load (latest, or the newest complete step).\n"
    "\n"
    "commands:\n"
    "  info DIR            the steps present and latest; for the step: the layout it\n"
    "                      was written at (ranks, dp x tp, sharding), the step\n"
    "                      counters, the optimizer state kept, sizes, units and tensors\n"
    "  verify DIR          checks every rank file's size and CRC-32 against its\n"
    "                      manifest, for every complete step of a checkpoint directory\n"
    "                      (or the one step given); exit 1 naming the first bad file\n"
    "  export DIR --out FILE\n"
    "                      writes the step's weights as safetensors, bitwise what\n"
    "                      examples/gpt --export writes at that step\n"
    "  --help              print this help and exit\n"
    "\n"
    "exit status: 0 success, 1 a bad or missing checkpoint, 2 a bad command line\n";

static void usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see " PROG " --help)\n", stderr);
	exit(2);
}

static int failed(void)
{
	fprintf(stderr, PROG ": %s\n", sf_last_error());
	return 1;
}

static const char *base_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(base_of(*(char *const *)a), base_of(*(char *const *)b));
}

/* The step `dir` means (itself, latest, or the newest complete step) into stepdir;
 * none is an error naming dir. */
static int resolve(const char *dir, char *stepdir, size_t size)
{
	SF_CHECK(_sf_ckpt_resolve(dir, stepdir, size));
	if (!*stepdir)
		return SF_ERR(SF_ERR_NOT_FOUND,
		              "no checkpoint in %s: no such directory, or neither manifest.json "
		              "(a step directory), latest nor a complete step-* directory in it",
		              dir);
	return SF_OK;
}

/* The "steps" and "latest" lines of a checkpoint directory. */
static int print_steps(const char *dir)
{
	char **steps = NULL, path[SF_PATH_MAX], *latest = NULL;
	int n = 0;
	size_t len = 0;
	SF_CHECK(_sf_ckpt_candidates(dir, &steps, &n));
	qsort(steps, (size_t)n, sizeof *steps, by_name);
	printf("steps:");
	for (int i = 0; i < n; i++)
		printf(" %s", base_of(steps[i]));
	printf("\n");
	_sf_ckpt_candidates_free(steps, n);
	SF_CHECK(_sf_path_join(path, sizeof path, dir, "latest"));
	if (_sf_path_exists(dir, "latest") && _sf_read_small_file(path, 256, &latest, &len) >= 0) {
		latest[strcspn(latest, "\r\n")] = '\0';
		printf("latest: %s\n", latest);
	} else {
		printf("latest: (none)\n");
	}
	free(latest);
	return SF_OK;
}

static void print_step(const char *stepdir, const struct _sf_manifest *mf)
{
	uint64_t bytes = 0;
	for (int w = 0; w < mf->world_size; w++)
		bytes += mf->sizes[w];
	printf("step: %s\n", stepdir);
	if (mf->ranks > 0 && mf->pp > 1) /* a pipeline's: each stage's units in its files */
		printf("layout: %d ranks, pp %d x dp %d, sharding %s, %d rank files (%d a "
		       "stage)\n",
		       mf->ranks, mf->pp, mf->ranks / mf->pp, mf->sharding, mf->world_size,
		       _sf_ckpt_stage_files(mf));
	else if (mf->ranks > 0)
		printf("layout: %d ranks, dp %d x tp %d, sharding %s, %d rank files\n", mf->ranks,
		       mf->ranks / mf->tp, mf->tp, mf->sharding, mf->world_size);
	else /* before 2026-11-28 the world was not recorded */
		printf("layout: %d rank files, tp %d, sharding %s\n", mf->world_size, mf->tp,
		       mf->sharding);
	printf("counters: step %lld, epoch %lld, batch %lld, data_seed %llu, optimizer "
	       "updates %lld\n",
	       (long long)mf->info.step, (long long)mf->info.epoch, (long long)mf->info.batch,
	       (unsigned long long)mf->info.data_seed, (long long)mf->model_steps);
	printf("optimizer: %s, vectors:", mf->optimizer);
	for (int v = 0; v < mf->nvectors; v++)
		printf(" %s", _sf_ckpt_vec_names[v]);
	printf("\n");
	printf("model: structure %s, %d units, %llu parameters, dtype %s\n", mf->structure_hash,
	       mf->nunits, (unsigned long long)mf->nparams, mf->dtype);
	printf("size: %llu bytes in %d rank files (%.1f MiB)\n", (unsigned long long)bytes,
	       mf->world_size, (double)bytes / (1024.0 * 1024.0));
	for (int u = 0; u < mf->nunits; u++)
		printf(mf->pp > 1 ? "unit: %s %llu stage %d\n" : "unit: %s %llu\n",
		       mf->units[u].name, (unsigned long long)mf->units[u].P, mf->units[u].stage);
	if (!mf->tensors)
		printf("tensors: not recorded (a checkpoint written before 2026-11-28)\n");
	for (int i = 0; i < mf->ntensors; i++) {
		const struct _sf_st_tensor *t = &mf->tensors[i];
		if (t->ndim == 2)
			printf("tensor: %s [%lld, %lld] f32\n", t->name, (long long)t->shape[0],
			       (long long)t->shape[1]);
		else
			printf("tensor: %s [%lld] f32\n", t->name, (long long)t->shape[0]);
	}
}

static int cmd_info(const char *dir)
{
	int rc = SF_OK;
	char stepdir[SF_PATH_MAX];
	struct _sf_manifest mf = {0};
	SF_CHECK(resolve(dir, stepdir, sizeof stepdir));
	if (strcmp(stepdir, dir)) { /* a checkpoint directory */
		printf("directory: %s\n", dir);
		SF_CHECK(print_steps(dir));
	}
	SF_CHECK_GOTO(_sf_ckpt_open(stepdir, &mf), out);
	print_step(stepdir, &mf);
out:
	_sf_manifest_free(&mf);
	return rc;
}

/* One step's files verified: a line "ok" or the fault (printed, not raised). */
static bool verify_step(const char *stepdir)
{
	struct _sf_manifest mf = {0};
	int rc = _sf_ckpt_open(stepdir, &mf);
	if (rc >= 0)
		rc = _sf_ckpt_verify(stepdir, &mf);
	if (rc >= 0)
		printf("ok: %s (%d rank files)\n", stepdir, mf.world_size);
	else
		fprintf(stderr, PROG ": %s: bad: %s\n", base_of(stepdir), sf_last_error());
	_sf_manifest_free(&mf);
	return rc >= 0;
}

/* 0 when every step verifies, 1 when one does not, a status when there is none. */
static int cmd_verify(const char *dir, int *bad)
{
	char stepdir[SF_PATH_MAX], **steps = NULL;
	int n = 0;
	SF_CHECK(resolve(dir, stepdir, sizeof stepdir));
	*bad = 0;
	if (!strcmp(stepdir, dir)) { /* one step directory */
		*bad = !verify_step(stepdir);
		return SF_OK;
	}
	SF_CHECK(_sf_ckpt_candidates(dir, &steps, &n));
	qsort(steps, (size_t)n, sizeof *steps, by_name);
	for (int i = 0; i < n; i++)
		*bad += !verify_step(steps[i]);
	_sf_ckpt_candidates_free(steps, n);
	return SF_OK;
}

static int cmd_export(const char *dir, const char *out)
{
	int rc = SF_OK;
	char stepdir[SF_PATH_MAX];
	struct _sf_manifest mf = {0};
	SF_CHECK(resolve(dir, stepdir, sizeof stepdir));
	SF_CHECK_GOTO(_sf_ckpt_open(stepdir, &mf), out);
	SF_CHECK_GOTO(_sf_ckpt_export(stepdir, &mf, out), out);
	printf("exported %s (%llu parameters) to %s\n", stepdir, (unsigned long long)mf.nparams,
	       out);
out:
	_sf_manifest_free(&mf);
	return rc;
}

int main(int argc, char **argv)
{
	const char *cmd = NULL, *dir = NULL, *out = NULL;
	_sf_err_quiet = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(a, "--out")) {
			if (++i == argc || !*argv[i])
				usage_error("--out needs a file name");
			out = argv[i];
		} else if (a[0] == '-' && a[1]) {
			usage_error("unknown option \"%s\"", a);
		} else if (!cmd) {
			cmd = a;
		} else if (!dir) {
			dir = a;
		} else {
			usage_error("one DIR expected, got \"%s\" and \"%s\"", dir, a);
		}
	}
	if (!cmd)
		usage_error("no command given: info, verify or export");
	bool info = !strcmp(cmd, "info"), verify = !strcmp(cmd, "verify"),
	     export = !strcmp(cmd, "export");
	if (!info && !verify && !export)
		usage_error("unknown command \"%s\": expected info, verify or export", cmd);
	if (!dir || !*dir)
		usage_error("%s needs a checkpoint directory", cmd);
	if (export && !out)
		usage_error("export needs --out FILE.safetensors");
	if (!export && out)
		usage_error("--out is an option of export only");
	if (info)
		return cmd_info(dir) < 0 ? failed() : 0;
	if (export)
		return cmd_export(dir, out) < 0 ? failed() : 0;
	int bad = 0;
	if (cmd_verify(dir, &bad) < 0)
		return failed();
	return bad ? 1 : 0;
}
