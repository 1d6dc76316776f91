/*
 * graph.c — building a model as a graph of nodes.
 *
 * A node may only take earlier nodes as inputs, so creation order is a topological
 * order and the scheduler unrolls forward in that order and backward in reverse.
 * Every builder validates its arguments (ids, widths, names) and leaves the graph
 * unchanged on error, so a failed call can be corrected and the graph reused. Once
 * sf_model_create has made a model of a graph, its unit options are refused: the model
 * copied them, and a change would reach only later models, never the one the caller
 * holds.
 */
#include "layers/layer.h"

#include <stdio.h>

#include <math.h>
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
	g->seq_len = 1;
	g->open_group = -1;
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
	free(g->group_names);
	free(g->group_opts);
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
	g->nodes[g->n].tied_to = nd->kind == SF_NODE_LAYER ? nd->tied_to : -1;
	g->nodes[g->n].group =
	    nd->kind == SF_NODE_LAYER && nd->nparams && nd->tied_to < 0 ? g->open_group : -1;
	sf_unit_options_init(&g->nodes[g->n].unit_opts);
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

SF_API int sf_graph_set_seq_len(sf_graph *g, int T)
{
	if (!g)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_set_seq_len: graph is NULL");
	if (g->n > 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_set_seq_len: graph \"%s\" already has %d node(s); set the "
		              "sequence length before the first node",
		              g->name, g->n);
	if (T < 1)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_set_seq_len: T must be >= 1 (got %d)", T);
	g->seq_len = T;
	return SF_OK;
}

SF_API int sf_graph_int_input(sf_graph *g, const char *name, int range, int *out)
{
	int rc = begin(g, "sf_graph_int_input", out);
	if (rc < 0)
		return rc;
	if (range < 1)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_int_input: the id range of \"%s\" must be >= 1 (got %d)",
		              name ? name : "(unnamed)", range);
	if (!name)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_int_input: an input needs a name");
	if ((rc = check_name(g, "sf_graph_int_input", name)) < 0)
		return rc;
	struct _sf_node nd = {.kind = SF_NODE_INT_INPUT, .dim = range};
	strcpy(nd.name, name);
	if ((rc = push(g, &nd, out)) < 0)
		return rc;
	g->nint_inputs++;
	return SF_OK;
}

SF_API int sf_graph_unit_begin(sf_graph *g, const char *name)
{
	if (!g)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_unit_begin: graph is NULL");
	if (g->open_group >= 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_unit_begin(\"%s\"): unit \"%s\" of graph \"%s\" is still "
		              "open; groups do not nest (call sf_graph_unit_end first)",
		              name ? name : "", g->group_names[g->open_group], g->name);
	if (!name || !name[0] || strlen(name) >= SF_NAME_MAX)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_unit_begin: the unit name must be 1 to %d characters",
		              SF_NAME_MAX - 1);
	/* an earlier unit's name reopens it: what follows joins its flat vector (a GPT's
	 * final norm joins the embeddings' unit, which the tied head reads anyway) */
	for (int i = 0; i < g->ngroups; i++)
		if (strcmp(g->group_names[i], name) == 0) {
			g->open_group = i;
			return SF_OK;
		}
	char(*p)[SF_NAME_MAX] = realloc(g->group_names, (size_t)(g->ngroups + 1) * sizeof *p);
	if (!p)
		return SF_ERR(SF_ERR_NOMEM, "sf_graph_unit_begin: out of memory");
	g->group_names = p;
	struct sf_unit_options *o = realloc(g->group_opts, (size_t)(g->ngroups + 1) * sizeof *o);
	if (!o)
		return SF_ERR(SF_ERR_NOMEM, "sf_graph_unit_begin: out of memory");
	g->group_opts = o;
	sf_unit_options_init(&g->group_opts[g->ngroups]);
	strcpy(g->group_names[g->ngroups], name);
	g->open_group = g->ngroups++;
	return SF_OK;
}

SF_API int sf_unit_options_init(struct sf_unit_options *o)
{
	if (!o)
		return SF_ERR(SF_ERR_INVALID, "sf_unit_options_init: o is NULL");
	*o = (struct sf_unit_options){.reshard_after_forward = 1, .keep_fp32 = 0, .frozen = 0};
	return SF_OK;
}

/* A node that is a unit of its own: a layer with parameters of its own, outside a group */
static bool lone_unit(const struct _sf_node *nd)
{
	return nd->kind == SF_NODE_LAYER && nd->nparams && nd->tied_to < 0 && nd->group < 0;
}

/* Appends "name" to the list list[0..*k), while it fits */
static void list_name(char *list, size_t len, size_t *k, const char *name)
{
	if (*k + SF_NAME_MAX + 8 < len)
		*k += (size_t)snprintf(list + *k, len - *k, "%s\"%s\"", *k ? ", " : "", name);
}

/* Why g has no unit `unit`, naming what it has: the refusal of sf_graph_unit_options */
static int no_unit(const sf_graph *g, const char *unit)
{
	for (int i = 0; i < g->n; i++) {
		const struct _sf_node *nd = &g->nodes[i];
		if (strcmp(nd->name, unit) != 0 || nd->kind != SF_NODE_LAYER)
			continue;
		int owner = _sf_node_param_owner(g->nodes, i);
		if (g->nodes[owner].group >= 0)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_graph_unit_options: \"%s\" is a layer of unit \"%s\" of "
			              "graph \"%s\"; set that unit's options",
			              unit, g->group_names[g->nodes[owner].group], g->name);
		if (owner != i)
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_graph_unit_options: layer \"%s\" of graph \"%s\" uses the "
			    "parameters of \"%s\"; set the options of unit \"%s\"",
			    unit, g->name, g->nodes[owner].name, g->nodes[owner].name);
	}
	char list[512] = "";
	size_t k = 0;
	for (int i = 0; i < g->ngroups; i++)
		list_name(list, sizeof list, &k, g->group_names[i]);
	for (int i = 0; i < g->n; i++)
		if (lone_unit(&g->nodes[i]))
			list_name(list, sizeof list, &k, g->nodes[i].name);
	return SF_ERR(SF_ERR_INVALID,
	              "sf_graph_unit_options: graph \"%s\" has no unit \"%s\" (its units, named "
	              "by sf_graph_unit_begin or by a layer with parameters outside a group: %s)",
	              g->name, unit, k ? list : "none");
}

SF_API int sf_graph_unit_options(sf_graph *g, const char *unit, const struct sf_unit_options *o)
{
	if (!g || !unit || !o)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_unit_options: NULL graph, unit or options");
	if ((o->reshard_after_forward != 0 && o->reshard_after_forward != 1) ||
	    (o->keep_fp32 != 0 && o->keep_fp32 != 1) || (o->frozen != 0 && o->frozen != 1))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_unit_options: unit \"%s\": reshard_after_forward %d, "
		              "keep_fp32 %d and frozen %d must each be 0 or 1",
		              unit, o->reshard_after_forward, o->keep_fp32, o->frozen);
	/* a group's name first: sf_graph_unit_begin's names are the units' names */
	struct sf_unit_options *to = NULL;
	for (int i = 0; i < g->ngroups && !to; i++)
		if (strcmp(g->group_names[i], unit) == 0)
			to = &g->group_opts[i];
	for (int i = 0; i < g->n && !to; i++)
		if (lone_unit(&g->nodes[i]) && strcmp(g->nodes[i].name, unit) == 0)
			to = &g->nodes[i].unit_opts;
	if (!to)
		return no_unit(g, unit);
	if (g->model_made)
		return SF_ERR(SF_ERR_STATE,
		              "sf_graph_unit_options: unit \"%s\" of graph \"%s\": a model was "
		              "already made of this graph, and a created model is not changed by "
		              "its graph afterwards; set unit options before sf_model_create (for "
		              "a model with other options, build the graph again)",
		              unit, g->name);
	*to = *o;
	return SF_OK;
}

/* sf_model_create takes the graph const: it changes nothing the graph describes. That
 * a model was made of it is the graph's record about itself, kept here; every graph
 * is allocated writable by sf_graph_create, so writing through the cast is defined. */
void _sf_graph_model_made(const sf_graph *g)
{
	((sf_graph *)g)->model_made = true;
}

SF_API int sf_graph_unit_end(sf_graph *g)
{
	if (!g)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_unit_end: graph is NULL");
	if (g->open_group < 0)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_unit_end: graph \"%s\" has no open unit "
		              "(sf_graph_unit_begin)",
		              g->name);
	int members = 0;
	for (int i = 0; i < g->n; i++)
		members += g->nodes[i].group == g->open_group;
	if (!members)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_unit_end: unit \"%s\" of graph \"%s\" has no node with "
		              "parameters of its own",
		              g->group_names[g->open_group], g->name);
	g->open_group = -1;
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

/* The inputs of a layer node: ids exist, labels feed only the loss, integer nodes
 * feed only the type's integer inputs (and float nodes its float inputs). */
static int check_inputs(const sf_graph *g, const struct _sf_layer_entry *e, const int *inputs,
                        int ninputs, struct _sf_node *nd, int *dims)
{
	for (int i = 0; i < ninputs; i++) {
		int x = inputs[i];
		if (x < 0 || x >= g->n)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_graph_layer(%s): input %d is node %d, which does not "
			              "exist in graph \"%s\" (%d nodes)",
			              e->name, i, x, g->name, g->n);
		enum _sf_node_kind k = g->nodes[x].kind;
		if (k == SF_NODE_LABELS || k == SF_NODE_LOSS)
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_graph_layer(%s): input %d is the %s node; labels only feed "
			    "the loss",
			    e->name, i, k == SF_NODE_LABELS ? "label" : "loss");
		bool want_int = (e->type.int_inputs >> i) & 1u;
		if (want_int != (k == SF_NODE_INT_INPUT))
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_graph_layer(%s): input %d is node \"%s\", %s node, but the "
			    "type takes %s there",
			    e->name, i, g->nodes[x].name,
			    k == SF_NODE_INT_INPUT ? "an integer" : "a float",
			    want_int ? "integer ids (sf_graph_int_input)" : "floats");
		for (int j = 0; j < i; j++)
			if (inputs[j] == x)
				return SF_ERR(SF_ERR_INVALID,
				              "sf_graph_layer(%s): node %d is given twice as input",
				              e->name, x);
		nd->in[i] = x;
		dims[i] = g->nodes[x].dim;
	}
	return SF_OK;
}

/* A position embedding's kernels index W by the row's position, t < T, without a check
 * (a kernel cannot fail): a graph with more positions per sequence than the embedding
 * has rows is refused here, whichever builder added the node. infer() does not see T,
 * hence the check by name; a built-in's name cannot be registered again, so the name
 * is the built-in type. config was accepted by infer (an int > 0). */
static int check_positions(const sf_graph *g, const char *fn, const struct _sf_layer_entry *e,
                           const void *config)
{
	if (strcmp(e->name, "pos_embedding") != 0)
		return SF_OK;
	int np = *(const int *)config;
	if (g->seq_len > np)
		return SF_ERR(SF_ERR_INVALID,
		              "%s(pos_embedding): graph \"%s\" has sequences of T = %d rows, more "
		              "than the %d positions of the embedding",
		              fn, g->name, g->seq_len, np);
	return SF_OK;
}

/* A config of a size the type lists (sf_layer_type::config_sizes), checked before
 * infer() reads it: infer() does not see the size, so a short blob would be read past
 * its end. A type that lists none takes any size. */
static int check_config_size(const char *fn, const struct _sf_layer_entry *e, size_t size)
{
	const struct sf_layer_type *t = &e->type;
	bool none_ok = false;
	int nsizes = 0;
	for (int i = 0; i < t->nconfig_sizes; i++) {
		if (t->config_sizes[i] == size)
			return SF_OK;
		none_ok |= t->config_sizes[i] == 0;
		nsizes += t->config_sizes[i] != 0;
	}
	if (t->nconfig_sizes == 0)
		return SF_OK;
	/* "no config (NULL, 0) or a config of 4, 8 or 12 bytes" */
	char takes[192];
	int k = snprintf(takes, sizeof takes, "%s%s", none_ok ? "no config (NULL, 0)" : "",
	                 none_ok && nsizes ? " or " : "");
	for (int i = 0, j = 0; i < t->nconfig_sizes; i++) {
		if (!t->config_sizes[i])
			continue;
		k += snprintf(takes + k, sizeof takes - (size_t)k, "%s%zu",
		              j == 0           ? "a config of "
		              : j + 1 < nsizes ? ", "
		                               : " or ",
		              t->config_sizes[i]);
		if (++j == nsizes)
			snprintf(takes + k, sizeof takes - (size_t)k, " bytes");
	}
	char got[32] = "none (NULL, 0)";
	if (size)
		snprintf(got, sizeof got, "%zu bytes", size);
	return SF_ERR(SF_ERR_INVALID, "%s: layer type \"%s\" takes %s, got %s", fn, e->name, takes,
	              got);
}

/* sf_graph_layer and sf_graph_layer_tied: owner is -1 or the node whose parameters
 * the new node uses. */
static int add_layer(sf_graph *g, const char *fn, const char *type, const int *inputs, int ninputs,
                     const void *config, size_t config_size, const char *name, int owner, int *out)
{
	int rc = begin(g, fn, out);
	if (rc < 0)
		return rc;
	const struct _sf_layer_entry *e = _sf_layer_find(type);
	if (!e) {
		char known[1024];
		_sf_layer_type_names(known, sizeof known);
		return SF_ERR(SF_ERR_INVALID,
		              "%s: unknown layer type \"%s\" (known: %s; others must be "
		              "registered with sf_layer_type_register)",
		              fn, type ? type : "(null)", known);
	}
	if (!inputs || ninputs < e->type.min_inputs || ninputs > e->type.max_inputs)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: layer type \"%s\" takes %d to %d inputs (got %d%s)", fn, e->name,
		              e->type.min_inputs, e->type.max_inputs, ninputs,
		              inputs ? "" : ", inputs is NULL");
	if ((config == NULL) != (config_size == 0))
		return SF_ERR(SF_ERR_INVALID,
		              "%s: config and config_size must be both set or both empty", fn);
	if ((rc = check_config_size(fn, e, config_size)) < 0)
		return rc;
	struct _sf_node nd = {.kind = SF_NODE_LAYER, .type = e, .nin = ninputs, .tied_to = owner};
	int dims[SF_MAX_INPUTS];
	if ((rc = check_inputs(g, e, inputs, ninputs, &nd, dims)) < 0)
		return rc;
	int out_dim = 0;
	size_t np = 0;
	/* the type's message is held, and printed once below with the node's context */
	_sf_err_hold();
	rc = e->type.infer(dims, ninputs, config, &out_dim, &np);
	bool said = _sf_err_release();
	if (rc < 0) {
		/* a copy: SF_ERR writes the buffer sf_last_error() returns while formatting */
		char why[512];
		snprintf(why, sizeof why, "%s",
		         said ? sf_last_error()
		              : "(no message: infer() should call sf_error_set())");
		return SF_ERR(rc, "%s: layer type \"%s\" rejected its inputs or config: %s", fn,
		              e->name, why);
	}
	if (out_dim <= 0)
		return SF_ERR(SF_ERR_INVALID, "%s: layer type \"%s\" gave output width %d", fn,
		              e->name, out_dim);
	if ((rc = check_positions(g, fn, e, config)) < 0)
		return rc;
	if (owner >= 0 && np != g->nodes[owner].nparams)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: a \"%s\" node with these inputs needs %zu parameters, node "
		              "\"%s\" it is tied to has %zu",
		              fn, e->name, np, g->nodes[owner].name, g->nodes[owner].nparams);
	if (np > 0 && owner < 0 && !name)
		return SF_ERR(SF_ERR_INVALID,
		              "%s: a \"%s\" layer has parameters and needs a unique name", fn,
		              e->name);
	if ((rc = check_name(g, fn, name)) < 0)
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
			return SF_ERR(SF_ERR_NOMEM, "%s: out of memory", fn);
		memcpy(nd.config, config, config_size);
		nd.config_size = config_size;
	}
	if ((rc = push(g, &nd, out)) < 0)
		free(nd.config);
	return rc;
}

SF_API int sf_graph_layer(sf_graph *g, const char *type, const int *inputs, int ninputs,
                          const void *config, size_t config_size, const char *name, int *out)
{
	return add_layer(g, "sf_graph_layer", type, inputs, ninputs, config, config_size, name, -1,
	                 out);
}

SF_API int sf_graph_layer_tied(sf_graph *g, const char *type, const int *inputs, int ninputs,
                               const void *config, size_t config_size, const char *name, int owner,
                               int *out)
{
	if (g && out &&
	    (owner < 0 || owner >= g->n || g->nodes[owner].kind != SF_NODE_LAYER ||
	     !g->nodes[owner].nparams || g->nodes[owner].tied_to >= 0))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_layer_tied: node %d is not a layer of graph \"%s\" with "
		              "parameters of its own",
		              owner, g->name);
	return add_layer(g, "sf_graph_layer_tied", type, inputs, ninputs, config, config_size, name,
	                 owner, out);
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

SF_API int sf_graph_linear_config(sf_graph *g, int x, const struct sf_linear_config *c, int bias,
                                  const char *name, int *out)
{
	if (!c && g && out)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_linear_config(\"%s\"): NULL config",
		              name ? name : "");
	if (c && g && out && (c->out_dim <= 0 || !(c->init_std >= 0.0f) || isinf(c->init_std)))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_linear_config(\"%s\"): out_dim must be > 0 and init_std "
		              "finite and >= 0 (got %d, %g)",
		              name ? name : "", c->out_dim, (double)c->init_std);
	return sf_graph_layer(g, bias ? "linear" : "linear_nobias", &x, 1, c, sizeof *c, name, out);
}

SF_API int sf_graph_layernorm(sf_graph *g, int x, const char *name, int *out)
{
	return sf_graph_layer(g, "layernorm", &x, 1, NULL, 0, name, out);
}

SF_API int sf_graph_rmsnorm(sf_graph *g, int x, float eps, const char *name, int *out)
{
	struct sf_rmsnorm_config c = {.eps = eps};
	return sf_graph_layer(g, "rmsnorm", &x, 1, &c, sizeof c, name, out);
}

SF_API int sf_graph_rope(sf_graph *g, int x, int rotated, int head_dim, float theta, int *out)
{
	struct sf_rope_config c = {.rotated = rotated, .head_dim = head_dim, .theta = theta};
	return sf_graph_layer(g, "rope", &x, 1, &c, sizeof c, NULL, out);
}

SF_API int sf_graph_gqa_attention(sf_graph *g, int qkv, int heads, int kv_heads, int *out)
{
	struct sf_attention_config c = {.heads = heads, .kv_heads = kv_heads};
	return sf_graph_layer(g, "attention_gqa", &qkv, 1, &c, sizeof c, NULL, out);
}

SF_API int sf_graph_linear_split(sf_graph *g, int x, const struct sf_linear_split_config *c,
                                 const char *name, int *out)
{
	if (!c && g && out)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_linear_split(\"%s\"): NULL config",
		              name ? name : "");
	return sf_graph_layer(g, "linear_split", &x, 1, c, c ? sizeof *c : 0, name, out);
}

SF_API int sf_graph_linear_col(sf_graph *g, int x, const struct sf_linear_tp_config *c,
                               const char *name, int *out)
{
	if (!c && g && out)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_linear_col(\"%s\"): NULL config",
		              name ? name : "");
	return sf_graph_layer(g, "linear_col", &x, 1, c, c ? sizeof *c : 0, name, out);
}

SF_API int sf_graph_linear_row(sf_graph *g, int x, const struct sf_linear_tp_config *c,
                               const char *name, int *out)
{
	if (!c && g && out)
		return SF_ERR(SF_ERR_INVALID, "sf_graph_linear_row(\"%s\"): NULL config",
		              name ? name : "");
	return sf_graph_layer(g, "linear_row", &x, 1, c, c ? sizeof *c : 0, name, out);
}

SF_API int sf_graph_silu(sf_graph *g, int x, int *out)
{
	return sf_graph_layer(g, "silu", &x, 1, NULL, 0, NULL, out);
}

SF_API int sf_graph_mul(sf_graph *g, int a, int b, int *out)
{
	int in[2] = {a, b};
	return sf_graph_layer(g, "mul", in, 2, NULL, 0, NULL, out);
}

SF_API int sf_graph_causal_attention(sf_graph *g, int qkv, int heads, int *out)
{
	if (heads <= 0 && g && out)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_causal_attention: the number of heads must be > 0 (got %d)",
		              heads);
	return sf_graph_layer(g, "attention", &qkv, 1, &heads, sizeof heads, NULL, out);
}

SF_API int sf_graph_pos_embedding(sf_graph *g, int x, int positions, const char *name, int *out)
{
	if (positions <= 0 && g && out)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_pos_embedding(\"%s\"): the number of positions must be > 0 "
		              "(got %d)",
		              name ? name : "", positions);
	if (g && out && g->seq_len > positions)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_pos_embedding(\"%s\"): graph \"%s\" has sequences of T = "
		              "%d rows, more than the %d positions",
		              name ? name : "", g->name, g->seq_len, positions);
	return sf_graph_layer(g, "pos_embedding", &x, 1, &positions, sizeof positions, name, out);
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

/* The graph's loss node nd, with a copy of c */
static int push_loss(sf_graph *g, const struct sf_loss_config *c, struct _sf_node *nd, int *out)
{
	int rc;
	nd->config = malloc(sizeof *c);
	if (!nd->config)
		return SF_ERR(SF_ERR_NOMEM, "sf_graph_loss: out of memory");
	memcpy(nd->config, c, sizeof *c);
	nd->config_size = sizeof *c;
	strcpy(nd->name, "loss");
	if ((rc = push(g, nd, out)) < 0) {
		free(nd->config);
		return rc;
	}
	g->loss = *out;
	return SF_OK;
}

SF_API int sf_loss_config_init(struct sf_loss_config *c)
{
	if (!c)
		return SF_ERR(SF_ERR_INVALID, "sf_loss_config_init: c is NULL");
	*c = (struct sf_loss_config){
	    .kind = SF_LOSS_CROSS_ENTROPY, .delta = 1.0f, .ignore_index = SF_LOSS_IGNORE_INDEX};
	return SF_OK;
}

SF_API int sf_graph_loss(sf_graph *g, const struct sf_loss_config *c, int pred, int target,
                         int *out)
{
	static const char *const kinds[] = {"cross-entropy", "MSE", "L1", "Huber", "mean"};
	_Static_assert(sizeof kinds / sizeof kinds[0] == SF_LOSS_COUNT, "a name per loss");
	if (!c)
		return sf_graph_softmax_cross_entropy(g, pred, target, out);
	if (c->kind == SF_LOSS_CROSS_ENTROPY) { /* the node of the plain call, with c */
		int rc = sf_graph_softmax_cross_entropy(g, pred, target, out);
		if (rc < 0)
			return rc;
		struct _sf_node *nd = &g->nodes[*out];
		if (!(nd->config = malloc(sizeof *c)))
			return SF_ERR(SF_ERR_NOMEM, "sf_graph_loss: out of memory");
		memcpy(nd->config, c, sizeof *c);
		nd->config_size = sizeof *c;
		return SF_OK;
	}
	int rc = begin(g, "sf_graph_loss", out);
	if (rc < 0)
		return rc;
	if ((int)c->kind < 0 || c->kind >= SF_LOSS_COUNT)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_loss: kind %d is not SF_LOSS_CROSS_ENTROPY, SF_LOSS_MSE, "
		              "SF_LOSS_L1, SF_LOSS_HUBER or SF_LOSS_MEAN",
		              (int)c->kind);
	if (c->kind == SF_LOSS_HUBER && !(c->delta > 0.0f && isfinite(c->delta)))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_loss: Huber's delta must be a finite number > 0 (got %g)",
		              (double)c->delta);
	if (pred < 0 || pred >= g->n || g->nodes[pred].kind != SF_NODE_LAYER)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_loss (%s): pred node %d is not a layer of graph \"%s\"",
		              kinds[c->kind], pred, g->name);
	if (c->kind == SF_LOSS_MEAN) { /* the losses are pred's own elements */
		if (target != -1)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_graph_loss (mean): target must be -1: a loss layer takes "
			              "its targets as inputs (got node %d)",
			              target);
		struct _sf_node nd = {.kind = SF_NODE_LOSS, .nin = 1, .in = {pred}, .dim = 1};
		return push_loss(g, c, &nd, out);
	}
	if (target < 0 || target >= g->n || g->nodes[target].kind != SF_NODE_INPUT)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_loss (%s): target node %d is not a float input "
		              "(sf_graph_input) of graph \"%s\"",
		              kinds[c->kind], target, g->name);
	if (g->nodes[pred].dim != g->nodes[target].dim)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_graph_loss (%s): pred \"%s\" has width %d, target \"%s\" %d",
		              kinds[c->kind], g->nodes[pred].name, g->nodes[pred].dim,
		              g->nodes[target].name, g->nodes[target].dim);
	struct _sf_node nd = {.kind = SF_NODE_LOSS, .nin = 2, .in = {pred, target}, .dim = 1};
	return push_loss(g, c, &nd, out);
}

SF_API int sf_graph_softmax_cross_entropy(sf_graph *g, int logits, int labels, int *out)
{
	int rc = begin(g, "sf_graph_softmax_cross_entropy", out);
	if (rc < 0)
		return rc;
	if (logits < 0 || logits >= g->n ||
	    (g->nodes[logits].kind != SF_NODE_LAYER && g->nodes[logits].kind != SF_NODE_INPUT))
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
