/*
 * read.h — reading a dataset file whole (data/read.c), for the text (data/text.c) and
 * token (data/tokens.c) datasets; and the window draw both use (data/mix.h).
 */
#ifndef SF_DATA_READ_H
#define SF_DATA_READ_H

#include <stddef.h>
#include <stdint.h>

/* Reads the regular file `path` whole into *bytes (malloc'ed, *n bytes). `what` names
 * it in messages ("text file", "token file"). A missing or unreadable file, a
 * directory, a device, FIFO or socket (refused before any read that could block), an
 * empty file, one larger than max bytes or one that shrinks while read is SF_ERR_IO
 * naming the file and what is wrong; out of memory SF_ERR_NOMEM. */
int _sf_data_read_file(const char *path, const char *what, int64_t max, uint8_t **bytes, size_t *n);

#endif
