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
 *  - a damaged llm.c shard (its magic near 20240520, or zeroed with the count or the
 *    header's shape left) is refused as such by SF_TOKENS_AUTO, not read as raw ids;
 *    forcing the format reads it raw, or refuses it as a shard without the magic;
 *  - batches: a token file whose ids are the bytes of a text gives, for the same
 *    (seed, split, index, rows), exactly sf_text_batch's x and y on that text (loaded
 *    without a validation part): the same windows, so a token dataset keeps the byte
 *    dataset's determinism across world sizes; the rows of 3 ranks concatenate to
 *    the 1-rank batch; y is x shifted by one; a file shorter than T + 1 is refused
 *    naming it;
 *  - decode tables (data/vocab.c, llm.c's tokenizer format): a table of 4 ids loads
 *    (version 2: its end-of-text id; version 1: none) and decodes ids to their
 *    concatenated bytes, a UTF-8 character split over two ids included; a short
 *    buffer gets the first bytes and the full length; refused, naming the file: a wrong
 *    magic, version 3, 1 id, an end-of-text id past the table, a zero length, a
 *    truncated and a padded table; an id outside the table is refused naming it;
 *  - with scripts/install-deps.sh's GPT-2 files ($SF_DATA_PREFIX, default
 *    /opt/shardflow-data): gpt2-vocab.bin has GPT-2's 50257 ids, "Hello" is 15496,
 *    " world" 995, 50256 "<|endoftext|>"; austen-gpt2-train.bin then -val.bin decode
 *    to austen.txt byte for byte (tiktoken's BPE round-trips the corpus, checked here
 *    without Node.js); skipped with the reason when they are not there.
 */
#include "shardflow.h"
#include "tests/tap.h"
#include "tests/tmpfiles.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Issue 47 item 6: a shard whose magic was damaged (20240520 + 1: its first id, read
 * raw, is 55433) is refused by SF_TOKENS_AUTO whatever the vocabulary, as are one with
 * the magic zeroed (its count still matches) and one with magic and count zeroed (a
 * header's shape: version 1, zeros); forced raw, the damaged one is 512 + N ids of
 * which the first is 55433; forced llm.c, it has no magic. Raw ids of the same size
 * (no sign of a header) still load as raw. */
static void test_near_miss(const uint16_t *ids, int n)
{
	uint8_t h[1024];
	struct sf_tokens t;
	llmc_header(h, 20240520 + 1, 1, (uint32_t)n);
	const char *bad = write_ids("near.bin", h, sizeof h, ids, (size_t)n, 0);
	refused("a shard with magic 20240521 (vocab 50257)", bad, 50257, SF_TOKENS_AUTO,
	        SF_ERR_INVALID,
	        "looks like a damaged llm.c shard: no magic 20240520 at its start, but its "
	        "first int32 is 20240521, 1 from the magic 20240520");
	refused("a shard with magic 20240521 (vocab 65536)", bad, 65536, SF_TOKENS_AUTO,
	        SF_ERR_INVALID, "looks like a damaged llm.c shard");
	int rc = sf_tokens_load(bad, 65536, SF_TOKENS_RAW, &t);
	ok(rc == SF_OK && t.n == 512 + n && t.format == SF_TOKENS_RAW && t.ids[0] == 55433 &&
	       t.ids[512] == ids[0],
	   "forced SF_TOKENS_RAW: read as %d raw ids, the first 55433 (got rc %d, n %lld)",
	   512 + n, rc, (long long)t.n);
	sf_tokens_free(&t);
	refused("forced SF_TOKENS_LLMC", bad, 65536, SF_TOKENS_LLMC, SF_ERR_INVALID,
	        "no magic 20240520 at its start");
	llmc_header(h, 0, 1, (uint32_t)n);
	refused("a shard with its magic zeroed",
	        write_ids("nomagic.bin", h, sizeof h, ids, (size_t)n, 0), 65536, SF_TOKENS_AUTO,
	        SF_ERR_INVALID, "its third int32 is 1000, the count of the uint16 ids");
	llmc_header(h, 0, 1, 0);
	refused("a header's shape, magic and count zeroed",
	        write_ids("shape.bin", h, sizeof h, ids, (size_t)n, 0), 65536, SF_TOKENS_AUTO,
	        SF_ERR_INVALID, "shaped like a header (version 1, then zeros)");
	uint16_t *plain = malloc((512 + (size_t)n) * sizeof *plain);
	if (!plain)
		bail_out("out of memory");
	for (int i = 0; i < 512 + n; i++)
		plain[i] = (uint16_t)((i * 2654435761u >> 7) % 50257u);
	rc = sf_tokens_load(write_ids("plain.bin", NULL, 0, plain, 512 + (size_t)n, 0), 50257,
	                    SF_TOKENS_AUTO, &t);
	ok(rc == SF_OK && t.n == 512 + n && t.format == SF_TOKENS_RAW,
	   "raw ids as long as a shard, with no sign of a header: raw (rc %d)", rc);
	sf_tokens_free(&t);
	free(plain);
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
	test_near_miss(ids, N);
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

/* A decode table: header (magic, version, count, eot), then n ids of their bytes */
static const char *write_vocab(const char *name, uint32_t magic, uint32_t version,
                               uint32_t count, uint32_t eot, const char *const *tok, int n,
                               int extra)
{
	const char *path = tpath(name);
	FILE *f = fopen(path, "wb");
	uint8_t h[1024];
	llmc_header(h, magic, version, count);
	for (int b = 0; b < 4; b++)
		h[12 + b] = (uint8_t)(eot >> (8 * b));
	if (!f || fwrite(h, 1, sizeof h, f) != sizeof h)
		bail_out("cannot write a test file");
	for (int i = 0; i < n; i++) {
		fputc((int)strlen(tok[i]), f);
		fputs(tok[i], f);
	}
	for (int i = 0; i < extra; i++)
		fputc('x', f);
	if (fclose(f) != 0)
		bail_out("cannot write a test file");
	return path;
}

static void vocab_refused(const char *what, const char *path, const char *needle)
{
	struct sf_vocab v = {.n = 9};
	int rc = sf_vocab_load(path, &v);
	const char *msg = sf_last_error();
	int good = rc == SF_ERR_INVALID && v.n == 0 && !v.bytes && strstr(msg, path) &&
	           strstr(msg, needle);
	ok(good, "decode table, %s: refused naming the file and \"%s\"", what, needle);
	if (!good)
		diag("  status %d, message: %s", rc, msg);
}

static void test_vocab(void)
{
	/* "’" is e2 80 99 in UTF-8: split over ids 2 and 3 as a byte-level BPE may */
	static const char *const tok[4] = {"a", "bc", "\xe2\x80", "\x99!"};
	const char *p = write_vocab("vocab.bin", 20240328, 2, 4, 3, tok, 4, 0);
	struct sf_vocab v;
	int rc = sf_vocab_load(p, &v);
	ok(rc == SF_OK && v.n == 4 && v.eot == 3, "a table of 4 ids loads (version 2: eot 3)");
	const int32_t ids[5] = {1, 0, 2, 3, 0};
	char buf[16];
	size_t len = 0;
	rc = sf_vocab_decode(&v, ids, 5, buf, sizeof buf, &len);
	ok(rc == SF_OK && len == 8 && !memcmp(buf, "bca\xe2\x80\x99!a", 8),
	   "ids 1 0 2 3 0 decode to \"bca\\u2019!a\" (8 bytes, a character over two ids)");
	memset(buf, 0, sizeof buf);
	rc = sf_vocab_decode(&v, ids, 5, buf, 4, &len);
	ok(rc == SF_OK && len == 8 && !memcmp(buf, "bca\xe2", 4) && buf[4] == 0,
	   "a 4-byte buffer gets the first 4 bytes and the length 8");
	const int32_t bad[2] = {0, 4};
	rc = sf_vocab_decode(&v, bad, 2, buf, sizeof buf, &len);
	ok(rc == SF_ERR_INVALID && strstr(sf_last_error(), "id 4 at position 1"),
	   "id 4 of a 4-id table is refused naming it and its position");
	sf_vocab_free(&v);
	rc = sf_vocab_load(write_vocab("v1.bin", 20240328, 1, 4, 0, tok, 4, 0), &v);
	ok(rc == SF_OK && v.n == 4 && v.eot == -1, "version 1: no end-of-text id");
	sf_vocab_free(&v);

	vocab_refused("a token file's magic", write_vocab("m.bin", 20240520, 2, 4, 3, tok, 4, 0),
	              "no magic 20240328");
	vocab_refused("version 3", write_vocab("v3.bin", 20240328, 3, 4, 3, tok, 4, 0),
	              "version 3, not 1 or 2");
	vocab_refused("1 id", write_vocab("n1.bin", 20240328, 2, 1, 0, tok, 1, 0), "2 to 65536");
	vocab_refused("eot 4 of 4 ids", write_vocab("e4.bin", 20240328, 2, 4, 4, tok, 4, 0),
	              "end-of-text id 4");
	static const char *const empty[4] = {"a", "", "c", "d"};
	vocab_refused("a zero length", write_vocab("z.bin", 20240328, 2, 4, 3, empty, 4, 0),
	              "id 1 has length 0");
	vocab_refused("3 of its 4 ids", write_vocab("t.bin", 20240328, 2, 4, 3, tok, 3, 0),
	              "truncated");
	vocab_refused("2 bytes after its ids", write_vocab("pad.bin", 20240328, 2, 4, 3, tok, 4, 2),
	              "2 bytes follow its 4 ids");
}

/* The install's GPT-2 files, when they are there */
static void test_gpt2_files(void)
{
	const char *prefix = getenv("SF_DATA_PREFIX");
	char vp[512], tp[2][512], ap[512];
	prefix = prefix && *prefix ? prefix : "/opt/shardflow-data";
	snprintf(vp, sizeof vp, "%s/gpt2-vocab.bin", prefix);
	snprintf(tp[0], sizeof tp[0], "%s/austen-gpt2-train.bin", prefix);
	snprintf(tp[1], sizeof tp[1], "%s/austen-gpt2-val.bin", prefix);
	snprintf(ap, sizeof ap, "%s/austen.txt", prefix);
	if (access(vp, R_OK) || access(tp[0], R_OK) || access(tp[1], R_OK) || access(ap, R_OK)) {
		ok(1, "GPT-2's decode table # SKIP %s or the austen-gpt2 files are not there "
		      "(scripts/install-deps.sh makes them)",
		   vp);
		ok(1, "Austen in GPT-2 tokens # SKIP not there");
		return;
	}
	struct sf_vocab v;
	struct sf_tokens t[2];
	struct sf_text text;
	if (sf_vocab_load(vp, &v) || sf_tokens_load(tp[0], 50257, SF_TOKENS_LLMC, &t[0]) ||
	    sf_tokens_load(tp[1], 50257, SF_TOKENS_LLMC, &t[1]) || sf_text_load(ap, 0.0, &text)) {
		diag("  %s", sf_last_error());
		bail_out("the installed GPT-2 files do not load");
	}
	const int32_t hello[3] = {15496, 995, 50256};
	char buf[64];
	size_t len = 0;
	int rc = sf_vocab_decode(&v, hello, 3, buf, sizeof buf, &len);
	ok(rc == SF_OK && v.n == 50257 && v.eot == 50256 && len == 24 &&
	       !memcmp(buf, "Hello world<|endoftext|>", 24),
	   "gpt2-vocab.bin: 50257 ids, 15496 995 50256 decode to \"Hello world<|endoftext|>\"");
	size_t total = 0, n = (size_t)text.n;
	char *out = malloc(n);
	int32_t *ids = malloc((size_t)(t[0].n + t[1].n) * sizeof *ids);
	if (!out || !ids)
		bail_out("out of memory");
	for (int s = 0, k = 0; s < 2; s++)
		for (int64_t i = 0; i < t[s].n; i++)
			ids[k++] = t[s].ids[i];
	rc = sf_vocab_decode(&v, ids, t[0].n + t[1].n, out, n, &total);
	ok(rc == SF_OK && total == n && !memcmp(out, text.bytes, n),
	   "austen-gpt2-train.bin then -val.bin (%lld + %lld tokens) decode to austen.txt's "
	   "%zu bytes exactly",
	   (long long)t[0].n, (long long)t[1].n, n);
	free(out);
	free(ids);
	sf_vocab_free(&v);
	sf_tokens_free(&t[0]);
	sf_tokens_free(&t[1]);
	sf_text_free(&text);
}

int main(void)
{
	tmpdir_create("sf-test-tokens");
	test_load();
	test_batches();
	test_vocab();
	test_gpt2_files();
	cleanup();
	return done_testing();
}
