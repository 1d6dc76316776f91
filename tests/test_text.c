/*
 * test_text.c — proves that a text file loads exactly or fails loudly, and that the
 * batches of its two splits are windows inside their split, y is x shifted by one, and
 * a global batch depends on (seed, split, index) alone. One process, no MPI.
 *
 * Loading: a file of every byte value loads whole, with its last floor(n * f) bytes
 * held out; val_fraction 0 (no validation) and just under 1 (one training byte) are
 * accepted, negative, 1 and NaN refused. Each bad file — missing, a directory, no
 * permission (skipped as root), a FIFO, a device, empty, a sparse file of 2 GiB + 1
 * (refused before any read) — and NULL arguments give their status and a message
 * naming the file and the problem, with *out zeroed.
 *
 * Batches (a file whose byte i is i, so a window's first x is its start): every start
 * of 20000 windows lies in [lo, hi - T - 1] of its split and both ends are reached; y
 * is x shifted by one; slices of 1, 2 and 3 ranks concatenate to the 1-rank batch
 * (both splits, several indexes, global batches 7 and 10); the same arguments give the
 * same batch, another seed, split or index another; the starts over 10 positions pass
 * a chi-square test of uniformity; the starts of a known (seed, split, index) are
 * pinned (checkpoints resume from the step); a split shorter than T + 1 is refused
 * with its length and T in the message, and bad arguments are refused.
 *
 * With the Austen corpus installed (scripts/install-deps.sh: $SF_DATA_PREFIX, default
 * /opt/shardflow-data, /austen.txt), it loads with its known size and first line;
 * otherwise that check is skipped with the reason.
 */
#include "shardflow.h"
#include "tests/tap.h"
#include "tests/tmpfiles.h"

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A file of n bytes, byte i = (i * mul + add) % 256. */
static const char *make(const char *name, size_t n, unsigned mul, unsigned add)
{
	const char *path = tpath(name);
	FILE *f = fopen(path, "wb");
	if (!f)
		bail_out("cannot write a test file");
	for (size_t i = 0; i < n; i++)
		fputc((int)((i * mul + add) % 256), f);
	if (fclose(f) != 0)
		bail_out("cannot write a test file");
	return path;
}

static int all_zero(const struct sf_text *t)
{
	static const struct sf_text zero;
	return memcmp(t, &zero, sizeof zero) == 0;
}

static void check_refused(const char *name, const char *path, double f, int status,
                          const char *frag1, const char *frag2)
{
	struct sf_text t;
	memset(&t, 0xab, sizeof t);
	int rc = sf_text_load(path, f, &t);
	const char *msg = sf_last_error();
	int named = (!frag1 || strstr(msg, frag1)) && (!frag2 || strstr(msg, frag2));
	if (!ok(rc == status && all_zero(&t) && named, "%s is refused", name)) {
		diag("  status %d (expected %d), out %s", rc, status,
		     all_zero(&t) ? "zeroed" : "NOT zeroed");
		diag("  message: \"%s\"", msg);
		diag("  expected it to contain \"%s\" and \"%s\"", frag1 ? frag1 : "",
		     frag2 ? frag2 : "");
	}
	if (rc == SF_OK)
		sf_text_free(&t);
}

static void test_load(void)
{
	const char *p = make("all_bytes", 1000, 1, 0);
	struct sf_text t;
	int rc = sf_text_load(p, 0.1, &t);
	if (!ok_int_eq(rc, SF_OK, "a file of 1000 bytes loads"))
		diag("  %s", sf_last_error());
	else {
		int bad = 0;
		for (int i = 0; i < 1000; i++)
			bad += t.bytes[i] != (uint8_t)(i % 256);
		ok_true(t.n == 1000 && bad == 0, "every byte as written, 0 and 255 included");
		ok_int_eq(t.train_end, 900, "val_fraction 0.1: the last 100 bytes are held out");
		ok_true(t.path && strcmp(t.path, p) == 0, "the path is kept");
		ok_int_eq(sf_text_free(&t), SF_OK, "sf_text_free");
		ok_true(all_zero(&t), "sf_text_free empties the struct");
	}
	struct sf_text empty = {0};
	ok_int_eq(sf_text_free(&empty), SF_OK, "sf_text_free of an empty struct");
	ok_int_eq(sf_text_free(NULL), SF_OK, "sf_text_free(NULL)");

	/* val_fraction bounds */
	rc = sf_text_load(p, 0.0, &t);
	ok_true(rc == SF_OK && t.train_end == 1000, "val_fraction 0: everything is training");
	sf_text_free(&t);
	rc = sf_text_load(p, 0.9999, &t);
	ok_true(rc == SF_OK && t.train_end == 1, "val_fraction 0.9999: one training byte is left");
	sf_text_free(&t);
	rc = sf_text_load(p, nextafter(1.0, 0.0), &t);
	ok_true(rc == SF_OK && t.train_end == 1, "val_fraction just under 1: still one training byte");
	sf_text_free(&t);
	check_refused("val_fraction -0.1", p, -0.1, SF_ERR_INVALID, "val_fraction -0.1",
	              "0 <= val_fraction < 1");
	check_refused("val_fraction 1", p, 1.0, SF_ERR_INVALID, "val_fraction 1 ", p);
	check_refused("val_fraction NaN", p, NAN, SF_ERR_INVALID, "val_fraction", "out of range");

	/* bad files */
	const char *missing = tpath("no_such_file");
	check_refused("a missing file", missing, 0.1, SF_ERR_IO, missing, "No such file");
	check_refused("a directory", tmpdir, 0.1, SF_ERR_IO, tmpdir, "it is a directory");
	const char *locked = make("locked", 100, 1, 0);
	if (geteuid() == 0) {
		ok(1, "an unreadable file # SKIP root reads any file");
	} else {
		chmod(locked, 0);
		check_refused("an unreadable file", locked, 0.1, SF_ERR_IO, locked,
		              "Permission denied");
	}
	const char *fifo = tpath("fifo");
	if (mkfifo(fifo, 0600) != 0)
		ok(1, "a FIFO # SKIP mkfifo failed");
	else
		check_refused("a FIFO (without waiting for a writer)", fifo, 0.1, SF_ERR_IO, fifo,
		              "not a regular file");
	check_refused("a device", "/dev/null", 0.1, SF_ERR_IO, "/dev/null", "not a regular file");
	const char *e = make("empty", 0, 1, 0);
	check_refused("an empty file", e, 0.1, SF_ERR_IO, e, "is empty");
	{
		const char *big = tpath("sparse_2GiB_plus_1");
		int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, SF_TEXT_MAX_BYTES + 1) != 0) {
			ok(1, "a file over 2 GiB # SKIP cannot make a sparse file");
		} else {
			check_refused("a file of 2 GiB + 1 byte (not read)", big, 0.1, SF_ERR_IO, big,
			              "2147483649 bytes: more than the 2147483648 (2 GiB)");
		}
		if (fd >= 0)
			close(fd);
		(void)unlink(big);
	}
	check_refused("NULL path", NULL, 0.1, SF_ERR_INVALID, "path is NULL", NULL);
	ok_int_eq(sf_text_load(p, 0.1, NULL), SF_ERR_INVALID, "NULL out is refused");
}

/* ---- batches ---------------------------------------------------------------------------- */

enum { N = 200, TRAIN_END = 150, TT = 8 };

static void test_batches(void)
{
	const char *p = make("position", N, 1, 0); /* byte i = i */
	struct sf_text t;
	if (sf_text_load(p, 0.25, &t) != SF_OK || t.train_end != TRAIN_END)
		bail_out("cannot load the position file");

	/* windows inside their split, y = x shifted, ends reached */
	for (int split = 0; split < 2; split++) {
		int lo = split ? TRAIN_END : 0, hi = split ? N : TRAIN_END;
		int64_t min = N, max = -1, outside = 0, unshifted = 0, calls = 0;
		enum { B = 20 };
		int32_t x[B * TT], y[B * TT];
		for (int64_t b = 0; b < 1000; b++) {
			calls += sf_text_batch(&t, split, 5, b, B, 0, B, TT, x, y) != SF_OK;
			for (int r = 0; r < B; r++) {
				int32_t o = x[r * TT];
				min = o < min ? o : min;
				max = o > max ? o : max;
				outside += o < lo || o + TT + 1 > hi;
				for (int k = 0; k < TT; k++)
					unshifted += x[r * TT + k] != o + k || y[r * TT + k] != o + k + 1;
			}
		}
		char name[160];
		snprintf(name, sizeof name,
		         "%s: 20000 windows of T + 1 = %d bytes lie inside [%d, %d)",
		         split ? "validation" : "training", TT + 1, lo, hi);
		ok_true(calls == 0 && outside == 0, name);
		snprintf(name, sizeof name, "%s: x[t] = byte[o + t], y[t] = byte[o + t + 1]",
		         split ? "validation" : "training");
		ok_int_eq(unshifted, 0, name);
		snprintf(name, sizeof name, "%s: the first and last starts (%d, %d) are drawn",
		         split ? "validation" : "training", lo, hi - TT - 1);
		if (!ok_true(min == lo && max == hi - TT - 1, name))
			diag("  min %lld max %lld", (long long)min, (long long)max);
	}

	/* slices of 1, 2, 3 ranks concatenate to the global batch */
	for (int gb = 7; gb <= 10; gb += 3) {
		for (int nranks = 1; nranks <= 3; nranks++) {
			int bad = 0;
			for (int split = 0; split < 2; split++)
				for (int64_t b = 0; b < 6; b++) {
					int32_t fx[10 * TT], fy[10 * TT], px[10 * TT], py[10 * TT];
					bad += sf_text_batch(&t, split, 3, b, gb, 0, gb, TT, fx, fy) != SF_OK;
					int first = 0;
					for (int r = 0; r < nranks; r++) {
						int rows = gb / nranks + (r < gb % nranks);
						bad += sf_text_batch(&t, split, 3, b, gb, first, rows, TT,
						                     px + first * TT, py + first * TT) != SF_OK;
						first += rows;
					}
					bad += first != gb;
					bad += memcmp(fx, px, sizeof(int32_t) * gb * TT) != 0;
					bad += memcmp(fy, py, sizeof(int32_t) * gb * TT) != 0;
				}
			char name[128];
			snprintf(name, sizeof name,
			         "B = %d: rows of %d rank(s) concatenate to the global batch (both splits)",
			         gb, nranks);
			ok_int_eq(bad, 0, name);
		}
	}

	/* the same arguments, the same batch; others, another */
	{
		enum { B = 16 };
		int32_t a[B * TT], b[B * TT], y[B * TT];
		int same = 0, seed = 0, split = 0, idx = 0;
		sf_text_batch(&t, 0, 9, 4, B, 0, B, TT, a, y);
		sf_text_batch(&t, 0, 9, 5, B, 0, B, TT, b, y); /* another call in between */
		sf_text_batch(&t, 0, 9, 4, B, 0, B, TT, b, y);
		same = memcmp(a, b, sizeof a) == 0;
		sf_text_batch(&t, 0, 10, 4, B, 0, B, TT, b, y);
		seed = memcmp(a, b, sizeof a) != 0;
		sf_text_batch(&t, 0, 9, 5, B, 0, B, TT, b, y);
		idx = memcmp(a, b, sizeof a) != 0;
		/* another split: compare starts relative to the split */
		sf_text_batch(&t, 1, 9, 4, B, 0, B, TT, b, y);
		for (int r = 0; r < B; r++)
			split += a[r * TT] != b[r * TT] - TRAIN_END;
		ok_true(same, "the same (seed, split, index) gives the same batch");
		ok_true(seed && idx && split > 0, "another seed, index or split gives another batch");
	}

	/* uniformity: 10 starts (a split of T + 10 bytes), 20000 draws */
	{
		enum { B = 100 };
		struct sf_text u = t;
		u.train_end = TT + 10;
		long count[10] = {0};
		int32_t x[B * TT], y[B * TT];
		int bad = 0;
		for (int64_t b = 0; b < 200; b++) {
			bad += sf_text_batch(&u, 0, 11, b, B, 0, B, TT, x, y) != SF_OK;
			for (int r = 0; r < B; r++)
				if (x[r * TT] >= 0 && x[r * TT] < 10)
					count[x[r * TT]]++;
				else
					bad++;
		}
		double chi2 = 0;
		for (int s = 0; s < 10; s++)
			chi2 += (count[s] - 2000.0) * (count[s] - 2000.0) / 2000.0;
		/* 9 degrees of freedom: P(chi2 > 27.88) = 0.001 */
		ok_true(bad == 0 && chi2 < 27.88, "starts over 10 positions are uniform (chi2 < 27.88)");
		diag("chi2 = %.2f (9 degrees of freedom)", chi2);
	}

	/* Pinned: a checkpoint records (data_seed, step) and must resume the same data after
	 * an upgrade. Changing the draw breaks that: say so in the NEWS. */
	{
		enum { B = 6 };
		static const int32_t pin_train[B] = {59, 100, 7, 116, 141, 34};
		static const int32_t pin_val[B] = {191, 155, 157, 170, 177, 150};
		int32_t x[B * TT], y[B * TT];
		int bad = 0;
		sf_text_batch(&t, SF_TEXT_TRAIN, 7, 0, B, 0, B, TT, x, y);
		for (int r = 0; r < B; r++)
			bad += x[r * TT] != pin_train[r];
		if (!ok_int_eq(bad, 0, "the training starts of (seed 7, index 0) are pinned"))
			for (int r = 0; r < B; r++)
				diag("   %d", x[r * TT]);
		bad = 0;
		sf_text_batch(&t, SF_TEXT_VAL, 7, 0, B, 0, B, TT, x, y);
		for (int r = 0; r < B; r++)
			bad += x[r * TT] != pin_val[r];
		if (!ok_int_eq(bad, 0, "the validation starts of (seed 7, index 0) are pinned"))
			for (int r = 0; r < B; r++)
				diag("   %d", x[r * TT]);
	}

	/* splits too short for T */
	{
		int32_t x[4 * 64], y[4 * 64];
		ok_int_eq(sf_text_batch(&t, SF_TEXT_VAL, 1, 0, 4, 0, 4, 49, x, y), SF_OK,
		          "validation split of 50 bytes, T = 49: accepted (one start)");
		ok_int_eq(sf_text_batch(&t, SF_TEXT_VAL, 1, 0, 4, 0, 4, 50, x, y), SF_ERR_INVALID,
		          "validation split of 50 bytes, T = 50: refused");
		diag("  message: %s", sf_last_error());
		ok_true(strstr(sf_last_error(), "validation split of") &&
		            strstr(sf_last_error(), p) && strstr(sf_last_error(), "has 50 bytes") &&
		            strstr(sf_last_error(), "T + 1 = 51"),
		        "the message names the file, the split's length and T + 1");
		ok_int_eq(sf_text_batch(&t, SF_TEXT_TRAIN, 1, 0, 4, 2, 0, 150, NULL, NULL),
		          SF_ERR_INVALID, "training split of 150 bytes, T = 150: refused (even for 0 rows)");
		ok_true(strstr(sf_last_error(), "training split of") &&
		            strstr(sf_last_error(), "has 150 bytes") &&
		            strstr(sf_last_error(), "T + 1 = 151"),
		        "the message names the split's length and T + 1");
		struct sf_text none;
		if (sf_text_load(p, 0.0, &none) != SF_OK)
			bail_out("cannot load the position file");
		ok_int_eq(sf_text_batch(&none, SF_TEXT_VAL, 1, 0, 4, 0, 4, 8, x, y), SF_ERR_INVALID,
		          "no validation split (val_fraction 0): refused");
		ok_true(strstr(sf_last_error(), "has 0 bytes") != NULL, "the message says 0 bytes");
		sf_text_free(&none);
	}

	/* bad arguments */
	{
		int32_t x[4 * TT], y[4 * TT];
		struct sf_text empty = {0};
		ok_int_eq(sf_text_batch(NULL, 0, 1, 0, 4, 0, 4, TT, x, y), SF_ERR_INVALID, "NULL t");
		ok_int_eq(sf_text_batch(&empty, 0, 1, 0, 4, 0, 4, TT, x, y), SF_ERR_INVALID,
		          "an empty text");
		ok_int_eq(sf_text_batch(&t, 2, 1, 0, 4, 0, 4, TT, x, y), SF_ERR_INVALID, "split 2");
		ok_int_eq(sf_text_batch(&t, -1, 1, 0, 4, 0, 4, TT, x, y), SF_ERR_INVALID, "split -1");
		ok_int_eq(sf_text_batch(&t, 0, 1, 0, 4, 0, 4, 0, x, y), SF_ERR_INVALID, "T 0");
		ok_int_eq(sf_text_batch(&t, 0, 1, 0, 0, 0, 0, TT, x, y), SF_ERR_INVALID,
		          "global batch 0");
		ok_int_eq(sf_text_batch(&t, 0, 1, -1, 4, 0, 4, TT, x, y), SF_ERR_INVALID, "index -1");
		ok_int_eq(sf_text_batch(&t, 0, 1, 0, 4, -1, 2, TT, x, y), SF_ERR_INVALID, "first -1");
		ok_int_eq(sf_text_batch(&t, 0, 1, 0, 4, 3, 2, TT, x, y), SF_ERR_INVALID,
		          "rows past the global batch");
		ok_true(strstr(sf_last_error(), "[3, 3 + 2)") != NULL,
		        "the message names the rows and the batch");
		ok_int_eq(sf_text_batch(&t, 0, 1, 0, 4, 0, -1, TT, x, y), SF_ERR_INVALID, "rows -1");
		ok_int_eq(sf_text_batch(&t, 0, 1, 0, 4, 0, 4, TT, NULL, y), SF_ERR_INVALID, "NULL x");
		ok_int_eq(sf_text_batch(&t, 0, 1, 0, 4, 0, 4, TT, x, NULL), SF_ERR_INVALID, "NULL y");
		ok_int_eq(sf_text_batch(&t, 0, 1, 0, 4, 4, 0, TT, NULL, NULL), SF_OK,
		          "0 rows (a rank with no share) is accepted");
	}
	sf_text_free(&t);
}

/* ---- the installed corpus ------------------------------------------------------------------ */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_austen(void)
{
	const char *prefix = getenv("SF_DATA_PREFIX");
	char path[512];
	snprintf(path, sizeof path, "%s/austen.txt", prefix && *prefix ? prefix : "/opt/shardflow-data");
	if (access(path, R_OK) != 0) {
		ok(1, "the Austen corpus # SKIP %s is not there (scripts/install-deps.sh makes it)",
		   path);
		return;
	}
	struct sf_text t;
	double t0 = now();
	int rc = sf_text_load(path, 0.1, &t);
	double t1 = now();
	if (!ok_int_eq(rc, SF_OK, "the Austen corpus loads")) {
		diag("  %s", sf_last_error());
		return;
	}
	diag("%s: %lld bytes loaded in %.3f s", path, (long long)t.n, t1 - t0);
	ok_true(t.n == 4025029 && memcmp(t.bytes, "SENSE AND SENSIBILITY\n", 22) == 0,
	        "4025029 bytes, starting with SENSE AND SENSIBILITY");
	enum { B = 64, T = 256 };
	static int32_t x[B * T], y[B * T];
	int bad = 0;
	t0 = now();
	for (int64_t b = 0; b < 100; b++)
		bad += sf_text_batch(&t, b % 2, 1, b, B, 0, B, T, x, y) != SF_OK;
	t1 = now();
	ok_int_eq(bad, 0, "100 batches of 64 x 256 bytes from both splits");
	diag("%.4f ms a batch", 1e3 * (t1 - t0) / 100);
	sf_text_free(&t);
}

int main(void)
{
	tmpdir_create("sf-test-text");
	test_load();
	test_batches();
	test_austen();
	cleanup();
	return done_testing();
}
