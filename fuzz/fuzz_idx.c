/*
 * fuzz_idx.c — sf_dataset_load_idx (data/idx.c) on arbitrary image and label files.
 *
 * Input: one flags byte, a 4-byte little-endian length L, then L bytes of the image
 * file and the rest for the label file (L is taken modulo what is left). Flags bit 0
 * (1) gzip-compresses the image file, bit 1 (2) the label file, before writing them;
 * without it the bytes are written as they are (so the fuzzer can also write its own
 * gzip streams, which gzread reads). Both files are then loaded; any result but a crash
 * is fine, and a success must describe a consistent data set.
 */
#include "fuzz/common.h"

#include <zlib.h>

static void put(const char *path, const uint8_t *p, size_t n, int gz)
{
	if (gz) {
		gzFile g = gzopen(path, "wb");
		if (!g)
			abort();
		if (n && gzwrite(g, p, (unsigned)n) != (int)n)
			abort();
		if (gzclose(g) != Z_OK)
			abort();
		return;
	}
	FILE *f = fopen(path, "wb");
	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init) {
		fuzz_quiet();
		init = 1;
	}
	if (size < 5)
		return 0;
	int flags = data[0];
	uint32_t L = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
	             (uint32_t)data[4] << 24;
	data += 5;
	size -= 5;
	size_t li = size ? L % (size + 1) : 0;
	const char *im = fuzz_path("images-idx3-ubyte"), *lb = fuzz_path("labels-idx1-ubyte");
	put(im, data, li, flags & 1);
	put(lb, data + li, size - li, flags & 2);

	struct sf_dataset ds;
	if (sf_dataset_load_idx(im, lb, &ds) == SF_OK) {
		if (ds.n < 1 || ds.rows < 1 || ds.cols < 1 || ds.dim != ds.rows * ds.cols ||
		    ds.classes < 2 || ds.classes > 256 || !ds.images || !ds.labels)
			abort();
		/* every value was read: touch them all (ASan sees a short buffer) */
		volatile float acc = 0;
		for (int64_t i = 0; i < ds.n * ds.dim; i++)
			acc += ds.images[i];
		for (int64_t i = 0; i < ds.n; i++)
			if (ds.labels[i] < 0 || ds.labels[i] >= ds.classes)
				abort();
		/* one batch of the first epoch, as training reads it */
		int B = ds.n < 4 ? (int)ds.n : 4;
		float *x = malloc((size_t)B * (size_t)ds.dim * sizeof *x);
		int32_t *y = malloc((size_t)B * sizeof *y);
		if (x && y && sf_dataset_batch(&ds, 1, 0, 0, B, 0, B, x, y) != SF_OK)
			abort();
		free(x);
		free(y);
		sf_dataset_free(&ds);
	}
	return 0;
}
