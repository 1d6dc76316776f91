/*
 * metrics.h — the lines of a metrics file (--metrics of examples/gpt): one JSON object
 * a line, built here field by field and appended with one write(2).
 *
 * One write a line, on a descriptor opened O_APPEND, is what keeps the file readable
 * whatever happens: a crash leaves whole lines and at most a torn last one, which
 * sf_metrics_continue() (the library's reader of the format, trace/metrics.c) cuts on
 * resume along with the lines of the steps to be trained again. Every value is a
 * number (a non-finite one null: JSON has none) or a fixed string, so nothing needs
 * escaping. Header-only, for a program: it prints its own messages.
 */
#ifndef SF_EXAMPLES_METRICS_H
#define SF_EXAMPLES_METRICS_H

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shardflow.h"

/* One line under construction ("{" then fields); a line of the trainer's dozen fields
 * is far below its size, and one that would not fit is refused, never cut. */
struct metrics_line {
	char buf[1024];
	size_t n;
	int full; /* a field did not fit */
};

static inline void metrics_begin(struct metrics_line *l)
{
	l->n = 0, l->full = 0;
	l->buf[l->n++] = '{';
}

/* Appends ,"key":<fmt of v>, or "key":null when v is not finite. */
static inline void metrics_num(struct metrics_line *l, const char *key, const char *fmt, double v)
{
	char val[64];
	if (isfinite(v))
		snprintf(val, sizeof val, fmt, v);
	else
		snprintf(val, sizeof val, "null");
	int k = snprintf(l->buf + l->n, sizeof l->buf - l->n, "%s\"%s\":%s", l->n > 1 ? "," : "",
	                 key, val);
	if (k < 0 || (size_t)k >= sizeof l->buf - l->n - 2) /* room left for "}\n" */
		l->full = 1;
	else
		l->n += (size_t)k;
}

/* Appends ,"key":"s" (s a fixed word: no escaping). */
static inline void metrics_word(struct metrics_line *l, const char *key, const char *s)
{
	int k = snprintf(l->buf + l->n, sizeof l->buf - l->n, "%s\"%s\":\"%s\"",
	                 l->n > 1 ? "," : "", key, s);
	if (k < 0 || (size_t)k >= sizeof l->buf - l->n - 2)
		l->full = 1;
	else
		l->n += (size_t)k;
}

/* Closes the line and appends it to fd with one write: 0, or -1 with a message
 * naming path. */
static inline int metrics_write(struct metrics_line *l, int fd, const char *prog, const char *path)
{
	if (l->full) {
		fprintf(stderr, "%s: a --metrics line overflowed %zu bytes\n", prog, sizeof l->buf);
		return -1;
	}
	l->buf[l->n++] = '}';
	l->buf[l->n++] = '\n';
	ssize_t w = write(fd, l->buf, l->n);
	if (w != (ssize_t)l->n) {
		fprintf(stderr, "%s: cannot write --metrics %s: %s\n", prog, path,
		        w < 0 ? strerror(errno) : "short write");
		return -1;
	}
	return 0;
}

/* path continued from step `step` (sf_metrics_continue: 0 empties it) and opened for
 * appending into *fd: 0, or -1 with a message (after the library's, which says why). */
static inline int metrics_open(const char *path, int64_t step, int *fd, const char *prog)
{
	if (sf_metrics_continue(path, step) < 0) {
		fprintf(stderr, "%s: cannot continue --metrics %s (the library said why)\n", prog,
		        path);
		return -1;
	}
	if ((*fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)) < 0) {
		fprintf(stderr, "%s: cannot write --metrics %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	return 0;
}

/* <path>.svg drawn from the file (sf_metrics_plot): 0, or -1 with a message. */
static inline int metrics_plot(const char *path, const char *prog)
{
	char svg[4096];
	if (snprintf(svg, sizeof svg, "%s.svg", path) >= (int)sizeof svg) {
		fprintf(stderr, "%s: --metrics %s: path too long for its .svg\n", prog, path);
		return -1;
	}
	if (sf_metrics_plot(path, svg) < 0) {
		fprintf(stderr, "%s: cannot draw %s (the library said why)\n", prog, svg);
		return -1;
	}
	return 0;
}

#endif
