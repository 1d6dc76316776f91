/*
 * graph.c — building a model as a graph of nodes.
 *
 * A node may only take earlier nodes as inputs, so creation order is a topological
 * order and the scheduler unrolls forward in that order and backward in reverse.
 * Every builder validates its arguments (ids, widths, names) and leaves the graph
 * unchanged on error, so a failed call can be corrected and the graph reused.
 */
#include "scheduler/internal.h"

#include <stdlib.h>
#include <string.h>

SF_API int sf_graph_create(const char *name, sf_graph **out)
{
	if (!out)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_create: out is NULL");
	*out = NULL;
	if (!name || !name[0] || strlen(name) >= SF_NAME_MAX)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_create: the name must be 1 to %d characters",
		              SF_NAME_MAX - 1);
	sf_graph *g = calloc(1, sizeof *g);
	if (!g)
		return SF_ERR(SF_ERR_NOMEM, "sf_graph_create: out of memory");
	strcpy(g->name, name);
	g->labels = g->loss = -1;
	*out = g;
	return SF_OK;
}

SF_API int sf_graph_destroy(sf_graph *g)
{
	if (!g)
		return SF_OK;
	for (int i = 0; i < g->n; i++)
		free(g->nodes[i].config);
	free(g->nodes);
	free(g);
	return SF_OK;
}

static int check_name(const sf_graph *g, const char *fn, const char *name)
{
	if (!name)
		return SF_OK;
	if (!name[0] || strlen(name) >= SF_NAME_MAX)
		return SF_ERR(SF_ERR_INVALID, "%s: node name must be 1 to %d characters", fn,
		              SF_NAME_MAX - 1);
	for (int i = 0; i < g->n; i++)
		if (strcmp(g->nodes[i].name, name) == 0)
			return SF_ERR(SF_ERR_INVALID,
			              "%s: graph \"%s\" already has a node named "
			              "\"%s\"",
			              fn, g->name, name);
	return SF_OK;
}

/* Appends a node (copied); on success *out is its id. */
static int push(sf_graph *g, const struct _sf_node *nd, int *out)
{
	if (g->n == g->cap) {
		int cap = g->cap ? 2 * g->cap : 16;
		struct _sf_node *p = realloc(g->nodes, (size_t)cap * sizeof *p);
		if (!p)
			return SF_ERR(SF_ERR_NOMEM, "graph \"%s\": out of memory", g->name);
		g->nodes = p;
		g->cap = cap;
	}
	g->nodes[g->n] = *nd;
	*out = g->n++;
	return SF_OK;
}

static int begin(sf_graph *g, const char *fn, int *out)
{
	if (!g || !out)
		return SF_ERR(SF_ERR_INVALID, "%s: %s is NULL", fn, g ? "out" : "graph");
	if (g->loss >= 0)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: graph \"%s\" already ends with its loss; the loss "
		              "must be the last node",
		              fn, g->name);
	return SF_OK;
}

SF_API int sf_graph_input(sf_graph *g, const char *name, int dim, int *out)
{
	int rc = begin(g, "sf_graph_input", out);
	if (rc < 0)
		return rc;
	if (dim <= 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_input: width of \"%s\" must be > 0 (got %d)",
		              name ? name : "(unnamed)", dim);
	if (!name)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_input: an input needs a name");
	if ((rc = check_name(g, "sf_graph_input", name)) < 0)
		return rc;
	struct _sf_node nd = {.kind = SF_NODE_INPUT, .dim = dim};
	strcpy(nd.name, name);
	if ((rc = push(g, &nd, out)) < 0)
		return rc;
	g->ninputs++;
	return SF_OK;
}

SF_API int sf_graph_label_input(sf_graph *g, const char *name, int nclasses, int *out)
{
	int rc = begin(g, "sf_graph_label_input", out);
	if (rc < 0)
		return rc;
	if (g->labels >= 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_label_input: graph \"%s\" already has labels", g->name);
	if (nclasses < 2)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_label_input: need at least 2 classes (got %d)", nclasses);
	if (!name)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_label_input: the labels need a name");
	if ((rc = check_name(g, "sf_graph_label_input", name)) < 0)
		return rc;
	struct _sf_node nd = {.kind = SF_NODE_LABELS, .dim = nclasses};
	strcpy(nd.name, name);
	if ((rc = push(g, &nd, out)) < 0)
		return rc;
	g->labels = *out;
	return SF_OK;
}

SF_API int sf_graph_layer(sf_graph *g, const char *type, const int *inputs, int ninputs,
                          const void *config, size_t config_size, const char *name, int *out)
{
	int rc = begin(g, "sf_graph_layer", out);
	if (rc < 0)
		return rc;
	const struct _sf_layer_entry *e = _sf_layer_find(type);
	if (!e)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_layer: unknown layer type \"%s\" (built-in: "
		              "linear, relu, gelu, add; others must be registered "
		              "with sf_layer_type_register)",
		              type ? type : "(null)");
	if (!inputs || ninputs < e->type.min_inputs || ninputs > e->type.max_inputs)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_layer: layer type \"%s\" takes %d to %d "
		              "inputs (got %d%s)",
		              e->name, e->type.min_inputs, e->type.max_inputs, ninputs,
		              inputs ? "" : ", inputs is NULL");
	if ((config == NULL) != (config_size == 0))
		return SF_ERR(SF_ERR_INVALID, "sf_graph_layer: config and config_size must be both "
		                              "set or both empty");
	struct _sf_node nd = {.kind = SF_NODE_LAYER, .type = e, .nin = ninputs};
	int dims[SF_MAX_INPUTS];
	for (int i = 0; i < ninputs; i++) {
		int x = inputs[i];
		if (x < 0 || x >= g->n)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_graph_layer(%s): input %d is node %d, which "
			              "does not exist in graph \"%s\" (%d nodes)",
			              e->name, i, x, g->name, g->n);
		if (g->nodes[x].kind == SF_NODE_LABELS)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_graph_layer(%s): input %d is the label node; "
			              "labels only feed the loss",
			              e->name, i);
		for (int j = 0; j < i; j++)
			if (inputs[j] == x)
				return SF_ERR(SF_ERR_INVALID,
				              "sf_graph_layer(%s): node %d is given twice "
				              "as input",
				              e->name, x);
		nd.in[i] = x;
		dims[i] = g->nodes[x].dim;
	}
	int out_dim = 0;
	size_t np = 0;
	rc = e->type.infer(dims, ninputs, config, &out_dim, &np);
	if (rc < 0)
		return SF_ERR(rc,
		              "sf_graph_layer: layer type \"%s\" rejected its inputs or config: %s",
		              e->name, sf_last_error());
	if (out_dim <= 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_layer: layer type \"%s\" gave output width %d", e->name,
		              out_dim);
	if (np > 0 && !name)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_layer: a \"%s\" layer has parameters and "
		              "needs a unique name",
		              e->name);
	if ((rc = check_name(g, "sf_graph_layer", name)) < 0)
		return rc;
	nd.dim = out_dim;
	nd.nparams = np;
	if (name)
		strcpy(nd.name, name);
	else
		snprintf(nd.name, sizeof nd.name, "%.40s%d", e->name, g->n);
	if (config_size) {
		nd.config = malloc(config_size);
		if (!nd.config)
			return SF_ERR(SF_ERR_NOMEM, "sf_graph_layer: out of memory");
		memcpy(nd.config, config, config_size);
		nd.config_size = config_size;
	}
	if ((rc = push(g, &nd, out)) < 0)
		free(nd.config);
	return rc;
}

SF_API int sf_graph_linear(sf_graph *g, int x, int out_dim, const char *name, int *out)
{
	if (out_dim <= 0 && g && out)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_linear(\"%s\"): output width must be > 0 (got "
		              "%d)",
		              name ? name : "", out_dim);
	return sf_graph_layer(g, "linear", &x, 1, &out_dim, sizeof out_dim, name, out);
}

SF_API int sf_graph_relu(sf_graph *g, int x, int *out)
{
	return sf_graph_layer(g, "relu", &x, 1, NULL, 0, NULL, out);
}

SF_API int sf_graph_gelu(sf_graph *g, int x, int *out)
{
	return sf_graph_layer(g, "gelu", &x, 1, NULL, 0, NULL, out);
}

SF_API int sf_graph_add(sf_graph *g, int a, int b, int *out)
{
	int in[2] = {a, b};
	return sf_graph_layer(g, "add", in, 2, NULL, 0, NULL, out);
}

SF_API int sf_graph_softmax_cross_entropy(sf_graph *g, int logits, int labels, int *out)
{
	int rc = begin(g, "sf_graph_softmax_cross_entropy", out);
	if (rc < 0)
		return rc;
	if (logits < 0 || logits >= g->n || g->nodes[logits].kind == SF_NODE_LABELS)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_softmax_cross_entropy: logits node %d is not a "
		              "float node of graph \"%s\"",
		              logits, g->name);
	if (labels < 0 || labels >= g->n || g->nodes[labels].kind != SF_NODE_LABELS)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_softmax_cross_entropy: node %d is not the "
		              "label input (sf_graph_label_input)",
		              labels);
	if (g->nodes[logits].dim != g->nodes[labels].dim)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_softmax_cross_entropy: logits width %d does "
		              "not match the %d classes of \"%s\"",
		              g->nodes[logits].dim, g->nodes[labels].dim, g->nodes[labels].name);
	if (g->nodes[logits].kind == SF_NODE_INPUT)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_softmax_cross_entropy: the logits are a graph "
		              "input; there is nothing to train");
	struct _sf_node nd = {.kind = SF_NODE_LOSS, .nin = 2, .in = {logits, labels}, .dim = 1};
	strcpy(nd.name, "loss");
	if ((rc = push(g, &nd, out)) < 0)
		return rc;
	g->loss = *out;
	return SF_OK;
}
