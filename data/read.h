/*
 * read.h — reading a dataset file whole (data/read.c), for the text (data/text.c) and
 * token (data/tokens.c) datasets and decode tables (data/vocab.c); the header words of
 * llm.c's files and their check; and the window draw both datasets use (data/mix.h).
 */
#ifndef SF_DATA_READ_H
#define SF_DATA_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads the regular file `path` whole into *bytes (malloc'ed, *n bytes). `what` names
 * it in messages ("text file", "token file"). A missing or unreadable file, a
 * directory, a device, FIFO or socket (refused before any read that could block), an
 * empty file, one larger than max bytes or one that shrinks while read is SF_ERR_IO
 * naming the file and what is wrong; out of memory SF_ERR_NOMEM. */
int _sf_data_read_file(const char *path, const char *what, int64_t max, uint8_t **bytes, size_t *n);

/* The little-endian uint32 at p (the headers of llm.c's token and tokenizer files) */
static inline uint32_t _sf_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* llm.c's token shards and tokenizer files open with a header of 256 little-endian
 * 32-bit words, the first a magic number that names the format. */
#define SF_LLMC_HEADER_BYTES (256 * 4)

/* Whether the n bytes at b hold a whole llm.c header that starts with magic */
static inline bool _sf_llmc_has_magic(const uint8_t *b, size_t n, uint32_t magic)
{
	return n >= SF_LLMC_HEADER_BYTES && _sf_le32(b) == magic;
}

/* SF_OK if _sf_llmc_has_magic; otherwise SF_ERR_INVALID, "<what> <path> is not <kind>:
 * <why> (<layout>, the first the magic <magic>)", why saying whether the file is shorter
 * than the header or starts with another word. */
int _sf_llmc_header_check(const uint8_t *b, size_t n, uint32_t magic, const char *what,
                          const char *path, const char *kind, const char *layout);

#endif
