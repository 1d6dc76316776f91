/*
 * fileio.c — whole reads and writes on file descriptors, and the atomic commit of a
 * file, for checkpoints and safetensors: a short read or write is an error naming the
 * file, never silent.
 */
#include "io/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
