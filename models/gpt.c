/*
 * gpt.c — a GPT-2-style decoder as a task graph (sf_gpt_graph), built on the public
 * graph API only: what a user could write, kept in the library so every program gets
 * the same model, names and initialisation.
 *
 * The graph (pre-norm, nanoGPT's model.py):
 *   x = wte(idx) + wpe(t)
 *   for each block: x = x + c_proj(attn(c_attn(ln_1(x))));  x = x + mlp(ln_2(x)),
 *                   mlp = c_proj(gelu(c_fc(.)))  (4C hidden, GELU in its tanh form)
 *   logits = lm_head(ln_f(x)),  loss = mean cross-entropy over every token
 * Units: one per block ("transformer.h.<i>", what FSDP2 users get from
 * `for block in model.transformer.h: fully_shard(block)`), one unit "transformer"
 * holding wpe and ln_f, and wte's own: the tied head reads wte's parameters, so it is
 * in wte's unit "transformer.wte", gathered at both ends of the step (or, with
 * vocab_parallel over data-parallel ranks, never: scheduler/vocabdp.c, which needs the
 * matrix alone in its unit). An untied head has a unit of its own,
 * "lm_head" (ln_f and lm_head, as the Llama's): the units then follow each other, so a
 * pipeline (SHARDFLOW_PP) can cut between them, and the embeddings' unit is done with
 * after the forward's start.
 * Node names are nanoGPT's module names, so an exported safetensors file has its
 * state_dict keys ("transformer.h.0.attn.c_attn.weight", (3C, C) as nn.Linear keeps it);
 * the nodes without parameters are named in their block too (".attn.attention",
 * ".mlp.gelu", ".residual1" and ".residual2", the two adds), so traces and the overlap
 * report show "fwd transformer.h.3.attn.attention", never an automatic "attention6".
 * Initialisation as GPT-2: linear weights normal(0, 0.02) and zero biases, the two
 * residual projections of each block normal(0, 0.02 / sqrt(2 n_layer)), embeddings
 * normal(0, 0.02), layernorms 1 and 0 — drawn from the model seed, the same for any
 * world size.
 */
#include "shardflow.h"
#include "models/decoder.h"

#include <math.h>
#include <stdio.h>

#define GPT_LN_EPS 1e-5f /* sf_graph_layernorm's, GPT-2's layer_norm_epsilon */
#define GPT_NAME_MAX 192 /* room for any name; the graph refuses those over 63 characters */

SF_API int sf_gpt_config_init(struct sf_gpt_config *c)
{
	if (!c)
		return sf_error_set(SF_ERR_INVALID, "sf_gpt_config_init: NULL config");
	*c = (struct sf_gpt_config){
	    .vocab = 256, .context = 128, .layers = 4, .heads = 4, .embd = 128, .tie_weights = 1};
	return SF_OK;
}

static int check(const struct sf_gpt_config *c)
{
	if (!c)
		return sf_error_set(SF_ERR_INVALID, "sf_gpt_graph: NULL config");
	if (c->vocab < 2 || c->context < 1 || c->layers < 1 || c->heads < 1 || c->embd < 1)
		return sf_error_set(
		    SF_ERR_INVALID,
		    "sf_gpt_graph: vocab (%d) must be >= 2, context (%d), layers (%d), "
		    "heads (%d) and embd (%d) >= 1",
		    c->vocab, c->context, c->layers, c->heads, c->embd);
	if (c->vocab_parallel != 0 && c->vocab_parallel != 1)
		return sf_error_set(SF_ERR_INVALID,
		                    "sf_gpt_graph: vocab_parallel must be 0 or 1 (got %d)",
		                    c->vocab_parallel);
	if (c->tensor_parallel != 0 && c->tensor_parallel != 1)
		return sf_error_set(SF_ERR_INVALID,
		                    "sf_gpt_graph: tensor_parallel must be 0 or 1 (got %d)",
		                    c->tensor_parallel);
	if (c->embd % c->heads)
		return sf_error_set(SF_ERR_INVALID,
		                    "sf_gpt_graph: embd (%d) must be a multiple of heads (%d)",
		                    c->embd, c->heads);
	return _sf_decoder_check_sizes("sf_gpt_graph", c->layers, "embd", c->embd, c->vocab,
	                               c->context);
}

/* A linear node "<prefix>.<what>" of width out, GPT-2 initialised with std. tp: 0 a
 * "linear"; with c->tensor_parallel, 'c' a linear_col of `parts` blocks, 'r' a
 * linear_row (the same initial values: both draw as "linear" does). */
static int linear(sf_graph *g, const struct sf_gpt_config *c, int x, int out, float std, char tp,
                  int parts, const char *prefix, const char *what, int *y)
{
	char name[GPT_NAME_MAX];
	snprintf(name, sizeof name, "%s.%s", prefix, what);
	if (c->tensor_parallel && tp) {
		struct sf_linear_tp_config tc = {
		    .out_dim = out, .bias = 1, .init_std = std, .nparts = tp == 'c' ? parts : 0};
		return tp == 'c' ? sf_graph_linear_col(g, x, &tc, name, y)
		                 : sf_graph_linear_row(g, x, &tc, name, y);
	}
	struct sf_linear_config lc = {out, std};
	return sf_graph_linear_config(g, x, &lc, 1, name, y);
}

/* Block i: two residual branches; *x is the residual stream in and out. */
static int block(sf_graph *g, const struct sf_gpt_config *c, int i, int *x)
{
	int rc = SF_OK, h, qkv, a, f;
	int res[2]; /* an add's inputs: the residual stream and the branch's output */
	char pre[GPT_NAME_MAX / 2], name[GPT_NAME_MAX];
	int C = c->embd, heads = c->heads;
	float std = 0.02f, proj_std = 0.02f / sqrtf(2.0f * (float)c->layers);
	snprintf(pre, sizeof pre, "transformer.h.%d", i);
	if ((rc = sf_graph_unit_begin(g, pre)) < 0)
		return rc;
	snprintf(name, sizeof name, "%s.ln_1", pre);
	res[0] = *x;
	if ((rc = sf_graph_layernorm(g, *x, name, &h)) < 0 ||
	    (rc = linear(g, c, h, 3 * C, std, 'c', 3, pre, "attn.c_attn", &qkv)) < 0 ||
	    (rc = _sf_decoder_node(g, "attention", &qkv, 1, &heads, sizeof heads, pre,
	                           "attn.attention", &a)) < 0 ||
	    (rc = linear(g, c, a, C, proj_std, 'r', 0, pre, "attn.c_proj", &res[1])) < 0 ||
	    (rc = _sf_decoder_node(g, "add", res, 2, NULL, 0, pre, "residual1", x)) < 0)
		return rc;
	snprintf(name, sizeof name, "%s.ln_2", pre);
	res[0] = *x;
	if ((rc = sf_graph_layernorm(g, *x, name, &h)) < 0 ||
	    (rc = linear(g, c, h, 4 * C, std, 'c', 1, pre, "mlp.c_fc", &f)) < 0 ||
	    (rc = _sf_decoder_node(g, "gelu", &f, 1, NULL, 0, pre, "mlp.gelu", &f)) < 0 ||
	    (rc = linear(g, c, f, C, proj_std, 'r', 0, pre, "mlp.c_proj", &res[1])) < 0 ||
	    (rc = _sf_decoder_node(g, "add", res, 2, NULL, 0, pre, "residual2", x)) < 0)
		return rc;
	return sf_graph_unit_end(g);
}

/* The head: ln_f, then lm_head (tied to wte, or its own weights), then the loss;
 * tied, ln_f in the unit "transformer" (with wpe) and lm_head in wte's; else both in
 * a unit "lm_head" of their own. */
static int head(sf_graph *g, const struct sf_gpt_config *c, int x, int wte, int targets)
{
	int rc, h, logits, loss;
	if ((rc = sf_graph_unit_begin(g, c->tie_weights ? "transformer" : "lm_head")) < 0 ||
	    (rc = sf_graph_layernorm(g, x, "transformer.ln_f", &h)) < 0)
		return rc;
	struct sf_linear_config lc = {c->vocab, 0.02f};
	struct sf_linear_tp_config vc = {.out_dim = c->vocab, .init_std = 0.02f};
	if (c->tie_weights &&
	    ((rc = sf_graph_unit_end(g)) < 0 || (rc = sf_graph_unit_begin(g, "transformer.wte")) < 0))
		return rc;
	if (c->tie_weights)
		rc = sf_graph_layer_tied(g, "linear_nobias", &h, 1, &lc, sizeof lc, "lm_head", wte,
		                         &logits);
	else if (c->vocab_parallel) /* each TP rank's V / K rows: the loss vocabulary-parallel */
		rc = sf_graph_linear_col(g, h, &vc, "lm_head", &logits);
	else
		rc = sf_graph_linear_config(g, h, &lc, 0, "lm_head", &logits);
	if (rc < 0 || (rc = sf_graph_unit_end(g)) < 0)
		return rc;
	return sf_graph_softmax_cross_entropy(g, logits, targets, &loss);
}

SF_API int sf_gpt_graph(const struct sf_gpt_config *c, sf_graph **out)
{
	int rc, idx, targets, tok, wte, x;
	sf_graph *g = NULL;
	if (!out)
		return sf_error_set(SF_ERR_INVALID, "sf_gpt_graph: NULL out");
	*out = NULL;
	if ((rc = check(c)) < 0 || (rc = sf_graph_create("gpt", &g)) < 0)
		return rc;
	/* tied: wte in a unit of its own, with the head that reads it */
	if ((rc = _sf_decoder_inputs(g, c->context, c->vocab, &idx, &targets)) < 0 ||
	    (rc = sf_graph_unit_begin(g, c->tie_weights ? "transformer.wte" : "transformer")) < 0)
		goto fail;
	int C = c->embd;
	/* vocab_parallel: each TP rank holds V / K rows of wte, its lookups all-reduced */
	const char *emb = c->vocab_parallel ? "embedding_vp" : "embedding";
	if ((rc = sf_graph_layer(g, emb, &idx, 1, &C, sizeof C, "transformer.wte", &tok)) < 0 ||
	    (c->tie_weights &&
	     ((rc = sf_graph_unit_end(g)) < 0 || (rc = sf_graph_unit_begin(g, "transformer")) < 0)) ||
	    (rc = sf_graph_pos_embedding(g, tok, c->context, "transformer.wpe", &x)) < 0 ||
	    (rc = sf_graph_unit_end(g)) < 0)
		goto fail;
	wte = tok; /* the embedding node owns the (V, C) matrix the tied head reads */
	for (int i = 0; i < c->layers; i++)
		if ((rc = block(g, c, i, &x)) < 0)
			goto fail;
	if ((rc = head(g, c, x, wte, targets)) < 0)
		goto fail;
	*out = g;
	return SF_OK;
fail:
	sf_graph_destroy(g);
	return rc;
}

SF_API int sf_gpt_config_write_hf(const struct sf_gpt_config *c, const char *path)
{
	if (!c)
		return sf_error_set(SF_ERR_INVALID, "sf_gpt_config_write_hf: NULL config");
	json_t *o =
	    json_pack("{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:s, s:b, s:s}",
	              "architectures", "GPT2LMHeadModel", "model_type", "gpt2", "n_embd", c->embd,
	              "n_layer", c->layers, "n_head", c->heads, "n_positions", c->context, "n_ctx",
	              c->context, "n_inner", 4 * c->embd, "vocab_size", c->vocab,
	              "layer_norm_epsilon", (double)GPT_LN_EPS, "activation_function", "gelu_new",
	              "tie_word_embeddings", c->tie_weights != 0, "torch_dtype", "float32");
	return _sf_decoder_write_json("sf_gpt_config_write_hf", o, path);
}

SF_API int sf_gpt_config_check_hf(const struct sf_gpt_config *c, const char *path)
{
	if (!c)
		return sf_error_set(SF_ERR_INVALID, "sf_gpt_config_check_hf: NULL config");
	const struct _sf_hf_field f[] = {
	    {"model_type", SF_HF_STR, 0, "gpt2", NULL, 0, 0},
	    {"n_layer", SF_HF_INT, c->layers, NULL, NULL, 0, 0},
	    {"n_head", SF_HF_INT, c->heads, NULL, NULL, 0, 0},
	    {"n_embd", SF_HF_INT, c->embd, NULL, NULL, 0, 0},
	    {"vocab_size", SF_HF_INT, c->vocab, NULL, NULL, 0, 0},
	    {"n_positions", SF_HF_INT, c->context, NULL, NULL, 1, 0},
	    {"n_inner", SF_HF_INT, 4 * c->embd, NULL, NULL, 0, 2},
	    {"layer_norm_epsilon", SF_HF_REAL, GPT_LN_EPS, NULL, NULL, 0, 1},
	    {"activation_function", SF_HF_STR, 0, "gelu_new", "gelu_pytorch_tanh", 0, 1},
	    {"tie_word_embeddings", SF_HF_BOOL, c->tie_weights != 0, NULL, NULL, 0,
	     c->tie_weights != 0},
	};
	return _sf_decoder_check_json("sf_gpt_config_check_hf", path, f,
	                              (int)(sizeof f / sizeof f[0]));
}

/* Conv1D's weights: GPT2LMHeadModel keeps them (I, O) */
static const char *const hf_transposed[] = {".attn.c_attn.weight", ".attn.c_proj.weight",
                                            ".mlp.c_fc.weight", ".mlp.c_proj.weight"};

SF_API int sf_gpt_hf_layout(struct sf_safetensors_layout *l)
{
	if (!l)
		return sf_error_set(SF_ERR_INVALID, "sf_gpt_hf_layout: NULL layout");
	*l = (struct sf_safetensors_layout){hf_transposed,
	                                    (int)(sizeof hf_transposed / sizeof hf_transposed[0])};
	return SF_OK;
}
