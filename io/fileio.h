/*
 * fileio.h — whole reads and writes, the atomic commit of a file (write to a temporary
 * name, sync, close, rename, sync the directory), paths and directories, and CRC-32, for
 * checkpoints and safetensors. Each failure is an SF_ERR_IO naming the path.
 */
#ifndef SF_IO_FILEIO_H
#define SF_IO_FILEIO_H

#include "common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Writes all n bytes / reads exactly n bytes at offset off; a short write or read is
 * an SF_ERR_IO naming `path`. */
int _sf_write_all(int fd, const void *buf, size_t n, const char *path);
int _sf_read_at(int fd, void *buf, size_t n, off_t off, const char *path);
/* Opens path for reading into *fd and fstat's it into *st; on failure nothing stays
 * open. */
int _sf_open_read(const char *path, int *fd, struct stat *st);
/* Syncs a directory, so that a rename in it is durable. */
int _sf_fsync_dir(const char *dir);
/* The start of an atomic write: creates (or empties) path.tmp for writing, its name in
 * tmp (`size` bytes), its descriptor in *fd. */
int _sf_create_tmp(const char *path, char *tmp, size_t size, int *fd);
/* The end of an atomic write: syncs and closes fd (always closed), renames tmp to
 * path, syncs `dir`; on failure tmp is removed and path untouched. */
int _sf_commit_file(int fd, const char *tmp, const char *path, const char *dir);
/* An atomic write given up: closes fd (when >= 0) and removes tmp. */
void _sf_abandon_file(int fd, const char *tmp);
/* The whole atomic write of a small file: path.tmp written, synced, renamed to path,
 * then `dir` synced so that the rename itself is durable. */
int _sf_write_file_atomic(const char *path, const char *dir, const void *data, size_t n);
/* The directory holding path, into dir (`size` bytes): "." for a bare name. */
void _sf_dir_of(const char *path, char *dir, size_t size);
/* Reads a regular file of at most `max` bytes whole into *out (NUL-terminated, freed by
 * the caller), its length in *len. */
int _sf_read_small_file(const char *path, size_t max, char **out, size_t *len);

/* "a/b" into out (`size` bytes); too long is SF_ERR_INVALID. */
int _sf_path_join(char *out, size_t size, const char *a, const char *b);
/* Whether dir/name exists (0 also when the path is too long). */
int _sf_path_exists(const char *dir, const char *name);
bool _sf_is_dir(const char *path);
/* mkdir -p; path must then be a directory. */
int _sf_make_dirs(const char *path);
/* Removes path and everything under it (a file or link at path: that alone; links are
 * never followed); a missing one is fine. */
int _sf_remove_dir(const char *path);

/* CRC-32 (zlib's) of n bytes, continuing from crc (0 to start); any n. */
uint32_t _sf_crc32(uint32_t crc, const void *buf, size_t n);

#endif
