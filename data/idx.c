/*
 * idx.c — datasets read from IDX files (MNIST, Fashion-MNIST) and the order in which an
 * epoch visits their samples.
 *
 * Loading is strict because a short or mislabelled file would otherwise train quietly on
 * zeros: both headers are read and checked (magic, dimensions, equal counts) before
 * anything large is allocated, then each body is streamed through one staging buffer of
 * IDX_CHUNK bytes (zlib's gzread reads plain files as well as gzip), so the peak memory
 * is the float array plus that buffer. Every body must end exactly where its header says:
 * fewer bytes is a truncated file, more is trailing data. A damaged gzip stream (bad
 * deflate data, a CRC mismatch, a cut) surfaces as a gzread error and is reported with
 * zlib's own words.
 *
 * Batches: the order of an epoch is a Fisher–Yates shuffle driven by splitmix64 keyed by
 * (seed, epoch) alone, never by the rank or the world size, so every rank computes the
 * same global batch and copies its own slice of it; integer draws (Lemire's method) keep
 * the shuffle unbiased and identical on every platform.
 *
 * Shape letters: n samples, D = rows * cols pixels per sample, B the global batch.
 */
#include "common/error.h"
#include "data/mix.h"

#include <stdio.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define IDX_MAGIC_IMAGES 0x00000803u /* unsigned bytes, 3 dimensions (n, rows, cols) */
#define IDX_MAGIC_LABELS 0x00000801u /* unsigned bytes, 1 dimension (n) */
#define IDX_SIDE_MAX 4096
#define IDX_CHUNK (1u << 20) /* bytes per gzread and size of the staging buffer */
#define IDX_GZBUF (128u << 10)
#define IDX_FIRST_ALLOC ((size_t)4 << 20) /* elements: the first slice of a gzip body */

/* One open IDX file; rows = cols = 1 for a label file. */
struct idx_file {
	const char *path;
	const char *kind; /* "image" or "label" */
	uint32_t want_magic;
	int ndims;
	gzFile gz;
	uint32_t count, rows, cols;
};

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* zlib's message for f, without the "path: " it starts with (ours names the file). */
static const char *zmsg(const struct idx_file *f, int *errnum)
{
	const char *msg = gzerror(f->gz, errnum);
	size_t len = strlen(f->path);
	if (!msg || !*msg)
		return "unknown zlib error";
	if (strncmp(msg, f->path, len) == 0 && msg[len] == ':' && msg[len + 1] == ' ')
		return msg + len + 2;
	return msg;
}

static int read_error(const struct idx_file *f, int saved_errno)
{
	int errnum = Z_OK;
	const char *msg = zmsg(f, &errnum);
	if (errnum == Z_ERRNO)
		return SF_ERR(SF_ERR_IO, "cannot read %s: %s", f->path, strerror(saved_errno));
	if (errnum == Z_MEM_ERROR)
		return SF_ERR(SF_ERR_NOMEM, "cannot read %s: zlib is out of memory", f->path);
	return SF_ERR(SF_ERR_IO, "cannot read %s: corrupt gzip stream (%s)", f->path, msg);
}

/* Reads len bytes into buf; *got < len only at the end of the data. */
static int read_some(struct idx_file *f, unsigned char *buf, size_t len, size_t *got)
{
	*got = 0;
	while (*got < len) {
		size_t want = len - *got < IDX_CHUNK ? len - *got : IDX_CHUNK;
		errno = 0;
		int r = gzread(f->gz, buf + *got, (unsigned)want);
		if (r < 0)
			return read_error(f, errno);
		if (r == 0) {
			/* a gzip stream that stops mid-way reads as an early end of file, with
			 * Z_BUF_ERROR left for gzerror (not an error return) */
			int errnum = Z_OK;
			const char *msg = zmsg(f, &errnum);
			if (errnum == Z_BUF_ERROR)
				return SF_ERR(
				    SF_ERR_IO,
				    "file %s is truncated: its gzip stream is cut short (%s)",
				    f->path, msg);
			break;
		}
		*got += (size_t)r;
	}
	return SF_OK;
}

static int idx_open(struct idx_file *f)
{
	errno = 0;
	f->gz = gzopen(f->path, "rb");
	if (!f->gz) {
		int e = errno;
		return SF_ERR(SF_ERR_IO, "cannot open %s file %s: %s", f->kind, f->path,
		              e ? strerror(e) : "zlib is out of memory");
	}
	if (gzbuffer(f->gz, IDX_GZBUF) != 0)
		return SF_ERR(SF_ERR_IO, "cannot set the read buffer of %s", f->path);
	return SF_OK;
}

static int bad_magic(const struct idx_file *f, uint32_t found)
{
	const char *what = "";
	if (f->want_magic == IDX_MAGIC_IMAGES && found == IDX_MAGIC_LABELS)
		what = ": it is an IDX label file (were the image and label paths swapped?)";
	else if (f->want_magic == IDX_MAGIC_LABELS && found == IDX_MAGIC_IMAGES)
		what = ": it is an IDX image file (were the image and label paths swapped?)";
	else if (found >> 16)
		what = ": not an IDX file";
	else if ((found >> 8 & 0xff) != 0x08)
		what = ": IDX elements are not unsigned bytes (type 0x08)";
	return SF_ERR(SF_ERR_IO,
	              "file %s is not an IDX %s file: magic number 0x%08x, expected 0x%08x%s",
	              f->path, f->kind, found, f->want_magic, what);
}

/* Reads and checks the header: magic, count > 0 and, for images, the image size. */
static int read_header(struct idx_file *f)
{
	unsigned char h[16];
	size_t len = 4 + 4 * (size_t)f->ndims, got;
	int rc = read_some(f, h, len, &got);
	if (rc < 0)
		return rc;
	/* a wrong magic says more than "truncated" about a short file of the wrong kind */
	if (got >= 4 && be32(h) != f->want_magic)
		return bad_magic(f, be32(h));
	if (got < len)
		return SF_ERR(SF_ERR_IO,
		              "file %s is truncated: expected %zu bytes of header, got %zu",
		              f->path, len, got);
	f->count = be32(h + 4);
	f->rows = f->ndims == 3 ? be32(h + 8) : 1;
	f->cols = f->ndims == 3 ? be32(h + 12) : 1;
	if (f->count == 0)
		return SF_ERR(SF_ERR_IO, "file %s has 0 %ss: its header must count at least one",
		              f->path, f->kind);
	if (f->rows < 1 || f->rows > IDX_SIDE_MAX || f->cols < 1 || f->cols > IDX_SIDE_MAX)
		return SF_ERR(SF_ERR_IO,
		              "file %s has images of %u x %u pixels: rows and cols must be "
		              "in 1..%d",
		              f->path, f->rows, f->cols, IDX_SIDE_MAX);
	return SF_OK;
}

/* Grows *dst (elements of elsz bytes) to hold at least `need` of them, doubling, never
 * beyond max. */
static int grow(const struct idx_file *f, void **dst, size_t *cap, size_t need, size_t max,
                size_t elsz)
{
	if (need <= *cap)
		return SF_OK;
	size_t ncap = *cap ? 2 * *cap : need;
	ncap = ncap < need ? need : ncap > max ? max : ncap;
	void *p = realloc(*dst, ncap * elsz);
	if (!p)
		return SF_ERR(SF_ERR_NOMEM, "cannot allocate %zu bytes for the %ss of %s",
		              ncap * elsz, f->kind, f->path);
	*dst = p;
	*cap = ncap;
	return SF_OK;
}

/* Streams the len bytes of f's body through stage into *dst: pixels (floats, byte /
 * 255 through lut) or labels (int32). *dst grows as data arrives, from `first`
 * elements, so a header that announces more than the file holds costs no more memory
 * than the data that is there. Then checks that the data ends there. */
static int read_body(struct idx_file *f, size_t len, const char *what, unsigned char *stage,
                     const float *lut, void **dst, size_t first)
{
	size_t done = 0, got, cap = 0, elsz = lut ? sizeof(float) : sizeof(int32_t);
	int rc;
	if ((rc = grow(f, dst, &cap, first < len ? first : len, len, elsz)) < 0)
		return rc;
	while (done < len) {
		size_t want = len - done < IDX_CHUNK ? len - done : IDX_CHUNK;
		if ((rc = read_some(f, stage, want, &got)) < 0)
			return rc;
		if ((rc = grow(f, dst, &cap, done + got, len, elsz)) < 0)
			return rc;
		if (lut)
			for (size_t i = 0; i < got; i++)
				((float *)*dst)[done + i] = lut[stage[i]];
		else
			for (size_t i = 0; i < got; i++)
				((int32_t *)*dst)[done + i] = stage[i];
		done += got;
		if (got < want)
			return SF_ERR(SF_ERR_IO,
			              "file %s is truncated: expected %zu bytes of %s after the "
			              "header, got %zu",
			              f->path, len, what, done);
	}
	/* Reading on to the end also makes zlib check the gzip trailer (CRC and length). */
	size_t extra = 0;
	do {
		if ((rc = read_some(f, stage, IDX_CHUNK, &got)) < 0)
			return rc;
		extra += got;
	} while (got == IDX_CHUNK);
	if (extra)
		return SF_ERR(SF_ERR_IO,
		              "file %s has %zu trailing byte(s) after the %zu bytes of %s "
		              "its header announces",
		              f->path, extra, len, what);
	return SF_OK;
}

/* How many elements to allocate before reading a body of len bytes: all of them for a
 * plain file whose size holds them (checked here: a shorter one is refused before any
 * allocation), a first slice for a gzip stream, whose size is known only at its end. */
static int first_alloc(const struct idx_file *f, size_t len, const char *what, size_t *first)
{
	struct stat st;
	size_t header = 4 + 4 * (size_t)f->ndims;
	if (!gzdirect(f->gz)) {
		*first = IDX_FIRST_ALLOC;
		return SF_OK;
	}
	if (stat(f->path, &st) != 0)
		return SF_ERR(SF_ERR_IO, "cannot stat %s: %s", f->path, strerror(errno));
	size_t body = (size_t)st.st_size > header ? (size_t)st.st_size - header : 0;
	if (body < len)
		return SF_ERR(SF_ERR_IO,
		              "file %s is truncated: expected %zu bytes of %s after the header, "
		              "got %zu (its header announces %u %ss)",
		              f->path, len, what, body, f->count, f->kind);
	*first = len;
	return SF_OK;
}

static int idx_close(struct idx_file *f)
{
	int zrc = gzclose(f->gz);
	f->gz = NULL;
	if (zrc != Z_OK)
		return SF_ERR(SF_ERR_IO, "cannot close %s (zlib error %d)", f->path, zrc);
	return SF_OK;
}

SF_API int sf_dataset_load_idx(const char *images_path, const char *labels_path,
                               struct sf_dataset *out)
{
	struct idx_file im = {
	    .path = images_path, .kind = "image", .want_magic = IDX_MAGIC_IMAGES, .ndims = 3};
	struct idx_file lb = {
	    .path = labels_path, .kind = "label", .want_magic = IDX_MAGIC_LABELS, .ndims = 1};
	unsigned char *stage = NULL;
	float *images = NULL;
	int32_t *labels = NULL;
	int rc = SF_OK;

	if (out)
		memset(out, 0, sizeof *out);
	if (!images_path || !labels_path || !out)
		return SF_ERR(SF_ERR_INVALID, "sf_dataset_load_idx: %s is NULL",
		              !images_path   ? "images_path"
		              : !labels_path ? "labels_path"
		                             : "out");

	SF_CHECK_GOTO(idx_open(&im), fail);
	SF_CHECK_GOTO(read_header(&im), fail);
	SF_CHECK_GOTO(idx_open(&lb), fail);
	SF_CHECK_GOTO(read_header(&lb), fail);
	if (im.count != lb.count) {
		rc = SF_ERR(SF_ERR_IO, "%s has %u images but %s has %u labels", images_path,
		            im.count, labels_path, lb.count);
		goto fail;
	}

	size_t n = im.count, D = (size_t)im.rows * im.cols;
	if (n > SIZE_MAX / sizeof(float) / D) {
		rc = SF_ERR(SF_ERR_IO,
		            "file %s announces %zu images of %u x %u pixels: too large "
		            "for this machine's address space",
		            images_path, n, im.rows, im.cols);
		goto fail;
	}
	stage = malloc(IDX_CHUNK);
	if (!stage) {
		rc = SF_ERR(SF_ERR_NOMEM, "cannot allocate %u bytes to read %s", IDX_CHUNK,
		            images_path);
		goto fail;
	}
	size_t first_im = 0, first_lb = 0;
	SF_CHECK_GOTO(first_alloc(&im, n * D, "pixel data", &first_im), fail);
	SF_CHECK_GOTO(first_alloc(&lb, n, "labels", &first_lb), fail);
	float lut[256];
	for (int b = 0; b < 256; b++)
		lut[b] = (float)b / 255.0f;
	SF_CHECK_GOTO(read_body(&im, n * D, "pixel data", stage, lut, (void **)&images, first_im), fail);
	SF_CHECK_GOTO(read_body(&lb, n, "labels", stage, NULL, (void **)&labels, first_lb), fail);
	SF_CHECK_GOTO(idx_close(&im), fail);
	SF_CHECK_GOTO(idx_close(&lb), fail);

	/* Labels are bytes, so always < 256; the class count is what they use. */
	int32_t max = 0;
	for (size_t i = 0; i < n; i++)
		if (labels[i] > max)
			max = labels[i];
	if (max < 1) {
		rc = SF_ERR(SF_ERR_IO,
		            "file %s: every label is 0; a classification needs at least 2 classes",
		            labels_path);
		goto fail;
	}
	free(stage);

	out->n = (int64_t)n;
	out->rows = (int)im.rows;
	out->cols = (int)im.cols;
	out->dim = (int)D;
	out->classes = (int)max + 1;
	out->images = images;
	out->labels = labels;
	return SF_OK;

fail:
	/* already failing: a close error would add nothing to the message */
	if (im.gz)
		(void)gzclose(im.gz);
	if (lb.gz)
		(void)gzclose(lb.gz);
	free(stage);
	free(images);
	free(labels);
	return rc;
}

/* ---- the order of an epoch ------------------------------------------------------------ */

/*
 * The permutation of the last (n, seed, epoch) is cached: it depends on nothing else, so
 * the cache can never be stale, whichever dataset asks. Shuffling n indices on every
 * call would cost several times the copy of a batch (docs/performance.md, "Choices in
 * the code"). The cache costs 4 n bytes. The mutex makes concurrent callers safe; the
 * batch is copied under it (microseconds), which saves copying the indices out.
 */
static pthread_mutex_t perm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint32_t *idx; /* (n) */
	int64_t n, epoch;
	uint64_t seed;
} perm_cache;

/* splitmix64: a counter-based stream, so (seed, epoch) names the whole shuffle */
static uint32_t next32(uint64_t *state)
{
	return (uint32_t)(_sf_mix64(*state += SF_GOLDEN) >> 32);
}

/* Uniform in [0, range), range >= 1, without bias (Lemire, "Fast random integer
 * generation in an interval", 2019): reject the few low products that would favour
 * some values. */
static uint32_t bounded(uint64_t *state, uint32_t range)
{
	uint64_t m = (uint64_t)next32(state) * range;
	if ((uint32_t)m < range) {
		uint32_t t = (uint32_t)(-range) % range;
		while ((uint32_t)m < t)
			m = (uint64_t)next32(state) * range;
	}
	return (uint32_t)(m >> 32);
}

static void shuffle(uint32_t *idx, uint32_t n, uint64_t seed, int64_t epoch)
{
	/* mixing seed before epoch: streams of neighbouring epochs share no draws */
	uint64_t state = _sf_mix64(_sf_mix64(seed) ^ (uint64_t)epoch);
	for (uint32_t i = 0; i < n; i++)
		idx[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = bounded(&state, i + 1);
		uint32_t t = idx[i];
		idx[i] = idx[j];
		idx[j] = t;
	}
}

/* Called with perm_lock held. */
static int perm_get(int64_t n, uint64_t seed, int64_t epoch, const uint32_t **idx)
{
	if (!perm_cache.idx || perm_cache.n != n || perm_cache.seed != seed ||
	    perm_cache.epoch != epoch) {
		if (perm_cache.n != n) {
			free(perm_cache.idx);
			perm_cache.idx = NULL;
			perm_cache.n = 0;
			perm_cache.idx = malloc((size_t)n * sizeof *perm_cache.idx);
			if (!perm_cache.idx)
				return SF_ERR(
				    SF_ERR_NOMEM,
				    "cannot allocate the order of an epoch of %lld samples",
				    (long long)n);
			perm_cache.n = n;
		}
		shuffle(perm_cache.idx, (uint32_t)n, seed, epoch);
		perm_cache.seed = seed;
		perm_cache.epoch = epoch;
	}
	*idx = perm_cache.idx;
	return SF_OK;
}

SF_API int sf_dataset_batch(const struct sf_dataset *ds, uint64_t seed, int64_t epoch,
                            int64_t batch, int global_batch, int first, int rows, float *x,
                            int32_t *y)
{
	if (!ds)
		return SF_ERR(SF_ERR_INVALID, "sf_dataset_batch: ds is NULL");
	if (ds->n < 1 || ds->n > UINT32_MAX || !ds->images || !ds->labels || ds->dim < 1)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_dataset_batch: the dataset is empty or not loaded (n = %lld, "
		              "dim = %d); load it with sf_dataset_load_idx()",
		              (long long)ds->n, ds->dim);
	if (global_batch < 1 || global_batch > ds->n)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_dataset_batch: global batch %d is out of range: 1..%lld (the "
		              "dataset's samples)",
		              global_batch, (long long)ds->n);
	int64_t nbatches = ds->n / global_batch;
	if (epoch < 0)
		return SF_ERR(SF_ERR_INVALID, "sf_dataset_batch: epoch %lld is negative",
		              (long long)epoch);
	if (batch < 0 || batch >= nbatches)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_dataset_batch: batch %lld is out of range: an epoch of %lld "
		              "samples has %lld batches of %d (0..%lld)",
		              (long long)batch, (long long)ds->n, (long long)nbatches, global_batch,
		              (long long)nbatches - 1);
	if (rows < 0)
		return SF_ERR(SF_ERR_INVALID, "sf_dataset_batch: rows %d is negative", rows);
	if (first < 0 || rows > global_batch - first)
		return SF_ERR(SF_ERR_INVALID,
		              "sf_dataset_batch: rows [%d, %d + %d) are not within the global "
		              "batch of %d",
		              first, first, rows, global_batch);
	if (rows > 0 && (!x || !y))
		return SF_ERR(SF_ERR_INVALID, "sf_dataset_batch: %s is NULL", !x ? "x" : "y");
	if (rows == 0)
		return SF_OK;

	const uint32_t *idx = NULL;
	size_t D = (size_t)ds->dim;
	int rc = SF_OK;
	if (pthread_mutex_lock(&perm_lock) != 0)
		return SF_ERR(SF_ERR_STATE, "sf_dataset_batch: cannot lock the order cache");
	SF_CHECK_GOTO(perm_get(ds->n, seed, epoch, &idx), out);
	const uint32_t *pos = idx + batch * global_batch + first;
	for (int r = 0; r < rows; r++) {
		memcpy(x + (size_t)r * D, ds->images + (size_t)pos[r] * D, D * sizeof *x);
		y[r] = ds->labels[pos[r]];
	}
out:
	(void)pthread_mutex_unlock(&perm_lock);
	return rc;
}

SF_API int sf_dataset_free(struct sf_dataset *ds)
{
	if (!ds)
		return SF_OK;
	free(ds->images);
	free(ds->labels);
	memset(ds, 0, sizeof *ds);
	/* The order cache is shared by every dataset and only saves time: dropping it here
	 * means a program that frees what it loads ends with nothing allocated. */
	if (pthread_mutex_lock(&perm_lock) == 0) {
		free(perm_cache.idx);
		memset(&perm_cache, 0, sizeof perm_cache);
		(void)pthread_mutex_unlock(&perm_lock);
	}
	return SF_OK;
}
