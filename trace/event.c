/*
 * event.c — what a task name says (kind and layer) and the interval arithmetic on task
 * times (see event.h): the vocabulary that the report (report.c), the timeline
 * (svg.c), the built-in trace (recorder.c) and the tasks.rec reader (taskrec.c) share.
 * It calls nothing of theirs, so each of them can call it and none calls another back.
 */
#include "trace/event.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[SF_EV_NKINDS] = {
    "gather", "fwd", "loss", "bwd", "rs", "opt", "ag", "loss allreduce", "free", "grad", "grad norm", "recompute",
};

const char *_sf_ev_kind_name(enum _sf_ev_kind k)
{
	return k >= 0 && k < SF_EV_NKINDS ? kind_names[k] : "?";
}

bool _sf_ev_is_comm(enum _sf_ev_kind k)
{
	return k == SF_EV_GATHER || k == SF_EV_RS || k == SF_EV_AG || k == SF_EV_LOSS_SUM ||
	       k == SF_EV_NORM;
}

bool _sf_ev_is_compute(enum _sf_ev_kind k)
{
	return k == SF_EV_FWD || k == SF_EV_LOSS || k == SF_EV_BWD || k == SF_EV_OPT ||
	       k == SF_EV_GRAD || k == SF_EV_RECOMPUTE;
}

/* "L<digits>" at s; returns the number of characters read, 0 if malformed. */
static size_t parse_layer(const char *s, int *layer)
{
	if (s[0] != 'L' || !isdigit((unsigned char)s[1]))
		return 0;
	long v = 0;
	size_t i = 1;
	while (isdigit((unsigned char)s[i])) {
		v = v * 10 + (s[i] - '0');
		if (v > 1000000000L)
			return 0;
		i++;
	}
	*layer = (int)v;
	return i;
}

int _sf_ev_parse_name(const char *name, enum _sf_ev_kind *kind, int *layer)
{
	static const struct {
		const char *word;
		enum _sf_ev_kind kind;
		bool typed; /* followed by " <layer type>" */
	} prefixes[] = {
	    {"gather ", SF_EV_GATHER, false}, {"fwd ", SF_EV_FWD, true},  {"bwd ", SF_EV_BWD, true},
	    {"rs ", SF_EV_RS, false},         {"opt ", SF_EV_OPT, false}, {"ag ", SF_EV_AG, false},
	    {"ar ", SF_EV_RS, false},
	    {"free ", SF_EV_FREE, false},     {"acc ", SF_EV_GRAD, false}, {"sqnorm ", SF_EV_GRAD, false},
	    {"recompute ", SF_EV_RECOMPUTE, true},
	};
	if (!name)
		return -1;
	*layer = -1;
	if (strcmp(name, "loss") == 0) {
		*kind = SF_EV_LOSS;
		return 0;
	}
	if (strcmp(name, "loss allreduce") == 0) {
		*kind = SF_EV_LOSS_SUM;
		return 0;
	}
	if (strcmp(name, "grad norm") == 0) {
		*kind = SF_EV_NORM;
		return 0;
	}
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
		size_t w = strlen(prefixes[i].word);
		if (strncmp(name, prefixes[i].word, w) != 0)
			continue;
		size_t k = parse_layer(name + w, layer);
		if (!k)
			return -2;
		const char *rest = name + w + k;
		if (prefixes[i].typed ? (rest[0] != ' ' || rest[1] == '\0') : rest[0] != '\0')
			return -2;
		*kind = prefixes[i].kind;
		return 0;
	}
	return -1;
}

static int cmp_ival(const void *x, const void *y)
{
	const struct _sf_ival *p = x, *q = y;
	return p->a < q->a ? -1 : p->a > q->a ? 1 : 0;
}

size_t _sf_ival_merge(struct _sf_ival *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, cmp_ival);
	size_t k = 0;
	for (size_t i = 1; i < n; i++) {
		if (v[i].a <= v[k].b) {
			if (v[i].b > v[k].b)
				v[k].b = v[i].b;
		} else {
			v[++k] = v[i];
		}
	}
	return k + 1;
}
