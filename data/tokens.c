/*
 * tokens.c — token files as datasets (include/shardflow.h, sf_tokens_*): nanoGPT's raw
 * little-endian uint16 .bin and llm.c's shards (a header of 256 little-endian int32:
 * magic 20240520, version 1, the token count; then the count uint16 ids). The whole
 * file is read (data/read.c) and checked before any batch: size, header, every id
 * below the vocabulary. SF_TOKENS_AUTO reads a file without the magic as raw ids unless
 * it looks like a damaged shard (looks_like_shard): a header whose magic was garbled
 * would otherwise pass as 512 tokens of noise, or fail on the vocabulary with a
 * message about a token. Batches draw windows exactly as data/text.c draws them from
 * bytes (data/mix.h), so the same (seed, split, index, row) gives the same start on
 * any world size.
 */
#include "common/error.h"
#include "data/mix.h"
#include "data/read.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LLMC_MAGIC 20240520
#define LLMC_VERSION 1

SF_API int sf_tokens_free(struct sf_tokens *t)
{
	if (!t)
		return SF_OK;
	free(t->ids);
	free(t->path);
	memset(t, 0, sizeof *t);
	return SF_OK;
}

/*
 * Whether a file of n bytes without the magic looks like a damaged llm.c shard: it is
 * as long as a header and whole ids, and its first int32 is within 2^16 of the magic
 * (the magic's high half, the low one garbled), or its header counts exactly the ids
 * that follow it, or it is shaped like one (version 1, then 253 zero words). Raw ids
 * do this by chance about once in 20 000 files (a second id of 307 to 309); those are
 * read with the format forced. why: the sign seen, for the message.
 */
static bool looks_like_shard(const uint8_t *b, size_t n, char *why, size_t size)
{
	if (n < SF_LLMC_HEADER_BYTES || n % 2)
		return false;
	uint32_t first = _sf_le32(b), count = _sf_le32(b + 8);
	int64_t off = (int64_t)first - LLMC_MAGIC;
	if (off > -65536 && off < 65536) {
		snprintf(why, size, "its first int32 is %u, %lld from the magic %d", first,
		         (long long)off, LLMC_MAGIC);
		return true;
	}
	if ((uint64_t)count * 2 == n - SF_LLMC_HEADER_BYTES) {
		snprintf(why, size,
		         "its third int32 is %u, the count of the uint16 ids after a %d-byte "
		         "header",
		         count, SF_LLMC_HEADER_BYTES);
		return true;
	}
	bool zeros = true;
	for (size_t i = 12; i < SF_LLMC_HEADER_BYTES && zeros; i++)
		zeros = b[i] == 0;
	if (zeros && _sf_le32(b + 4) == LLMC_VERSION) {
		snprintf(why, size,
		         "its first %d bytes are shaped like a header (version %d, then zeros)",
		         SF_LLMC_HEADER_BYTES, LLMC_VERSION);
		return true;
	}
	return false;
}

/* The ids' first byte and count in a file of n bytes, by its format */
static int locate_ids(const uint8_t *b, size_t n, int *format, const char *path, size_t *at,
                      int64_t *count)
{
	char why[160];
	if (*format == SF_TOKENS_AUTO && !_sf_llmc_has_magic(b, n, LLMC_MAGIC) &&
	    looks_like_shard(b, n, why, sizeof why))
		return SF_ERR(SF_ERR_INVALID,
		              "token file %s looks like a damaged llm.c shard: no magic %d at its "
		              "start, but %s; if it is raw uint16 ids (nanoGPT's .bin), force "
		              "the format (SF_TOKENS_RAW; examples/gpt --token-format raw)",
		              path, LLMC_MAGIC, why);
	if (*format == SF_TOKENS_AUTO)
		*format = _sf_llmc_has_magic(b, n, LLMC_MAGIC) ? SF_TOKENS_LLMC : SF_TOKENS_RAW;
	if (*format == SF_TOKENS_RAW) {
		if (n % 2)
			return SF_ERR(
			    SF_ERR_INVALID,
			    "token file %s has %zu bytes, an odd number: a raw token file "
			    "(nanoGPT's .bin) is uint16 ids, 2 bytes each",
			    path, n);
		*at = 0, *count = (int64_t)(n / 2);
		return SF_OK;
	}
	int rc = _sf_llmc_header_check(b, n, LLMC_MAGIC, "token file", path, "an llm.c shard",
	                               "a shard starts with 256 int32");
	if (rc < 0)
		return rc;
	if (_sf_le32(b + 4) != LLMC_VERSION)
		return SF_ERR(SF_ERR_INVALID,
		              "token file %s: llm.c shard version %u, not %d (uint16 tokens)", path,
		              _sf_le32(b + 4), LLMC_VERSION);
	uint32_t c = _sf_le32(b + 8);
	if ((uint64_t)c * 2 != n - SF_LLMC_HEADER_BYTES)
		return SF_ERR(
		    SF_ERR_INVALID,
		    "token file %s: its header counts %u tokens (%llu bytes) but %zu bytes "
		    "follow the header: a truncated or padded shard",
		    path, c, (unsigned long long)c * 2, n - SF_LLMC_HEADER_BYTES);
	*at = SF_LLMC_HEADER_BYTES, *count = c;
	return SF_OK;
}

SF_API int sf_tokens_load(const char *path, int vocab, int format, struct sf_tokens *out)
{
	uint8_t *b = NULL;
	size_t n = 0, at = 0;
	int64_t count = 0;
	int rc = SF_OK;
	if (out)
		memset(out, 0, sizeof *out);
	if (!path || !out)
		return SF_ERR(SF_ERR_INVALID, "sf_tokens_load: %s is NULL", !path ? "path" : "out");
	if (vocab < 2 || vocab > 65536)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_tokens_load: vocab %d for %s is out of range: uint16 ids allow 2 "
		              "to 65536",
		              vocab, path);
	if (format < 0 || format >= SF_TOKENS_COUNT)
		return SF_ERR(
		    SF_ERR_INVALID,
		    "sf_tokens_load: format %d for %s is not SF_TOKENS_AUTO, _RAW or _LLMC", format,
		    path);
	SF_CHECK_GOTO(_sf_data_read_file(path, "token file", SF_LLMC_HEADER_BYTES + 2 * SF_TOKENS_MAX,
	                            &b, &n), fail);
	SF_CHECK_GOTO(locate_ids(b, n, &format, path, &at, &count), fail);
	if (count == 0) {
		rc = SF_ERR(SF_ERR_INVALID, "token file %s holds no token", path);
		goto fail;
	}
	uint16_t *ids = malloc((size_t)count * sizeof *ids);
	out->path = strdup(path);
	if (!ids || !out->path) {
		free(ids);
		rc = SF_ERR(SF_ERR_NOMEM, "cannot allocate %lld tokens of token file %s",
		            (long long)count, path);
		goto fail;
	}
	for (int64_t i = 0; i < count; i++) {
		ids[i] = (uint16_t)(b[at + 2 * i] | b[at + 2 * i + 1] << 8);
		if (ids[i] >= vocab) {
			rc = SF_ERR(
			    SF_ERR_INVALID,
			    "token file %s: token %lld is %u, not below the vocabulary of %d", path,
			    (long long)i, ids[i], vocab);
			free(ids);
			goto fail;
		}
	}
	free(b);
	out->n = count, out->ids = ids, out->vocab = vocab, out->format = format;
	return SF_OK;
fail:
	free(b);
	free(out->path);
	memset(out, 0, sizeof *out);
	return rc;
}

SF_API int sf_tokens_batch(const struct sf_tokens *t, int split, uint64_t seed, int64_t index,
                           int global_batch, int first, int rows, int T, int32_t *x, int32_t *y)
{
	if (!t || !t->ids || t->n < 1)
		return SF_ERR(
		    SF_ERR_INVALID,
		    "sf_tokens_batch: no tokens loaded; load a file with sf_tokens_load()");
	if (split != SF_TEXT_TRAIN && split != SF_TEXT_VAL)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_tokens_batch: split %d is neither SF_TEXT_TRAIN (0) nor "
		              "SF_TEXT_VAL (1)",
		              split);
	if (T < 1 || global_batch < 1 || index < 0 || rows < 0 || first < 0 ||
	    rows > global_batch - first)
		return SF_ERR(
		    SF_ERR_INVALID,
		    "sf_tokens_batch: T %d and global batch %d must be >= 1, index %lld >= "
		    "0, rows [%d, %d + %d) within the global batch",
		    T, global_batch, (long long)index, first, first, rows);
	if (rows > 0 && (!x || !y))
		return SF_ERR(SF_ERR_INVALID, "sf_tokens_batch: %s is NULL", !x ? "x" : "y");
	if (t->n < (int64_t)T + 1)
		return SF_ERR(
		    SF_ERR_INVALID,
		    "sf_tokens_batch: token file %s holds %lld tokens: a window of T + 1 = "
		    "%lld needs at least that many; lower T",
		    t->path ? t->path : "(tokens in memory)", (long long)t->n, (long long)T + 1);
	uint64_t count = (uint64_t)(t->n - T);
	for (int r = 0; r < rows; r++) {
		const uint16_t *w =
		    t->ids + _sf_window_start(seed, split, index, (int64_t)first + r, count);
		int32_t *xr = x + (size_t)r * (size_t)T, *yr = y + (size_t)r * (size_t)T;
		for (int k = 0; k < T; k++) {
			xr[k] = w[k];
			yr[k] = w[k + 1];
		}
	}
	return SF_OK;
}
