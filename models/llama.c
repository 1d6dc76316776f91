/*
 * llama.c — a Llama-family decoder as a task graph (sf_llama_graph), on the public
 * graph API only, with Hugging Face's LlamaForCausalLM names and initialisation.
 *
 * Block i (unit "model.layers.<i>"):
 *   h  = input_layernorm(x)                       rmsnorm
 *   a  = attn(rope(self_attn(h)))                 one linear_split GEMM: q_proj, k_proj,
 *                                                 v_proj; rope on q and k; GQA
 *   x  = x + o_proj(a)
 *   h  = post_attention_layernorm(x)
 *   x  = x + down_proj(silu(gate_proj(h)) * up_proj(h))
 * The nodes without parameters are named in their block (".self_attn.rotary_emb",
 * ".self_attn.attention", ".mlp.act_fn", ".mlp.mul", ".residual1", ".residual2"), so
 * traces and the overlap report show the block, never an automatic "rope5".
 * Then model.norm and lm_head (unit "lm_head"; tied: both in unit "model" with the
 * embedding, which the head reads at the end as sf_gpt_graph's does).
 */
#include "shardflow.h"
#include "models/decoder.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LLAMA_NAME_MAX 96 /* "model.layers.<4 digits>.self_attn" and its suffixes */
#define LLAMA_STD 0.02f   /* Hugging Face's initializer_range */

SF_API int sf_llama_config_init(struct sf_llama_config *c)
{
	if (!c)
		return sf_error_set(SF_ERR_INVALID, "sf_llama_config_init: NULL config");
	*c = (struct sf_llama_config){.vocab = 256,
	                              .context = 128,
	                              .dim = 128,
	                              .layers = 4,
	                              .heads = 4,
	                              .kv_heads = 2,
	                              .multiple_of = 32,
	                              .norm_eps = 1e-5f,
	                              .rope_theta = 10000.0f};
	return SF_OK;
}

SF_API int sf_llama_ffn_dim(const struct sf_llama_config *c)
{
	if (!c)
		return sf_error_set(SF_ERR_INVALID, "sf_llama_ffn_dim: NULL config");
	if (c->ffn_dim > 0)
		return c->ffn_dim;
	long long h = 4LL * c->dim;
	h = 2 * h / 3;
	if (c->ffn_dim_multiplier > 0.0f)
		h = (long long)(c->ffn_dim_multiplier * (double)h);
	int m = c->multiple_of > 0 ? c->multiple_of : 1;
	h = (h + m - 1) / m * m;
	return h > 0 && h <= (1 << 24) ? (int)h
	                               : sf_error_set(SF_ERR_INVALID,
	                                              "sf_llama_ffn_dim: %lld is out of "
	                                              "range",
	                                              h);
}

static int check(const struct sf_llama_config *c)
{
	int rc;
	if (!c)
		return sf_error_set(SF_ERR_INVALID, "sf_llama_graph: NULL config");
	if (c->vocab < 2 || c->context < 1 || c->layers < 1 || c->dim < 1 || c->heads < 1 ||
	    c->kv_heads < 1)
		return sf_error_set(
		    SF_ERR_INVALID,
		    "sf_llama_graph: vocab (%d) must be >= 2, context (%d), dim (%d), "
		    "layers (%d), heads (%d) and kv_heads (%d) >= 1",
		    c->vocab, c->context, c->dim, c->layers, c->heads, c->kv_heads);
	if (c->dim % c->heads || (c->dim / c->heads) % 2 || c->heads % c->kv_heads)
		return sf_error_set(
		    SF_ERR_INVALID,
		    "sf_llama_graph: heads (%d) must divide dim (%d) into heads of an "
		    "even size (rope pairs their features) and kv_heads (%d) must "
		    "divide heads",
		    c->heads, c->dim, c->kv_heads);
	if ((rc = _sf_decoder_check_sizes("sf_llama_graph", c->layers, "dim", c->dim, c->vocab,
	                                  c->context)) < 0)
		return rc;
	if (!(c->norm_eps > 0.0f) || !(c->rope_theta > 0.0f) || !isfinite(c->rope_theta) ||
	    c->ffn_dim < 0 || c->multiple_of < 0 || !(c->ffn_dim_multiplier >= 0.0f))
		return sf_error_set(
		    SF_ERR_INVALID,
		    "sf_llama_graph: norm_eps (%g) and rope_theta (%g) must be > 0, "
		    "ffn_dim (%d), multiple_of (%d) and ffn_dim_multiplier (%g) >= 0",
		    (double)c->norm_eps, (double)c->rope_theta, c->ffn_dim, c->multiple_of,
		    (double)c->ffn_dim_multiplier);
	if (c->vocab_parallel != 0 && c->vocab_parallel != 1)
		return sf_error_set(SF_ERR_INVALID,
		                    "sf_llama_graph: vocab_parallel must be 0 or 1 (got %d)",
		                    c->vocab_parallel);
	if (c->tensor_parallel != 0 && c->tensor_parallel != 1)
		return sf_error_set(SF_ERR_INVALID,
		                    "sf_llama_graph: tensor_parallel must be 0 or 1 (got %d)",
		                    c->tensor_parallel);
	return sf_llama_ffn_dim(c) < 0 ? SF_ERR_INVALID : SF_OK;
}

/* A linear node "<prefix>.<what>" without bias, of width out; with tensor_parallel,
 * tp 'c' makes it a linear_col, 'r' a linear_row (the same initial values) */
static int proj(sf_graph *g, const struct sf_llama_config *c, int x, int out, char tp,
                const char *prefix, const char *what, int *y)
{
	char name[LLAMA_NAME_MAX];
	snprintf(name, sizeof name, "%s.%s", prefix, what);
	if (c->tensor_parallel) {
		struct sf_linear_tp_config tc = {.out_dim = out, .init_std = LLAMA_STD};
		return tp == 'c' ? sf_graph_linear_col(g, x, &tc, name, y)
		                 : sf_graph_linear_row(g, x, &tc, name, y);
	}
	struct sf_linear_config lc = {out, LLAMA_STD};
	return sf_graph_linear_config(g, x, &lc, 0, name, y);
}

/* The fused q | k | v projection "<prefix>.self_attn": a linear_split of three named
 * parts, or with tensor_parallel a linear_col of the same three blocks */
static int qkv_proj(sf_graph *g, const struct sf_llama_config *c, int x, int hs, const char *name,
                    int *y)
{
	int rows[3] = {c->heads * hs, c->kv_heads * hs, c->kv_heads * hs};
	const char *names[3] = {"q_proj.weight", "k_proj.weight", "v_proj.weight"};
	if (c->tensor_parallel) {
		struct sf_linear_tp_config tc = {
		    .out_dim = rows[0] + rows[1] + rows[2], .init_std = LLAMA_STD, .nparts = 3};
		for (int k = 0; k < 3; k++) {
			tc.part_rows[k] = rows[k];
			snprintf(tc.part_names[k], sizeof tc.part_names[k], "%s", names[k]);
		}
		return sf_graph_linear_col(g, x, &tc, name, y);
	}
	struct sf_linear_split_config qc = {.nparts = 3, .init_std = LLAMA_STD};
	for (int k = 0; k < 3; k++) {
		qc.rows[k] = rows[k];
		snprintf(qc.names[k], sizeof qc.names[k], "%s", names[k]);
	}
	return sf_graph_linear_split(g, x, &qc, name, y);
}

static int norm(sf_graph *g, int x, float eps, const char *prefix, const char *what, int *y)
{
	char name[LLAMA_NAME_MAX];
	snprintf(name, sizeof name, "%s.%s", prefix, what);
	return sf_graph_rmsnorm(g, x, eps, name, y);
}

/* Block i: the attention and MLP branches; *x is the residual stream in and out. */
static int block(sf_graph *g, const struct sf_llama_config *c, int i, int *x)
{
	int rc, h, qkv, a, gate, m;
	int res[2]; /* an add's inputs: the residual stream and the branch's output */
	int gu[2];  /* the product's: silu(gate_proj(h)) and up_proj(h) */
	int hs = c->dim / c->heads, ffn = sf_llama_ffn_dim(c);
	char pre[LLAMA_NAME_MAX / 2], name[LLAMA_NAME_MAX];
	snprintf(pre, sizeof pre, "model.layers.%d", i);
	struct sf_rope_config rope = {(c->heads + c->kv_heads) * hs, hs, c->rope_theta};
	struct sf_attention_config attn = {c->heads, c->kv_heads};
	snprintf(name, sizeof name, "%s.self_attn", pre);
	res[0] = *x;
	if ((rc = sf_graph_unit_begin(g, pre)) < 0 ||
	    (rc = norm(g, *x, c->norm_eps, pre, "input_layernorm", &h)) < 0 ||
	    (rc = qkv_proj(g, c, h, hs, name, &qkv)) < 0 ||
	    (rc = _sf_decoder_node(g, "rope", &qkv, 1, &rope, sizeof rope, pre,
	                           "self_attn.rotary_emb", &qkv)) < 0 ||
	    (rc = _sf_decoder_node(g, "attention_gqa", &qkv, 1, &attn, sizeof attn, pre,
	                           "self_attn.attention", &a)) < 0 ||
	    (rc = proj(g, c, a, c->dim, 'r', pre, "self_attn.o_proj", &res[1])) < 0 ||
	    (rc = _sf_decoder_node(g, "add", res, 2, NULL, 0, pre, "residual1", x)) < 0)
		return rc;
	res[0] = *x;
	if ((rc = norm(g, *x, c->norm_eps, pre, "post_attention_layernorm", &h)) < 0 ||
	    (rc = proj(g, c, h, ffn, 'c', pre, "mlp.gate_proj", &gate)) < 0 ||
	    (rc = proj(g, c, h, ffn, 'c', pre, "mlp.up_proj", &gu[1])) < 0 ||
	    (rc = _sf_decoder_node(g, "silu", &gate, 1, NULL, 0, pre, "mlp.act_fn", &gu[0])) < 0 ||
	    (rc = _sf_decoder_node(g, "mul", gu, 2, NULL, 0, pre, "mlp.mul", &m)) < 0 ||
	    (rc = proj(g, c, m, c->dim, 'r', pre, "mlp.down_proj", &res[1])) < 0 ||
	    (rc = _sf_decoder_node(g, "add", res, 2, NULL, 0, pre, "residual2", x)) < 0)
		return rc;
	return sf_graph_unit_end(g);
}

SF_API int sf_llama_graph(const struct sf_llama_config *c, sf_graph **out)
{
	int rc, idx, targets, x, emb, h, logits, loss;
	sf_graph *g = NULL;
	if (!out)
		return sf_error_set(SF_ERR_INVALID, "sf_llama_graph: NULL out");
	*out = NULL;
	if ((rc = check(c)) < 0 || (rc = sf_graph_create("llama", &g)) < 0)
		return rc;
	/* tied, the head reads embed_tokens in its unit, and model.norm is the unit "model" */
	const char *embed_unit = "model.embed_tokens";
	struct sf_linear_config head = {c->vocab, LLAMA_STD};
	int D = c->dim;
	if ((rc = _sf_decoder_inputs(g, c->context, c->vocab, &idx, &targets)) < 0 ||
	    (rc = sf_graph_unit_begin(g, embed_unit)) < 0 ||
	    (rc = sf_graph_layer(g, c->vocab_parallel ? "embedding_vp" : "embedding", &idx, 1, &D,
	                         sizeof D, "model.embed_tokens", &x)) < 0 ||
	    (rc = sf_graph_unit_end(g)) < 0)
		goto fail;
	emb = x; /* the node that owns the (vocab, dim) matrix a tied head reads */
	for (int i = 0; i < c->layers; i++)
		if ((rc = block(g, c, i, &x)) < 0)
			goto fail;
	if ((rc = sf_graph_unit_begin(g, c->tie_weights ? "model" : "lm_head")) < 0 ||
	    (rc = sf_graph_rmsnorm(g, x, c->norm_eps, "model.norm", &h)) < 0 ||
	    (c->tie_weights && ((rc = sf_graph_unit_end(g)) < 0 ||
	                        (rc = sf_graph_unit_begin(g, embed_unit)) < 0)))
		goto fail;
	if (c->tie_weights)
		rc = sf_graph_layer_tied(g, "linear_nobias", &h, 1, &head, sizeof head, "lm_head",
		                         emb, &logits);
	else if (c->vocab_parallel) /* each TP rank's V / K rows: the loss vocabulary-parallel */
		rc = sf_graph_linear_col(
		    g, h, &(struct sf_linear_tp_config){.out_dim = c->vocab, .init_std = LLAMA_STD},
		    "lm_head", &logits);
	else
		rc = sf_graph_linear_config(g, h, &head, 0, "lm_head", &logits);
	if (rc < 0 || (rc = sf_graph_unit_end(g)) < 0 ||
	    (rc = sf_graph_softmax_cross_entropy(g, logits, targets, &loss)) < 0)
		goto fail;
	*out = g;
	return SF_OK;
fail:
	sf_graph_destroy(g);
	return rc;
}

SF_API int sf_llama_config_write_hf(const struct sf_llama_config *c, const char *path)
{
	if (!c || !path || !*path)
		return sf_error_set(SF_ERR_INVALID, "sf_llama_config_write_hf: NULL config or path");
	int ffn = sf_llama_ffn_dim(c);
	if (ffn < 0)
		return ffn;
	json_t *o = json_pack(
	    "{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:b, s:s, s:b, s:b, s:s}",
	    "architectures", "LlamaForCausalLM", "model_type", "llama", "hidden_size", c->dim,
	    "intermediate_size", ffn, "num_attention_heads", c->heads, "num_key_value_heads",
	    c->kv_heads, "num_hidden_layers", c->layers, "vocab_size", c->vocab,
	    "max_position_embeddings", c->context, "rms_norm_eps", (double)c->norm_eps,
	    "rope_theta", (double)c->rope_theta, "tie_word_embeddings", c->tie_weights != 0,
	    "hidden_act", "silu", "attention_bias", 0, "mlp_bias", 0, "torch_dtype", "float32");
	return _sf_decoder_write_json("sf_llama_config_write_hf", o, path);
}

SF_API int sf_llama_config_check_hf(const struct sf_llama_config *c, const char *path)
{
	if (!c)
		return sf_error_set(SF_ERR_INVALID, "sf_llama_config_check_hf: NULL config");
	int ffn = sf_llama_ffn_dim(c);
	if (ffn < 0)
		return ffn;
	const struct _sf_hf_field f[] = {
	    {"model_type", SF_HF_STR, 0, "llama", NULL, 0, 0},
	    {"num_hidden_layers", SF_HF_INT, c->layers, NULL, NULL, 0, 0},
	    {"num_attention_heads", SF_HF_INT, c->heads, NULL, NULL, 0, 0},
	    {"num_key_value_heads", SF_HF_INT, c->kv_heads, NULL, NULL, 0, c->kv_heads == c->heads},
	    {"hidden_size", SF_HF_INT, c->dim, NULL, NULL, 0, 0},
	    {"intermediate_size", SF_HF_INT, ffn, NULL, NULL, 0, 0},
	    {"vocab_size", SF_HF_INT, c->vocab, NULL, NULL, 0, 0},
	    {"max_position_embeddings", SF_HF_INT, c->context, NULL, NULL, 1, 0},
	    {"rms_norm_eps", SF_HF_REAL, c->norm_eps, NULL, NULL, 0, 0},
	    {"rope_theta", SF_HF_REAL, c->rope_theta, NULL, NULL, 0, c->rope_theta == 10000.0f},
	    {"tie_word_embeddings", SF_HF_BOOL, c->tie_weights != 0, NULL, NULL, 0,
	     c->tie_weights == 0},
	};
	return _sf_decoder_check_json("sf_llama_config_check_hf", path, f,
	                              (int)(sizeof f / sizeof f[0]));
}
