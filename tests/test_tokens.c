/*
 * test_tokens.c — token files (data/tokens.c) load exactly or fail with the reason,
 * and their batches are sf_text_batch's windows.
 *
 *  - a raw file (nanoGPT's .bin: little-endian uint16) of 1000 ids loads them exactly
 *    (SF_TOKENS_AUTO takes it as raw); an llm.c shard (256 int32 header: magic
 *    20240520, version 1, count) of the same ids loads them too and is told apart;
 *  - refused, each with a message naming the file and the fault: an odd-sized raw
 *    file, an id >= vocab (its position and value named), a shard whose count does not
 *    match its size, a shard of version 2, SF_TOKENS_LLMC on a raw file, an empty file
 *    (SF_ERR_IO), a missing file (SF_ERR_IO), a directory (SF_ERR_IO), vocab 1 and
 *    65537, a bad format value;
 *  - batches: a token file whose ids are the bytes of a text gives, for the same
 *    (seed, split, index, rows), exactly sf_text_batch's x and y on that text (loaded
 *    without a validation part): the same windows, so a token dataset keeps the byte
 *    dataset's determinism across world sizes; the rows of 3 ranks concatenate to
 *    the 1-rank batch; y is x shifted by one; a file shorter than T + 1 is refused
 *    naming it.
 */
#include "shardflow.h"
#include "tests/tap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];
static char files[16][320];
static int nfiles;

static void bail_out(const char *what)
{
	printf("Bail out! %s\n", what);
	exit(99);
}

static const char *tpath(const char *name)
{
	if (nfiles == 16)
		bail_out("too many test files");
	snprintf(files[nfiles], sizeof files[0], "%s/%s", tmpdir, name);
	return files[nfiles++];
}

/* A file of a header (hlen bytes, may be 0) and then n little-endian uint16 ids. */
static const char *write_ids(const char *name, const uint8_t *header, size_t hlen,
                             const uint16_t *ids, size_t n, int odd_byte)
{
	const char *path = tpath(name);
	FILE *f = fopen(path, "wb");
	if (!f)
		bail_out("cannot write a test file");
	if (hlen)
		fwrite(header, 1, hlen, f);
	for (size_t i = 0; i < n; i++) {
		fputc(ids[i] & 0xff, f);
		fputc(ids[i] >> 8, f);
	}
	if (odd_byte)
		fputc(7, f);
	if (fclose(f) != 0)
		bail_out("cannot write a test file");
	return path;
}

/* llm.c's header: magic, version, count, then zeros */
static void llmc_header(uint8_t h[1024], uint32_t magic, uint32_t version, uint32_t count)
{
	memset(h, 0, 1024);
	uint32_t v[3] = {magic, version, count};
	for (int k = 0; k < 3; k++)
		for (int b = 0; b < 4; b++)
			h[4 * k + b] = (uint8_t)(v[k] >> (8 * b));
}

static void refused(const char *what, const char *path, int vocab, int format, int status,
                    const char *needle)
{
	struct sf_tokens t = {.n = 99};
	int rc = sf_tokens_load(path, vocab, format, &t);
	const char *msg = sf_last_error();
	int named = !path || strstr(msg, path) != NULL;
	ok(rc == status && t.n == 0 && !t.ids && named && strstr(msg, needle) != NULL,
	   "%s: refused (status %d, want %d), the file and \"%s\" named", what, rc, status, needle);
	if (!(rc == status && named && strstr(msg, needle)))
		diag("  message: %s", msg);
}

static void test_load(void)
{
	enum { N = 1000 };
	static uint16_t ids[N];
	for (int i = 0; i < N; i++)
		ids[i] = (uint16_t)((i * 7919u + 13u) % 50257u);
	const char *raw = write_ids("raw.bin", NULL, 0, ids, N, 0);
	struct sf_tokens t;
	int rc = sf_tokens_load(raw, 50257, SF_TOKENS_AUTO, &t);
	ok(rc == SF_OK && t.n == N && t.format == SF_TOKENS_RAW && t.vocab == 50257 &&
	       !memcmp(t.ids, ids, sizeof ids),
	   "a raw file of %d ids loads them exactly (auto: raw)", N);
	sf_tokens_free(&t);

	uint8_t h[1024];
	llmc_header(h, 20240520, 1, N);
	const char *shard = write_ids("shard.bin", h, sizeof h, ids, N, 0);
	rc = sf_tokens_load(shard, 50257, SF_TOKENS_AUTO, &t);
	ok(rc == SF_OK && t.n == N && t.format == SF_TOKENS_LLMC && !memcmp(t.ids, ids, sizeof ids),
	   "an llm.c shard of the same ids loads them (auto: llm.c)");
	sf_tokens_free(&t);

	refused("an odd-sized raw file", write_ids("odd.bin", NULL, 0, ids, 10, 1), 50257,
	        SF_TOKENS_AUTO, SF_ERR_INVALID, "odd number");
	refused("id 50000 with vocab 256", raw, 256, SF_TOKENS_RAW, SF_ERR_INVALID,
	        "token 1 is 7932, not below the vocabulary of 256");
	llmc_header(h, 20240520, 1, N + 1);
	refused("a shard counting one token more than it holds",
	        write_ids("short.bin", h, sizeof h, ids, N, 0), 50257, SF_TOKENS_AUTO,
	        SF_ERR_INVALID, "truncated or padded");
	llmc_header(h, 20240520, 2, N);
	refused("a shard of version 2", write_ids("v2.bin", h, sizeof h, ids, N, 0), 50257,
	        SF_TOKENS_AUTO, SF_ERR_INVALID, "version 2");
	refused("SF_TOKENS_LLMC on a raw file", raw, 50257, SF_TOKENS_LLMC, SF_ERR_INVALID,
	        "no magic 20240520");
	refused("an empty file", write_ids("empty.bin", NULL, 0, ids, 0, 0), 50257, SF_TOKENS_AUTO,
	        SF_ERR_IO, "is empty");
	refused("a missing file", tpath("missing.bin"), 50257, SF_TOKENS_AUTO, SF_ERR_IO,
	        "cannot open");
	const char *dir = tpath("adir");
	if (mkdir(dir, 0700) != 0)
		bail_out("cannot make a directory");
	refused("a directory", dir, 50257, SF_TOKENS_AUTO, SF_ERR_IO, "is a directory");
	refused("vocab 1", raw, 1, SF_TOKENS_AUTO, SF_ERR_INVALID, "2 to 65536");
	refused("vocab 65537", raw, 65537, SF_TOKENS_AUTO, SF_ERR_INVALID, "2 to 65536");
	refused("format 7", raw, 50257, 7, SF_ERR_INVALID, "SF_TOKENS_AUTO");
}

static void test_batches(void)
{
	/* a text and the token file of its bytes */
	enum { N = 5000, T = 16, B = 6 };
	static uint8_t text[N];
	static uint16_t ids[N];
	for (int i = 0; i < N; i++)
		text[i] = (uint8_t)((i * 131u + (unsigned)(i >> 5)) % 256u), ids[i] = text[i];
	const char *tp = tpath("text.txt");
	FILE *f = fopen(tp, "wb");
	if (!f || fwrite(text, 1, N, f) != N || fclose(f) != 0)
		bail_out("cannot write the text");
	const char *kp = write_ids("text.bin", NULL, 0, ids, N, 0);
	struct sf_text tx;
	struct sf_tokens tk;
	if (sf_text_load(tp, 0.0, &tx) != SF_OK || sf_tokens_load(kp, 256, SF_TOKENS_RAW, &tk))
		bail_out("cannot load the text or its tokens");
	int32_t x1[B * T], y1[B * T], x2[B * T], y2[B * T], x3[B * T], y3[B * T];
	int same = 1, shifted = 1;
	for (int64_t index = 0; index < 20; index++) { /* the text's training part is all of it */
		sf_text_batch(&tx, SF_TEXT_TRAIN, 42, index, B, 0, B, T, x1, y1);
		sf_tokens_batch(&tk, SF_TEXT_TRAIN, 42, index, B, 0, B, T, x2, y2);
		same &= !memcmp(x1, x2, sizeof x1) && !memcmp(y1, y2, sizeof y1);
		for (int r = 0; r < B; r++)
			for (int k = 0; k + 1 < T; k++)
				shifted &= y2[r * T + k] == x2[r * T + k + 1];
	}
	ok(same, "20 batches of %d x %d: the token file's windows are sf_text_batch's, bitwise", B,
	   T);
	ok(shifted, "y is x shifted by one");
	/* 3 ranks of 2 rows each */
	sf_tokens_batch(&tk, SF_TEXT_TRAIN, 7, 3, B, 0, B, T, x2, y2);
	for (int r = 0; r < 3; r++)
		sf_tokens_batch(&tk, SF_TEXT_TRAIN, 7, 3, B, 2 * r, 2, T, x3 + 2 * r * T,
		                y3 + 2 * r * T);
	ok(!memcmp(x2, x3, sizeof x2) && !memcmp(y2, y3, sizeof y2),
	   "3 ranks' rows concatenate to the 1-rank batch");
	int rc = sf_tokens_batch(&tk, SF_TEXT_TRAIN, 7, 0, B, 0, B, N, x2, y2);
	ok(rc == SF_ERR_INVALID && strstr(sf_last_error(), kp) && strstr(sf_last_error(), "T + 1"),
	   "T = %d, the whole file: refused naming the file and T + 1", N);
	sf_text_free(&tx);
	sf_tokens_free(&tk);
}

static void cleanup(void)
{
	for (int i = 0; i < nfiles; i++) {
		(void)unlink(files[i]);
		(void)rmdir(files[i]);
	}
	if (tmpdir[0])
		(void)rmdir(tmpdir);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/sf-test-tokens.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		tmpdir[0] = '\0';
		bail_out("cannot create a temporary directory");
	}
	test_load();
	test_batches();
	cleanup();
	return done_testing();
}
