/*
 * checkpoint_steps.c — which step directories a checkpoint directory offers a loader
 * (rank 0, no communication): dir itself, the step an intact dir/latest names, or —
 * latest damaged in any way — the newest complete step, first; then, for a loader
 * falling back from a damaged step, the other complete steps, newest first. A
 * half-written step is refused. The format: io/checkpoint.h.
 */
#include "io/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A step directory whose writer stopped before the manifest: named step-*, or holding
 * rank files or a temporary manifest. */
static bool half_written(const char *dir)
{
	const char *base = dir;
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	for (size_t i = 0; i + 1 < n; i++)
		if (dir[i] == '/')
			base = dir + i + 1;
	if (!strncmp(base, "step-", 5))
		return true;
	DIR *d = opendir(dir);
	bool found = false;
	if (!d)
		return false;
	for (struct dirent *e; !found && (e = readdir(d));)
		found = !strncmp(e->d_name, "rank-", 5) || !strcmp(e->d_name, "manifest.json.tmp");
	closedir(d);
	return found;
}

/* The step number of a directory entry named step-<digits> or step-<digits>.tmp (a
 * staging directory), or -1; *staged says which. */
static int64_t step_of(const char *name, bool *staged)
{
	if (strncmp(name, "step-", 5))
		return -1;
	size_t d = strspn(name + 5, "0123456789");
	if (d == 0 || d > 15)
		return -1;
	*staged = !strcmp(name + 5 + d, ".tmp");
	if (name[5 + d] && !*staged)
		return -1;
	return strtoll(name + 5, NULL, 10);
}

/* Rank 0: the newest complete step directory of `dir` (holding manifest.json): a
 * step-N, or a staging step-N.tmp whose save was killed after its manifest (step-N
 * wins a tie). Returns whether there is one, its path in stepdir. */
static bool newest_complete(const char *dir, char *stepdir, size_t size)
{
	int64_t best = -1;
	bool best_staged = false;
	char path[SF_PATH_MAX];
	DIR *d = opendir(dir);
	if (!d)
		return false;
	for (struct dirent *e; (e = readdir(d));) {
		bool staged = false;
		int64_t k = step_of(e->d_name, &staged);
		if (k < 0 || k < best || (k == best && (staged || !best_staged)))
			continue;
		if (_sf_path_join(path, sizeof path, dir, e->d_name) < 0 ||
		    !_sf_path_exists(path, "manifest.json"))
			continue;
		if (snprintf(stepdir, size, "%s", path) >= (int)size)
			continue;
		best = k;
		best_staged = staged;
	}
	closedir(d);
	return best >= 0;
}

/* What dir/latest (at `path`) says: the step directory it names, in named, when it is
 * intact; else its damage in words, in damage: missing, not a regular file, unreadable,
 * empty, or not "step-<digits>" and a newline. Returns whether there is a latest at
 * all. Never an error: a resume treats every kind of damage alike (it falls back to
 * the newest complete step). */
static bool read_latest(const char *dir, const char *path, char *named, size_t nsize, char *damage,
                        size_t dsize)
{
	char buf[64];
	struct stat st;
	ssize_t n = -1;
	named[0] = damage[0] = '\0';
	if (stat(path, &st) != 0) {
		bool gone = errno == ENOENT;
		snprintf(damage, dsize, "%s: %s", path, gone ? "missing" : strerror(errno));
		return !gone;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(damage, dsize, "%s is %s, not a file", path,
		         S_ISDIR(st.st_mode) ? "a directory" : "something else");
		return true;
	}
	int fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
	}
	if (n < 0) {
		snprintf(damage, dsize, "%s cannot be read: %s", path, strerror(errno));
		return true;
	}
	buf[n] = '\0';
	if (n == 0 && st.st_size == 0) {
		snprintf(damage, dsize, "%s is empty", path);
		return true;
	}
	size_t k = (size_t)n;
	while (k > 0 && (buf[k - 1] == '\n' || buf[k - 1] == '\r'))
		buf[--k] = '\0';
	size_t digits = k > 5 ? strspn(buf + 5, "0123456789") : 0;
	if (k < 6 || strncmp(buf, "step-", 5) != 0 || digits != k - 5 ||
	    st.st_size > (off_t)sizeof buf - 1) {
		for (size_t i = 0; i < k; i++) /* the message shows it: printable only */
			if (buf[i] < 0x20 || buf[i] > 0x7e)
				buf[i] = '?';
		snprintf(damage, dsize, "%s holds \"%.32s\", not \"step-<digits>\"", path, buf);
		return true;
	}
	if (_sf_path_join(named, nsize, dir, buf) < 0) {
		named[0] = '\0';
		snprintf(damage, dsize, "%s names %s, a path too long", path, buf);
	}
	return true;
}

/* Rank 0: which step directory `dir` means: dir itself when it holds a manifest, else
 * the step an intact dir/latest names when that step is complete, else — any damage to
 * latest (missing, a directory, empty, garbage, naming a step without manifest: a save
 * killed before latest was switched) — the newest complete step directory, with a
 * warning naming the damage. latest damaged and no step complete: SF_ERR_IO. An empty
 * stepdir when dir holds no checkpoint at all (missing, empty, or only saves killed
 * before their manifest, and no latest): not an error here. */
int _sf_ckpt_resolve(const char *dir, char *stepdir, size_t size)
{
	char path[SF_PATH_MAX], named[SF_PATH_MAX], damage[SF_PATH_MAX + 128];
	struct stat st;
	stepdir[0] = '\0';
	if (stat(dir, &st) != 0) {
		if (errno == ENOENT)
			return SF_OK;
		return SF_ERR(SF_ERR_IO, "checkpoint directory %s: %s", dir, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return SF_ERR(SF_ERR_IO, "checkpoint %s is not a directory", dir);
	if (_sf_path_exists(dir, "manifest.json")) {
		if (snprintf(stepdir, size, "%s", dir) >= (int)size)
			return SF_ERR(SF_ERR_INVALID, "path %s is too long", dir);
		return SF_OK;
	}
	SF_CHECK(_sf_path_join(path, sizeof path, dir, "latest"));
	bool has_latest = read_latest(dir, path, named, sizeof named, damage, sizeof damage);
	if (*named) {
		if (_sf_path_exists(named, "manifest.json")) {
			if (snprintf(stepdir, size, "%s", named) >= (int)size)
				return SF_ERR(SF_ERR_INVALID, "path %s is too long", named);
			return SF_OK;
		}
		snprintf(damage, sizeof damage,
		         "%s names %s, which has no manifest.json (a half-written or removed step)",
		         path, named);
	}
	if (newest_complete(dir, stepdir, size)) {
		/* said once a process: a program that asks sf_checkpoint_latest and then
		 * loads resolves the same damage twice */
		static char said[2 * SF_PATH_MAX + 160];
		char msg[sizeof said];
		snprintf(msg, sizeof msg, "checkpoint %s: %s; falling back to the newest complete step, %s",
		         dir, damage, stepdir);
		if (strcmp(msg, said) != 0) {
			_sf_log(SF_LOG_WARN, "%s", msg);
			snprintf(said, sizeof said, "%s", msg);
		}
		return SF_OK;
	}
	if (has_latest)
		return SF_ERR(SF_ERR_IO, "checkpoint %s: %s, and no step directory is complete",
		              dir, damage);
	if (half_written(dir))
		return SF_ERR(
		    SF_ERR_IO,
		    "%s is a step directory without manifest.json: a half-written checkpoint "
		    "(its writer stopped before the manifest); load a complete step or "
		    "the checkpoint directory's latest",
		    dir);
	return SF_OK;
}

/* A complete step directory of a checkpoint directory, for the candidates' order. */
struct step_entry {
	int64_t k;
	bool staged;
	char *path;
};

/* Newest first; step-N before step-N.tmp. */
static int newer_first(const void *a, const void *b)
{
	const struct step_entry *x = a, *y = b;
	if (x->k != y->k)
		return x->k > y->k ? -1 : 1;
	return (int)x->staged - (int)y->staged;
}

void _sf_ckpt_candidates_free(char **steps, int n)
{
	for (int i = 0; steps && i < n; i++)
		free(steps[i]);
	free(steps);
}

/* Rank 0: the complete step directories of dir (step-N or step-N.tmp holding
 * manifest.json), in entries (*n of them, each path allocated). */
static int list_complete(const char *dir, struct step_entry **entries, int *n)
{
	int rc = SF_OK, cap = 0;
	char path[SF_PATH_MAX];
	DIR *d = opendir(dir);
	*entries = NULL;
	*n = 0;
	if (!d)
		return SF_ERR(SF_ERR_IO, "cannot read the directory %s: %s", dir, strerror(errno));
	for (struct dirent *e; (e = readdir(d));) {
		bool staged = false;
		int64_t k = step_of(e->d_name, &staged);
		if (k < 0 || _sf_path_join(path, sizeof path, dir, e->d_name) < 0 ||
		    !_sf_path_exists(path, "manifest.json"))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			struct step_entry *grown =
			    realloc(*entries, (size_t)cap * sizeof **entries);
			if (!grown) {
				rc = SF_ERR(SF_ERR_NOMEM, "checkpoint: out of memory listing %s",
				            dir);
				goto out;
			}
			*entries = grown;
		}
		char *copy = strdup(path);
		if (!copy) {
			rc = SF_ERR(SF_ERR_NOMEM, "checkpoint: out of memory listing %s", dir);
			goto out;
		}
		(*entries)[(*n)++] = (struct step_entry){k, staged, copy};
	}
	qsort(*entries, (size_t)*n, sizeof **entries, newer_first);
out:
	closedir(d);
	return rc;
}

int _sf_ckpt_candidates(const char *dir, char ***steps, int *n)
{
	int rc = SF_OK, ne = 0;
	char first[SF_PATH_MAX];
	struct step_entry *entries = NULL;
	*steps = NULL;
	*n = 0;
	SF_CHECK_GOTO(_sf_ckpt_resolve(dir, first, sizeof first), out);
	if (!*first)
		return SF_OK;
	/* a step directory given itself is that step alone */
	if (strcmp(first, dir) != 0)
		SF_CHECK_GOTO(list_complete(dir, &entries, &ne), out);
	*steps = calloc((size_t)ne + 1, sizeof **steps);
	if (!*steps || !((*steps)[0] = strdup(first))) {
		rc = SF_ERR(SF_ERR_NOMEM, "checkpoint: out of memory listing %s", dir);
		goto out;
	}
	*n = 1;
	for (int i = 0; i < ne; i++)
		if (strcmp(entries[i].path, first) != 0) {
			(*steps)[(*n)++] = entries[i].path;
			entries[i].path = NULL;
		}
out:
	for (int i = 0; i < ne; i++)
		free(entries[i].path);
	free(entries);
	if (rc < 0) {
		_sf_ckpt_candidates_free(*steps, *n);
		*steps = NULL;
		*n = 0;
	}
	return rc;
}

int _sf_ckpt_prune(const char *dir, int keep, int *removed)
{
	int rc = SF_OK, n = 0;
	struct step_entry *entries = NULL;
	char latest[SF_PATH_MAX], manifest[SF_PATH_MAX];
	*removed = 0;
	/* the step dir/latest names is never removed, whatever its age */
	SF_CHECK(_sf_ckpt_resolve(dir, latest, sizeof latest));
	SF_CHECK(list_complete(dir, &entries, &n));
	int kept = 0;
	for (int i = 0; i < n; i++) { /* newest first */
		if (entries[i].staged)
			continue; /* a save in flight, or one a crash left: not ours to judge */
		if (kept < keep || !strcmp(entries[i].path, latest)) {
			kept++;
			continue;
		}
		/* the manifest first: a step without one is no checkpoint to any loader, so a
		 * prune stopped half-way leaves nothing that loads half */
		SF_CHECK_GOTO(_sf_path_join(manifest, sizeof manifest, entries[i].path,
		                            "manifest.json"),
		              out);
		if (unlink(manifest) != 0 && errno != ENOENT) {
			rc = SF_ERR(SF_ERR_IO, "cannot remove %s: %s", manifest, strerror(errno));
			goto out;
		}
		SF_CHECK_GOTO(_sf_remove_dir(entries[i].path), out);
		(*removed)++;
	}
	rc = _sf_fsync_dir(dir);
out:
	for (int i = 0; i < n; i++)
		free(entries[i].path);
	free(entries);
	return rc;
}
