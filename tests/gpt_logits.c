/*
 * gpt_logits.c — the logits of one batch of sf_gpt_graph, for the PyTorch twin
 * (tests/torch_gpt.sh, bench/torch_gpt.py): each rank writes its own rows.
 *
 *   gpt_logits [--layers N] [--heads N] [--embd C] [--context T] [--untied]
 *              [--batch B] [--seed S] [--index I] [--val-fraction X]
 *              [--init W.safetensors] [--export W.safetensors] --text FILE --out PREFIX
 *
 * Builds the GPT (defaults: 2 layers, 2 heads, embd 32, context 16, tied, batch 4,
 * seed 1, batch index 0, val fraction 0.1), imports --init when given (else keeps the
 * library's initialisation for --seed), exports the weights it then holds to --export
 * (nanoGPT's names), draws global batch I of the training split of the text
 * (sf_text_batch), runs sf_model_predict, and writes PREFIX.rank<r> (native byte
 * order):
 *   char magic[8] = "SFLOGIT1"; int32 first, rows, T, V; int32 ids[rows*T];
 *   float logits[rows*T*V]
 * first and rows in sequences (sf_model_local_rows). Exit status: 0 success, 1 a
 * library or I/O error, 2 a bad command line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardflow.h"
#include "examples/cli.h"

#define PROG "gpt_logits"

struct options {
	struct sf_gpt_config model;
	int batch, index;
	int64_t seed;
	float val_fraction;
	const char *text, *out, *init, *export_path;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--layers N] [--heads N] [--embd C] [--context T] [--untied]\n"
	           "       [--batch B] [--seed S] [--index I] [--val-fraction X]\n"
	           "       [--init W.safetensors] [--export W.safetensors] --text FILE "
	           "--out PREFIX\n"
	           "defaults: 2 layers, 2 heads, embd 32, context 16, tied, batch 4, seed 1,\n"
	           "index 0, val fraction 0.1; writes PREFIX.rank<r>\n");
}

enum opt_key {
	OPT_LAYERS,
	OPT_HEADS,
	OPT_EMBD,
	OPT_CONTEXT,
	OPT_BATCH,
	OPT_SEED,
	OPT_INDEX,
	OPT_VAL_FRACTION,
	OPT_INIT,
	OPT_EXPORT,
	OPT_TEXT,
	OPT_OUT,
	NOPTIONS
};

static const char *const option_names[NOPTIONS] = {
    [OPT_LAYERS] = "--layers", [OPT_HEADS] = "--heads",
    [OPT_EMBD] = "--embd",     [OPT_CONTEXT] = "--context",
    [OPT_BATCH] = "--batch",   [OPT_SEED] = "--seed",
    [OPT_INDEX] = "--index",   [OPT_VAL_FRACTION] = "--val-fraction",
    [OPT_INIT] = "--init",     [OPT_EXPORT] = "--export",
    [OPT_TEXT] = "--text",     [OPT_OUT] = "--out",
};

static int on_value(int key, char *val, void *ctx)
{
	struct options *o = ctx;
	const char *n = option_names[key];
	switch ((enum opt_key)key) {
	case OPT_LAYERS: return cli_int(n, val, 1, 64, &o->model.layers);
	case OPT_HEADS: return cli_int(n, val, 1, 64, &o->model.heads);
	case OPT_EMBD: return cli_int(n, val, 1, 4096, &o->model.embd);
	case OPT_CONTEXT: return cli_int(n, val, 1, 4096, &o->model.context);
	case OPT_BATCH: return cli_int(n, val, 1, 4096, &o->batch);
	case OPT_INDEX: return cli_int(n, val, 0, 1 << 30, &o->index);
	case OPT_SEED:
		if (cli_parse_i64(val, 0, INT64_MAX, &o->seed))
			return cli_bad_usage("--seed \"%s\" is invalid: expected an integer >= 0",
			                     val);
		return 0;
	case OPT_VAL_FRACTION:
		if (cli_parse_float(val, 0.0f, 0.5f, &o->val_fraction))
			return cli_bad_usage("--val-fraction \"%s\" is invalid: expected a number "
			                     "in [0, 0.5]",
			                     val);
		return 0;
	case OPT_INIT: o->init = val; return 0;
	case OPT_EXPORT: o->export_path = val; return 0;
	case OPT_TEXT: o->text = val; return 0;
	case OPT_OUT: o->out = val; return 0;
	case NOPTIONS: break;
	}
	return 0;
}

static int on_flag(int j, void *ctx)
{
	(void)j;
	((struct options *)ctx)->model.tie_weights = 0;
	return 0;
}

/* 0 ok, 1 --help printed, 2 bad usage */
static int parse(int argc, char **argv, struct options *o)
{
	*o = (struct options){.batch = 4, .seed = 1, .val_fraction = 0.1f};
	sf_gpt_config_init(&o->model);
	o->model.layers = 2, o->model.heads = 2, o->model.embd = 32, o->model.context = 16;
	static const char *const flags[] = {"--untied"};
	const struct cli_spec sp = {option_names, NOPTIONS, flags, 1, on_value, on_flag};
	int rc = cli_parse(argc, argv, &sp, o);
	if (rc)
		return rc;
	if (!o->text || !o->out)
		return cli_bad_usage("--text and --out are required");
	if (o->model.embd % o->model.heads)
		return cli_bad_usage("--embd %d must be a multiple of --heads %d", o->model.embd,
		                     o->model.heads);
	return 0;
}

static int write_rows(const char *prefix, int rank, int first, int rows, int T, int V,
                      const int32_t *x, const float *logits)
{
	char path[4096];
	if (snprintf(path, sizeof path, "%s.rank%d", prefix, rank) >= (int)sizeof path) {
		fprintf(stderr, PROG ": --out \"%s\" is too long\n", prefix);
		return -1;
	}
	FILE *f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	int32_t head[4] = {first, rows, T, V};
	size_t n = (size_t)rows * (size_t)T;
	int bad = fwrite("SFLOGIT1", 1, 8, f) != 8 || fwrite(head, sizeof head, 1, f) != 1 ||
	          (n && fwrite(x, sizeof *x, n, f) != n) ||
	          (n && fwrite(logits, sizeof *logits, n * (size_t)V, f) != n * (size_t)V);
	if (fclose(f) || bad) {
		fprintf(stderr, PROG ": cannot write %s\n", path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	cli_prog = PROG;
	cli_usage = usage;
	int prc = parse(argc, argv, &o);
	if (prc)
		return prc == 1 ? 0 : 2;

	int status = 1, rank = 0, size = 1, first = 0, rows = 0;
	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	struct sf_text text = {0};
	int32_t *x = NULL, *y = NULL;
	float *logits = NULL;
	CLI_CHECK_GOTO(sf_init(&argc, &argv, &ctx), done);
	CLI_CHECK_GOTO(sf_context_world(ctx, &rank, &size), done);
	CLI_CHECK_GOTO(sf_text_load(o.text, o.val_fraction, &text), done);
	CLI_CHECK_GOTO(sf_gpt_graph(&o.model, &g), done);
	struct sf_model_options mo;
	CLI_CHECK_GOTO(sf_model_options_init(&mo), done);
	mo.batch = o.batch;
	mo.seed = (uint64_t)o.seed;
	CLI_CHECK_GOTO(sf_model_create(ctx, g, &mo, &m), done);
	if (o.init)
		CLI_CHECK_GOTO(sf_model_import_safetensors(m, o.init), done);
	if (o.export_path)
		CLI_CHECK_GOTO(sf_model_export_safetensors(m, o.export_path), done);
	CLI_CHECK_GOTO(sf_model_local_rows(m, &first, &rows), done);
	int T = o.model.context, V = o.model.vocab;
	size_t n = (size_t)rows * (size_t)T;
	x = malloc((n + 1) * sizeof *x);
	y = malloc((n + 1) * sizeof *y);
	logits = malloc((n * (size_t)V + 1) * sizeof *logits);
	if (!x || !y || !logits) {
		fprintf(stderr, PROG ": out of memory\n");
		goto done;
	}
	CLI_CHECK_GOTO(sf_text_batch(&text, SF_TEXT_TRAIN, (uint64_t)o.seed, o.index, o.batch,
	                             first, rows, T, x, y),
	               done);
	const int32_t *ids[1] = {x};
	struct sf_batch batch = {.nint_inputs = 1, .int_inputs = ids};
	CLI_CHECK_GOTO(sf_model_predict(m, &batch, logits), done);
	if (write_rows(o.out, rank, first, rows, T, V, x, logits) < 0)
		goto done;
	status = 0;
done:
	free(x);
	free(y);
	free(logits);
	sf_text_free(&text);
	if (sf_model_destroy(m) < 0)
		status = 1;
	sf_graph_destroy(g);
	if (ctx && sf_finalize(ctx) < 0)
		status = 1;
	return status;
}
