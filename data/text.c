/*
 * text.c — a text file as a byte-level dataset: the file read once, a training head and
 * a validation tail, and batches of windows drawn at random inside either part.
 *
 * Loading checks what the file is before reading it: a regular file (a directory, a
 * FIFO or a device is refused without a read that could block or never end), not
 * empty, at most SF_TEXT_MAX_BYTES; then reads exactly its size (a file that shrinks
 * meanwhile is an error, never a short dataset). The content is not checked: a byte
 * model takes any bytes.
 *
 * Batches: the start of row g (global row, first + r) of batch `index` of a split is
 * uniform over the split's length - T starts, drawn from the splitmix64 stream keyed by
 * (seed, split, index, g) (data/mix.h) with rejection of the few top values that would
 * favour some starts; nothing depends on the rank or the world size, so the ranks'
 * rows concatenate to the 1-rank batch. No state and no cache: each call is a pure
 * function of its arguments, safe from any thread. Checkpoints store (data_seed, step)
 * and resume the same batches only while this draw is unchanged: tests/test_text.c
 * pins it.
 */
#include "common/error.h"
#include "data/mix.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEXT_READ_CHUNK ((size_t)1 << 30) /* bytes per read() */

SF_API int sf_text_free(struct sf_text *t)
{
	if (!t)
		return SF_OK;
	free(t->bytes);
	free(t->path);
	memset(t, 0, sizeof *t);
	return SF_OK;
}

/* Reads exactly n bytes of fd into buf. */
static int read_exact(int fd, uint8_t *buf, size_t n, const char *path)
{
	size_t got = 0;
	while (got < n) {
		size_t want = n - got < TEXT_READ_CHUNK ? n - got : TEXT_READ_CHUNK;
		ssize_t r = read(fd, buf + got, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return SF_ERR(SF_ERR_IO, "cannot read text file %s: %s", path, strerror(errno));
		if (r == 0)
			return SF_ERR(SF_ERR_IO,
			              "text file %s shrank while being read: %zu of its %zu bytes",
			              path, got, n);
		got += (size_t)r;
	}
	return SF_OK;
}

SF_API int sf_text_load(const char *path, double val_fraction, struct sf_text *out)
{
	struct stat st;
	uint8_t *bytes = NULL;
	char *pcopy = NULL;
	int fd = -1, rc = SF_OK;

	if (out)
		memset(out, 0, sizeof *out);
	if (!path || !out)
		return SF_ERR(SF_ERR_INVALID, "sf_text_load: %s is NULL", !path ? "path" : "out");
	if (!(val_fraction >= 0.0 && val_fraction < 1.0))
		return SF_ERR(SF_ERR_INVALID,
		              "sf_text_load: val_fraction %g for %s is out of range: 0 <= "
		              "val_fraction < 1 (the share of the file held out for validation; 0: "
		              "none)",
		              val_fraction, path);

	/* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below) */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return SF_ERR(SF_ERR_IO, "cannot open text file %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = SF_ERR(SF_ERR_IO, "cannot stat text file %s: %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = SF_ERR(SF_ERR_IO, "cannot read text file %s: it is a directory", path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = SF_ERR(SF_ERR_IO,
		            "cannot read text file %s: not a regular file (a device, FIFO or "
		            "socket); a text dataset is read from a file of known size",
		            path);
		goto fail;
	}
	if (st.st_size == 0) {
		rc = SF_ERR(SF_ERR_IO, "text file %s is empty: a text dataset needs its bytes", path);
		goto fail;
	}
	if ((int64_t)st.st_size > SF_TEXT_MAX_BYTES) {
		rc = SF_ERR(SF_ERR_IO,
		            "text file %s has %lld bytes: more than the %lld (2 GiB) a text "
		            "dataset reads into memory",
		            path, (long long)st.st_size, (long long)SF_TEXT_MAX_BYTES);
		goto fail;
	}
	size_t n = (size_t)st.st_size;
	bytes = malloc(n);
	pcopy = strdup(path);
	if (!bytes || !pcopy) {
		rc = SF_ERR(SF_ERR_NOMEM, "cannot allocate %zu bytes to read text file %s", n, path);
		goto fail;
	}
	SF_CHECK(read_exact(fd, bytes, n, path));
	if (close(fd) != 0) {
		fd = -1;
		rc = SF_ERR(SF_ERR_IO, "cannot close text file %s: %s", path, strerror(errno));
		goto fail;
	}
	fd = -1;

	/* val_fraction < 1 keeps at least one training byte, whatever the rounding */
	int64_t val = (int64_t)floor((double)n * val_fraction);
	if (val >= (int64_t)n)
		val = (int64_t)n - 1;
	if (val < 0)
		val = 0;
	out->n = (int64_t)n;
	out->bytes = bytes;
	out->train_end = (int64_t)n - val;
	out->path = pcopy;
	return SF_OK;

fail:
	if (fd >= 0)
		(void)close(fd);
	free(bytes);
	free(pcopy);
	return rc;
}

/* Start of global row g, uniform in [0, count), count >= 1. */
static uint64_t window_start(uint64_t seed, int split, int64_t index, int64_t g, uint64_t count)
{
	uint64_t key = _sf_mix64(_sf_mix64(_sf_mix64(_sf_mix64(seed) ^ (uint64_t)split) ^
	                                   (uint64_t)index) ^
	                         (uint64_t)g);
	/* [0, accept) holds a whole number of copies of [0, count): draws above it are
	 * redrawn (rarely: fewer than count in 2^64) */
	uint64_t accept = UINT64_MAX - UINT64_MAX % count;
	for (;;) {
		uint64_t r = _sf_mix64(key += SF_GOLDEN);
		if (r < accept)
			return r % count;
	}
}

SF_API int sf_text_batch(const struct sf_text *t, int split, uint64_t seed, int64_t index,
                         int global_batch, int first, int rows, int T, int32_t *x, int32_t *y)
{
	if (!t)
		return SF_ERR(SF_ERR_INVALID, "sf_text_batch: t is NULL");
	if (t->n < 1 || !t->bytes || t->train_end < 1 || t->train_end > t->n)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_text_batch: the text is empty or not loaded (n = %lld, train_end "
		              "= %lld); load it with sf_text_load()",
		              (long long)t->n, (long long)t->train_end);
	if (split != SF_TEXT_TRAIN && split != SF_TEXT_VAL)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_text_batch: split %d is neither SF_TEXT_TRAIN (0) nor SF_TEXT_VAL "
		              "(1)",
		              split);
	if (T < 1)
		return SF_ERR(SF_ERR_INVALID, "sf_text_batch: T %d is out of range: at least 1", T);
	if (global_batch < 1)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_text_batch: global batch %d is out of range: at least 1",
		              global_batch);
	if (index < 0)
		return SF_ERR(SF_ERR_INVALID, "sf_text_batch: batch index %lld is negative",
		              (long long)index);
	if (rows < 0)
		return SF_ERR(SF_ERR_INVALID, "sf_text_batch: rows %d is negative", rows);
	if (first < 0 || rows > global_batch - first)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_text_batch: rows [%d, %d + %d) are not within the global batch "
		              "of %d",
		              first, first, rows, global_batch);
	if (rows > 0 && (!x || !y))
		return SF_ERR(SF_ERR_INVALID, "sf_text_batch: %s is NULL", !x ? "x" : "y");

	int64_t lo = split == SF_TEXT_TRAIN ? 0 : t->train_end;
	int64_t hi = split == SF_TEXT_TRAIN ? t->train_end : t->n;
	const char *path = t->path ? t->path : "(a text in memory)";
	if (hi - lo < (int64_t)T + 1) {
		if (split == SF_TEXT_TRAIN)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_text_batch: the training split of %s has %lld bytes (the "
			              "first %lld of its %lld): a window of T + 1 = %lld bytes needs "
			              "at least that many; lower T or the validation fraction",
			              path, (long long)(hi - lo), (long long)hi, (long long)t->n,
			              (long long)T + 1);
		return SF_ERR(SF_ERR_INVALID,
		              "sf_text_batch: the validation split of %s has %lld bytes (the last "
		              "of its %lld): a window of T + 1 = %lld bytes needs at least that "
		              "many; lower T or load with a larger val_fraction",
		              path, (long long)(hi - lo), (long long)t->n, (long long)T + 1);
	}
	uint64_t count = (uint64_t)(hi - lo - T); /* starts lo .. hi - T - 1 */
	for (int r = 0; r < rows; r++) {
		const uint8_t *w =
		    t->bytes + lo + window_start(seed, split, index, (int64_t)first + r, count);
		int32_t *xr = x + (size_t)r * (size_t)T, *yr = y + (size_t)r * (size_t)T;
		for (int k = 0; k < T; k++) {
			xr[k] = w[k];
			yr[k] = w[k + 1];
		}
	}
	return SF_OK;
}
