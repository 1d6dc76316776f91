/*
 * decoder.h — what the ready-made decoders (models/gpt.c, models/llama.c) share: the
 * limits on their sizes, the two inputs every one of them reads and the naming of their
 * nodes without parameters. On the public API alone, as the models are.
 */
#ifndef SF_MODELS_DECODER_H
#define SF_MODELS_DECODER_H

#include "shardflow.h"

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

#endif
