/* hello_shardflow.c — a complete shardflow program: 20 training steps of
 * input(8) -> linear(32) -> gelu -> linear(4) -> softmax cross-entropy on data it
 * makes up (the label is the quadrant of the first two features). Rank 0 prints
 * each step's loss. On 1 rank or N:  ./hello_shardflow   mpirun -np 2 ./hello_shardflow */
#include <shardflow.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { DIM = 8, HIDDEN = 32, CLASSES = 4, BATCH = 64, STEPS = 20 };

/* Every call returns SF_OK or an error whose message sf_last_error() keeps. */
#define CHECK(call)                                                                                \
	do {                                                                                       \
		if ((call) != SF_OK) {                                                             \
			fprintf(stderr, "hello_shardflow: %s: %s\n", #call, sf_last_error());      \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

/* Feature d of global row `row` of step `step`, in [-1, 1): a hash of the three, so a
 * rank makes only its own rows and every world size sees the same global batches. */
static float feature(int step, int row, int d)
{
	uint32_t h = ((uint32_t)step * 65599u + (uint32_t)row) * 2654435761u ^ (uint32_t)d * 40503u;
	h = (h ^ (h >> 15)) * 2246822519u;
	return (float)((h ^ (h >> 13)) >> 8) / 8388608.0f - 1.0f;
}

int main(int argc, char **argv)
{
	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	float *x = NULL;   /* this rank's rows of a batch: (rows, DIM) ... */
	int32_t *y = NULL; /* ... and their labels */
	int status = 1, rank, first, rows, in, label, h, logits, loss;

	sf_log_set_quiet(1); /* CHECK prints each error: the library need not */
	CHECK(sf_init(&argc, &argv, &ctx)); /* MPI (unless started), StarPU, comm worker */
	CHECK(sf_context_world(ctx, &rank, NULL));

	/* The model, a graph of nodes; each layer with parameters is a sharded unit. */
	CHECK(sf_graph_create("hello", &g));
	CHECK(sf_graph_input(g, "x", DIM, &in));
	CHECK(sf_graph_label_input(g, "label", CLASSES, &label));
	CHECK(sf_graph_linear(g, in, HIDDEN, "fc1", &h));
	CHECK(sf_graph_gelu(g, h, &h));
	CHECK(sf_graph_linear(g, h, CLASSES, "fc2", &logits));
	CHECK(sf_graph_softmax_cross_entropy(g, logits, label, &loss));

	struct sf_model_options o;
	CHECK(sf_model_options_init(&o)); /* batch 64, SGD lr 0.01 momentum 0.9, seed 1 */
	o.batch = BATCH; /* global, split over the ranks: at least one sample each */
	o.optimizer = SF_OPT_ADAMW;
	o.lr = 0.01f;
	CHECK(sf_model_create(ctx, g, &o, &m)); /* collective: shards the parameters */

	/* This rank's samples of every global batch: [first, first + rows). */
	CHECK(sf_model_local_rows(m, &first, &rows));
	x = malloc(sizeof *x * (size_t)rows * DIM);
	y = malloc(sizeof *y * (size_t)rows);
	if (!x || !y) {
		fprintf(stderr, "hello_shardflow: out of memory\n");
		goto out;
	}
	const float *inputs[] = {x};
	struct sf_batch batch = {.ninputs = 1, .inputs = inputs, .labels = y};

	for (int step = 1; step <= STEPS; step++) {
		for (int r = 0; r < rows; r++) {
			for (int d = 0; d < DIM; d++)
				x[r * DIM + d] = feature(step, first + r, d);
			/* the label: the quadrant of (x0, x1) */
			y[r] = (x[r * DIM] > 0) + 2 * (x[r * DIM + 1] > 0);
		}
		int64_t ticket;
		double l;
		CHECK(sf_model_step(m, &batch, &ticket)); /* submits the tasks, returns */
		CHECK(sf_model_loss(m, ticket, &l));      /* waits: the global mean loss */
		if (rank == 0)
			printf("step %d loss %.4f\n", step, l);
	}
	status = 0;
out:
	free(x);
	free(y);
	int rc = sf_model_destroy(m); /* each accepts NULL: cleans up after any failure */
	rc |= sf_graph_destroy(g);
	rc |= sf_finalize(ctx);
	if (rc != SF_OK) {
		fprintf(stderr, "hello_shardflow: cleanup: %s\n", sf_last_error());
		status = 1;
	}
	return status;
}
