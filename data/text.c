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
#include "data/read.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

SF_API int sf_text_free(struct sf_text *t)
{
	if (!t)
		return SF_OK;
	free(t->bytes);
	free(t->path);
	memset(t, 0, sizeof *t);
	return SF_OK;
}

SF_API int sf_text_load(const char *path, double val_fraction, struct sf_text *out)
{
	uint8_t *bytes = NULL;
	char *pcopy = NULL;
	int rc = SF_OK;

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

	size_t n;
	SF_CHECK_GOTO(_sf_data_read_file(path, "text file", SF_TEXT_MAX_BYTES, &bytes, &n), fail);
	pcopy = strdup(path);
	if (!pcopy) {
		rc = SF_ERR(SF_ERR_NOMEM, "cannot copy the path of text file %s", path);
		goto fail;
	}

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
	free(bytes);
	free(pcopy);
	return rc;
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
		return SF_ERR(
		    SF_ERR_INVALID,
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
			return SF_ERR(
			    SF_ERR_INVALID,
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
		    t->bytes + lo + _sf_window_start(seed, split, index, (int64_t)first + r, count);
		int32_t *xr = x + (size_t)r * (size_t)T, *yr = y + (size_t)r * (size_t)T;
		for (int k = 0; k < T; k++) {
			xr[k] = w[k];
			yr[k] = w[k + 1];
		}
	}
	return SF_OK;
}
