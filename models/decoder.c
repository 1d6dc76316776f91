/* decoder.c — the checks, inputs and node names the ready-made decoders share
 * (models/decoder.h). */
#include "models/decoder.h"

#include <stdio.h>

int _sf_decoder_check_sizes(const char *fn, int layers, const char *width_name, int width,
                            int vocab, int context)
{
	if (layers > 9999 || width > (1 << 18) || vocab > (1 << 24) || context > (1 << 20))
		return sf_error_set(SF_ERR_INVALID,
		                    "%s: layers <= 9999, %s <= 262144, vocab <= 2^24 and "
		                    "context <= 2^20 (got %d, %d, %d, %d)",
		                    fn, width_name, layers, width, vocab, context);
	return SF_OK;
}

int _sf_decoder_inputs(sf_graph *g, int context, int vocab, int *idx, int *targets)
{
	int rc;
	if ((rc = sf_graph_set_seq_len(g, context)) < 0 ||
	    (rc = sf_graph_int_input(g, "idx", vocab, idx)) < 0)
		return rc;
	return sf_graph_label_input(g, "targets", vocab, targets);
}

int _sf_decoder_node(sf_graph *g, const char *type, const int *in, int nin, const void *cfg,
                     size_t size, const char *block, const char *what, int *out)
{
	char name[128]; /* more than the graph's 63 characters: a longer name is refused there */
	snprintf(name, sizeof name, "%s.%s", block, what);
	return sf_graph_layer(g, type, in, nin, cfg, size, name, out);
}
