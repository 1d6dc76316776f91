/*
 * test_idx.c — proves that IDX datasets load exactly or fail loudly, and that the order
 * of an epoch is a permutation that depends on (seed, epoch) alone. One process, no MPI.
 *
 * Loading: small IDX pairs written here (gzip and plain) load with the right n, image
 * size, class count, pixels (byte / 255: 255 -> 1.0f, 0 -> 0.0f exactly) and labels.
 * Every kind of damage — wrong magic in either file or swapped paths, a zero count, an
 * image size out of range, a cut header, cut pixel data, cut labels, trailing bytes,
 * a header announcing far more than the file holds (refused as truncated under a
 * 1 GiB address-space limit: nothing of the claimed size is allocated),
 * counts that disagree, one class only, a corrupt, cut or CRC-damaged gzip stream, a gzip
 * trailer cut off, a missing file, NULL arguments — returns a negative status, leaves
 * *out zeroed, and sf_last_error() names the file and the problem.
 *
 * Batches: the union of an epoch's batches holds each sample at most once and
 * n / B * B distinct samples; the same (seed, epoch) gives the same order even after
 * other epochs were asked for, another epoch or seed another order; slices of a global
 * batch taken as 1, 2 or 3 ranks (the first B % N ranks get one more row, as
 * sf_model_local_rows) concatenate to the 1-rank batch; the first position of 50000
 * shuffles of 5 samples passes a chi-square test of uniformity; the order of a known
 * (seed, epoch) is pinned, since checkpoints resume from (data_seed, epoch, batch);
 * bad arguments are refused.
 *
 * With the real Fashion-MNIST installed (FMNIST_DIR), both sets load with 60000 / 10000
 * samples of 28 x 28, 10 classes of 6000 / 1000 each; otherwise those checks are
 * skipped with the reason.
 */
#include "shardflow.h"
#include "tests/tap.h"
#include "tests/tmpfiles.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#ifndef FMNIST_DIR /* -DFMNIST_DIR=... to test elsewhere */
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

/* ---- files written for the test ------------------------------------------------------- */

/* A growing byte string: the content of one file. */
struct blob {
	unsigned char *p;
	size_t len;
};

static void put(struct blob *b, const void *src, size_t len)
{
	unsigned char *p = realloc(b->p, b->len + len + 1);
	if (!p)
		bail_out("out of memory");
	memcpy(p + b->len, src, len);
	b->p = p;
	b->len += len;
}

static void put32(struct blob *b, uint32_t v)
{
	unsigned char be[4] = {v >> 24, v >> 16 & 0xff, v >> 8 & 0xff, v & 0xff};
	put(b, be, 4);
}

static void write_file(const char *path, int gz, const struct blob *b)
{
	if (gz) {
		gzFile f = gzopen(path, "wb");
		if (!f)
			bail_out("gzopen for writing failed");
		if (b->len && gzwrite(f, b->p, (unsigned)b->len) != (int)b->len)
			bail_out("gzwrite failed");
		if (gzclose(f) != Z_OK)
			bail_out("gzclose failed");
		return;
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		bail_out("fopen for writing failed");
	if (b->len && fwrite(b->p, 1, b->len, f) != b->len)
		bail_out("fwrite failed");
	if (fclose(f) != 0)
		bail_out("fclose failed");
}

static struct blob read_whole(const char *path)
{
	struct blob b = {0};
	unsigned char buf[4096];
	FILE *f = fopen(path, "rb");
	if (!f)
		bail_out("cannot read back a test file");
	size_t got;
	while ((got = fread(buf, 1, sizeof buf, f)) > 0)
		put(&b, buf, got);
	fclose(f);
	return b;
}

/* The valid pair: N_ images of R_ x C_, pixel i = (i * 37) % 256 except pixel 0 = 0
 * and pixel 1 = 255; label i = i % 5. */
enum { N_ = 10, R_ = 3, C_ = 4 };

static unsigned char pixel(size_t i)
{
	return i == 0 ? 0 : i == 1 ? 255 : (unsigned char)(i * 37 % 256);
}

static struct blob images_blob(uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols,
                               size_t npixels)
{
	struct blob b = {0};
	put32(&b, magic);
	put32(&b, n);
	put32(&b, rows);
	put32(&b, cols);
	for (size_t i = 0; i < npixels; i++) {
		unsigned char v = pixel(i);
		put(&b, &v, 1);
	}
	return b;
}

static struct blob labels_blob(uint32_t magic, uint32_t n, size_t nlabels, int all_zero)
{
	struct blob b = {0};
	put32(&b, magic);
	put32(&b, n);
	for (size_t i = 0; i < nlabels; i++) {
		unsigned char v = all_zero ? 0 : (unsigned char)(i % 5);
		put(&b, &v, 1);
	}
	return b;
}

/* Writes blob b (then frees it) to a new test file; returns its path. */
static const char *make(const char *name, int gz, struct blob b)
{
	const char *path = tpath(name);
	write_file(path, gz, &b);
	free(b.p);
	return path;
}

/* ---- checks ------------------------------------------------------------------------------- */

static int all_zero(const struct sf_dataset *ds)
{
	static const struct sf_dataset zero;
	return memcmp(ds, &zero, sizeof zero) == 0;
}

/* The load fails with `status`, leaves *out zeroed, and the message holds both
 * fragments (the file's path and the problem). */
static void check_refused(const char *name, const char *images, const char *labels, int status,
                          const char *frag1, const char *frag2)
{
	struct sf_dataset ds;
	memset(&ds, 0xab, sizeof ds);
	int rc = sf_dataset_load_idx(images, labels, &ds);
	const char *msg = sf_last_error();
	int named = (!frag1 || strstr(msg, frag1)) && (!frag2 || strstr(msg, frag2));
	if (!ok(rc == status && all_zero(&ds) && named, "%s is refused", name)) {
		diag("  %s:%d: status %d (expected %d), out %s", __FILE__, __LINE__, rc, status,
		     all_zero(&ds) ? "zeroed" : "NOT zeroed");
		diag("  message: \"%s\"", msg);
		diag("  expected it to contain \"%s\" and \"%s\"", frag1 ? frag1 : "",
		     frag2 ? frag2 : "");
	}
	if (rc == SF_OK)
		sf_dataset_free(&ds);
}

static void test_load(void)
{
	const char *img_gz = make("img.gz", 1, images_blob(0x803, N_, R_, C_, N_ * R_ * C_));
	const char *img = make("img", 0, images_blob(0x803, N_, R_, C_, N_ * R_ * C_));
	const char *lab = make("lab", 0, labels_blob(0x801, N_, N_, 0));
	const char *lab_gz = make("lab.gz", 1, labels_blob(0x801, N_, N_, 0));

	for (int v = 0; v < 2; v++) {
		const char *ip = v ? img : img_gz, *lp = v ? lab_gz : lab;
		const char *what = v ? "plain images, gzip labels" : "gzip images, plain labels";
		struct sf_dataset ds;
		int rc = sf_dataset_load_idx(ip, lp, &ds);
		ok_int_eq(rc, SF_OK, what);
		if (rc != SF_OK) {
			diag("  %s", sf_last_error());
			continue;
		}
		ok_int_eq(ds.n, N_, "n");
		ok_true(ds.rows == R_ && ds.cols == C_ && ds.dim == R_ * C_, "rows, cols, dim");
		ok_int_eq(ds.classes, 5, "classes = 1 + largest label");
		ok_true(ds.images[0] == 0.0f, "byte 0 -> 0.0f");
		ok_true(ds.images[1] == 1.0f, "byte 255 -> 1.0f");
		int bad_pix = 0, bad_lab = 0;
		for (size_t i = 0; i < (size_t)N_ * R_ * C_; i++)
			bad_pix += ds.images[i] != (float)pixel(i) / 255.0f;
		for (int i = 0; i < N_; i++)
			bad_lab += ds.labels[i] != i % 5;
		ok_int_eq(bad_pix, 0, "every pixel is byte / 255");
		ok_int_eq(bad_lab, 0, "every label as written");
		ok_int_eq(sf_dataset_free(&ds), SF_OK, "sf_dataset_free");
		ok_true(all_zero(&ds), "sf_dataset_free empties the struct");
	}
	struct sf_dataset empty = {0};
	ok_int_eq(sf_dataset_free(&empty), SF_OK, "sf_dataset_free of an empty struct");
	ok_int_eq(sf_dataset_free(NULL), SF_OK, "sf_dataset_free(NULL)");

	/* headers */
	const char *p;
	p = make("bad_magic_img", 0, images_blob(0x804, N_, R_, C_, N_ * R_ * C_));
	check_refused("bad image magic", p, lab, SF_ERR_IO, p, "magic number 0x00000804");
	p = make("bad_magic_lab", 1, labels_blob(0x901, N_, N_, 0));
	check_refused("bad label magic", img, p, SF_ERR_IO, p, "expected 0x00000801");
	check_refused("swapped paths", lab, img, SF_ERR_IO, lab, "swapped");
	{
		struct blob t = {0};
		put(&t, "hello, world\n", 13);
		p = make("text_img2", 0, t);
	}
	check_refused("a text file", p, lab, SF_ERR_IO, p, "not an IDX file");
	p = make("zero_img", 1, images_blob(0x803, 0, R_, C_, 0));
	check_refused("zero images", p, lab, SF_ERR_IO, p, "0 images");
	p = make("zero_lab", 0, labels_blob(0x801, 0, 0, 0));
	check_refused("zero labels", img, p, SF_ERR_IO, p, "0 labels");
	p = make("wide_img", 0, images_blob(0x803, N_, 1, 5000, 0));
	check_refused("5000 columns", p, lab, SF_ERR_IO, p, "1 x 5000");
	p = make("flat_img", 0, images_blob(0x803, N_, 0, C_, 0));
	check_refused("0 rows", p, lab, SF_ERR_IO, p, "0 x 4");
	{
		struct blob b = images_blob(0x803, N_, R_, C_, 0);
		b.len = 10;
		p = make("short_header", 0, b);
	}
	check_refused("cut header", p, lab, SF_ERR_IO, p,
	              "truncated: expected 16 bytes of header, got 10");
	p = make("empty", 0, (struct blob){0});
	check_refused("empty file", p, lab, SF_ERR_IO, p, "got 0");

	/* bodies */
	p = make("short_img.gz", 1, images_blob(0x803, N_, R_, C_, N_ * R_ * C_ - 1));
	check_refused("cut pixel data", p, lab, SF_ERR_IO, p,
	              "truncated: expected 120 bytes of pixel data after the header, got 119");
	p = make("long_img", 0, images_blob(0x803, N_, R_, C_, N_ * R_ * C_ + 3));
	check_refused("trailing bytes after the pixels", p, lab, SF_ERR_IO, p,
	              "3 trailing byte(s)");
	p = make("short_lab", 0, labels_blob(0x801, N_, N_ - 2, 0));
	check_refused("cut labels", img, p, SF_ERR_IO, p,
	              "expected 10 bytes of labels after the header, got 8");
	p = make("long_lab.gz", 1, labels_blob(0x801, N_, N_ + 1, 0));
	check_refused("trailing bytes after the labels", img, p, SF_ERR_IO, p, "trailing");
	p = make("nine_lab", 0, labels_blob(0x801, N_ - 1, N_ - 1, 0));
	{
		char frag[400];
		snprintf(frag, sizeof frag, "%s has 10 images but %s has 9 labels", img, p);
		check_refused("count mismatch", img, p, SF_ERR_IO, frag, NULL);
	}
	p = make("one_class", 0, labels_blob(0x801, N_, N_, 1));
	check_refused("a single class", img, p, SF_ERR_IO, p, "at least 2 classes");

	/* gzip damage */
	{
		static const unsigned char hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
		struct blob b = {0};
		put(&b, hdr, sizeof hdr);
		for (int i = 0; i < 64; i++)
			put(&b, "\xff", 1);
		p = make("garbage.gz", 0, b);
	}
	check_refused("gzip header then garbage", p, lab, SF_ERR_IO, p, "corrupt gzip stream");
	{
		struct blob b = read_whole(img_gz);
		b.len = b.len / 2;
		p = make("cut.gz", 0, b);
	}
	check_refused("cut gzip stream", p, lab, SF_ERR_IO, p, "gzip stream is cut short");
	{
		struct blob b = read_whole(img_gz);
		b.len -= 4; /* the end of the trailer: the data itself is whole */
		p = make("cut_trailer.gz", 0, b);
	}
	check_refused("cut gzip trailer", p, lab, SF_ERR_IO, p, "gzip stream is cut short");
	{
		struct blob b = read_whole(img_gz);
		b.p[b.len - 8] ^= 0x55; /* the trailer: CRC-32, then length */
		p = make("crc.gz", 0, b);
	}
	check_refused("gzip CRC mismatch", p, lab, SF_ERR_IO, p, "corrupt gzip stream");

	/* files and arguments */
	p = tpath("no_such_file");
	check_refused("a missing image file", p, lab, SF_ERR_IO, p, "No such file");
	check_refused("a missing label file", img, p, SF_ERR_IO, p, "cannot open label file");
	check_refused("a directory", tmpdir, lab, SF_ERR_IO, tmpdir, "cannot read");
	check_refused("NULL images_path", NULL, lab, SF_ERR_INVALID, "images_path", NULL);
	check_refused("NULL labels_path", img, NULL, SF_ERR_INVALID, "labels_path", NULL);
	ok_int_eq(sf_dataset_load_idx(img, lab, NULL), SF_ERR_INVALID, "NULL out is refused");
}

/* AddressSanitizer (scripts/sanitize.sh) reserves terabytes of address space for its
 * shadow memory: no RLIMIT_AS can be set under it. */
#if defined(__SANITIZE_ADDRESS__)
#define SF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SF_ASAN 1
#endif
#endif

/* A header that announces far more than its file holds is refused as truncated, with no
 * allocation of what it claims: under an address-space limit of 1 GiB above what the
 * process maps already, a plain file
 * announcing 2^31 - 1 images (6.7 TB as floats) and a gzip file announcing 5 000 000
 * (15.7 GB) fail with "truncated", not with "cannot allocate". Under ASan the checks run
 * without the limit (ASan itself reports an allocation of terabytes). */
static void test_untrusted_header(void)
{
	struct rlimit old, lim;
	if (getrlimit(RLIMIT_AS, &old) != 0) {
		ok(1, "# SKIP getrlimit(RLIMIT_AS) failed");
		ok(1, "# SKIP getrlimit(RLIMIT_AS) failed");
		return;
	}
	const char *img = make("huge_plain", 0, images_blob(0x803, 0x7fffffffu, 28, 28, 10 * 784));
	const char *lab = make("huge_plain_l", 0, labels_blob(0x801, 0x7fffffffu, 10, 0));
	const char *imgz = make("huge.gz", 1, images_blob(0x803, 5000000u, 28, 28, 10 * 784));
	const char *labz = make("huge_l.gz", 1, labels_blob(0x801, 5000000u, 10, 0));
	lim = old;
	/* 1 GiB above what the process maps already: a CUDA build's libraries (cuBLAS,
	 * NCCL) map hundreds of MiB before any allocation */
	unsigned long pages = 0;
	FILE *statm = fopen("/proc/self/statm", "r");
	if (!statm || fscanf(statm, "%lu", &pages) != 1)
		pages = 0;
	if (statm)
		fclose(statm);
	lim.rlim_cur = ((rlim_t)1 << 30) + (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
	if (old.rlim_max != RLIM_INFINITY && old.rlim_max < lim.rlim_cur)
		lim.rlim_cur = old.rlim_max;
#ifdef SF_ASAN
	printf("# AddressSanitizer: no address-space limit\n");
	lim = old;
#endif
	setrlimit(RLIMIT_AS, &lim);
	check_refused("a plain file announcing 2^31-1 images", img, lab, SF_ERR_IO, img,
	              "truncated");
	check_refused("a gzip file announcing 5 000 000 images", imgz, labz, SF_ERR_IO, imgz,
	              "truncated");
	setrlimit(RLIMIT_AS, &old);
}

/* ---- batches ------------------------------------------------------------------------------ */

/* Sample i: x = (i, -i), label i % 10, so a batch tells which samples it holds. */
static struct sf_dataset synthetic(int64_t n)
{
	struct sf_dataset ds = {.n = n, .rows = 1, .cols = 2, .dim = 2, .classes = 10};
	ds.images = malloc((size_t)n * 2 * sizeof *ds.images);
	ds.labels = malloc((size_t)n * sizeof *ds.labels);
	if (!ds.images || !ds.labels)
		bail_out("out of memory");
	for (int64_t i = 0; i < n; i++) {
		ds.images[2 * i] = (float)i;
		ds.images[2 * i + 1] = (float)-i;
		ds.labels[i] = (int32_t)(i % 10);
	}
	return ds;
}

/* The sample ids of an epoch, batch after batch (nb * B of them); returns the number of
 * failed calls plus rows whose x and y do not belong to one sample. */
static int epoch_order(const struct sf_dataset *ds, uint64_t seed, int64_t epoch, int B,
                       int64_t *order)
{
	float x[2 * 64];
	int32_t y[64];
	int bad = 0;
	for (int64_t b = 0; b < ds->n / B; b++) {
		if (sf_dataset_batch(ds, seed, epoch, b, B, 0, B, x, y) != SF_OK) {
			bad++;
			continue;
		}
		for (int r = 0; r < B; r++) {
			int64_t id = (int64_t)x[2 * r];
			bad += x[2 * r + 1] != -x[2 * r] || y[r] != id % 10;
			order[b * B + r] = id;
		}
	}
	return bad;
}

static int64_t differing(const int64_t *a, const int64_t *b, int64_t len)
{
	int64_t d = 0;
	for (int64_t i = 0; i < len; i++)
		d += a[i] != b[i];
	return d;
}

static void test_batches(void)
{
	enum { N = 1003, B = 10 };
	const int64_t used = N / B * B;
	struct sf_dataset ds = synthetic(N);
	static int64_t o1[N], o2[N], o3[N], o4[N];
	static int seen[N];

	ok_int_eq(epoch_order(&ds, 7, 0, B, o1), 0, "every batch of an epoch is served whole");
	int dup = 0, range = 0, distinct = 0;
	for (int64_t i = 0; i < used; i++) {
		if (o1[i] < 0 || o1[i] >= N) {
			range++;
			continue;
		}
		if (seen[o1[i]]++)
			dup++;
		else
			distinct++;
	}
	ok_true(range == 0 && dup == 0, "an epoch serves each sample at most once");
	ok_int_eq(distinct, used, "an epoch serves n / B * B distinct samples");
	int64_t identity = 0;
	for (int64_t i = 0; i < used; i++)
		identity += o1[i] == i;
	ok_true(identity < used / 20, "the order is shuffled (few fixed points)");
	diag("fixed points: %lld of %lld", (long long)identity, (long long)used);

	epoch_order(&ds, 7, 1, B, o2);
	epoch_order(&ds, 8, 0, B, o3);
	epoch_order(&ds, 7, 0, B, o4);
	ok_int_eq(differing(o1, o4, used), 0,
	          "the same (seed, epoch) gives the same order, after other epochs");
	ok_true(differing(o1, o2, used) > used * 9 / 10, "another epoch gives another order");
	ok_true(differing(o1, o3, used) > used * 9 / 10, "another seed gives another order");

	/* Pinned: a checkpoint records (data_seed, epoch, batch) and must resume the same
	 * data after an upgrade. Changing the order breaks that: say so in the NEWS. */
	{
		static const int64_t pin[B] = {58, 373, 739, 929, 158, 291, 535, 631, 278, 605};
		if (!ok_int_eq(differing(o1, pin, B), 0,
		               "the first batch of (seed 7, epoch 0) is pinned")) {
			diag("  got:");
			for (int r = 0; r < B; r++)
				diag("   %lld", (long long)o1[r]);
		}
	}

	/* slices of 1, 2, 3 ranks */
	for (int gb = 7; gb <= 10; gb += 3) {
		for (int nranks = 1; nranks <= 3; nranks++) {
			int bad = 0;
			for (int64_t b = 0; b < 5; b++) {
				float full[2 * 10], part[2 * 10];
				int32_t yfull[10], ypart[10];
				bad +=
				    sf_dataset_batch(&ds, 3, 2, b, gb, 0, gb, full, yfull) != SF_OK;
				int first = 0;
				for (int r = 0; r < nranks; r++) {
					int rows = gb / nranks + (r < gb % nranks);
					bad += sf_dataset_batch(&ds, 3, 2, b, gb, first, rows,
					                        part + 2 * first,
					                        ypart + first) != SF_OK;
					first += rows;
				}
				bad += first != gb;
				bad += memcmp(full, part, sizeof(float) * 2 * gb) != 0;
				bad += memcmp(yfull, ypart, sizeof(int32_t) * gb) != 0;
			}
			char name[128];
			snprintf(name, sizeof name,
			         "B = %d: slices of %d rank(s) concatenate to the global batch", gb,
			         nranks);
			ok_int_eq(bad, 0, name);
		}
	}

	/* uniformity: where each of 5 samples lands, over 50000 shuffles */
	{
		struct sf_dataset small = synthetic(5);
		long count[5][5] = {{0}};
		float x[2 * 5];
		int32_t y[5];
		int bad = 0;
		for (int64_t e = 0; e < 50000; e++) {
			bad += sf_dataset_batch(&small, 11, e, 0, 5, 0, 5, x, y) != SF_OK;
			for (int pos = 0; pos < 5; pos++)
				count[pos][(int)x[2 * pos]]++;
		}
		double chi2 = 0;
		for (int pos = 0; pos < 5; pos++)
			for (int s = 0; s < 5; s++)
				chi2 +=
				    (count[pos][s] - 10000.0) * (count[pos][s] - 10000.0) / 10000.0;
		/* 16 degrees of freedom: P(chi2 > 39.25) = 0.001 */
		ok_true(bad == 0 && chi2 < 39.25,
		        "positions of 5 samples over 50000 epochs are uniform (chi2 < 39.25)");
		diag("chi2 = %.2f (16 degrees of freedom)", chi2);
		sf_dataset_free(&small);
	}

	/* refusals */
	{
		float x[2 * 10];
		int32_t y[10];
		struct sf_dataset empty = {0};
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, N / B, B, 0, B, x, y), SF_ERR_INVALID,
		          "batch n / B is refused");
		diag("  message: %s", sf_last_error());
		ok_true(strstr(sf_last_error(), "batch 100 is out of range") != NULL,
		        "the message names the batch and the range");
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, -1, B, 0, B, x, y), SF_ERR_INVALID,
		          "batch -1 is refused");
		ok_int_eq(sf_dataset_batch(&ds, 1, -1, 0, B, 0, B, x, y), SF_ERR_INVALID,
		          "epoch -1 is refused");
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, 0, B, -1, 2, x, y), SF_ERR_INVALID,
		          "first -1 is refused");
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, 0, B, 6, 5, x, y), SF_ERR_INVALID,
		          "rows past the global batch are refused");
		diag("  message: %s", sf_last_error());
		ok_true(strstr(sf_last_error(), "[6, 6 + 5)") != NULL,
		        "the message names the rows and the batch");
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, 0, B, 0, -1, x, y), SF_ERR_INVALID,
		          "rows -1 is refused");
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, 0, 0, 0, 0, x, y), SF_ERR_INVALID,
		          "global batch 0 is refused");
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, 0, N + 1, 0, 1, x, y), SF_ERR_INVALID,
		          "a global batch larger than the dataset is refused");
		ok_int_eq(sf_dataset_batch(NULL, 1, 0, 0, B, 0, B, x, y), SF_ERR_INVALID,
		          "NULL ds is refused");
		ok_int_eq(sf_dataset_batch(&empty, 1, 0, 0, B, 0, B, x, y), SF_ERR_INVALID,
		          "an empty dataset is refused");
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, 0, B, 0, B, NULL, y), SF_ERR_INVALID,
		          "NULL x is refused");
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, 0, B, 0, B, x, NULL), SF_ERR_INVALID,
		          "NULL y is refused");
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, 0, B, B, 0, NULL, NULL), SF_OK,
		          "0 rows (a rank with no share) is accepted");
		ok_int_eq(sf_dataset_batch(&ds, 1, 0, N / B - 1, B, 0, B, x, y), SF_OK,
		          "the last batch is accepted");
	}
	sf_dataset_free(&ds);
}

/* ---- the real Fashion-MNIST ----------------------------------------------------------------- */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_real(const char *set, int64_t n, int per_class)
{
	char ip[512], lp[512], name[160];
	snprintf(ip, sizeof ip, FMNIST_DIR "/%s-images-idx3-ubyte.gz", set);
	snprintf(lp, sizeof lp, FMNIST_DIR "/%s-labels-idx1-ubyte.gz", set);
	if (access(ip, R_OK) != 0 || access(lp, R_OK) != 0) {
		ok(1, "Fashion-MNIST %s set # SKIP %s or %s is not installed", set, ip, lp);
		return;
	}
	struct sf_dataset ds;
	double t0 = now();
	int rc = sf_dataset_load_idx(ip, lp, &ds);
	double t1 = now();
	snprintf(name, sizeof name, "Fashion-MNIST %s set loads", set);
	if (!ok_int_eq(rc, SF_OK, name)) {
		diag("  %s", sf_last_error());
		return;
	}
	diag("%s set: loaded in %.3f s", set, t1 - t0);
	ok_int_eq(ds.n, n, "samples");
	ok_true(ds.rows == 28 && ds.cols == 28 && ds.dim == 784, "28 x 28");
	ok_int_eq(ds.classes, 10, "10 classes");
	int64_t count[10] = {0};
	int64_t off = 0;
	for (int64_t i = 0; i < ds.n; i++) {
		if (ds.labels[i] >= 0 && ds.labels[i] < 10)
			count[ds.labels[i]]++;
		else
			off++;
	}
	int uneven = 0;
	for (int c = 0; c < 10; c++)
		uneven += count[c] != per_class;
	snprintf(name, sizeof name, "each class %d times", per_class);
	ok_true(off == 0 && uneven == 0, name);
	float lo = 1, hi = 0;
	for (size_t i = 0; i < (size_t)ds.n * 784; i++) {
		lo = ds.images[i] < lo ? ds.images[i] : lo;
		hi = ds.images[i] > hi ? ds.images[i] : hi;
	}
	ok_true(lo == 0.0f && hi == 1.0f, "pixels span [0, 1]");

	enum { GB = 64 };
	static float x[GB * 784];
	int32_t y[GB];
	int64_t nb = ds.n / GB;
	int bad = 0;
	t0 = now();
	for (int64_t b = 0; b < nb; b++)
		bad += sf_dataset_batch(&ds, 1, 0, b, GB, 0, GB, x, y) != SF_OK;
	t1 = now();
	ok_int_eq(bad, 0, "a whole epoch of batches of 64");
	diag("%s set: %lld batches of %d in %.3f s (%.4f ms a batch)", set, (long long)nb, GB,
	     t1 - t0, 1e3 * (t1 - t0) / (double)nb);
	sf_dataset_free(&ds);
}

int main(void)
{
	tmpdir_create("sf-test-idx");
	test_load();
	test_untrusted_header();
	test_batches();
	test_real("train", 60000, 6000);
	test_real("t10k", 10000, 1000);
	cleanup();
	return done_testing();
}
