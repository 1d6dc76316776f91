/*
 * checkpoint_lock.c — one writer per checkpoint directory for a model's whole life:
 * rank 0 holds flock(dir/.lock) from the model's first sf_checkpoint_lock, save, load
 * or latest on `dir` until sf_model_destroy (or the process's death, which closes the
 * descriptor). A writer holds it exclusively and records "<pid> <host>" in the file; a
 * reader (a job that only loads) holds it shared, so readers run side by side and
 * none while a writer is in. Nothing waits: a lock another job holds is SF_ERR_BUSY at
 * once, naming the directory and the holder.
 *
 * The locks of a model are a list keyed by the lock file's device and inode (two
 * spellings of one directory are one lock), whose head the model keeps
 * (_sf_model_ckpt_locks); sf_model_destroy releases them through the hook registered
 * with _sf_model_ckpt_hook_set, since scheduler/ does not call into io/.
 */
#include "io/checkpoint.h"
#include "scheduler/model_access.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* One locked directory (rank 0). */
struct _sf_ckpt_lock {
	dev_t dev;
	ino_t ino;
	int fd;     /* open on dir/.lock: the flock lives as long as it */
	bool write; /* held exclusively (a writer), else shared */
	struct _sf_ckpt_lock *next;
};

/* Empties a writer's record (a stale pid left in the file would be harmless: it is
 * read only while the lock is held exclusively) and closes the descriptor, which
 * releases the flock. */
static void release(struct _sf_ckpt_lock *l)
{
	if (l->write && ftruncate(l->fd, 0) != 0)
		_sf_log(SF_LOG_DEBUG, "checkpoint: cannot empty a lock file: %s", strerror(errno));
	close(l->fd);
	free(l);
}

/* sf_model_destroy's hook: every lock of the model released. */
static void release_all(struct sf_model *m)
{
	struct _sf_ckpt_lock **head = _sf_model_ckpt_locks(m);
	for (struct _sf_ckpt_lock *l = *head, *next; l; l = next) {
		next = l->next;
		release(l);
	}
	*head = NULL;
}

/* The directory whose lock covers `dir`: dir itself, or for a reader given a step
 * directory (holding manifest.json, or named step-*) the checkpoint directory above
 * it, where writers lock. out: SF_PATH_MAX bytes. */
static int lock_target(const char *dir, bool write, char *out)
{
	size_t n = strlen(dir);
	if (n >= SF_PATH_MAX)
		return SF_ERR(SF_ERR_INVALID, "path %s is too long", dir);
	memcpy(out, dir, n + 1);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	char *slash = strrchr(out, '/');
	const char *base = slash ? slash + 1 : out;
	if (write || (!_sf_path_exists(out, "manifest.json") && strncmp(base, "step-", 5)))
		return SF_OK;
	if (!slash)
		snprintf(out, SF_PATH_MAX, ".");
	else if (slash == out)
		out[1] = '\0';
	else
		*slash = '\0';
	return SF_OK;
}

/* "pid P on H" from a writer's record in fd (or "another process" when it has none),
 * and whether that is this very process (another model of it). */
static void holder(int fd, char *out, size_t size, bool *self)
{
	char who[160] = "", pid[32] = "", host[96] = "", me[96] = "";
	ssize_t n = pread(fd, who, sizeof who - 1, 0);
	who[n > 0 ? n : 0] = '\0';
	who[strcspn(who, "\n")] = '\0';
	if (sscanf(who, "%31[0-9] %95s", pid, host) < 1)
		pid[0] = '\0';
	if (gethostname(me, sizeof me) != 0)
		me[0] = '\0';
	me[sizeof me - 1] = '\0';
	*self = *pid && strtol(pid, NULL, 10) == (long)getpid() && !strcmp(host, me);
	snprintf(out, size, "%s%s%s%s", *pid ? "pid " : "another process", pid, *host ? " on " : "",
	         host);
}

/* The SF_ERR_BUSY of a lock someone else holds (fd: open on `path`, not locked by
 * us). Whether a writer or readers hold it is asked of flock itself: readers leave a
 * shared lock free to take (it is given back at once). */
static int busy(int fd, const char *dir, const char *path, bool write)
{
	char who[192];
	bool self = false;
	if (write && flock(fd, LOCK_SH | LOCK_NB) == 0) {
		flock(fd, LOCK_UN);
		return SF_ERR(SF_ERR_BUSY,
		              "checkpoint directory %s is being read by another job (it holds %s "
		              "shared: a job that only loads): a job that saves there must wait "
		              "until the readers end",
		              dir, path);
	}
	holder(fd, who, sizeof who, &self);
	if (write)
		return SF_ERR(SF_ERR_BUSY,
		              "checkpoint directory %s is being written by another job (%s holds "
		              "%s%s): two jobs must not save into one directory",
		              dir, who, path,
		              self ? "; that is another model of this process" : "");
	return SF_ERR(SF_ERR_BUSY,
	              "checkpoint directory %s is being written by another job (%s holds %s%s): "
	              "a job that only reads a checkpoint directory is refused while a writer "
	              "holds it; load a copy, or wait until the writer ends",
	              dir, who, path, self ? "; that is another model of this process" : "");
}

/* A writer's "<pid> <host>" in the lock file, for the message of a job it refuses. */
static int record(int fd, const char *path)
{
	char who[128], host[96] = "?";
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "?");
	host[sizeof host - 1] = '\0';
	int k = snprintf(who, sizeof who, "%ld %s\n", (long)getpid(), host);
	if (ftruncate(fd, 0) != 0 || pwrite(fd, who, (size_t)k, 0) != k)
		return SF_ERR(SF_ERR_IO, "cannot write %s: %s", path, strerror(errno));
	return SF_OK;
}

/* A lock this model holds shared, now wanted exclusively. flock(2) converts by
 * dropping the shared lock first, so a failed conversion takes the shared lock back
 * when it can (else the entry goes). */
static int upgrade(struct sf_model *m, struct _sf_ckpt_lock *l, const char *dir, const char *path)
{
	if (flock(l->fd, LOCK_EX | LOCK_NB) == 0) {
		l->write = true;
		return record(l->fd, path);
	}
	int e = errno;
	int rc = e == EWOULDBLOCK ? busy(l->fd, dir, path, true)
	                          : SF_ERR(SF_ERR_IO, "cannot lock %s: %s", path, strerror(e));
	if (flock(l->fd, LOCK_SH | LOCK_NB) != 0) {
		struct _sf_ckpt_lock **p = _sf_model_ckpt_locks(m);
		while (*p != l)
			p = &(*p)->next;
		*p = l->next;
		release(l);
	}
	return rc;
}

/* Opens dir/.lock; a reader that may not create it (a read-only directory) opens an
 * existing one read-only, and without one locks nothing (*fd = -1: no job can
 * write there either, short of another user). */
static int open_lock(const char *path, bool write, int *fd)
{
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (*fd >= 0)
		return SF_OK;
	int e = errno;
	if (!write && (e == EACCES || e == EROFS || e == EPERM)) {
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		if (*fd >= 0 || errno == ENOENT) {
			if (*fd < 0)
				_sf_log(SF_LOG_DEBUG,
				        "checkpoint: cannot create %s (%s): not locked", path,
				        strerror(e));
			return SF_OK;
		}
		e = errno;
	}
	return SF_ERR(SF_ERR_IO, "cannot open the lock %s: %s", path, strerror(e));
}

int _sf_ckpt_lock_dir(struct sf_model *m, const char *dir, enum sf_checkpoint_access access)
{
	int rc = SF_OK, fd = -1;
	bool write = access == SF_CHECKPOINT_WRITE;
	char target[SF_PATH_MAX], path[SF_PATH_MAX];
	struct stat st;
	SF_CHECK_GOTO(lock_target(dir, write, target), fail);
	if (write)
		SF_CHECK_GOTO(_sf_make_dirs(target), fail);
	else if (!_sf_is_dir(target))
		return SF_OK; /* nothing to read, nothing to protect: a writer creates it */
	SF_CHECK_GOTO(_sf_path_join(path, sizeof path, target, ".lock"), fail);
	SF_CHECK_GOTO(open_lock(path, write, &fd), fail);
	if (fd < 0)
		return SF_OK;
	if (fstat(fd, &st) != 0) {
		rc = SF_ERR(SF_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
		goto fail;
	}
	struct _sf_ckpt_lock **head = _sf_model_ckpt_locks(m);
	for (struct _sf_ckpt_lock *l = *head; l; l = l->next)
		if (l->dev == st.st_dev && l->ino == st.st_ino) {
			close(fd); /* a second descriptor's flock would conflict with ours */
			return write && !l->write ? upgrade(m, l, target, path) : SF_OK;
		}
	if (flock(fd, (write ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
		int e = errno;
		rc = e == EWOULDBLOCK ? busy(fd, target, path, write)
		                      : SF_ERR(SF_ERR_IO, "cannot lock %s: %s", path, strerror(e));
		goto fail;
	}
	if (write)
		SF_CHECK_GOTO(record(fd, path), fail);
	struct _sf_ckpt_lock *l = malloc(sizeof *l);
	if (!l) {
		rc = SF_ERR(SF_ERR_NOMEM, "checkpoint: out of memory for the lock of %s", target);
		goto fail;
	}
	*l = (struct _sf_ckpt_lock){st.st_dev, st.st_ino, fd, write, *head};
	*head = l;
	_sf_model_ckpt_hook_set(m, release_all);
	_sf_log(SF_LOG_DEBUG, "checkpoint: %s locked %s", path, write ? "for writing" : "shared");
	return SF_OK;
fail:
	if (fd >= 0)
		close(fd); /* and with it any lock taken */
	return rc;
}

SF_API int sf_checkpoint_lock(sf_model *m, const char *dir, enum sf_checkpoint_access access)
{
	if (!m || !dir || !*dir)
		return SF_ERR(SF_ERR_INVALID, "sf_checkpoint_lock: NULL model or empty directory");
	if (access != SF_CHECKPOINT_WRITE && access != SF_CHECKPOINT_READ)
		return SF_ERR(
		    SF_ERR_INVALID,
		    "sf_checkpoint_lock: access %d is neither SF_CHECKPOINT_WRITE (%d) nor "
		    "SF_CHECKPOINT_READ (%d)",
		    (int)access, SF_CHECKPOINT_WRITE, SF_CHECKPOINT_READ);
	struct _sf_model_geometry g;
	_sf_model_describe(m, &g);
	int lrc = g.rank == 0 ? _sf_ckpt_lock_dir(m, dir, access) : SF_OK;
	return _sf_comm_agree(_sf_model_comm(m), lrc, "sf_checkpoint_lock");
}
