/*
 * flight.c — the flight record (comm/flight.h): a ring of the last N communication
 * operations per rank, its file, and the reading of the other ranks' files that
 * names the rank behind.
 */
#include "comm/flight.h"
#include "common/error.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NAME_MAX_ 96

struct entry {
	int channel;
	int state;
	int64_t seq; /* its number in the channel, from 1 */
	const void *key;
	char name[NAME_MAX_];
	double bytes;
	double submitted, started, ended; /* CLOCK_REALTIME seconds; 0: not yet */
};

struct _sf_flight {
	pthread_mutex_t mu;
	int cap, rank, size;
	uint64_t job;
	int64_t n;     /* entries ever appended; entry i is e[i % cap] */
	int64_t qhead; /* no entry before it is queued: where a start's search begins */
	struct entry *e;
	int64_t issued[SF_FLIGHT_NCHANNELS], done[SF_FLIGHT_NCHANNELS];
	char dir[4096];
};

static const char *const channel_names[SF_FLIGHT_NCHANNELS] = {"step", "host"};
static const char *const state_names[] = {"queued", "running", "done", "failed"};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int _sf_flight_create(int cap, int rank, int size, uint64_t key, struct _sf_flight **out)
{
	*out = NULL;
	if (cap <= 0)
		return SF_OK;
	struct _sf_flight *f = calloc(1, sizeof *f);
	if (f)
		f->e = calloc((size_t)cap, sizeof *f->e);
	if (!f || !f->e) {
		free(f);
		return SF_ERR(SF_ERR_NOMEM, "the flight record: out of memory (%d entries)", cap);
	}
	pthread_mutex_init(&f->mu, NULL);
	f->cap = cap, f->rank = rank, f->size = size, f->job = key;
	*out = f;
	return SF_OK;
}

void _sf_flight_destroy(struct _sf_flight *f)
{
	if (!f)
		return;
	pthread_mutex_destroy(&f->mu);
	free(f->e);
	free(f);
}

void _sf_flight_set_dir(struct _sf_flight *f, const char *dir)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	snprintf(f->dir, sizeof f->dir, "%s", dir ? dir : "");
	pthread_mutex_unlock(&f->mu);
}

/* appends an entry (locked) */
static struct entry *append(struct _sf_flight *f, enum _sf_flight_channel ch, const void *key,
                            const char *name, double bytes, int64_t *id)
{
	struct entry *e = &f->e[f->n % f->cap];
	*id = f->n++;
	memset(e, 0, sizeof *e);
	e->channel = ch;
	e->seq = ++f->issued[ch];
	e->key = key;
	e->bytes = bytes;
	snprintf(e->name, sizeof e->name, "%s", name ? name : "?");
	return e;
}

void _sf_flight_submit(struct _sf_flight *f, const void *key, const char *name, double bytes)
{
	if (!f)
		return;
	int64_t id;
	pthread_mutex_lock(&f->mu);
	struct entry *e = append(f, SF_FLIGHT_STEP, key, name, bytes, &id);
	e->state = SF_FLIGHT_QUEUED;
	e->submitted = now_s();
	pthread_mutex_unlock(&f->mu);
}

int64_t _sf_flight_start(struct _sf_flight *f, enum _sf_flight_channel ch, const void *key,
                         const char *name, double bytes)
{
	if (!f)
		return -1;
	int64_t id = -1;
	pthread_mutex_lock(&f->mu);
	int64_t first = f->n > f->cap ? f->n - f->cap : 0;
	if (f->qhead < first)
		f->qhead = first;
	for (int64_t i = f->qhead; ch == SF_FLIGHT_STEP && i < f->n; i++) {
		struct entry *e = &f->e[i % f->cap];
		if (e->state == SF_FLIGHT_QUEUED && e->key == key) {
			id = i;
			break;
		}
	}
	struct entry *e = id >= 0 ? &f->e[id % f->cap] : append(f, ch, key, name, bytes, &id);
	e->state = SF_FLIGHT_RUNNING;
	e->started = now_s();
	if (bytes > 0)
		e->bytes = bytes;
	while (f->qhead < f->n && f->e[f->qhead % f->cap].state != SF_FLIGHT_QUEUED)
		f->qhead++;
	pthread_mutex_unlock(&f->mu);
	return id;
}

void _sf_flight_end(struct _sf_flight *f, int64_t id, int ok)
{
	if (!f || id < 0)
		return;
	pthread_mutex_lock(&f->mu);
	if (id >= f->n - f->cap) { /* not overwritten meanwhile */
		struct entry *e = &f->e[id % f->cap];
		e->state = ok ? SF_FLIGHT_DONE : SF_FLIGHT_FAILED;
		e->ended = now_s();
		if (ok)
			f->done[e->channel]++;
	} else if (ok) {
		f->done[SF_FLIGHT_STEP]++; /* only a queued step entry can be this old */
	}
	pthread_mutex_unlock(&f->mu);
}

/* ---- the file ----------------------------------------------------------------------- */

static void json_str(FILE *o, const char *s)
{
	fputc('"', o);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(o, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(o, "\\u%04x", ch);
		else
			fputc(ch, o);
	}
	fputc('"', o);
}

/* the oldest operation of channel ch not done (running before queued), or NULL */
static const struct entry *current(const struct _sf_flight *f, int ch)
{
	const struct entry *queued = NULL;
	int64_t first = f->n > f->cap ? f->n - f->cap : 0;
	for (int64_t i = first; i < f->n; i++) {
		const struct entry *e = &f->e[i % f->cap];
		if (e->channel != ch)
			continue;
		if (e->state == SF_FLIGHT_RUNNING || e->state == SF_FLIGHT_FAILED)
			return e;
		if (e->state == SF_FLIGHT_QUEUED && !queued)
			queued = e;
	}
	return queued;
}

static void path_of(const struct _sf_flight *f, int rank, char *path, size_t n)
{
	const char *dir = f->dir;
	if (!dir[0]) {
		dir = getenv("TMPDIR");
		if (!dir || !dir[0])
			dir = "/tmp";
	}
	snprintf(path, n, "%s/flight-rank-%d.json", dir, rank);
}

static void write_record(const struct _sf_flight *f, FILE *o, const char *reason, double t)
{
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	/* the fields the other ranks read come first, one per line */
	fprintf(o, "{\"shardflow_flight_record\": 1,\n\"job\": %llu,\n\"rank\": %d,\n\"size\": %d,\n",
	        (unsigned long long)f->job, f->rank, f->size);
	for (int ch = 0; ch < SF_FLIGHT_NCHANNELS; ch++) {
		const struct entry *cur = current(f, ch);
		fprintf(o, "\"%s_done\": %lld,\n\"%s_current\": ", channel_names[ch],
		        (long long)f->done[ch], channel_names[ch]);
		json_str(o, cur ? cur->name : "");
		fprintf(o, ",\n\"%s_current_since\": %.3f,\n", channel_names[ch],
		        cur ? (cur->started > 0 ? t - cur->started : t - cur->submitted) : 0.0);
	}
	fprintf(o, "\"host\": ");
	json_str(o, host);
	fprintf(o, ",\n\"pid\": %ld,\n\"written\": %.6f,\n\"reason\": ", (long)getpid(), t);
	json_str(o, reason ? reason : "");
	fprintf(o, ",\n\"ops\": [");
	int64_t first = f->n > f->cap ? f->n - f->cap : 0;
	for (int64_t i = first; i < f->n; i++) {
		const struct entry *e = &f->e[i % f->cap];
		fprintf(o, "%s\n  {\"channel\": \"%s\", \"seq\": %lld, \"name\": ", i > first ? "," : "",
		        channel_names[e->channel], (long long)e->seq);
		json_str(o, e->name);
		fprintf(o,
		        ", \"bytes\": %.0f, \"submitted\": %.6f, \"started\": %.6f, \"ended\": %.6f, "
		        "\"state\": \"%s\"}",
		        e->bytes, e->submitted, e->started, e->ended, state_names[e->state]);
	}
	fprintf(o, "\n]}\n");
}

int _sf_flight_dump(struct _sf_flight *f, const char *reason, char *path, size_t n)
{
	if (!f)
		return SF_ERR(SF_ERR_STATE, "no flight record is kept (SHARDFLOW_FLIGHT_RECORD=0)");
	char tmp[4200];
	pthread_mutex_lock(&f->mu);
	path_of(f, f->rank, path, n);
	snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
	FILE *o = fopen(tmp, "w");
	if (o) {
		write_record(f, o, reason, now_s());
		if (fclose(o) != 0 || rename(tmp, path) != 0) {
			unlink(tmp);
			o = NULL;
		}
	}
	pthread_mutex_unlock(&f->mu);
	if (!o)
		return SF_ERR(SF_ERR_IO, "the flight record \"%s\" could not be written: %s", path,
		              strerror(errno));
	return SF_OK;
}

/* ---- the other ranks' files ------------------------------------------------------------ */

struct peer {
	bool seen;
	long long done[SF_FLIGHT_NCHANNELS];
	char current[SF_FLIGHT_NCHANNELS][NAME_MAX_ + 8];
	double since[SF_FLIGHT_NCHANNELS];
};

static bool field(const char *text, const char *name, const char **val)
{
	char key[64];
	snprintf(key, sizeof key, "\n\"%s\": ", name);
	const char *p = strstr(text, key);
	if (!p)
		return false;
	*val = p + strlen(key);
	return true;
}

/* Reads rank r's file of this job into *p (p->seen: it was there and whole) */
static void read_peer(const struct _sf_flight *f, int r, struct peer *p)
{
	char path[4200], text[4096];
	path_of(f, r, path, sizeof path);
	memset(p, 0, sizeof *p);
	FILE *in = fopen(path, "r");
	if (!in)
		return;
	size_t len = fread(text, 1, sizeof text - 1, in);
	fclose(in);
	text[len] = '\0';
	const char *v;
	if (!field(text, "job", &v) || strtoull(v, NULL, 10) != f->job)
		return; /* an earlier job's */
	for (int ch = 0; ch < SF_FLIGHT_NCHANNELS; ch++) {
		char k[32];
		snprintf(k, sizeof k, "%s_done", channel_names[ch]);
		if (!field(text, k, &v))
			return;
		p->done[ch] = strtoll(v, NULL, 10);
		snprintf(k, sizeof k, "%s_current", channel_names[ch]);
		if (field(text, k, &v) && *v == '"') {
			size_t m = strcspn(v + 1, "\n");
			if (m > 1 && m - 1 < sizeof p->current[ch]) /* drop the closing quote and comma */
				snprintf(p->current[ch], sizeof p->current[ch], "%.*s", (int)(m - 2), v + 1);
		}
		snprintf(k, sizeof k, "%s_current_since", channel_names[ch]);
		if (field(text, k, &v))
			p->since[ch] = strtod(v, NULL);
	}
	p->seen = true;
}

void _sf_flight_blame(struct _sf_flight *f, enum _sf_flight_channel ch, double grace, char *msg,
                      size_t n)
{
	msg[0] = '\0';
	if (!f || f->size < 2)
		return;
	struct peer *p = calloc((size_t)f->size, sizeof *p);
	if (!p)
		return;
	/* the others dump when their own wait times out, about when this rank's did */
	double until = now_s() + grace;
	int seen;
	do {
		seen = 0;
		for (int r = 0; r < f->size; r++) {
			if (!p[r].seen)
				read_peer(f, r, &p[r]);
			seen += p[r].seen;
		}
		if (seen == f->size)
			break;
		struct timespec nap = {0, 100 * 1000 * 1000};
		nanosleep(&nap, NULL);
	} while (now_s() < until);
	long long least = -1;
	for (int r = 0; r < f->size; r++)
		if (p[r].seen && (least < 0 || p[r].done[ch] < least))
			least = p[r].done[ch];
	size_t len = 0;
#define ADD(...) (len += (size_t)snprintf(msg + len, len < n ? n - len : 0, __VA_ARGS__))
	for (int r = 0; r < f->size; r++) {
		if (!p[r].seen)
			ADD("%srank %d wrote no flight record within %.0f s (stopped, dead or cut "
			    "off: the rank behind)",
			    len ? "; " : "", r, grace);
		else if (p[r].done[ch] == least && seen < f->size)
			continue; /* the missing ones are behind; these ones wait for them */
		else if (p[r].done[ch] == least)
			ADD("%srank %d is behind: %lld %s operations done, in \"%s\" for %.1f s",
			    len ? "; " : "", r, p[r].done[ch], channel_names[ch],
			    p[r].current[ch][0] ? p[r].current[ch] : "(none under way)",
			    p[r].since[ch]);
	}
	bool equal = seen == f->size;
	for (int r = 0; r < f->size && equal; r++)
		equal = p[r].done[ch] == least;
	if (equal) { /* nobody behind by count: the ranks wait in different operations */
		len = 0;
		ADD("every rank has done %lld %s operations; each waits in", least, channel_names[ch]);
		for (int r = 0; r < f->size; r++)
			ADD("%s rank %d \"%s\" (%.1f s)", r ? "," : "", r,
			    p[r].current[ch][0] ? p[r].current[ch] : "(none under way)", p[r].since[ch]);
	} else if (seen == f->size && least >= 0) {
		/* everybody answered: say what the others wait in */
		for (int r = 0; r < f->size; r++)
			if (p[r].done[ch] > least) {
				ADD("; rank %d waits in \"%s\" (%lld done)", r, p[r].current[ch],
				    p[r].done[ch]);
				break;
			}
	} else if (p[f->rank].seen) {
		ADD("; rank %d waits in \"%s\" (%lld %s operations done)", f->rank,
		    p[f->rank].current[ch], p[f->rank].done[ch], channel_names[ch]);
	}
#undef ADD
	free(p);
}
