/*
 * train_dump.c — train a small model and dump its losses and parameters, so that the
 * shell tests can compare runs: N ranks against 1 rank, one prefetch depth against
 * another, one sharding mode against another (tests/dump_compare.c compares).
 *
 *   train_dump --model mlp|residual|uneven|deep|wide|blocks|gpt|nanogpt|nanogpt-untied|swiglu|
 *                      llama
 *              --steps N --batch B --optimizer sgd|adamw|lion --lr X --seed S --inflight K
 *              [--init W.safetensors] [--export-init W0.safetensors]
 *              [--export W.safetensors] [--export-steps PREFIX] --out FILE
 *
 * Models (D input width, C classes):
 *   mlp      32 -> linear 64 -> gelu -> linear 64 -> gelu -> linear 10      (3 units)
 *   residual 24 -> linear 32 (h) -> gelu -> linear 32 -> add(h, .) -> relu
 *               -> linear 10: a DAG, h has two consumers                    (3 units)
 *   uneven   12 -> linear 13 -> gelu -> linear 25 -> gelu -> linear 5      (3 units)
 *   deep     16 -> 6 x (linear 24 -> gelu) -> linear 10                    (7 units)
 *
 * Why uneven is 12-13-25-5. A linear unit holds P = O (I + 1) parameters (W and b).
 * A hidden width h is the O of one unit and the I of the next, and h and h + 1 are
 * never both odd, so two chained units cannot both have odd P: "no unit divisible by
 * 2, 3 or 4" is impossible with built-in layers. What we can have is every P
 * indivisible by 3 and by 4 (so every unit is padded at 3 and 4 ranks) and the first
 * one odd (padded at 2 ranks as well):
 *   fc1 13 x (12 + 1) = 169 = 13^2       S = 85 / 57 / 43 at N = 2 / 3 / 4
 *   fc2 25 x (13 + 1) = 350 = 2 5^2 7    350 mod 3 = 2, mod 4 = 2
 *   fc3  5 x (25 + 1) = 130 = 2 5 13     130 mod 3 = 1, mod 4 = 2
 *
 * --init starts from a safetensors file (sf_model_import_safetensors), --export-init
 * writes the weights before the first step and --export those after the last
 * (tests/tied.sh: a tied head against an untied one holding the same values);
 * --export-steps PREFIX writes those after each step k to PREFIX.k (with --inflight 1
 * only: a later step must not have been submitted), so that an outside reference can
 * start each of its steps from this run's parameters (tests/torch_clip.py --per-step).
 *
 * --inflight K keeps up to K steps submitted before waiting for the oldest loss
 * (default 1: wait for each step), to exercise steps that overlap each other.
 *
 * --accum K: every step is K micro-batches of --batch samples (K - 1
 * sf_model_accumulate, then sf_model_step): micro-batch j of step k is rows
 * [j B, (j + 1) B) of global batch k, so it covers the rows a run with --batch K B
 * takes in one step, and its loss is the mean of the micro-batches' losses.
 * --ignore-every N labels every global row r with r % N == 0 with the ignore index
 * (SF_LOSS_IGNORE_INDEX), the same rows whatever the layout.
 * --evaluate S: after training, rank 0 prints "eval <loss>", sf_model_evaluate of S
 * samples (global batch 1000's generator, --ignore-every applied), every rank
 * passing them all; with --forward NODE (a node C wide: the logits) it prints
 * "fwd <k> <value>" for every value of sf_model_forward of NODE on those samples too.
 * --clip X sets max_grad_norm (inf: the norm only) and rank 0 prints
 * "norm <step> <norm>" for each step; --weight-decay X and --no-decay MASK
 * (sf_model_options::no_decay) set the decay; --data FILE makes rank 0 write each
 * step's whole global batch (float inputs or int32 ids, then int32 labels, rows in
 * order) for an outside reference (tests/torch_clip.py).
 *
 * Rank 0 writes FILE (native byte order; the comparisons run on one machine):
 *   char magic[8] = "SFDUMP1\n"; int64 nsteps; double loss[nsteps];
 *   int64 nparams; float params[nparams]   (sf_model_params_get order)
 * and prints "max_resident <n> ring_slots <n> nunits <n>", "comm_bytes <bytes rank 0
 * sent in collectives>" and "final_loss <loss>"; every rank prints "rank <r> comm_bytes
 * <b> inter_node <bytes of them to another node>" and "bytes <r> params <b> grads <b>
 * optimizer <b> activations <b> buffers <b> ring <slots>" (its own, sf_model_stats'; with SHARDFLOW_TP also "rank <r> tp <K>
 * dp <n> model_bytes <b> tp_slice_bytes <b> tp_comm_bytes <b>", sf_model_stats').
 * Exit status: 0 success, 1 a library or I/O error, 2 a bad command line.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/synthetic.h"
#include "shardflow.h"
#include "tests/test_models.h"

#define PROG "train_dump"
#define MAX_INFLIGHT 16 /* sf_model_loss() keeps the 16 most recent losses */

#define MAX_SETTINGS 32

struct options {
	struct train_options t;
	int inflight, accum;
	float clip, weight_decay;
	int no_decay;
	const char *out, *init, *export_init, *export, *export_steps, *data;
	/* knobs in code: KNOB=VALUE for sf_init_config and for the model's own config;
	 * UNIT:FIELD=0|1[,FIELD=0|1] for sf_graph_unit_options */
	const char *init_config[MAX_SETTINGS], *config[MAX_SETTINGS], *unit_opts[MAX_SETTINGS];
	int ninit_config, nconfig, nunit_opts;
	int bad_label_rank, bad_label_step; /* --bad-label R:K: one label out of range */
	int ignore_every; /* --ignore-every N: global rows r with r % N == 0 labelled
	                     SF_LOSS_IGNORE_INDEX (0: none) */
	int evaluate;     /* --evaluate S: sf_model_evaluate of S samples after training */
	const char *forward; /* --forward NODE: with --evaluate, that node's activation (C
	                        wide) of the S samples too */
	const char *lr_zero; /* --lr-zero UNIT: learning-rate scale 0 on its tensors */
};

/* --evaluate S: the loss of S samples, every rank passing them all */
static int evaluate(sf_model *m, const struct options *o, int D, int C, int T, int rank)
{
	int status = 1;
	size_t rows = (size_t)o->evaluate * (size_t)T;
	float *x = malloc(sizeof(float) * (rows * (size_t)D + 1));
	int32_t *ids = malloc(sizeof(int32_t) * (rows + 1)), *labels = malloc(sizeof(int32_t) * (rows + 1));
	const float *xin;
	const int32_t *idin;
	struct sf_batch b;
	double loss;
	if (!x || !ids || !labels ||
	    fill_batch(o->t.model, o->t.seed, 1000, 0, (int)rows, D, C, x, ids, labels, &b, &xin,
	               &idin)) {
		fprintf(stderr, PROG ": cannot generate the evaluation's samples\n");
		goto out;
	}
	for (size_t r = 0; o->ignore_every && r < rows; r++)
		if (r % (size_t)o->ignore_every == 0)
			labels[r] = SF_LOSS_IGNORE_INDEX;
	if (sf_model_evaluate(m, &b, o->evaluate, &loss) != SF_OK) {
		fprintf(stderr, PROG ": sf_model_evaluate failed: %s\n", sf_last_error());
		goto out;
	}
	if (rank == 0)
		printf("eval %.17g\n", loss);
	if (o->forward) { /* the node's activation (C wide: the logits) of every sample */
		float *out = malloc(sizeof(float) * (rows * (size_t)C + 1));
		if (!out || sf_model_forward(m, o->forward, &b, o->evaluate, out, rows * (size_t)C)) {
			fprintf(stderr, PROG ": sf_model_forward failed: %s\n", sf_last_error());
			free(out);
			goto out;
		}
		for (size_t k = 0; rank == 0 && k < rows * (size_t)C; k++)
			printf("fwd %zu %.9g\n", k, (double)out[k]);
		free(out);
	}
	status = 0;
out:
	free(x);
	free(ids);
	free(labels);
	return status;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: " PROG " [--model mlp|residual|uneven|deep|wide|blocks|gpt|nanogpt|\n"
	        "       nanogpt-untied|swiglu|llama] [--steps N] [--batch B] [--optimizer sgd|adamw|lion]\n"
	        "       [--lr X] [--seed S] [--inflight K] [--init W.safetensors]\n"
	        "       [--export-init W0.safetensors] [--export W.safetensors]\n"
	        "       [--export-steps PREFIX] [--accum K] [--ignore-every N] [--evaluate S [--forward NODE]] [--context T]\n"
	        "       [--clip X|inf] [--weight-decay X] [--no-decay MASK] [--data FILE]\n"
	        "       [--init-config KNOB=VALUE]... [--config KNOB=VALUE]...\n"
	        "       [--unit-options UNIT:reshard_after_forward=0|1,keep_fp32=0|1,frozen=0|1]...\n"
	        "       [--bad-label RANK:STEP] [--lr-zero UNIT]\n"
	        "       --out FILE\n"
	        "defaults: mlp, 6 steps, batch 24, sgd, lr 0.01 (sgd) / 0.001 (adamw) / 0.0001\n"
	        "(lion, beta2 0.99), seed 1, inflight 1, accum 1, no clipping, weight decay 0,\n"
	        "no-decay 7\n");
}

static int bad(const char *opt, const char *val)
{
	return cli_bad_usage("%s \"%s\" is invalid", opt, val);
}

static const char *const option_names[] = {
    "--model",        "--steps",       "--batch",  "--optimizer",    "--lr",
    "--seed",         "--inflight",    "--accum",  "--no-decay",     "--clip",
    "--weight-decay", "--init-config", "--config", "--unit-options", "--bad-label",
    "--lr-zero",      "--data",        "--out",    "--init",         "--export-init",
    "--export",       "--export-steps", "--ignore-every", "--evaluate",    "--context",
    "--forward"};

/* One option's value: 0 or 2 (cli_parse's contract). */
static int on_value(int k, char *value, void *ctx)
{
	struct options *o = ctx;
	const char *opt = option_names[k], *val = value;
	int taken = train_option(&o->t, opt, val, 1);
	if (taken < 0)
		return bad(opt, val);
	if (taken > 0)
		return 0;
	if (!strcmp(opt, "--inflight")) {
		if (parse_int(val, 1, MAX_INFLIGHT, &o->inflight))
			return bad(opt, val);
	} else if (!strcmp(opt, "--accum")) {
		if (parse_int(val, 1, 64, &o->accum))
			return bad(opt, val);
	} else if (!strcmp(opt, "--forward")) {
		o->forward = val;
	} else if (!strcmp(opt, "--evaluate")) {
		if (parse_int(val, 1, 4096, &o->evaluate))
			return bad(opt, val);
	} else if (!strcmp(opt, "--ignore-every")) {
		if (parse_int(val, 1, 1 << 20, &o->ignore_every))
			return bad(opt, val);
	} else if (!strcmp(opt, "--no-decay")) {
		if (parse_int(val, 0, 7, &o->no_decay))
			return bad(opt, val);
	} else if (!strcmp(opt, "--clip") || !strcmp(opt, "--weight-decay")) {
		char *end;
		errno = 0;
		double v = strtod(val, &end);
		if (end == val || *end || errno || !(v >= 0.0) ||
		    (isinf(v) && strcmp(opt, "--clip")))
			return bad(opt, val);
		*(strcmp(opt, "--clip") ? &o->weight_decay : &o->clip) = (float)v;
	} else if (!strcmp(opt, "--init-config") || !strcmp(opt, "--config") ||
	           !strcmp(opt, "--unit-options")) {
		const char **list = !strcmp(opt, "--config")        ? o->config
		                    : !strcmp(opt, "--init-config") ? o->init_config
		                                                    : o->unit_opts;
		int *n = !strcmp(opt, "--config")        ? &o->nconfig
		         : !strcmp(opt, "--init-config") ? &o->ninit_config
		                                         : &o->nunit_opts;
		if (*n == MAX_SETTINGS || !strchr(val, '='))
			return bad(opt, val);
		list[(*n)++] = val;
	} else if (!strcmp(opt, "--bad-label")) {
		char extra;
		if (sscanf(val, "%d:%d%c", &o->bad_label_rank, &o->bad_label_step, &extra) != 2 ||
		    o->bad_label_rank < 0 || o->bad_label_step < 1)
			return bad(opt, val);
	} else if (!strcmp(opt, "--lr-zero")) {
		o->lr_zero = val;
	} else if (!strcmp(opt, "--data")) {
		o->data = val;
	} else if (!strcmp(opt, "--out")) {
		o->out = val;
	} else if (!strcmp(opt, "--init")) {
		o->init = val;
	} else if (!strcmp(opt, "--export-init")) {
		o->export_init = val;
	} else if (!strcmp(opt, "--export")) {
		o->export = val;
	} else if (!strcmp(opt, "--export-steps")) {
		o->export_steps = val;
	}
	return 0;
}

/* Returns -1 to go on, otherwise the exit status. */
static int parse_options(int argc, char **argv, struct options *o)
{
	*o = (struct options){
	    .inflight = 1, .accum = 1, .no_decay = SF_NO_DECAY_DEFAULT, .bad_label_rank = -1};
	train_options_init(&o->t);
	const struct cli_spec sp = {option_names, (int)(sizeof option_names / sizeof *option_names),
	                            NULL,         0,
	                            on_value,     NULL};
	cli_prog = PROG;
	cli_usage = usage;
	int rc = cli_parse(argc, argv, &sp, o);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (!o->out)
		return cli_bad_usage("--out FILE is required");
	if (o->inflight * o->accum > MAX_INFLIGHT)
		return cli_bad_usage("--inflight %d x --accum %d exceeds the %d tickets in flight "
		                     "the model keeps",
		                     o->inflight, o->accum, MAX_INFLIGHT);
	if (o->export_steps && o->inflight != 1)
		return cli_bad_usage("--export-steps needs --inflight 1 (each step done before "
		                     "the next)");
	train_options_finish(&o->t);
	return -1;
}

/* c = the defaults with each KNOB=VALUE of list set (sf_config_set checks them) */
static int config_from(const char *const *list, int n, struct sf_config *c)
{
	CLI_CHECK_GOTO(sf_config_init(c), fail);
	for (int i = 0; i < n; i++) {
		char name[64];
		const char *eq = strchr(list[i], '=');
		snprintf(name, sizeof name, "%.*s", (int)(eq - list[i]), list[i]);
		CLI_CHECK_GOTO(sf_config_set(c, name, eq + 1), fail);
	}
	return 0;
fail:
	return -1;
}

/* UNIT:FIELD=0|1[,FIELD=0|1] for each --unit-options */
static int unit_options(sf_graph *g, const char *const *list, int n)
{
	for (int i = 0; i < n; i++) {
		char unit[64], rest[128];
		const char *colon = strchr(list[i], ':');
		struct sf_unit_options uo;
		if (!colon || snprintf(unit, sizeof unit, "%.*s", (int)(colon - list[i]), list[i]) >=
		                  (int)sizeof unit)
			return bad("--unit-options", list[i]);
		snprintf(rest, sizeof rest, "%s", colon + 1);
		CLI_CHECK_GOTO(sf_unit_options_init(&uo), fail);
		for (char *f = strtok(rest, ","); f; f = strtok(NULL, ",")) {
			if (!strcmp(f, "reshard_after_forward=0") || !strcmp(f, "reshard_after_forward=1"))
				uo.reshard_after_forward = f[strlen(f) - 1] - '0';
			else if (!strcmp(f, "keep_fp32=0") || !strcmp(f, "keep_fp32=1"))
				uo.keep_fp32 = f[strlen(f) - 1] - '0';
			else if (!strcmp(f, "frozen=0") || !strcmp(f, "frozen=1"))
				uo.frozen = f[strlen(f) - 1] - '0';
			else
				return bad("--unit-options", list[i]);
		}
		CLI_CHECK_GOTO(sf_graph_unit_options(g, unit, &uo), fail);
	}
	return 0;
fail:
	return 1;
}

/* Step s's loss, the mean of its micro-batches', and (clipping) its norm on stdout. */
static int collect(sf_model *m, const struct options *o, int s, const int64_t *tickets,
                   double *losses, int rank)
{
	double sum = 0.0, l, norm;
	for (int j = 0; j < o->accum; j++) {
		CLI_CHECK_GOTO(
		    sf_model_loss(m, tickets[(size_t)s * (size_t)o->accum + (size_t)j], &l), fail);
		sum += l;
	}
	losses[s] = sum / o->accum;
	if (o->clip > 0.0f) {
		CLI_CHECK_GOTO(
		    sf_model_grad_norm(m, tickets[(size_t)(s + 1) * (size_t)o->accum - 1], &norm),
		    fail);
		if (rank == 0)
			printf("norm %d %.17g\n", s + 1, norm);
	}
	return 0;
fail:
	return -1;
}

/* --data: every step's whole global batch, as fill_batch makes it. */
static int write_data(const struct options *o, int D, int C, int T)
{
	int rows = o->t.batch * o->accum * T, rc = -1;
	float *x = malloc(sizeof(float) * ((size_t)rows * (size_t)D + 1));
	int32_t *ids = malloc(sizeof(int32_t) * ((size_t)rows + 1));
	int32_t *labels = malloc(sizeof(int32_t) * ((size_t)rows + 1));
	FILE *f = fopen(o->data, "wb");
	const float *xin;
	const int32_t *idin;
	struct sf_batch b;
	if (!x || !ids || !labels || !f) {
		fprintf(stderr, PROG ": cannot write %s\n", o->data);
		goto out;
	}
	for (int k = 1; k <= o->t.steps; k++) {
		if (fill_batch(o->t.model, o->t.seed, k, 0, rows, D, C, x, ids, labels, &b, &xin, &idin))
			goto out;
		if (b.ninputs ? fwrite(x, sizeof(float) * (size_t)D, (size_t)rows, f) != (size_t)rows
		              : fwrite(ids, sizeof(int32_t), (size_t)rows, f) != (size_t)rows)
			goto out;
		if (fwrite(labels, sizeof(int32_t), (size_t)rows, f) != (size_t)rows)
			goto out;
	}
	rc = 0;
out:
	if (f && fclose(f) != 0)
		rc = -1;
	if (rc)
		fprintf(stderr, PROG ": cannot write %s\n", o->data);
	free(x);
	free(ids);
	free(labels);
	return rc;
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
	int64_t *tickets = NULL;
	int rank = 0, size = 1, D = 0, C = 0, T = 1;
	status = 1;

	struct sf_config init_cfg, model_cfg;
	if (config_from(o.init_config, o.ninit_config, &init_cfg) ||
	    config_from(o.config, o.nconfig, &model_cfg))
		goto fail;
	CLI_CHECK_GOTO(sf_init_config(&argc, &argv, o.ninit_config ? &init_cfg : NULL, &ctx), fail);
	CLI_CHECK_GOTO(sf_context_world(ctx, &rank, &size), fail);
	if (build_model(o.t.model, &g, &D, &C, &T))
		goto fail;
	if (unit_options(g, o.unit_opts, o.nunit_opts))
		goto fail;
	struct sf_model_options mo;
	CLI_CHECK_GOTO(sf_model_options_init(&mo), fail);
	if (o.nconfig)
		mo.config = &model_cfg;
	mo.batch = o.t.batch;
	mo.seed = o.t.seed;
	mo.optimizer = o.t.optimizer;
	if (mo.optimizer == SF_OPT_LION)
		mo.beta2 = 0.99f; /* the paper's default */
	mo.lr = o.t.lr;
	mo.max_grad_norm = o.clip;
	mo.weight_decay = o.weight_decay;
	mo.no_decay = (unsigned)o.no_decay;
	CLI_CHECK_GOTO(sf_model_create(ctx, g, &mo, &m), fail);
	if (o.lr_zero) { /* a frozen unit's reference: trained with learning rate 0 */
		int nt = 0, hit = 0;
		CLI_CHECK_GOTO(sf_model_tensor_count(m, &nt), fail);
		for (int t = 0; t < nt; t++) {
			struct sf_tensor_info ti;
			CLI_CHECK_GOTO(sf_model_tensor_info(m, t, &ti), fail);
			if (!strcmp(ti.unit, o.lr_zero)) {
				CLI_CHECK_GOTO(sf_model_tensor_lr_scale(m, ti.name, 0.0f), fail);
				hit++;
			}
		}
		if (!hit) {
			fprintf(stderr, PROG ": --lr-zero %s: no tensor is in that unit\n", o.lr_zero);
			goto fail;
		}
	}
	if (o.init)
		CLI_CHECK_GOTO(sf_model_import_safetensors(m, o.init), fail);
	if (o.export_init)
		CLI_CHECK_GOTO(sf_model_export_safetensors(m, o.export_init), fail);

	int first, rows;
	CLI_CHECK_GOTO(sf_model_local_rows(m, &first, &rows), fail);
	first *= T; /* samples of T rows: rows from here on */
	rows *= T;
	x = malloc(sizeof(float) * ((size_t)rows * (size_t)D + 1));
	labels = malloc(sizeof(int32_t) * ((size_t)rows + 1));
	ids = malloc(sizeof(int32_t) * ((size_t)rows + 1));
	losses = calloc((size_t)o.t.steps, sizeof(double));
	tickets = calloc((size_t)o.t.steps * (size_t)o.accum, sizeof(int64_t));
	if (!x || !labels || !ids || !losses || !tickets) {
		fprintf(stderr, PROG ": out of memory\n");
		goto fail;
	}
	const float *xin;
	const int32_t *idin;
	struct sf_batch batch;

	if (o.data && rank == 0 && write_data(&o, D, C, T))
		goto fail;
	/* Step k uses global batch k; its loss is collected once `inflight` newer steps
	 * are not yet submitted, i.e. at most `inflight` steps are outstanding. With
	 * --accum K, micro-batch j of step k starts at row j B T of global batch k. */
	int waited = 0, K = o.accum;
	for (int k = 1; k <= o.t.steps; k++) {
		for (int j = 0; j < K; j++) {
			int row0 = first + j * o.t.batch * T;
			if (fill_batch(o.t.model, o.t.seed, k, row0, rows, D, C, x, ids, labels,
			               &batch, &xin, &idin)) {
				fprintf(stderr, PROG ": cannot generate batch %d\n", k);
				goto fail;
			}
			for (int r = 0; o.ignore_every && r < rows; r++)
				if ((row0 + r) % o.ignore_every == 0)
					labels[r] = SF_LOSS_IGNORE_INDEX;
			if (rank == o.bad_label_rank && k == o.bad_label_step)
				labels[rows - 1] = C + 3; /* tests/bad_batch.sh */
			int64_t *t = &tickets[(size_t)(k - 1) * (size_t)K + (size_t)j];
			if (j + 1 < K)
				CLI_CHECK_GOTO(sf_model_accumulate(m, &batch, t), fail);
			else
				CLI_CHECK_GOTO(sf_model_step(m, &batch, t), fail);
		}
		for (; waited <= k - o.inflight; waited++)
			if (collect(m, &o, waited, tickets, losses, rank))
				goto fail;
		if (o.export_steps) {
			char path[PATH_MAX];
			if (snprintf(path, sizeof path, "%s.%d", o.export_steps, k) >=
			    (int)sizeof path) {
				fprintf(stderr, PROG ": --export-steps %s: the name is too long\n",
				        o.export_steps);
				goto fail;
			}
			CLI_CHECK_GOTO(sf_model_export_safetensors(m, path), fail);
		}
	}
	for (; waited < o.t.steps; waited++)
		if (collect(m, &o, waited, tickets, losses, rank))
			goto fail;

	if (o.evaluate && evaluate(m, &o, D, C, T, rank))
		goto fail;

	size_t n;
	CLI_CHECK_GOTO(sf_model_param_count(m, &n), fail);
	params = malloc(sizeof(float) * (n + 1));
	if (!params) {
		fprintf(stderr, PROG ": out of memory for %zu parameters\n", n);
		goto fail;
	}
	CLI_CHECK_GOTO(sf_model_params_get(m, params, n), fail);
	struct sf_model_stats st;
	CLI_CHECK_GOTO(sf_model_stats(m, &st), fail);
	if (o.export)
		CLI_CHECK_GOTO(sf_model_export_safetensors(m, o.export), fail);

	status = 0;
	/* every rank's own bytes (mpirun merges the lines) */
	printf("rank %d comm_bytes %.0f inter_node %.0f\n", rank, st.comm_bytes, st.comm_bytes_inter);
	printf("bytes %d params %zu grads %zu optimizer %zu activations %zu buffers %zu ring %d\n",
	       rank, st.param_bytes, st.grad_bytes, st.optimizer_bytes, st.activation_bytes,
	       st.buffer_bytes, st.ring_slots);
	if (st.tp > 1)
		printf(
		    "rank %d tp %d dp %d model_bytes %zu tp_slice_bytes %zu tp_comm_bytes %.0f\n",
		    rank, st.tp, st.dp, st.model_bytes, st.tp_slice_bytes, st.tp_comm_bytes);
	fflush(stdout);
	if (rank == 0) {
		if (write_dump(PROG, o.out, losses, o.t.steps, params, (int64_t)n))
			status = 1;
		printf("max_resident %d ring_slots %d nunits %d\n", st.max_resident_units,
		       st.ring_slots, st.nunits);
		printf("comm_bytes %.0f\n", st.comm_bytes);
		printf("optimizer_bytes %zu grad_bytes %zu\n", st.optimizer_bytes, st.grad_bytes);
		printf("final_loss %.9g\n", losses[o.t.steps - 1]);
		fflush(stdout);
	}

fail:
	free(x);
	free(labels);
	free(ids);
	free(losses);
	free(tickets);
	free(params);
	if (sf_model_destroy(m) != SF_OK)
		status = 1;
	sf_graph_destroy(g);
	if (ctx && sf_finalize(ctx) != SF_OK)
		status = 1;
	return status;
}
