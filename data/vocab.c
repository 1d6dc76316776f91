/*
 * vocab.c — decode tables (include/shardflow.h, sf_vocab_*): llm.c's tokenizer file
 * (a header of 256 little-endian uint32: magic 20240328, version 1 or 2, the vocabulary
 * size, for version 2 the end-of-text id; then per id a length byte and its bytes), as
 * tools/gpt2-tokens.cjs writes it from tiktoken's GPT-2 encoding. Read whole and
 * checked before use, like the token files of data/tokens.c.
 */
#include "common/error.h"
#include "data/read.h"

#include <stdlib.h>
#include <string.h>

#define VOCAB_MAGIC 20240328
/* 2^16 ids of at most 255 bytes, and the header */
#define VOCAB_MAX_BYTES (SF_LLMC_HEADER_BYTES + 65536 * 256)

SF_API int sf_vocab_free(struct sf_vocab *v)
{
	if (!v)
		return SF_OK;
	free(v->bytes);
	free(v->offset);
	free(v->path);
	memset(v, 0, sizeof *v);
	return SF_OK;
}

/* The header's size and end-of-text id, checked against the file's n bytes */
static int read_header(const uint8_t *b, size_t n, const char *path, int *size, int *eot)
{
	int rc = _sf_llmc_header_check(b, n, VOCAB_MAGIC, "decode table", path,
	                               "an llm.c tokenizer file", "it starts with 256 uint32");
	if (rc < 0)
		return rc;
	uint32_t version = _sf_le32(b + 4), count = _sf_le32(b + 8);
	if (version != 1 && version != 2)
		return SF_ERR(SF_ERR_INVALID, "decode table %s: version %u, not 1 or 2", path,
		              version);
	if (count < 2 || count > 65536)
		return SF_ERR(SF_ERR_INVALID,
		              "decode table %s: %u ids; token files hold uint16 ids, so 2 to "
		              "65536",
		              path, count);
	*size = (int)count;
	*eot = -1;
	if (version == 2) {
		uint32_t e = _sf_le32(b + 12);
		if (e >= count)
			return SF_ERR(SF_ERR_INVALID,
			              "decode table %s: its end-of-text id %u is not below its %u "
			              "ids",
			              path, e, count);
		*eot = (int)e;
	}
	return SF_OK;
}

SF_API int sf_vocab_load(const char *path, struct sf_vocab *out)
{
	uint8_t *b = NULL;
	size_t n = 0;
	int rc = SF_OK, size = 0, eot = -1;
	if (out)
		memset(out, 0, sizeof *out);
	if (!path || !out)
		return SF_ERR(SF_ERR_INVALID, "sf_vocab_load: %s is NULL", !path ? "path" : "out");
	SF_CHECK_GOTO(_sf_data_read_file(path, "decode table", VOCAB_MAX_BYTES, &b, &n), fail);
	rc = read_header(b, n, path, &size, &eot);
	if (rc < 0)
		goto fail;
	out->offset = malloc(((size_t)size + 1) * sizeof *out->offset);
	out->bytes = malloc(n - SF_LLMC_HEADER_BYTES);
	out->path = strdup(path);
	if (!out->offset || !out->bytes || !out->path) {
		rc = SF_ERR(SF_ERR_NOMEM, "cannot allocate decode table %s (%zu bytes)", path, n);
		goto fail;
	}
	size_t at = SF_LLMC_HEADER_BYTES, total = 0;
	for (int i = 0; i < size; i++) {
		if (at >= n) {
			rc = SF_ERR(SF_ERR_INVALID,
			            "decode table %s is truncated: it ends before id %d of its %d",
			            path, i, size);
			goto fail;
		}
		size_t len = b[at++];
		if (len == 0 || at + len > n) {
			rc = SF_ERR(SF_ERR_INVALID, "decode table %s: id %d %s", path, i,
			            len == 0 ? "has length 0 (every id stands for 1 to 255 bytes)"
			                     : "runs past the end of the file (truncated)");
			goto fail;
		}
		out->offset[i] = (uint32_t)total;
		memcpy(out->bytes + total, b + at, len);
		total += len, at += len;
	}
	if (at != n) {
		rc = SF_ERR(SF_ERR_INVALID,
		            "decode table %s: %zu bytes follow its %d ids (padded, or a larger "
		            "table than its header says)",
		            path, n - at, size);
		goto fail;
	}
	out->offset[size] = (uint32_t)total;
	out->n = size, out->eot = eot;
	free(b);
	return SF_OK;
fail:
	free(b);
	sf_vocab_free(out);
	return rc;
}

SF_API int sf_vocab_decode(const struct sf_vocab *v, const int32_t *ids, int64_t n, char *buf,
                           size_t cap, size_t *len)
{
	if (!v || !v->offset || !v->bytes)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_vocab_decode: no decode table loaded; load one with "
		              "sf_vocab_load()");
	if (n < 0 || (n > 0 && !ids) || (cap > 0 && !buf))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_vocab_decode: n %lld must be >= 0, ids and buf non-NULL when "
		              "used",
		              (long long)n);
	size_t total = 0;
	for (int64_t i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= v->n)
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_vocab_decode: id %d at position %lld is not in [0, %d) of "
			    "decode table %s",
			    ids[i], (long long)i, v->n, v->path ? v->path : "(in memory)");
		uint32_t lo = v->offset[ids[i]], k = v->offset[ids[i] + 1] - lo;
		if (total < cap)
			memcpy(buf + total, v->bytes + lo, cap - total < k ? cap - total : k);
		total += k;
	}
	if (len)
		*len = total;
	return SF_OK;
}
