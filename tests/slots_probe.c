/*
 * slots_probe.c — the ring slots and gradient slots are sized per unit: the floats
 * sf_model_stats counts equal the slot sizes computed here, apart from the library,
 * from the units' sizes and the documented slot rule (docs/architecture.md, "Units,
 * orders and slots"), and a model whose largest unit is its tied embedding keeps less
 * than slots x largest. Run by tests/slots.sh on 1 and 2 ranks under each
 * configuration (SHARDFLOW_* in the environment); prints one line and exits 0 when
 * every count matches, 1 with the numbers otherwise.
 *
 * The model: token ids (V = 300, T = 4), an embedding (V x W, W = 8: 2 400 parameters)
 * whose matrix the output head reuses (tied), 6 blocks of h + fc2(gelu(fc1(ln(h))))
 * (8 -> 16 -> 8: 16 + 144 + 136 = 296 parameters), each a unit, and a final
 * layernorm, a unit of its own (16). Units: the embedding's first (read first and by
 * the head last: width 2), the blocks, the final layernorm.
 *
 * The slot rule for it (slots are reused oldest-freed first, and each is sized by the
 * largest unit it ever holds): the embedding's unit is gathered first into ring slot 0
 * and its backward, starting at the head, takes gradient slot 0; it keeps both until
 * its backward ends at the embedding, so slot 0 of each is the embedding's. The other
 * units take the other slots in turn; the 6 blocks outnumber the depth + 1 other ring
 * slots (depth <= 4) and alternate over the 2 other gradient slots, so each of those
 * holds a block at some time, and a block is the largest of them. Hence, with N ranks
 * and S = ceil(P / N):
 *   ring  = N S_embed + (depth + 1) N S_block               (full sharding)
 *   grads = g_embed + 2 g_block, g = N S (P with sharding none)
 */
#include "shardflow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V 300
#define W 8
#define H 16
#define T 4
#define NBLOCKS 6
#define BATCH 4

#define CHECK(call)                                                                          \
	do {                                                                                 \
		int rc_ = (call);                                                            \
		if (rc_ != SF_OK) {                                                          \
			fprintf(stderr, "slots_probe: %s:%d: %s failed (%d): %s\n", __FILE__, \
			        __LINE__, #call, rc_, sf_last_error());                      \
			exit(1);                                                             \
		}                                                                            \
	} while (0)

static sf_graph *build(void)
{
	sf_graph *g;
	int x, labels, e, h, a, y, loss, width = W, classes = V;
	CHECK(sf_graph_create("slots", &g));
	CHECK(sf_graph_set_seq_len(g, T));
	CHECK(sf_graph_int_input(g, "tok", V, &x));
	CHECK(sf_graph_label_input(g, "label", V, &labels));
	CHECK(sf_graph_layer(g, "embedding", &x, 1, &width, sizeof width, "wte", &e));
	h = e;
	for (int b = 0; b < NBLOCKS; b++) {
		char name[32];
		snprintf(name, sizeof name, "block%d", b);
		CHECK(sf_graph_unit_begin(g, name));
		snprintf(name, sizeof name, "block%d.ln", b);
		CHECK(sf_graph_layernorm(g, h, name, &a));
		snprintf(name, sizeof name, "block%d.fc1", b);
		CHECK(sf_graph_linear(g, a, H, name, &a));
		CHECK(sf_graph_gelu(g, a, &a));
		snprintf(name, sizeof name, "block%d.fc2", b);
		CHECK(sf_graph_linear(g, a, W, name, &a));
		CHECK(sf_graph_add(g, h, a, &h));
		CHECK(sf_graph_unit_end(g));
	}
	CHECK(sf_graph_layernorm(g, h, "ln_f", &h));
	CHECK(sf_graph_layer_tied(g, "linear_nobias", &h, 1, &classes, sizeof classes, "head", e,
	                          &y));
	CHECK(sf_graph_softmax_cross_entropy(g, y, labels, &loss));
	return g;
}

static size_t ceil_div(size_t a, size_t b)
{
	return (a + b - 1) / b;
}

int main(int argc, char **argv)
{
	sf_context *ctx;
	sf_model *m;
	struct sf_config cfg;
	struct sf_model_options o;
	struct sf_model_stats st;
	int rank, N, first, rows;
	CHECK(sf_init(&argc, &argv, &ctx));
	CHECK(sf_context_world(ctx, &rank, &N));
	CHECK(sf_context_config(ctx, &cfg));
	sf_graph *g = build();
	CHECK(sf_model_options_init(&o));
	o.batch = BATCH;
	CHECK(sf_model_create(ctx, g, &o, &m));
	CHECK(sf_graph_destroy(g));

	/* two steps and an evaluation: every pass takes its slots, and step.c refuses a
	 * slot smaller than the unit it gets */
	CHECK(sf_model_local_rows(m, &first, &rows));
	int32_t ids[BATCH * T], lab[BATCH * T];
	for (int i = 0; i < BATCH * T; i++)
		ids[i] = (i * 37 + 11) % V, lab[i] = (i * 53 + 5) % V;
	const int32_t *idp[1] = {ids + first * T};
	struct sf_batch b = {.labels = lab + first * T, .nint_inputs = 1, .int_inputs = idp};
	for (int s = 0; s < 2; s++)
		CHECK(sf_model_step(m, &b, NULL));
	const int32_t *all[1] = {ids};
	struct sf_batch whole = {.labels = lab, .nint_inputs = 1, .int_inputs = all};
	double loss;
	CHECK(sf_model_evaluate(m, &whole, BATCH, &loss));
	CHECK(sf_model_stats(m, &st));

	/* the units' sizes, from the layers' shapes */
	size_t P[NBLOCKS + 2];
	P[0] = (size_t)V * W;
	for (int u = 1; u <= NBLOCKS; u++)
		P[u] = 2 * W + (size_t)(W * H + H) + (size_t)(H * W + W);
	P[NBLOCKS + 1] = 2 * W;
	int U = NBLOCKS + 2, depth = cfg.prefetch_depth;
	size_t n = (size_t)N, S[NBLOCKS + 2], sumS = 0, sumP = 0, sumNS = 0;
	for (int u = 0; u < U; u++) {
		S[u] = ceil_div(P[u], n);
		sumS += S[u], sumP += P[u], sumNS += n * S[u];
	}
	size_t params, grads, ring = 0, gslots;
	switch (cfg.sharding) {
	case SF_SHARD_FULL:
		ring = n * S[0] + (size_t)(depth + 1) * n * S[1];
		gslots = n * S[0] + 2 * n * S[1];
		params = sumS + ring;
		grads = sumS + gslots + S[0]; /* shards, slots, the accumulation buffer */
		break;
	case SF_SHARD_GRAD_OP:
		gslots = n * S[0] + 2 * n * S[1];
		params = sumNS + sumS;
		grads = sumS + gslots + S[0];
		break;
	case SF_SHARD_NONE:
		gslots = P[0] + 2 * P[1];
		params = sumP;
		grads = gslots;
		break;
	default:
		fprintf(stderr, "slots_probe: sharding %d is not one this probe knows\n",
		        (int)cfg.sharding);
		return 1;
	}
	size_t got_p = st.param_bytes / sizeof(float), got_g = st.grad_bytes / sizeof(float);
	size_t largest = cfg.sharding == SF_SHARD_NONE ? P[0] : n * S[0];
	int R = cfg.sharding == SF_SHARD_FULL ? depth + 2 : 0, G = 3;
	int bad = got_p != params || got_g != grads || st.ring_slots != R ||
	          (R > 0 && ring >= (size_t)R * largest) || gslots >= (size_t)G * largest;
	printf("rank %d of %d, depth %d, sharding %d: parameter floats %zu (expected %zu: ring "
	       "%zu of %d x %zu), gradient floats %zu (expected %zu: slots %zu of %d x %zu)%s\n",
	       rank, N, depth, (int)cfg.sharding, got_p, params, ring, R, largest, got_g, grads,
	       gslots, G, largest, bad ? ": MISMATCH" : "");
	CHECK(sf_model_destroy(m));
	CHECK(sf_finalize(ctx));
	return bad;
}
