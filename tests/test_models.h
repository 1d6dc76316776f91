/*
 * test_models.h — the small models the test drivers train (train_dump,
 * ckpt_driver) and the dump file they write for dump_compare; header-only.
 *
 *   mlp      32 -> 64 -> 64 -> 10, GELU
 *   residual 24 -> 32 (h) -> GELU -> 32 -> add(h, .) -> ReLU -> 10 (a DAG with a skip edge)
 *   uneven   12 -> 13 -> 25 -> 5, GELU: P = 169, 350, 130, none divisible by 3 or 4
 *   deep     16 -> 24 x 6 -> 10, GELU: 7 units, for the residency test
 *   pairs    16 -> 6 units of [16 -> 24, GELU, 24 -> 16] -> 10 (sf_graph_unit_begin):
 *            each unit's second linear reads an activation recompute drops
 *   wide     32 -> 256 -> 256 -> 10, ReLU: a unit of many comm pieces
 *   blocks   a small GPT-shaped model on token ids: sequences of T = 3 ids in [0, 16)
 *            (sf_graph_int_input), a token embedding (16 -> 16), 3 blocks of
 *            x + fc_b(gelu(fc_a(layernorm(x)))) each grouped into one unit (the
 *            layernorm's saved mean and rstd go from forward to backward)
 *            (sf_graph_unit_begin), and a head tied to the embedding's parameters
 *            (sf_graph_layer_tied: a linear_nobias reading the embedding's W): 16
 *            classes per token, label = (3 id + 1) mod 16. The embedding unit is
 *            read first and last, so the planner's width is 2.
 *   nanogpt  sf_gpt_graph itself (models/gpt.c): vocabulary 16, context 5, 2 layers, 2
 *            heads, embd 10 (blocks of 1 330 parameters: not divisible by 3 ranks),
 *            the same ids and labels as blocks; the library's names, units and init.
 *   nanogpt-untied  the same with its own lm_head weights (tie_weights 0).
 *   swiglu   Llama's block ops on float rows (D 24, 10 classes): fc_in (24 -> 32), 2
 *            blocks of h + w2(silu(w1(rmsnorm(h))) * w3(rmsnorm(h))) (no biases, FFN
 *            48), each one unit, then rmsnorm and the head: rmsnorm, silu and mul
 *            under the scheduler (N ranks = 1 rank, tests/equivalence.sh).
 *   llama    a small Llama-shaped decoder on the gpt model's token ids and labels (T =
 *            5, vocabulary 16, width 16, grouped-query attention: 4 query heads of 4 on
 *            2 key/value heads, a fused q | k | v projection of 32): a token embedding
 *            (its own unit), 2 blocks of h + o(attn(rope(qkv(rmsnorm(h))))) then h +
 *            w2(silu(w1(rmsnorm(h))) * w3(rmsnorm(h))) (no biases, rope on q and k,
 *            theta 10000), each one unit, a final rmsnorm and an untied head in a unit.
 *   llama-hf sf_llama_graph itself (models/llama.c): vocabulary 16, context 5, dim 16,
 *            2 layers, 4 heads on 2 key/value heads, Llama's MLP rule with multiple_of
 *            8 (48), untied; the library's names, units and init; the llama model's ids.
 *   gpt      a small GPT on the same token ids and labels, sequences of T = 5: a token
 *            embedding (16 -> 16) and a learned position embedding of 8 positions (rows
 *            t >= T unused) in unit "embed"; 3 transformer blocks, each one unit:
 *              x = x + proj(attention(qkv(ln_1(x))))   qkv 16 -> 48, 2 heads of 8, causal
 *              x = x + fc_b(gelu(fc_a(ln_2(x))))       fc_a 16 -> 24, fc_b 24 -> 16
 *            (layernorms and attention save buffers from forward to backward), and the
 *            head tied to the token embedding. Its gradient is tests/grad_check's.
 *            Compared across rank counts with SGD only (tests/units.sh): with AdamW a
 *            parameter whose gradient is about AdamW's eps (1e-8) turns the gradient's
 *            rounding, which depends on the order of the sums, into a visible share of
 *            its step (seen: a weight of gradient 1.9e-8 computed 1.8e-8 on 2 ranks
 *            moved 1.5 % of lr apart). The attention's q and k gradients are small and
 *            cancel in the softmax's backward, so this model has several; and the k part
 *            of qkv's bias has a gradient of exactly 0 in theory (softmax ignores the
 *            q.b_k every score of a query gets).
 *
 * Dump format: "SFDUMP1\n", int64 nsteps, nsteps doubles (losses), int64 nparams,
 * nparams floats (parameters), native byte order.
 */
#ifndef SF_TESTS_TEST_MODELS_H
#define SF_TESTS_TEST_MODELS_H

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/synthetic.h"
#include "shardflow.h"
#include "examples/cli.h"

#define DUMP_MAGIC "SFDUMP1\n"

enum model_kind {
	MODEL_MLP,
	MODEL_RESIDUAL,
	MODEL_UNEVEN,
	MODEL_DEEP,
	MODEL_WIDE,
	MODEL_BLOCKS,
	MODEL_GPT,
	MODEL_NANOGPT,
	MODEL_NANOGPT_UNTIED,
	MODEL_SWIGLU,
	MODEL_LLAMA,
	MODEL_LLAMA_HF,
	MODEL_MLP_TP,
	MODEL_NANOGPT_TP,
	MODEL_RESIDUAL_TP,
	MODEL_LLAMA_HF_TP,
	MODEL_MLP_TP_GATHER,
	MODEL_NANOGPT_VP,
	MODEL_LLAMA_HF_VP,
	MODEL_NANOGPT_VPT,
	MODEL_LLAMA_HF_VPT,
	MODEL_NANOGPT_VPT15,
	MODEL_NANOGPT_VPO9,
	MODEL_PAIRS
};

/* "mlp", "residual", "uneven", "deep", "wide", "blocks", "gpt", "nanogpt",
 * "nanogpt-untied", "swiglu", "llama", "llama-hf", "mlp-tp", "nanogpt-tp",
 * "residual-tp", "llama-hf-tp", "mlp-tp-gather", "nanogpt-vp", "llama-hf-vp",
 * "nanogpt-vpt", "llama-hf-vpt" -> kind; -1 when unknown. The -vp models are the -tp
 * ones vocabulary-parallel (vocab_parallel 1: the token embedding an embedding_vp,
 * the untied lm_head a linear_col, the loss over split logits); -vpt the same with the
 * head tied to the embedding (reading its rows of this TP rank). nanogpt-vpt15 is
 * nanogpt-vpt with a vocabulary of 15 (no K > 1 divides it: the TP slices padded);
 * nanogpt-vpo9 the tied nanogpt of vocabulary 9 vocabulary-parallel only (its blocks
 * whole, so any K runs it: at K 4 the last rank holds padding alone). "pairs" is
 * 16 -> 6 grouped units of fc_a (16 -> 24), GELU, fc_b (24 -> 16) -> 10: fc_b's output
 * leaves its unit's segment (recompute keeps it) while its input is dropped. */
static inline int model_kind_parse(const char *s, enum model_kind *out)
{
	static const char *const names[] = {
	    "mlp",         "residual",      "uneven",     "deep",           "wide",
	    "blocks",      "gpt",           "nanogpt",    "nanogpt-untied", "swiglu",
	    "llama",       "llama-hf",      "mlp-tp",     "nanogpt-tp",     "residual-tp",
	    "llama-hf-tp", "mlp-tp-gather", "nanogpt-vp", "llama-hf-vp", "nanogpt-vpt",
	    "llama-hf-vpt", "nanogpt-vpt15", "nanogpt-vpo9", "pairs"};
	for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
		if (!strcmp(s, names[i])) {
			*out = (enum model_kind)i;
			return 0;
		}
	return -1;
}

/* The options every training driver takes (--model, --steps, --batch, --optimizer,
 * --lr, --seed) and their defaults: mlp, 6 steps, batch 24, sgd, seed 1; lr 0.01 for
 * sgd, 0.001 for adamw and 0.0001 for lion unless given. */
struct train_options {
	enum model_kind model;
	int steps, batch;
	enum sf_optimizer optimizer;
	float lr; /* <= 0 until train_options_finish(): the optimizer's default */
	uint64_t seed;
};

static inline void train_options_init(struct train_options *t)
{
	*t = (struct train_options){
	    .model = MODEL_MLP, .steps = 6, .batch = 24, .optimizer = SF_OPT_SGD, .seed = 1};
}

static inline void train_options_finish(struct train_options *t)
{
	if (t->lr <= 0.0f)
		t->lr = t->optimizer == SF_OPT_LION    ? 1e-4f
		        : t->optimizer == SF_OPT_ADAMW ? 1e-3f
		                                       : 0.01f;
}

static inline int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* One option of struct train_options: 1 taken, 0 not one of them, -1 a bad value.
 * --steps must be at least min_steps. */
/* The nanogpt and llama models' context: 5, or a program's --context (context
 * parallelism needs 2 K chunks of it) */
static int tm_context = 5;

static inline int train_option(struct train_options *t, const char *opt, const char *val,
                               int min_steps)
{
	char *end;
	if (!strcmp(opt, "--model"))
		return model_kind_parse(val, &t->model) ? -1 : 1;
	if (!strcmp(opt, "--steps"))
		return parse_int(val, min_steps, INT_MAX, &t->steps) ? -1 : 1;
	if (!strcmp(opt, "--batch"))
		return parse_int(val, 1, INT_MAX, &t->batch) ? -1 : 1;
	if (!strcmp(opt, "--optimizer"))
		return sf_optimizer_from_name(val, &t->optimizer) ? -1 : 1;
	if (!strcmp(opt, "--lr")) {
		errno = 0;
		double v = strtod(val, &end);
		if (end == val || *end || errno || !isfinite(v) || v <= 0.0)
			return -1;
		t->lr = (float)v;
		return 1;
	}
	if (!strcmp(opt, "--context")) /* the nanogpt and llama models' (tm_context) */
		return parse_int(val, 1, 4096, &tm_context) ? -1 : 1;
	if (!strcmp(opt, "--seed")) {
		errno = 0;
		unsigned long long v = strtoull(val, &end, 10);
		if (end == val || *end || errno || val[0] < '0' || val[0] > '9')
			return -1;
		t->seed = (uint64_t)v;
		return 1;
	}
	return 0;
}

/* The blocks model's body: embed, 3 grouped blocks, a head tied to the embedding. */
static inline int build_blocks(sf_graph *g, int x, int *y)
{
	int e, h, a, width = 16;
	CLI_CHECK_RETURN(sf_graph_unit_begin(g, "embed"));
	CLI_CHECK_RETURN(sf_graph_layer(g, "embedding", &x, 1, &width, sizeof width, "embed", &e));
	CLI_CHECK_RETURN(sf_graph_unit_end(g));
	h = e;
	for (int b = 0; b < 3; b++) {
		char name[32];
		snprintf(name, sizeof name, "block%d", b);
		CLI_CHECK_RETURN(sf_graph_unit_begin(g, name));
		snprintf(name, sizeof name, "block%d.ln", b);
		CLI_CHECK_RETURN(sf_graph_layernorm(g, h, name, &a));
		snprintf(name, sizeof name, "block%d.fc_a", b);
		CLI_CHECK_RETURN(sf_graph_linear(g, a, 24, name, &a));
		CLI_CHECK_RETURN(sf_graph_gelu(g, a, &a));
		snprintf(name, sizeof name, "block%d.fc_b", b);
		CLI_CHECK_RETURN(sf_graph_linear(g, a, 16, name, &a));
		CLI_CHECK_RETURN(sf_graph_add(g, h, a, &h));
		CLI_CHECK_RETURN(sf_graph_unit_end(g));
	}
	int in[1] = {h};
	CLI_CHECK_RETURN(
	    sf_graph_layer_tied(g, "linear_nobias", in, 1, &width, sizeof width, "head", e, y));
	return 0;
}

/* The gpt model's shapes (grad_check computes parameter offsets from them). */
#define GPT_T 5     /* rows per sample */
#define GPT_V 16    /* vocabulary = classes = the input's id range */
#define GPT_C 16    /* width of the residual stream */
#define GPT_NP 8    /* positions of the position embedding (> T) */
#define GPT_HEADS 2 /* attention heads (of 8 features each) */
#define GPT_MLP 24  /* hidden width of the MLP */
#define GPT_N 3     /* transformer blocks */

/* The gpt model's body: token and position embeddings, 3 grouped transformer blocks, a
 * head tied to the token embedding. */
static inline int build_gpt(sf_graph *g, int x, int *y)
{
	int e, h, a, width = GPT_C, classes = GPT_V;
	CLI_CHECK_RETURN(sf_graph_unit_begin(g, "embed"));
	CLI_CHECK_RETURN(sf_graph_layer(g, "embedding", &x, 1, &width, sizeof width, "wte", &e));
	CLI_CHECK_RETURN(sf_graph_pos_embedding(g, e, GPT_NP, "wpe", &h));
	CLI_CHECK_RETURN(sf_graph_unit_end(g));
	for (int b = 0; b < GPT_N; b++) {
		char name[32];
		snprintf(name, sizeof name, "h%d", b);
		CLI_CHECK_RETURN(sf_graph_unit_begin(g, name));
		snprintf(name, sizeof name, "h%d.ln_1", b);
		CLI_CHECK_RETURN(sf_graph_layernorm(g, h, name, &a));
		snprintf(name, sizeof name, "h%d.attn.c_attn", b);
		CLI_CHECK_RETURN(sf_graph_linear(g, a, 3 * GPT_C, name, &a));
		CLI_CHECK_RETURN(sf_graph_causal_attention(g, a, GPT_HEADS, &a));
		snprintf(name, sizeof name, "h%d.attn.c_proj", b);
		CLI_CHECK_RETURN(sf_graph_linear(g, a, GPT_C, name, &a));
		CLI_CHECK_RETURN(sf_graph_add(g, h, a, &h));
		snprintf(name, sizeof name, "h%d.ln_2", b);
		CLI_CHECK_RETURN(sf_graph_layernorm(g, h, name, &a));
		snprintf(name, sizeof name, "h%d.mlp.c_fc", b);
		CLI_CHECK_RETURN(sf_graph_linear(g, a, GPT_MLP, name, &a));
		CLI_CHECK_RETURN(sf_graph_gelu(g, a, &a));
		snprintf(name, sizeof name, "h%d.mlp.c_proj", b);
		CLI_CHECK_RETURN(sf_graph_linear(g, a, GPT_C, name, &a));
		CLI_CHECK_RETURN(sf_graph_add(g, h, a, &h));
		CLI_CHECK_RETURN(sf_graph_unit_end(g));
	}
	int in[1] = {h};
	CLI_CHECK_RETURN(
	    sf_graph_layer_tied(g, "linear_nobias", in, 1, &classes, sizeof classes, "head", e, y));
	return 0;
}

/* The swiglu model's body: Llama's pre-norm SwiGLU blocks on float rows (the
 * description at the top). */
static inline int build_swiglu(sf_graph *g, int x, int classes, int *y)
{
	int h, a, g1, g3, o, width = 32, ffn = 48;
	CLI_CHECK_RETURN(sf_graph_linear(g, x, width, "fc_in", &h));
	for (int b = 0; b < 2; b++) {
		char name[32];
		snprintf(name, sizeof name, "blk%d", b);
		CLI_CHECK_RETURN(sf_graph_unit_begin(g, name));
		snprintf(name, sizeof name, "blk%d.norm", b);
		CLI_CHECK_RETURN(sf_graph_rmsnorm(g, h, 1e-5f, name, &a));
		snprintf(name, sizeof name, "blk%d.w1", b);
		CLI_CHECK_RETURN(
		    sf_graph_layer(g, "linear_nobias", &a, 1, &ffn, sizeof ffn, name, &g1));
		CLI_CHECK_RETURN(sf_graph_silu(g, g1, &g1));
		snprintf(name, sizeof name, "blk%d.w3", b);
		CLI_CHECK_RETURN(
		    sf_graph_layer(g, "linear_nobias", &a, 1, &ffn, sizeof ffn, name, &g3));
		CLI_CHECK_RETURN(sf_graph_mul(g, g1, g3, &a));
		snprintf(name, sizeof name, "blk%d.w2", b);
		CLI_CHECK_RETURN(
		    sf_graph_layer(g, "linear_nobias", &a, 1, &width, sizeof width, name, &o));
		CLI_CHECK_RETURN(sf_graph_add(g, h, o, &h));
		CLI_CHECK_RETURN(sf_graph_unit_end(g));
	}
	CLI_CHECK_RETURN(sf_graph_rmsnorm(g, h, 1e-5f, "norm", &h));
	CLI_CHECK_RETURN(sf_graph_linear(g, h, classes, "head", y));
	return 0;
}

/* The llama model's body (the description at the top) */
static inline int build_llama(sf_graph *g, int x, int *y)
{
	enum { NH = 4, NKV = 2, HS = GPT_C / NH };
	int h, a, o, g1, g3, width = GPT_C, qkv = (NH + 2 * NKV) * HS, ffn = GPT_MLP,
	                     classes = GPT_V;
	CLI_CHECK_RETURN(sf_graph_unit_begin(g, "embed"));
	CLI_CHECK_RETURN(
	    sf_graph_layer(g, "embedding", &x, 1, &width, sizeof width, "tok_emb", &h));
	CLI_CHECK_RETURN(sf_graph_unit_end(g));
	for (int b = 0; b < 2; b++) {
		char name[32];
		snprintf(name, sizeof name, "l%d", b);
		CLI_CHECK_RETURN(sf_graph_unit_begin(g, name));
		snprintf(name, sizeof name, "l%d.attn_norm", b);
		CLI_CHECK_RETURN(sf_graph_rmsnorm(g, h, 1e-5f, name, &a));
		snprintf(name, sizeof name, "l%d.qkv", b);
		CLI_CHECK_RETURN(
		    sf_graph_layer(g, "linear_nobias", &a, 1, &qkv, sizeof qkv, name, &a));
		CLI_CHECK_RETURN(sf_graph_rope(g, a, (NH + NKV) * HS, HS, 10000.0f, &a));
		CLI_CHECK_RETURN(sf_graph_gqa_attention(g, a, NH, NKV, &a));
		snprintf(name, sizeof name, "l%d.o", b);
		CLI_CHECK_RETURN(
		    sf_graph_layer(g, "linear_nobias", &a, 1, &width, sizeof width, name, &o));
		CLI_CHECK_RETURN(sf_graph_add(g, h, o, &h));
		snprintf(name, sizeof name, "l%d.ffn_norm", b);
		CLI_CHECK_RETURN(sf_graph_rmsnorm(g, h, 1e-5f, name, &a));
		snprintf(name, sizeof name, "l%d.w1", b);
		CLI_CHECK_RETURN(
		    sf_graph_layer(g, "linear_nobias", &a, 1, &ffn, sizeof ffn, name, &g1));
		CLI_CHECK_RETURN(sf_graph_silu(g, g1, &g1));
		snprintf(name, sizeof name, "l%d.w3", b);
		CLI_CHECK_RETURN(
		    sf_graph_layer(g, "linear_nobias", &a, 1, &ffn, sizeof ffn, name, &g3));
		CLI_CHECK_RETURN(sf_graph_mul(g, g1, g3, &a));
		snprintf(name, sizeof name, "l%d.w2", b);
		CLI_CHECK_RETURN(
		    sf_graph_layer(g, "linear_nobias", &a, 1, &width, sizeof width, name, &o));
		CLI_CHECK_RETURN(sf_graph_add(g, h, o, &h));
		CLI_CHECK_RETURN(sf_graph_unit_end(g));
	}
	CLI_CHECK_RETURN(sf_graph_unit_begin(g, "out"));
	CLI_CHECK_RETURN(sf_graph_rmsnorm(g, h, 1e-5f, "norm", &h));
	CLI_CHECK_RETURN(
	    sf_graph_layer(g, "linear_nobias", &h, 1, &classes, sizeof classes, "head", y));
	CLI_CHECK_RETURN(sf_graph_unit_end(g));
	return 0;
}

/* Builds the chosen model; *D and *C are its input width and number of classes, *T
 * its rows per sample. */
static inline int build_model(enum model_kind kind, sf_graph **out, int *D, int *C, int *T)
{
	sf_graph *g = NULL;
	int x, labels, h, y, loss;
	*T = kind == MODEL_BLOCKS ? 3 : kind == MODEL_GPT || kind == MODEL_LLAMA ? GPT_T : 1;
	if (kind == MODEL_LLAMA_HF || kind == MODEL_LLAMA_HF_TP || kind == MODEL_LLAMA_HF_VP ||
	    kind == MODEL_LLAMA_HF_VPT) {
		struct sf_llama_config lc;
		sf_llama_config_init(&lc);
		lc.vocab = 16, lc.context = tm_context, lc.dim = 16, lc.layers = 2, lc.heads = 4;
		lc.kv_heads = 2, lc.multiple_of = 8;
		lc.tensor_parallel = kind == MODEL_LLAMA_HF_TP || kind == MODEL_LLAMA_HF_VP ||
		                     kind == MODEL_LLAMA_HF_VPT;
		lc.vocab_parallel = kind == MODEL_LLAMA_HF_VP || kind == MODEL_LLAMA_HF_VPT;
		lc.tie_weights = kind == MODEL_LLAMA_HF_VPT;
		*D = *C = lc.vocab, *T = lc.context;
		CLI_CHECK_GOTO(sf_llama_graph(&lc, &g), fail);
		*out = g;
		return 0;
	}
	if (kind == MODEL_NANOGPT || kind == MODEL_NANOGPT_UNTIED || kind == MODEL_NANOGPT_TP ||
	    kind == MODEL_NANOGPT_VP || kind == MODEL_NANOGPT_VPT || kind == MODEL_NANOGPT_VPT15 ||
	    kind == MODEL_NANOGPT_VPO9) {
		struct sf_gpt_config gc;
		sf_gpt_config_init(&gc);
		gc.context = tm_context, gc.layers = 2, gc.heads = 2, gc.embd = 10;
		gc.vocab = kind == MODEL_NANOGPT_VPT15 ? 15 : kind == MODEL_NANOGPT_VPO9 ? 9 : 16;
		gc.tie_weights = kind != MODEL_NANOGPT_UNTIED && kind != MODEL_NANOGPT_VP;
		gc.tensor_parallel = kind == MODEL_NANOGPT_TP || kind == MODEL_NANOGPT_VP ||
		                     kind == MODEL_NANOGPT_VPT || kind == MODEL_NANOGPT_VPT15;
		gc.vocab_parallel = kind == MODEL_NANOGPT_VP || kind == MODEL_NANOGPT_VPT ||
		                    kind == MODEL_NANOGPT_VPT15 || kind == MODEL_NANOGPT_VPO9;
		*D = *C = gc.vocab, *T = gc.context;
		CLI_CHECK_GOTO(sf_gpt_graph(&gc, &g), fail);
		*out = g;
		return 0;
	}
	switch (kind) {
	case MODEL_MLP:
	case MODEL_MLP_TP:
	case MODEL_MLP_TP_GATHER: *D = 32, *C = 10; break;
	case MODEL_RESIDUAL:
	case MODEL_RESIDUAL_TP: *D = 24, *C = 10; break;
	case MODEL_UNEVEN: *D = 12, *C = 5; break;
	case MODEL_DEEP:
	case MODEL_PAIRS: *D = 16, *C = 10; break;
	case MODEL_WIDE: *D = 32, *C = 10; break;
	case MODEL_BLOCKS: *D = 16, *C = 16; break;
	case MODEL_GPT: *D = GPT_V, *C = GPT_V; break;
	case MODEL_SWIGLU: *D = 24, *C = 10; break;
	case MODEL_LLAMA: *D = GPT_V, *C = GPT_V; break;
	case MODEL_NANOGPT:
	case MODEL_NANOGPT_UNTIED:
	case MODEL_NANOGPT_TP:
	case MODEL_LLAMA_HF:
	case MODEL_LLAMA_HF_TP:
	case MODEL_NANOGPT_VP:
	case MODEL_LLAMA_HF_VP:
	case MODEL_NANOGPT_VPT:
	case MODEL_LLAMA_HF_VPT:
	case MODEL_NANOGPT_VPT15:
	case MODEL_NANOGPT_VPO9: break;
	}
	CLI_CHECK_GOTO(sf_graph_create("train_dump", &g), fail);
	CLI_CHECK_GOTO(sf_graph_set_seq_len(g, *T), fail);
	if (kind == MODEL_BLOCKS || kind == MODEL_GPT || kind == MODEL_LLAMA)
		CLI_CHECK_GOTO(sf_graph_int_input(g, "tok", *D, &x), fail);
	else
		CLI_CHECK_GOTO(sf_graph_input(g, "x", *D, &x), fail);
	CLI_CHECK_GOTO(sf_graph_label_input(g, "label", *C, &labels), fail);
	switch (kind) {
	case MODEL_MLP:
		CLI_CHECK_GOTO(sf_graph_linear(g, x, 64, "fc1", &h), fail);
		CLI_CHECK_GOTO(sf_graph_gelu(g, h, &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, 64, "fc2", &h), fail);
		CLI_CHECK_GOTO(sf_graph_gelu(g, h, &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, *C, "fc3", &y), fail);
		break;
	case MODEL_RESIDUAL: {
		int a, r;
		CLI_CHECK_GOTO(sf_graph_linear(g, x, 32, "fc1", &h), fail);
		CLI_CHECK_GOTO(sf_graph_gelu(g, h, &a), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, a, 32, "fc2", &a), fail);
		CLI_CHECK_GOTO(sf_graph_add(g, h, a, &r), fail);
		CLI_CHECK_GOTO(sf_graph_relu(g, r, &r), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, r, *C, "fc3", &y), fail);
		break;
	}
	case MODEL_UNEVEN:
		CLI_CHECK_GOTO(sf_graph_linear(g, x, 13, "fc1", &h), fail);
		CLI_CHECK_GOTO(sf_graph_gelu(g, h, &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, 25, "fc2", &h), fail);
		CLI_CHECK_GOTO(sf_graph_gelu(g, h, &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, *C, "fc3", &y), fail);
		break;
	case MODEL_DEEP:
		h = x;
		for (int i = 1; i <= 6; i++) {
			char name[16];
			snprintf(name, sizeof(name), "fc%d", i);
			CLI_CHECK_GOTO(sf_graph_linear(g, h, 24, name, &h), fail);
			CLI_CHECK_GOTO(sf_graph_gelu(g, h, &h), fail);
		}
		CLI_CHECK_GOTO(sf_graph_linear(g, h, *C, "fc7", &y), fail);
		break;
	case MODEL_PAIRS:
		h = x;
		for (int i = 0; i < 6; i++) {
			char name[16];
			snprintf(name, sizeof name, "pair%d", i);
			CLI_CHECK_GOTO(sf_graph_unit_begin(g, name), fail);
			snprintf(name, sizeof name, "pair%d.fc_a", i);
			CLI_CHECK_GOTO(sf_graph_linear(g, h, 24, name, &h), fail);
			CLI_CHECK_GOTO(sf_graph_gelu(g, h, &h), fail);
			snprintf(name, sizeof name, "pair%d.fc_b", i);
			CLI_CHECK_GOTO(sf_graph_linear(g, h, 16, name, &h), fail);
			CLI_CHECK_GOTO(sf_graph_unit_end(g), fail);
		}
		CLI_CHECK_GOTO(sf_graph_linear(g, h, *C, "head", &y), fail);
		break;
	case MODEL_WIDE: /* fc2: 65 792 parameters, a shard of many comm pieces */
		CLI_CHECK_GOTO(sf_graph_linear(g, x, 256, "fc1", &h), fail);
		CLI_CHECK_GOTO(sf_graph_relu(g, h, &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, 256, "fc2", &h), fail);
		CLI_CHECK_GOTO(sf_graph_relu(g, h, &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, *C, "fc3", &y), fail);
		break;
	case MODEL_BLOCKS:
		if (build_blocks(g, x, &y))
			goto fail;
		break;
	case MODEL_GPT:
		if (build_gpt(g, x, &y))
			goto fail;
		break;
	case MODEL_SWIGLU:
		if (build_swiglu(g, x, *C, &y))
			goto fail;
		break;
	case MODEL_LLAMA:
		if (build_llama(g, x, &y))
			goto fail;
		break;
	case MODEL_MLP_TP: { /* the mlp's fc1 and fc2 as Megatron's MLP: column, then row */
		struct sf_linear_tp_config
		    col = {.out_dim = 64, .bias = 1, .init_std = 0.0f, .nparts = 1},
		    row = {.out_dim = 64, .bias = 1, .init_std = 0.0f, .nparts = 0};
		CLI_CHECK_GOTO(sf_graph_linear_col(g, x, &col, "fc1", &h), fail);
		CLI_CHECK_GOTO(sf_graph_gelu(g, h, &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear_row(g, h, &row, "fc2", &h), fail);
		CLI_CHECK_GOTO(sf_graph_gelu(g, h, &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, *C, "fc3", &y), fail);
		break;
	}
	case MODEL_MLP_TP_GATHER: { /* fc1 a linear_col whose output is gathered: whole */
		struct sf_linear_tp_config col = {.out_dim = 64, .bias = 1, .gather_output = 1};
		CLI_CHECK_GOTO(sf_graph_linear_col(g, x, &col, "fc1", &h), fail);
		CLI_CHECK_GOTO(sf_graph_gelu(g, h, &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, 64, "fc2", &h), fail);
		CLI_CHECK_GOTO(sf_graph_gelu(g, h, &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, h, *C, "fc3", &y), fail);
		break;
	}
	case MODEL_RESIDUAL_TP: { /* h feeds a col and the add: its gradient is summed */
		struct sf_linear_tp_config
		    col = {.out_dim = 64, .bias = 1, .init_std = 0.0f, .nparts = 1},
		    row = {.out_dim = 32, .bias = 1, .init_std = 0.0f, .nparts = 0};
		int a, r;
		CLI_CHECK_GOTO(sf_graph_linear(g, x, 32, "fc1", &h), fail);
		CLI_CHECK_GOTO(sf_graph_linear_col(g, h, &col, "fc_a", &a), fail);
		CLI_CHECK_GOTO(sf_graph_gelu(g, a, &a), fail);
		CLI_CHECK_GOTO(sf_graph_linear_row(g, a, &row, "fc_b", &a), fail);
		CLI_CHECK_GOTO(sf_graph_add(g, h, a, &r), fail);
		CLI_CHECK_GOTO(sf_graph_relu(g, r, &r), fail);
		CLI_CHECK_GOTO(sf_graph_linear(g, r, *C, "fc3", &y), fail);
		break;
	}
	case MODEL_NANOGPT:
	case MODEL_NANOGPT_UNTIED:
	case MODEL_NANOGPT_TP:
	case MODEL_LLAMA_HF:
	case MODEL_LLAMA_HF_TP:
	case MODEL_NANOGPT_VP:
	case MODEL_LLAMA_HF_VP:
	case MODEL_NANOGPT_VPT:
	case MODEL_LLAMA_HF_VPT:
	case MODEL_NANOGPT_VPT15:
	case MODEL_NANOGPT_VPO9: break; /* built above */
	}
	CLI_CHECK_GOTO(sf_graph_softmax_cross_entropy(g, y, labels, &loss), fail);
	*out = g;
	return 0;
fail:
	sf_graph_destroy(g);
	return -1;
}

/* Rows [first_row, first_row + rows) of global batch `step`: float inputs x (rows, D)
 * and labels for the float models; token ids (rows) and labels for blocks and gpt, ids from a
 * hash of (seed, step, row) and label = (3 id + 1) mod C. The batch to step with. */
static inline int fill_batch(enum model_kind kind, uint64_t seed, int64_t step, int first_row,
                             int rows, int D, int C, float *x, int32_t *ids, int32_t *labels,
                             struct sf_batch *b, const float **xin, const int32_t **idin)
{
	*b = (struct sf_batch){.labels = labels};
	if (kind != MODEL_BLOCKS && kind != MODEL_GPT && kind != MODEL_NANOGPT &&
	    kind != MODEL_NANOGPT_UNTIED && kind != MODEL_NANOGPT_TP && kind != MODEL_LLAMA &&
	    kind != MODEL_LLAMA_HF && kind != MODEL_LLAMA_HF_TP && kind != MODEL_NANOGPT_VP &&
	    kind != MODEL_LLAMA_HF_VP && kind != MODEL_NANOGPT_VPT && kind != MODEL_LLAMA_HF_VPT &&
	    kind != MODEL_NANOGPT_VPT15 && kind != MODEL_NANOGPT_VPO9) {
		*xin = x;
		b->ninputs = 1;
		b->inputs = xin;
		return sf_synth_rows(seed, step, first_row, rows, D, C, x, labels);
	}
	for (int r = 0; r < rows; r++) {
		uint64_t h = sf_synth_bits(seed, 7, (uint64_t)step, (uint64_t)(first_row + r), 0);
		ids[r] = (int32_t)(h % (uint64_t)D);
		labels[r] = (3 * ids[r] + 1) % C;
	}
	*idin = ids;
	b->nint_inputs = 1;
	b->int_inputs = idin;
	return 0;
}

static inline int write_dump(const char *prog, const char *path, const double *losses,
                             int64_t nsteps, const float *params, int64_t nparams)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "%s: cannot create %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	int ok = fwrite(DUMP_MAGIC, 1, 8, f) == 8 && fwrite(&nsteps, sizeof(nsteps), 1, f) == 1 &&
	         fwrite(losses, sizeof(double), (size_t)nsteps, f) == (size_t)nsteps &&
	         fwrite(&nparams, sizeof(nparams), 1, f) == 1 &&
	         fwrite(params, sizeof(float), (size_t)nparams, f) == (size_t)nparams;
	if (fclose(f) != 0)
		ok = 0;
	if (!ok) {
		fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	return 0;
}

#endif
