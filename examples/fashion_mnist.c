/*
 * fashion_mnist.c — a real training job: Fashion-MNIST from Debian's
 * dataset-fashion-mnist, an MLP trained with AdamW over the MPI ranks, evaluated on
 * the test set every epoch, with checkpoints that resume bitwise.
 *
 *   mpirun -np 2 examples/fashion_mnist
 *
 * Every rank loads the data set; each global batch is a slice of one permutation of
 * the training set per epoch, drawn from (seed, epoch), so 1 and N ranks see the
 * same batches. Rank 0 prints (stable format, parsed by tests/fashion_mnist.sh):
 *
 *   epoch <e>/<E> step <s>/<S> loss <mean loss since last line> samples/s <x> eta <t>
 *   epoch <e> time <seconds> train_loss <mean> test_loss <x> test_accuracy <x>
 *   test_accuracy <x>                  (last line: the final model's accuracy)
 *
 * Exit status: 0 success, 1 an error (data, library, checkpoint), 2 a bad command line.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shardflow.h"
#include "examples/cli.h"

#define PROG "fashion_mnist"
#define MAX_WIDTHS 16

struct options {
	int epochs, batch, nwidths, widths[MAX_WIDTHS];
	float lr, weight_decay;
	uint64_t seed;
	const char *data_dir, *ckpt_dir, *export_path, *init_path;
	int64_t ckpt_every, max_steps, progress_every;
	int resume, relu;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: " PROG " [options]\n"
	    "Trains an MLP on Fashion-MNIST with AdamW, sharded over the MPI ranks.\n"
	    "  --epochs N              epochs (default 10)\n"
	    "  --batch B               global batch, split over the ranks (default 128)\n"
	    "  --lr X                  peak learning rate, cosine-decayed (default 0.001)\n"
	    "  --weight-decay X        AdamW decoupled weight decay (default 0.0001)\n"
	    "  --widths A,B,...,C      input, hidden..., classes (default 784,1024,1024,10)\n"
	    "  --activation gelu|relu  hidden activation (default gelu)\n"
	    "  --seed S                initialisation and data-order seed (default 1)\n"
	    "  --data-dir D            the IDX files (default /usr/share/datasets/fashion-mnist)\n"
	    "  --checkpoint-dir D      write sharded checkpoints under D\n"
	    "  --checkpoint-every K    ... every K steps (default: at each epoch's end)\n"
	    "  --resume                continue from D's last checkpoint (needs\n"
	    "                          --checkpoint-dir; none there yet: start afresh)\n"
	    "  --max-steps N           stop after N steps in all (counting resumed ones)\n"
	    "  --progress-every K      a progress line every K steps (default 50)\n"
	    "  --export FILE           write the final weights as safetensors\n"
	    "  --init FILE             start from these safetensors weights\n"
	    "  --help                  this text\n");
}

/* The options that take a value, in the order of the usage text. */
enum opt_key {
	OPT_EPOCHS,
	OPT_BATCH,
	OPT_LR,
	OPT_WEIGHT_DECAY,
	OPT_WIDTHS,
	OPT_ACTIVATION,
	OPT_SEED,
	OPT_DATA_DIR,
	OPT_CHECKPOINT_DIR,
	OPT_CHECKPOINT_EVERY,
	OPT_MAX_STEPS,
	OPT_PROGRESS_EVERY,
	OPT_EXPORT,
	OPT_INIT,
	NOPTIONS
};

static const char *const option_names[NOPTIONS] = {
    [OPT_EPOCHS] = "--epochs",
    [OPT_BATCH] = "--batch",
    [OPT_LR] = "--lr",
    [OPT_WEIGHT_DECAY] = "--weight-decay",
    [OPT_WIDTHS] = "--widths",
    [OPT_ACTIVATION] = "--activation",
    [OPT_SEED] = "--seed",
    [OPT_DATA_DIR] = "--data-dir",
    [OPT_CHECKPOINT_DIR] = "--checkpoint-dir",
    [OPT_CHECKPOINT_EVERY] = "--checkpoint-every",
    [OPT_MAX_STEPS] = "--max-steps",
    [OPT_PROGRESS_EVERY] = "--progress-every",
    [OPT_EXPORT] = "--export",
    [OPT_INIT] = "--init",
};

/* --widths A,B,...,C: 0 ok, 2 bad usage */
static int parse_widths(const char *val, struct options *o)
{
	int64_t v = 0;
	o->nwidths = 0;
	char *copy = strdup(val), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (o->nwidths == MAX_WIDTHS || cli_parse_i64(t, 1, 1 << 20, &v)) {
			free(copy);
			return cli_bad_usage("--widths \"%s\" is invalid: expected 2 to %d "
			                     "positive integers separated by commas",
			                     val, MAX_WIDTHS);
		}
		o->widths[o->nwidths++] = (int)v;
	}
	free(copy);
	if (o->nwidths < 2)
		return cli_bad_usage("--widths \"%s\" is invalid: expected at least the input "
		                     "width and the number of classes",
		                     val);
	return 0;
}

/* The value of option k: 0 ok, 2 bad usage */
static int parse_value(enum opt_key k, char *val, struct options *o)
{
	int64_t v = 0;
	switch (k) {
	case OPT_EPOCHS:
		if (cli_parse_i64(val, 1, 100000, &v))
			return cli_bad_usage("--epochs \"%s\" is invalid: expected 1..100000", val);
		o->epochs = (int)v;
		break;
	case OPT_BATCH:
		if (cli_parse_i64(val, 1, 1 << 20, &v))
			return cli_bad_usage("--batch \"%s\" is invalid: expected 1..1048576", val);
		o->batch = (int)v;
		break;
	case OPT_LR:
		if (cli_parse_float(val, 1e-9f, 10.0f, &o->lr))
			return cli_bad_usage("--lr \"%s\" is invalid: expected a number in (0, 10]",
			                     val);
		break;
	case OPT_WEIGHT_DECAY:
		if (cli_parse_float(val, 0.0f, 1.0f, &o->weight_decay))
			return cli_bad_usage("--weight-decay \"%s\" is invalid: expected 0..1",
			                     val);
		break;
	case OPT_WIDTHS: return parse_widths(val, o);
	case OPT_ACTIVATION:
		if (strcmp(val, "gelu") && strcmp(val, "relu"))
			return cli_bad_usage(
			    "--activation \"%s\" is invalid: expected gelu or relu", val);
		o->relu = !strcmp(val, "relu");
		break;
	case OPT_SEED:
		if (cli_parse_i64(val, 0, INT64_MAX, &v))
			return cli_bad_usage("--seed \"%s\" is invalid: expected an integer >= 0",
			                     val);
		o->seed = (uint64_t)v;
		break;
	case OPT_DATA_DIR: o->data_dir = val; break;
	case OPT_CHECKPOINT_DIR: o->ckpt_dir = val; break;
	case OPT_CHECKPOINT_EVERY: return cli_steps(option_names[k], val, &o->ckpt_every);
	case OPT_MAX_STEPS: return cli_steps(option_names[k], val, &o->max_steps);
	case OPT_PROGRESS_EVERY: return cli_steps(option_names[k], val, &o->progress_every);
	case OPT_EXPORT: o->export_path = val; break;
	case OPT_INIT: o->init_path = val; break;
	case NOPTIONS: break;
	}
	return 0;
}

static int on_value(int k, char *val, void *o)
{
	return parse_value((enum opt_key)k, val, o);
}

static int on_flag(int j, void *o)
{
	(void)j; /* --resume */
	((struct options *)o)->resume = 1;
	return 0;
}

/* 0 ok, 1 --help printed, 2 bad usage */
static int parse(int argc, char **argv, struct options *o)
{
	*o = (struct options){.epochs = 10,
	                      .batch = 128,
	                      .nwidths = 4,
	                      .widths = {784, 1024, 1024, 10},
	                      .lr = 1e-3f,
	                      .weight_decay = 1e-4f,
	                      .seed = 1,
	                      .data_dir = "/usr/share/datasets/fashion-mnist",
	                      .progress_every = 50};
	static const char *const flags[] = {"--resume"};
	const struct cli_spec sp = {option_names, NOPTIONS, flags, 1, on_value, on_flag};
	int rc = cli_parse(argc, argv, &sp, o);
	if (rc)
		return rc;
	if (o->resume && !o->ckpt_dir)
		return cli_bad_usage("--resume needs --checkpoint-dir");
	if (o->ckpt_every && !o->ckpt_dir)
		return cli_bad_usage("--checkpoint-every needs --checkpoint-dir");
	return 0;
}

struct run {
	struct options o;
	sf_context *ctx;
	sf_model *m;
	struct sf_dataset train, test;
	int rank, size, first, rows, classes, dim;
	float *x, *logits;
	int32_t *y;
	int64_t per_epoch, total; /* steps per epoch, and in all */
	int64_t step, epoch, b0;  /* steps done; the epoch and its next batch */
	int64_t saved;            /* the step of the checkpoint loaded or written, or -1 */
	int agreed; /* the failure is every rank's at once (restore's): no MPI_Abort */
};

/* Test-set loss and accuracy: the set is cut into global batches (the last one
 * padded with zeros, its padding ignored), each rank predicts its slice. */
static int evaluate(struct run *r, double *loss, double *acc)
{
	int rc = SF_OK;
	int B = r->o.batch;
	double sums[2] = {0, 0}; /* loss, correct */
	int64_t nb = (r->test.n + B - 1) / B;
	for (int64_t b = 0; b < nb; b++) {
		for (int i = 0; i < r->rows; i++) {
			int64_t s = b * B + r->first + i;
			if (s < r->test.n) {
				memcpy(r->x + (size_t)i * r->dim, r->test.images + s * r->dim,
				       (size_t)r->dim * sizeof(float));
				r->y[i] = r->test.labels[s];
			} else {
				memset(r->x + (size_t)i * r->dim, 0,
				       (size_t)r->dim * sizeof(float));
				r->y[i] = -1;
			}
		}
		const float *in[1] = {r->x};
		struct sf_batch batch = {.ninputs = 1, .inputs = in};
		if ((rc = sf_model_predict(r->m, &batch, r->logits)) < 0)
			return rc;
		for (int i = 0; i < r->rows; i++) {
			if (r->y[i] < 0)
				continue;
			const float *z = r->logits + (size_t)i * r->classes;
			int best = 0;
			double mx = z[0], se = 0;
			for (int c = 1; c < r->classes; c++)
				if (z[c] > z[best])
					best = c, mx = z[c];
			for (int c = 0; c < r->classes; c++)
				se += exp((double)z[c] - mx);
			sums[0] += log(se) + mx - z[r->y[i]];
			sums[1] += best == r->y[i];
		}
	}
	MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	*loss = sums[0] / (double)r->test.n;
	*acc = sums[1] / (double)r->test.n;
	return rc;
}

static float cosine_lr(const struct options *o, int64_t step, int64_t total)
{
	double p = total > 1 ? (double)step / (double)total : 0.0;
	if (p > 1)
		p = 1;
	return (float)(o->lr * 0.5 * (1.0 + cos(M_PI * p))) + 1e-9f;
}

/* <dir>/<set>-images-idx3-ubyte.gz and <dir>/<set>-labels-idx1-ubyte.gz */
static int load_set(const char *dir, const char *set, struct sf_dataset *ds)
{
	char ip[1024], lp[1024];
	snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, set);
	snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, set);
	return sf_dataset_load_idx(ip, lp, ds);
}

/* The training and test sets, and --widths and --batch checked against them. */
static int load_data(struct run *r)
{
	const struct options *o = &r->o;
	int status = -1;
	CLI_CHECK_GOTO(load_set(o->data_dir, "train", &r->train), done);
	CLI_CHECK_GOTO(load_set(o->data_dir, "t10k", &r->test), done);
	r->dim = r->train.dim;
	r->classes = o->widths[o->nwidths - 1];
	if (o->widths[0] != r->dim || r->classes < r->train.classes) {
		if (r->rank == 0)
			fprintf(stderr,
			        PROG ": --widths must start with the image size %d and end with at "
			             "least %d classes (got %d ... %d)\n",
			        r->dim, r->train.classes, o->widths[0], r->classes);
		goto done;
	}
	/* the test set is checked as the training set is: evaluate() reads dim floats
	 * per image and indexes the logits by label */
	if (r->test.dim != r->dim || r->test.classes > r->classes) {
		if (r->rank == 0)
			fprintf(stderr,
			        PROG ": the test set (t10k) does not match the training set: its "
			             "images are %d x %d (training: %d x %d) and its labels reach "
			             "class %d (the model has %d classes)\n",
			        r->test.rows, r->test.cols, r->train.rows, r->train.cols,
			        r->test.classes - 1, r->classes);
		goto done;
	}
	if (o->batch > r->train.n || o->batch < r->size) {
		if (r->rank == 0)
			fprintf(stderr, PROG ": --batch %d must lie in [%d ranks, %lld samples]\n",
			        o->batch, r->size, (long long)r->train.n);
		goto done;
	}
	r->per_epoch = r->train.n / o->batch;
	r->total = r->per_epoch * o->epochs;
	status = 0;
done:
	return status;
}

/* The MLP of --widths trained with AdamW, and this rank's batch buffers. */
static int build_model(struct run *r)
{
	const struct options *o = &r->o;
	sf_graph *g = NULL;
	int status = -1, x, lab, h, loss;
	CLI_CHECK_GOTO(sf_graph_create("fashion_mnist", &g), done);
	CLI_CHECK_GOTO(sf_graph_input(g, "pixels", r->dim, &x), done);
	CLI_CHECK_GOTO(sf_graph_label_input(g, "label", r->classes, &lab), done);
	h = x;
	for (int i = 1; i < o->nwidths; i++) {
		char name[32];
		snprintf(name, sizeof name, "fc%d", i);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, o->widths[i], name, &h), done);
		if (i + 1 < o->nwidths)
			CLI_CHECK_GOTO(o->relu ? sf_graph_relu(g, h, &h) : sf_graph_gelu(g, h, &h),
			               done);
	}
	CLI_CHECK_GOTO(sf_graph_softmax_cross_entropy(g, h, lab, &loss), done);
	struct sf_model_options mo;
	sf_model_options_init(&mo);
	mo.batch = o->batch;
	mo.seed = o->seed;
	mo.optimizer = SF_OPT_ADAMW;
	mo.lr = o->lr;
	mo.weight_decay = o->weight_decay;
	CLI_CHECK_GOTO(sf_model_create(r->ctx, g, &mo, &r->m), done);
	CLI_CHECK_GOTO(sf_model_local_rows(r->m, &r->first, &r->rows), done);
	r->x = malloc((size_t)r->rows * (size_t)r->dim * sizeof(float));
	r->y = malloc((size_t)r->rows * sizeof(int32_t));
	r->logits = malloc((size_t)r->rows * (size_t)r->classes * sizeof(float));
	if (!r->x || !r->y || !r->logits) {
		fprintf(stderr, PROG ": out of memory\n");
		goto done;
	}
	status = 0;
done:
	sf_graph_destroy(g); /* the model keeps what it needs */
	return status;
}

/* A checkpoint's training position checked against this run and its data set: the
 * data seed, an epoch within --epochs, a batch within an epoch's batches (none left
 * once every epoch is done), and the step that epoch and batch make — info.* as
 * train_epoch() and end_epoch() write them, with this --batch. A manifest's CRC-32
 * proves that it is intact, not that it belongs to this run. Every rank gets the same
 * info: rank 0 prints the refusal naming the field, its value and what is accepted. */
static int check_position(const struct run *r, const struct sf_checkpoint_info *info)
{
	const struct options *o = &r->o;
	char why[320] = "";
	int64_t last = info->epoch < o->epochs ? r->per_epoch - 1 : 0;
	if (info->data_seed != o->seed)
		snprintf(why, sizeof why, "the checkpoint was trained with --seed %llu, not %llu",
		         (unsigned long long)info->data_seed, (unsigned long long)o->seed);
	else if (info->epoch > o->epochs)
		snprintf(why, sizeof why, "info.epoch is %lld, accepted 0..%d (--epochs)",
		         (long long)info->epoch, o->epochs);
	else if (info->batch > last)
		snprintf(why, sizeof why,
		         "info.batch is %lld, accepted 0..%lld (%s%lld training images make %lld "
		         "batches of %d an epoch)",
		         (long long)info->batch, (long long)last,
		         last ? "" : "every epoch is done; ", (long long)r->train.n,
		         (long long)r->per_epoch, o->batch);
	else if (info->step != info->epoch * r->per_epoch + info->batch)
		snprintf(why, sizeof why,
		         "info.step is %lld, accepted %lld..%lld (epoch %lld, batch %lld, %lld "
		         "batches an epoch: saved with another --batch?)",
		         (long long)info->step,
		         (long long)(info->epoch * r->per_epoch + info->batch),
		         (long long)(info->epoch * r->per_epoch + info->batch),
		         (long long)info->epoch, (long long)info->batch, (long long)r->per_epoch);
	if (!*why)
		return 0;
	if (r->rank == 0)
		fprintf(stderr, PROG ": %s: %s\n", o->ckpt_dir, why);
	return -1;
}

/* The --checkpoint-dir locked for this job (a second job on it is refused here,
 * before it trains), then --init's weights, then --resume's checkpoint and training
 * position. Every failure here is every rank's (each call is collective and agrees on
 * its status, and every rank checks the same info), so the job ends without
 * MPI_Abort. */
static int restore(struct run *r)
{
	const struct options *o = &r->o;
	int status = -1;
	if (o->ckpt_dir)
		CLI_CHECK_GOTO(sf_checkpoint_lock(r->m, o->ckpt_dir, SF_CHECKPOINT_WRITE), done);
	if (o->init_path)
		CLI_CHECK_GOTO(sf_model_import_safetensors(r->m, o->init_path), done);
	if (o->resume) {
		struct sf_checkpoint_info info;
		int found = 0; /* every rank gets the same answer */
		CLI_CHECK_GOTO(sf_checkpoint_latest(r->m, o->ckpt_dir, &found, NULL, 0), done);
		if (!found) {
			if (r->rank == 0)
				fprintf(stderr,
				        PROG ": no checkpoint in %s yet: starting from scratch\n",
				        o->ckpt_dir);
			status = 0;
			goto done;
		}
		CLI_CHECK_GOTO(sf_checkpoint_load(r->m, o->ckpt_dir, &info), done);
		if (check_position(r, &info) < 0)
			goto done;
		r->step = info.step, r->epoch = info.epoch, r->b0 = info.batch;
		r->saved = info.step;
		if (r->rank == 0)
			fprintf(stderr,
			        PROG ": resumed from %s at step %lld (epoch %lld, batch %lld)\n",
			        o->ckpt_dir, (long long)r->step, (long long)r->epoch + 1,
			        (long long)r->b0);
	}
	status = 0;
done:
	return status;
}

static void print_banner(const struct run *r)
{
	size_t np = 0;
	sf_model_param_count(r->m, &np);
	if (r->rank == 0)
		fprintf(stderr,
		        PROG
		        ": %d rank(s), %zu parameters, %lld training / %lld test images, batch "
		        "%d, %lld steps per epoch, %d epochs\n",
		        r->size, np, (long long)r->train.n, (long long)r->test.n, r->o.batch,
		        (long long)r->per_epoch, r->o.epochs);
}

/* What the training loop measures for its progress and epoch lines. */
struct meter {
	double t_start, t_epoch;       /* when training, and this epoch, started */
	double since_loss, epoch_loss; /* loss sums since the last progress line, this epoch */
	int64_t since_n, epoch_n;      /* ... and their counts */
	int64_t read_here;             /* steps of this process whose loss is read (not
	                                  resumed ones) */
	int64_t prev_ticket;           /* the step whose loss is not read yet, or -1 */
	int64_t prev_step;             /* its step (1-based) */
};

/* Rank 0, every --progress-every steps, once step `step`'s loss is read: the mean loss
 * since the last line, the rate and the time left. The loss is read a step late (a
 * step stays in flight), so the line comes then, under the step the loss belongs to;
 * samples/s is the samples of the steps read over the time since training started. */
static void print_progress(const struct run *r, struct meter *mt, int64_t step)
{
	const struct options *o = &r->o;
	if (step % o->progress_every != 0 || r->rank != 0 || !mt->since_n)
		return;
	double el = cli_now() - mt->t_start;
	double rate = (double)mt->read_here * o->batch / el;
	char eta[32];
	int64_t left = r->total - step;
	if (o->max_steps && o->max_steps - step < left)
		left = o->max_steps - step;
	cli_fmt_eta((double)left * o->batch / rate, eta, sizeof eta);
	printf("epoch %lld/%d step %lld/%lld loss %.4f samples/s %.1f eta %s\n",
	       (long long)r->epoch + 1, o->epochs, (long long)step, (long long)r->total,
	       mt->since_loss / (double)mt->since_n, rate, eta);
	fflush(stdout);
	mt->since_loss = 0, mt->since_n = 0;
}

/* Reads the loss of the step left in flight, if any, into the sums, and prints its
 * progress line (a step's loss is read within its epoch: train_epoch reads the last
 * before returning). */
static int take_loss(struct run *r, struct meter *mt)
{
	int status = -1;
	if (mt->prev_ticket >= 0) {
		double l;
		CLI_CHECK_GOTO(sf_model_loss(r->m, mt->prev_ticket, &l), done);
		mt->since_loss += l, mt->since_n++, mt->epoch_loss += l, mt->epoch_n++;
		mt->prev_ticket = -1;
		mt->read_here++;
		print_progress(r, mt, mt->prev_step);
	}
	status = 0;
done:
	return status;
}

/* A checkpoint of the position `info`, unless this step is already the one loaded or
 * last written (resumed with --max-steps reached: the same step again). */
static int save(struct run *r, const struct sf_checkpoint_info *info)
{
	int status = -1;
	if (info->step != r->saved) {
		CLI_CHECK_GOTO(sf_checkpoint_save(r->m, r->o.ckpt_dir, info), done);
		r->saved = info->step;
	}
	status = 0;
done:
	return status;
}

/* The steps of epoch r->epoch from batch r->b0 to its end, or until --max-steps:
 * then *stopped is set and r->b0 is the next batch. One step stays in flight while
 * the next is submitted; its loss is read before returning. */
static int train_epoch(struct run *r, struct meter *mt, int *stopped)
{
	const struct options *o = &r->o;
	int status = -1;
	for (int64_t b = r->b0; b < r->per_epoch; b++) {
		if (o->max_steps && r->step >= o->max_steps) {
			*stopped = 1;
			r->b0 = b;
			break;
		}
		CLI_CHECK_GOTO(sf_dataset_batch(&r->train, o->seed, r->epoch, b, o->batch, r->first,
		                                r->rows, r->x, r->y),
		               done);
		CLI_CHECK_GOTO(sf_model_set_lr(r->m, cosine_lr(o, r->step, r->total)), done);
		const float *in[1] = {r->x};
		struct sf_batch batch = {.ninputs = 1, .inputs = in, .labels = r->y};
		int64_t ticket;
		CLI_CHECK_GOTO(sf_model_step(r->m, &batch, &ticket), done);
		if (take_loss(r, mt) < 0) /* the previous step's */
			goto done;
		mt->prev_ticket = ticket;
		r->step++;
		mt->prev_step = r->step;
		if (o->ckpt_every && r->step % o->ckpt_every == 0) {
			struct sf_checkpoint_info info = {r->step, r->epoch, b + 1, o->seed};
			if (b + 1 == r->per_epoch)
				info.epoch = r->epoch + 1, info.batch = 0;
			/* the save waits for the step: its loss first, at no cost */
			if (take_loss(r, mt) < 0 || save(r, &info) < 0)
				goto done;
		}
	}
	if (take_loss(r, mt) < 0)
		goto done;
	status = 0;
done:
	return status;
}

/* After a whole epoch: the test set, the epoch line, and a checkpoint unless
 * --checkpoint-every says when. */
static int end_epoch(struct run *r, struct meter *mt, double *tl, double *acc)
{
	const struct options *o = &r->o;
	int status = -1;
	CLI_CHECK_GOTO(evaluate(r, tl, acc), done);
	if (r->rank == 0) {
		printf("epoch %lld time %.1f train_loss %.4f test_loss %.4f test_accuracy %.4f\n",
		       (long long)r->epoch + 1, cli_now() - mt->t_epoch,
		       mt->epoch_n ? mt->epoch_loss / (double)mt->epoch_n : 0.0, *tl, *acc);
		fflush(stdout);
	}
	if (o->ckpt_dir && !o->ckpt_every) {
		struct sf_checkpoint_info info = {r->step, r->epoch + 1, 0, o->seed};
		if (save(r, &info) < 0)
			goto done;
	}
	mt->t_epoch = cli_now(), mt->epoch_loss = 0, mt->epoch_n = 0;
	status = 0;
done:
	return status;
}

/* The epochs from the current position; *stopped when --max-steps ends them early. */
static int train(struct run *r, double *tl, double *acc, int *stopped)
{
	struct meter mt = {.t_start = cli_now(), .t_epoch = cli_now(), .prev_ticket = -1};
	for (; r->epoch < r->o.epochs; r->epoch++, r->b0 = 0) {
		if (train_epoch(r, &mt, stopped) < 0)
			return -1;
		if (*stopped)
			return 0;
		if (end_epoch(r, &mt, tl, acc) < 0)
			return -1;
	}
	return 0;
}

/* Stopped by --max-steps: a checkpoint of the position (unless the periodic save
 * just wrote, or the resumed checkpoint is, this very step) and the test set. */
static int end_stopped(struct run *r, double *tl, double *acc)
{
	const struct options *o = &r->o;
	int status = -1;
	if (o->ckpt_dir) {
		struct sf_checkpoint_info info = {r->step, r->epoch, r->b0, o->seed};
		if (save(r, &info) < 0)
			goto done;
	}
	CLI_CHECK_GOTO(evaluate(r, tl, acc), done);
	if (r->rank == 0)
		fprintf(stderr, PROG ": stopped after %lld steps (--max-steps)\n",
		        (long long)r->step);
	status = 0;
done:
	return status;
}

int main(int argc, char **argv)
{
	struct run r = {.saved = -1};
	int status = 1, stopped = 0;
	double acc = 0, tl = 0;
	cli_prog = PROG;
	cli_usage = usage;
	int prc = parse(argc, argv, &r.o);
	if (prc)
		return prc == 1 ? 0 : 2;

	CLI_CHECK_ALIKE_GOTO(sf_init(&argc, &argv, &r.ctx), done);
	CLI_CHECK_GOTO(sf_context_world(r.ctx, &r.rank, &r.size), done);
	if (load_data(&r) < 0 || build_model(&r) < 0)
		goto done;
	if (restore(&r) < 0) {
		r.agreed = 1;
		goto done;
	}
	print_banner(&r);
	if (train(&r, &tl, &acc, &stopped) < 0)
		goto done;
	if (stopped && end_stopped(&r, &tl, &acc) < 0)
		goto done;
	if (r.o.export_path)
		CLI_CHECK_GOTO(sf_model_export_safetensors(r.m, r.o.export_path), done);
	if (r.rank == 0) {
		printf("test_accuracy %.4f\n", acc);
		fflush(stdout);
	}
	status = 0;
done:
	free(r.x);
	free(r.y);
	free(r.logits);
	sf_dataset_free(&r.train);
	sf_dataset_free(&r.test);
	if (r.m && sf_model_destroy(r.m) < 0)
		status = 1;
	if (r.ctx && status != 0 && r.size > 1 && !r.agreed) {
		/* the other ranks may wait in a collective this rank will never join */
		fprintf(stderr, PROG ": rank %d failed; aborting the job\n", r.rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (r.ctx)
		sf_finalize(r.ctx);
	return status;
}
