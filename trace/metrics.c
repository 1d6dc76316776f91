/*
 * metrics.c — a training run's metrics file read back: continued after a resume
 * (sf_metrics_continue) and drawn (sf_metrics_plot, through plot.c).
 *
 * The file is JSON lines, one object a line, as examples/gpt's --metrics writes them
 * (docs/gpt.md): a training step {"step": s, "loss": x, ..., "tokens_per_s": r, ...}
 * and an evaluation {"kind": "eval", "step": s, "val_loss": v, ...}; a non-finite
 * loss is null (JSON has no NaN). The writer appends each line with one write(2), so a
 * crash leaves at most the last line torn; a resumed run continues the file from its
 * checkpoint's step, so the lines of steps it will train again are dropped first and
 * the file never holds a step twice. Every line is parsed whole by jansson
 * (json_loads), the same reader for both jobs; only the fields drawn are checked.
 */
#include "common/error.h"
#include "trace/plot.h"
#include "trace/write.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The whole file at path (NUL-terminated, *len bytes without it) into *out, the
 * caller's to free. fd >= 0: read that descriptor instead of opening path. */
static int slurp(const char *path, int fd, char **out, size_t *len)
{
	int rc = SF_OK, own = fd < 0;
	size_t cap = 4096, n = 0;
	char *buf = NULL;
	if (own && (fd = open(path, O_RDONLY)) < 0)
		return SF_ERR(SF_ERR_IO, "cannot read \"%s\": %s", path, strerror(errno));
	for (;;) {
		if (!buf || n + 1 >= cap) {
			char *b = realloc(buf, buf ? (cap *= 2) : cap);
			if (!b) {
				rc = SF_ERR(SF_ERR_NOMEM, "out of memory reading \"%s\"", path);
				goto fail;
			}
			buf = b;
		}
		ssize_t got = read(fd, buf + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = SF_ERR(SF_ERR_IO, "cannot read \"%s\": %s", path, strerror(errno));
			goto fail;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	if (own)
		close(fd);
	*out = buf, *len = n;
	return SF_OK;
fail:
	if (own)
		close(fd);
	free(buf);
	return rc;
}

/* Line `line` (NUL-terminated, its newline removed) as an object with an integer
 * "step" >= 1: SF_OK with *obj (the caller's reference) and *step, or SF_ERR_INVALID
 * raised with `quiet` false, recorded only with `quiet` true. */
static int parse_line(const char *path, size_t lineno, const char *line, bool quiet, json_t **obj,
                      long long *step)
{
	json_error_t e;
	json_t *o = json_loads(line, 0, &e), *s;
	const char *why = NULL;
	char jwhy[200];
	if (!o) {
		snprintf(jwhy, sizeof jwhy, "not JSON (%s at column %d)", e.text, e.column);
		why = jwhy;
	} else if (!json_is_object(o)) {
		why = "not a JSON object";
	} else if (!(s = json_object_get(o, "step")) || !json_is_integer(s) ||
	           json_integer_value(s) < 1) {
		why = "no \"step\" (an integer >= 1)";
	}
	if (why) {
		json_decref(o);
		if (quiet)
			return _sf_err_record(SF_ERR_INVALID, "%s line %zu: %s", path, lineno, why);
		return SF_ERR(SF_ERR_INVALID,
		              "%s line %zu: %s; a metrics file has one JSON object a line, as "
		              "--metrics writes it",
		              path, lineno, why);
	}
	*obj = o;
	*step = json_integer_value(s);
	return SF_OK;
}

SF_API int sf_metrics_continue(const char *path, int64_t step)
{
	int rc = SF_OK;
	char *buf = NULL;
	size_t len, keep = 0, lineno = 0;
	if (!path || step < 0)
		return SF_ERR(SF_ERR_INVALID, "sf_metrics_continue: a path and a step >= 0");
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		return SF_ERR(SF_ERR_IO, "cannot write \"%s\": %s", path, strerror(errno));
	if (step > 0) {
		SF_CHECK_GOTO(slurp(path, fd, &buf, &len), out);
		/* the longest run of whole lines, from the start, of steps up to `step` */
		for (char *p = buf, *nl; (nl = memchr(p, '\n', len - (size_t)(p - buf)));
		     p = nl + 1) {
			json_t *o;
			long long s;
			*nl = '\0';
			if (parse_line(path, ++lineno, p, true, &o, &s) < 0)
				break;
			json_decref(o);
			if (s > step)
				break;
			keep = (size_t)(nl + 1 - buf);
		}
	}
	if (ftruncate(fd, (off_t)keep) != 0)
		rc = SF_ERR(SF_ERR_IO, "cannot write \"%s\": %s", path, strerror(errno));
out:
	free(buf);
	close(fd);
	return rc;
}

/* Growing columns of what plot.h draws. */
struct columns {
	double *ts, *tl, *tr; /* training steps: step, loss, tokens/s */
	double *es, *el;      /* evaluations: step, validation loss */
	size_t nt, ne, capt, cape;
};

static void columns_free(struct columns *c)
{
	free(c->ts), free(c->tl), free(c->tr), free(c->es), free(c->el);
}

/* Room for one more value in each of the columns a, b and c (c may be NULL), which
 * hold n values with room for *cap. */
static bool grow(size_t n, size_t *cap, double **a, double **b, double **c)
{
	if (n < *cap)
		return true;
	size_t want = *cap ? 2 * *cap : 64;
	double **cols[3] = {a, b, c};
	for (int i = 0; i < 3 && cols[i]; i++) {
		double *x = realloc(*cols[i], want * sizeof *x);
		if (!x)
			return false;
		*cols[i] = x;
	}
	*cap = want;
	return true;
}

/* A number field: its value, NAN when null (a non-finite value); false when absent
 * or of another type. */
static bool number_or_null(json_t *o, const char *key, double *v)
{
	json_t *x = json_object_get(o, key);
	if (x && json_is_null(x)) {
		*v = NAN;
		return true;
	}
	if (!x || !json_is_number(x))
		return false;
	*v = json_number_value(x);
	return true;
}

/* One parsed line into c. */
static int take_row(const char *path, size_t lineno, json_t *o, long long step, struct columns *c)
{
	json_t *kind = json_object_get(o, "kind");
	const char *k = kind && json_is_string(kind) ? json_string_value(kind) : NULL;
	double loss, rate = NAN;
	if (kind && (!k || (strcmp(k, "train") != 0 && strcmp(k, "eval") != 0)))
		return SF_ERR(SF_ERR_INVALID,
		              "%s line %zu: \"kind\" is neither \"train\" nor \"eval\"", path,
		              lineno);
	bool eval = k && strcmp(k, "eval") == 0;
	const char *key = eval ? "val_loss" : "loss";
	if (!number_or_null(o, key, &loss))
		return SF_ERR(SF_ERR_INVALID,
		              "%s line %zu: no \"%s\" (a number, or null for a non-finite loss)",
		              path, lineno, key);
	if (!eval && json_object_get(o, "tokens_per_s") &&
	    !number_or_null(o, "tokens_per_s", &rate))
		return SF_ERR(SF_ERR_INVALID, "%s line %zu: \"tokens_per_s\" is not a number", path,
		              lineno);
	if (eval ? !grow(c->ne, &c->cape, &c->es, &c->el, NULL)
	         : !grow(c->nt, &c->capt, &c->ts, &c->tl, &c->tr))
		return SF_ERR(SF_ERR_NOMEM, "out of memory reading \"%s\"", path);
	if (eval) {
		c->es[c->ne] = (double)step, c->el[c->ne] = loss;
		c->ne++;
	} else {
		c->ts[c->nt] = (double)step, c->tl[c->nt] = loss, c->tr[c->nt] = rate;
		c->nt++;
	}
	return SF_OK;
}

/* Every line of the metrics file at path into c. A last line with no newline that does
 * not parse is a write under way, or torn by a crash: left out. */
static int read_metrics(const char *path, struct columns *c)
{
	int rc = SF_OK;
	char *buf = NULL;
	size_t len, lineno = 0;
	SF_CHECK(slurp(path, -1, &buf, &len));
	for (char *p = buf; p < buf + len;) {
		char *nl = memchr(p, '\n', len - (size_t)(p - buf));
		json_t *o;
		long long step;
		if (nl)
			*nl = '\0';
		else if (parse_line(path, lineno + 1, p, true, &o, &step) < 0)
			break;
		else
			json_decref(o);
		SF_CHECK_GOTO(parse_line(path, ++lineno, p, false, &o, &step), out);
		rc = take_row(path, lineno, o, step, c);
		json_decref(o);
		if (rc < 0)
			goto out;
		p = nl ? nl + 1 : buf + len;
	}
out:
	free(buf);
	return rc;
}

SF_API int sf_metrics_plot(const char *metrics, const char *svg)
{
	int rc = SF_OK;
	struct columns c = {0};
	char *tmp = NULL;
	FILE *f = NULL;
	if (!metrics || !svg)
		return SF_ERR(SF_ERR_INVALID, "sf_metrics_plot: a metrics file and an SVG path");
	SF_CHECK_GOTO(read_metrics(metrics, &c), out);
	size_t n = strlen(svg) + 5;
	if (!(tmp = malloc(n))) {
		rc = SF_ERR(SF_ERR_NOMEM, "out of memory");
		goto out;
	}
	snprintf(tmp, n, "%s.tmp", svg);
	SF_CHECK_GOTO(_sf_file_create(tmp, &f), out);
	struct _sf_plot_data d = {c.nt, c.ts, c.tl, c.tr, c.ne, c.es, c.el};
	size_t tn = strlen(metrics) + 32;
	char *title = malloc(tn);
	if (title)
		snprintf(title, tn, "training metrics: %s", metrics);
	_sf_plot_write_svg(&d, title, f);
	free(title);
	rc = _sf_file_close(f, tmp);
	f = NULL;
	if (rc < 0)
		goto out;
	if (rename(tmp, svg) != 0)
		rc = SF_ERR(SF_ERR_IO, "cannot write \"%s\": %s", svg, strerror(errno));
out:
	if (f)
		fclose(f);
	if (rc < 0 && tmp)
		unlink(tmp);
	free(tmp);
	columns_free(&c);
	return rc;
}
