/*
 * decoder.h — what the ready-made decoders (models/gpt.c, models/llama.c) share: the
 * limits on their sizes, the two inputs every one of them reads and the naming of their
 * nodes without parameters. On the public API alone, as the models are.
 */
#ifndef SF_MODELS_DECODER_H
#define SF_MODELS_DECODER_H

#include "shardflow.h"

#include <jansson.h>

/* SF_OK, or SF_ERR_INVALID naming fn and the limits if layers, the model width (called
 * width_name in the message: "embd", "dim"), vocab or context is too large for names
 * and sizes to fit. */
int _sf_decoder_check_sizes(const char *fn, int layers, const char *width_name, int width,
                            int vocab, int context);

/* Adds a node of layer type `type` without parameters (config cfg, size bytes; NULL, 0
 * for none) named "<block>.<what>": the block's attention, activations and residual
 * adds carry its name in traces and reports as its parameterised nodes do. */
int _sf_decoder_node(sf_graph *g, const char *type, const int *in, int nin, const void *cfg,
                     size_t size, const char *block, const char *what, int *out);

/* Sets g's sequence length to context and adds its inputs: "idx" (token ids in
 * [0, vocab)) and "targets" (the next token of each position). */
int _sf_decoder_inputs(sf_graph *g, int context, int vocab, int *idx, int *targets);

/* Writes the JSON object o (its reference taken, even on failure; NULL: out of
 * memory) to path as Hugging Face's config.json, two-space indented, keys in order,
 * reals as the float they are (7 digits: 1e-05, not 9.99999974e-06), whole or not at
 * all (sf_file_write_atomic). fn names the caller in messages. */
int _sf_decoder_write_json(const char *fn, json_t *o, const char *path);

/* One key of a config.json checked against the model's value: an integer, a real
 * (within 1e-6 relative), a boolean, or one of the strings "s" or "alt". min: the
 * file's integer may exceed the model's (n_positions >= context). dflt: the value an
 * absent key means (missing 0: absent is refused; 2: null or absent is fine). */
enum _sf_hf_kind { SF_HF_INT, SF_HF_REAL, SF_HF_BOOL, SF_HF_STR };
struct _sf_hf_field {
	const char *key;
	enum _sf_hf_kind kind;
	double v;            /* the model's number (int, real, bool 0/1) */
	const char *s, *alt; /* SF_HF_STR: the accepted strings (alt may be NULL) */
	int min;             /* 1: file >= model for SF_HF_INT */
	int missing;         /* 0: required; 1: absent means v; 2: absent or null is fine */
};

/* Reads the JSON object at path and checks fields[0..n) in order: SF_OK, or
 * SF_ERR_INVALID naming path, the first key that differs, its value there and the
 * model's; SF_ERR_IO when it cannot be read or parsed. */
int _sf_decoder_check_json(const char *fn, const char *path, const struct _sf_hf_field *f, int n);

#endif
