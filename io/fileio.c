/*
 * fileio.c — whole reads and writes on file descriptors, the atomic commit of a file,
 * paths and directories, and CRC-32, for checkpoints and safetensors: a short read or
 * write is an error naming the file, never silent. Nothing here knows a file format.
 */
#include "io/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int _sf_write_all(int fd, const void *buf, size_t n, const char *path)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return SF_ERR(SF_ERR_IO, "cannot write %s: %s", path,
			              w < 0 ? strerror(errno) : "no progress");
		p += w;
		n -= (size_t)w;
	}
	return SF_OK;
}

/* Reads exactly n bytes at offset off; a short read names the file. */
int _sf_read_at(int fd, void *buf, size_t n, off_t off, const char *path)
{
	char *p = buf;
	while (n > 0) {
		ssize_t r = pread(fd, p, n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return SF_ERR(SF_ERR_IO, "cannot read %s: %s", path, strerror(errno));
		if (r == 0)
			return SF_ERR(SF_ERR_IO, "%s ends early (truncated?)", path);
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return SF_OK;
}

int _sf_open_read(const char *path, int *fd, struct stat *st)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return SF_ERR(SF_ERR_IO, "cannot open %s: %s", path, strerror(errno));
	if (fstat(*fd, st) != 0) {
		int e = errno;
		close(*fd);
		*fd = -1;
		return SF_ERR(SF_ERR_IO, "cannot stat %s: %s", path, strerror(e));
	}
	return SF_OK;
}

int _sf_fsync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return SF_ERR(SF_ERR_IO, "cannot open directory %s to sync it: %s", path,
		              strerror(errno));
	int r = fsync(fd);
	int e = errno;
	close(fd);
	/* a file system that cannot sync directories says EINVAL: nothing to do then */
	if (r != 0 && e != EINVAL)
		return SF_ERR(SF_ERR_IO, "cannot sync directory %s: %s", path, strerror(e));
	return SF_OK;
}

int _sf_create_tmp(const char *path, char *tmp, size_t size, int *fd)
{
	int n = snprintf(tmp, size, "%s.tmp", path);
	if (n < 0 || (size_t)n >= size)
		return SF_ERR(SF_ERR_INVALID, "path %s is too long", path);
	*fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (*fd < 0)
		return SF_ERR(SF_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
	return SF_OK;
}

int _sf_commit_file(int fd, const char *tmp, const char *path, const char *dir)
{
	int rc = SF_OK;
	if (fsync(fd) != 0)
		rc = SF_ERR(SF_ERR_IO, "cannot sync %s: %s", tmp, strerror(errno));
	if (close(fd) != 0 && rc == SF_OK)
		rc = SF_ERR(SF_ERR_IO, "cannot close %s: %s", tmp, strerror(errno));
	if (rc == SF_OK && rename(tmp, path) != 0)
		rc = SF_ERR(SF_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
	if (rc != SF_OK) {
		unlink(tmp);
		return rc;
	}
	return _sf_fsync_dir(dir);
}

void _sf_abandon_file(int fd, const char *tmp)
{
	if (fd >= 0)
		close(fd);
	unlink(tmp);
}

/* zlib's crc32 takes a uInt length: feed large buffers in pieces. */
uint32_t _sf_crc32(uint32_t crc, const void *buf, size_t n)
{
	const Bytef *p = buf;
	while (n > 0) {
		uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
		crc = (uint32_t)crc32(crc, p, k);
		p += k;
		n -= k;
	}
	return crc;
}

/* mkdir -p */
int _sf_make_dirs(const char *path)
{
	char buf[SF_PATH_MAX];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof buf)
		return SF_ERR(SF_ERR_INVALID, "checkpoint directory \"%s\" is empty or too long",
		              path);
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return SF_ERR(SF_ERR_IO, "cannot create directory %s: %s", buf,
			              strerror(errno));
		buf[i] = c;
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return SF_ERR(SF_ERR_IO, "%s is not a directory", path);
	return SF_OK;
}

int _sf_path_join(char *out, size_t size, const char *a, const char *b)
{
	int n = snprintf(out, size, "%s/%s", a, b);
	if (n < 0 || (size_t)n >= size)
		return SF_ERR(SF_ERR_INVALID, "path %s/%s is too long", a, b);
	return SF_OK;
}

int _sf_path_exists(const char *dir, const char *name)
{
	char p[SF_PATH_MAX];
	struct stat st;
	if (_sf_path_join(p, sizeof p, dir, name) < 0)
		return 0;
	return stat(p, &st) == 0;
}

/* Writes a small file as path.tmp, syncs it and renames it to path; then syncs the
 * directory `dir` so the rename itself is durable. */
int _sf_write_file_atomic(const char *path, const char *dir, const void *data, size_t n)
{
	int rc = SF_OK, fd = -1;
	char tmp[SF_PATH_MAX];
	SF_CHECK_GOTO(_sf_create_tmp(path, tmp, sizeof tmp, &fd), fail);
	SF_CHECK_GOTO(_sf_write_all(fd, data, n, tmp), fail);
	return _sf_commit_file(fd, tmp, path, dir);
fail:
	if (fd >= 0)
		_sf_abandon_file(fd, tmp);
	return rc;
}

/* The public face of _sf_write_file_atomic, for small files that other modules (a
 * model's config.json) write: the directory synced is path's own. */
SF_API int sf_file_write_atomic(const char *path, const void *data, size_t n)
{
	char dir[SF_PATH_MAX];
	if (!path || !*path || (!data && n))
		return SF_ERR(SF_ERR_INVALID, "sf_file_write_atomic: NULL path or data");
	_sf_dir_of(path, dir, sizeof dir);
	return _sf_write_file_atomic(path, dir, data, n);
}

/* The directory holding path ("." for a bare name, "/" for the root's files) */
void _sf_dir_of(const char *path, char *dir, size_t size)
{
	snprintf(dir, size, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, size, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
}

/* Removes path and whatever it holds, directories included (never following a
 * symbolic link: the link goes, not what it points to), or a file or link at path; a
 * missing one is fine. A checkpoint's staging or old step may hold what a hand or a
 * fault put there (a directory where manifest.json belongs): a save clears it rather
 * than stopping half-way. depth bounds the recursion (paths are SF_PATH_MAX long). */
static int remove_tree(const char *path, int depth)
{
	int rc = SF_OK;
	char p[SF_PATH_MAX];
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT
		           ? SF_OK
		           : SF_ERR(SF_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) != 0 && errno != ENOENT)
			return SF_ERR(SF_ERR_IO, "cannot remove %s: %s", path, strerror(errno));
		return SF_OK;
	}
	if (depth > 64)
		return SF_ERR(SF_ERR_IO, "cannot remove %s: directories nested too deep", path);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT
		           ? SF_OK
		           : SF_ERR(SF_ERR_IO, "cannot open %s: %s", path, strerror(errno));
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		SF_CHECK_GOTO(_sf_path_join(p, sizeof p, path, e->d_name), out);
		SF_CHECK_GOTO(remove_tree(p, depth + 1), out);
	}
	if (rmdir(path) != 0 && errno != ENOENT)
		rc = SF_ERR(SF_ERR_IO, "cannot remove %s: %s", path, strerror(errno));
out:
	closedir(d);
	return rc;
}

int _sf_remove_dir(const char *path)
{
	return remove_tree(path, 0);
}

bool _sf_is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int _sf_read_small_file(const char *path, size_t max, char **out, size_t *len)
{
	int rc = SF_OK, fd = -1;
	char *buf = NULL;
	struct stat st;
	SF_CHECK_GOTO(_sf_open_read(path, &fd, &st), fail);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		rc = SF_ERR(SF_ERR_IO, "%s is not a regular file of at most %zu bytes", path, max);
		goto fail;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = SF_ERR(SF_ERR_NOMEM, "cannot allocate %lld bytes for %s",
		            (long long)st.st_size, path);
		goto fail;
	}
	SF_CHECK_GOTO(_sf_read_at(fd, buf, (size_t)st.st_size, 0, path), fail);
	buf[st.st_size] = '\0';
	*out = buf;
	*len = (size_t)st.st_size;
	close(fd);
	return SF_OK;
fail:
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}
