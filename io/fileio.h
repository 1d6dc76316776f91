/*
 * fileio.h — whole reads and writes, and the atomic commit of a file (write to a
 * temporary name, sync, close, rename, sync the directory), for checkpoints and
 * safetensors. Each failure is an SF_ERR_IO naming the path.
 */
#ifndef SF_IO_FILEIO_H
#define SF_IO_FILEIO_H

#include "common/error.h"

#include <stddef.h>
#include <sys/types.h>

/* Writes all n bytes / reads exactly n bytes at offset off; a short write or read is
 * an SF_ERR_IO naming `path`. */
int _sf_write_all(int fd, const void *buf, size_t n, const char *path);
int _sf_read_at(int fd, void *buf, size_t n, off_t off, const char *path);
/* Syncs a directory, so that a rename in it is durable. */
int _sf_fsync_dir(const char *dir);
/* The end of an atomic write: syncs and closes fd (always closed), renames tmp to
 * path, syncs `dir`; on failure tmp is removed and path untouched. */
int _sf_commit_file(int fd, const char *tmp, const char *path, const char *dir);

#endif
