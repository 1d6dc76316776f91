/* decoder.c — the checks, inputs and node names the ready-made decoders share
 * (models/decoder.h). */
#include "models/decoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int _sf_decoder_write_json(const char *fn, json_t *o, const char *path)
{
	if (!path || !*path) {
		json_decref(o);
		return sf_error_set(SF_ERR_INVALID, "%s: NULL path", fn);
	}
	char *text =
	    o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(7)) : NULL;
	json_decref(o);
	if (!text)
		return sf_error_set(SF_ERR_NOMEM, "%s: out of memory", fn);
	size_t n = strlen(text);
	char *t2 = realloc(text, n + 2);
	if (!t2) {
		free(text);
		return sf_error_set(SF_ERR_NOMEM, "%s: out of memory", fn);
	}
	t2[n] = '\n', t2[n + 1] = '\0';
	int rc = sf_file_write_atomic(path, t2, n + 1);
	free(t2);
	return rc;
}

/* field f's value in the file, printed into buf (for the message) */
static void show(const json_t *v, char *buf, size_t size)
{
	char *t = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	snprintf(buf, size, "%s", t ? t : "absent");
	free(t);
}

/* whether the file's value v (NULL: absent) matches field f */
static int field_ok(const struct _sf_hf_field *f, const json_t *v)
{
	if (!v || json_is_null(v))
		return f->missing == 2 || (!v && f->missing == 1);
	switch (f->kind) {
	case SF_HF_INT:
		return json_is_integer(v) && (f->min ? (double)json_integer_value(v) >= f->v
		                                     : (double)json_integer_value(v) == f->v);
	case SF_HF_REAL: {
		if (!json_is_number(v))
			return 0;
		double x = json_number_value(v);
		return fabs(x - f->v) <= 1e-6 * fabs(f->v);
	}
	case SF_HF_BOOL: return json_is_boolean(v) && (json_is_true(v) ? 1.0 : 0.0) == f->v;
	case SF_HF_STR:
		return json_is_string(v) && (!strcmp(json_string_value(v), f->s) ||
		                             (f->alt && !strcmp(json_string_value(v), f->alt)));
	}
	return 0;
}

int _sf_decoder_check_json(const char *fn, const char *path, const struct _sf_hf_field *f, int n)
{
	json_error_t err;
	if (!path)
		return sf_error_set(SF_ERR_INVALID, "%s: NULL path", fn);
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!root || !json_is_object(root)) {
		json_decref(root);
		return sf_error_set(SF_ERR_IO, "%s: cannot read %s: %s", fn, path,
		                    root ? "not a JSON object" : err.text);
	}
	int rc = SF_OK;
	for (int i = 0; i < n && rc == SF_OK; i++) {
		const json_t *v = json_object_get(root, f[i].key);
		if (field_ok(&f[i], v))
			continue;
		char got[64], want[64];
		show(v, got, sizeof got);
		if (f[i].kind == SF_HF_STR)
			snprintf(want, sizeof want, "\"%s\"%s%s%s", f[i].s,
			         f[i].alt ? " or \"" : "", f[i].alt ? f[i].alt : "",
			         f[i].alt ? "\"" : "");
		else if (f[i].kind == SF_HF_BOOL)
			snprintf(want, sizeof want, "%s", f[i].v != 0 ? "true" : "false");
		else
			snprintf(want, sizeof want, "%s%.7g", f[i].min ? "at least " : "", f[i].v);
		rc = sf_error_set(SF_ERR_INVALID, "%s: %s: \"%s\" is %s, the model's is %s", fn,
		                  path, f[i].key, got, want);
	}
	json_decref(root);
	return rc;
}
