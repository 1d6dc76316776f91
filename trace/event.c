/*
 * event.c — what a task name says (kind, index, names) and the interval arithmetic on task
 * times (see event.h): the vocabulary that the report (report.c), the timeline
 * (svg.c), the built-in trace (recorder.c) and the tasks.rec reader (taskrec.c) share.
 * It calls nothing of theirs, so each of them can call it and none calls another back.
 */
#include "trace/event.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[SF_EV_NKINDS] = {
    "gather",         "fwd",  "loss", "bwd",       "rs",        "opt",          "ag",
    "loss allreduce", "free", "grad", "grad norm", "recompute", "tp allreduce",
    "cp ring",        "pp transfer",
};

const char *_sf_ev_kind_name(enum _sf_ev_kind k)
{
	return k >= 0 && k < SF_EV_NKINDS ? kind_names[k] : "?";
}

bool _sf_ev_is_comm(enum _sf_ev_kind k)
{
	return k == SF_EV_GATHER || k == SF_EV_RS || k == SF_EV_AG || k == SF_EV_LOSS_SUM ||
	       k == SF_EV_NORM || k == SF_EV_TP_AR || k == SF_EV_CP_RING || k == SF_EV_PP;
}

bool _sf_ev_is_compute(enum _sf_ev_kind k)
{
	return k == SF_EV_FWD || k == SF_EV_LOSS || k == SF_EV_BWD || k == SF_EV_OPT ||
	       k == SF_EV_GRAD || k == SF_EV_RECOMPUTE;
}

/* The index of a name ending in "L<digits>)": the digits' value in *layer, and where
 * the 'L' is in *at; false when the name does not end so or the number is above 10^9. */
static bool parse_index(const char *s, size_t len, int *layer, size_t *at)
{
	if (len < 3 || s[len - 1] != ')')
		return false;
	size_t d = len - 1; /* the digits are [d, len - 1) */
	while (d > 0 && isdigit((unsigned char)s[d - 1]))
		d--;
	if (d == len - 1 || d == 0 || s[d - 1] != 'L' || len - 1 - d > 10)
		return false;
	long long v = 0;
	for (size_t i = d; i < len - 1; i++)
		v = v * 10 + (s[i] - '0');
	if (v > 1000000000LL)
		return false;
	*layer = (int)v;
	*at = d - 1;
	return true;
}

/* rest is "<label> (L<n>)" (typed: "<label> (<type> L<n>)"), after the kind's word. */
static int parse_rest(const char *rest, bool typed, struct _sf_ev_name *out)
{
	size_t len = strlen(rest), at;
	if (!parse_index(rest, len, &out->layer, &at))
		return -2;
	if (!typed) {
		if (at < 3 || rest[at - 1] != '(' || rest[at - 2] != ' ')
			return -2;
		out->label = rest;
		out->label_len = at - 2;
		return 0;
	}
	if (at < 4 || rest[at - 1] != ' ')
		return -2;
	size_t type_end = at - 1;
	/* the last " (" with a label before it and a type after it */
	for (size_t p = type_end - 1; p >= 1; p--)
		if (rest[p] == ' ' && rest[p + 1] == '(' && p + 2 < type_end) {
			out->label = rest;
			out->label_len = p;
			out->type = rest + p + 2;
			out->type_len = type_end - (p + 2);
			return 0;
		}
	return -2;
}

int _sf_ev_parse_name(const char *name, struct _sf_ev_name *out)
{
	static const struct {
		const char *word;
		enum _sf_ev_kind kind;
		bool typed; /* "(<layer type> L<n>)" */
	} prefixes[] = {
	    {"gather ", SF_EV_GATHER, false},
	    {"fwd ", SF_EV_FWD, true},
	    {"bwd ", SF_EV_BWD, true},
	    {"rs ", SF_EV_RS, false},
	    {"opt ", SF_EV_OPT, false},
	    {"ag ", SF_EV_AG, false},
	    {"ar ", SF_EV_RS, false},
	    {"free ", SF_EV_FREE, false},
	    {"acc ", SF_EV_GRAD, false},
	    {"sqnorm ", SF_EV_GRAD, false},
	    {"recompute ", SF_EV_RECOMPUTE, true},
	    {"tp_ar ", SF_EV_TP_AR, true},
	    {"tp_ag ", SF_EV_TP_AR, true},
	    {"tp_rs ", SF_EV_TP_AR, true},
	    {"tp_slice ", SF_EV_FREE, true},
	    {"cp_ring ", SF_EV_CP_RING, true},
	    {"cp_pack ", SF_EV_FREE, true},
	};
	static const struct {
		const char *name;
		enum _sf_ev_kind kind;
	} whole[] = {
	    {"loss", SF_EV_LOSS}, {"loss allreduce", SF_EV_LOSS_SUM}, {"grad norm", SF_EV_NORM}};
	if (!name)
		return -1;
	*out = (struct _sf_ev_name){.layer = -1};
	for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
		if (strcmp(name, whole[i].name) == 0) {
			out->kind = whole[i].kind;
			return 0;
		}
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
		size_t w = strlen(prefixes[i].word);
		if (strncmp(name, prefixes[i].word, w) != 0)
			continue;
		out->kind = prefixes[i].kind;
		int rc = parse_rest(name + w, prefixes[i].typed, out);
		if (rc < 0)
			*out = (struct _sf_ev_name){.layer = -1};
		return rc;
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
