/*
 * decoder.h — what the ready-made decoders (models/gpt.c, models/llama.c) share: the
 * limits on their sizes and the two inputs every one of them reads. On the public API
 * alone, as the models are.
 */
#ifndef SF_MODELS_DECODER_H
#define SF_MODELS_DECODER_H

#include "shardflow.h"

/* SF_OK, or SF_ERR_INVALID naming fn and the limits if layers, the model width (called
 * width_name in the message: "embd", "dim"), vocab or context is too large for names
 * and sizes to fit. */
int _sf_decoder_check_sizes(const char *fn, int layers, const char *width_name, int width,
                            int vocab, int context);

/* Sets g's sequence length to context and adds its inputs: "idx" (token ids in
 * [0, vocab)) and "targets" (the next token of each position). */
int _sf_decoder_inputs(sf_graph *g, int context, int vocab, int *idx, int *targets);

#endif
