/*
 * fuzz_tokens.c — the token-file parsers of data/tokens.c (sf_tokens_load: nanoGPT's raw
 * uint16 .bin, llm.c's shards with their 256-int32 header) and the decode table of
 * data/vocab.c (sf_vocab_load: llm.c's tokenizer file), on arbitrary files.
 *
 * Input: a mode byte, a 2-byte little-endian word w, then the file's bytes. Mode & 3
 * picks the parser: 0 sf_tokens_load(SF_TOKENS_AUTO), 1 _RAW, 2 _LLMC, 3 sf_vocab_load.
 * For a token file the vocabulary is 2 + w % 65535 (2 to 65536) and w's high byte picks
 * T for one sf_tokens_batch; for a decode table w is the buffer size of one
 * sf_vocab_decode. The bytes are written to a file (both parsers read a path, as
 * fuzz_idx.c's), then loaded; any result but a crash is fine, and a success must describe
 * the file exactly (every id below the vocabulary and equal to its bytes; every table
 * entry 1 to 255 bytes, their offsets ending at the file's end), and its batch or
 * decode must agree with it (ASan sees a read past the ids or the table).
 */
#include "fuzz/common.h"

#include "data/read.h"
#include "shardflow.h"

static void put(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
		abort();
}

static void tokens(const char *path, const uint8_t *file, size_t n, int format, unsigned w)
{
	int vocab = 2 + (int)(w % 65535);
	struct sf_tokens t;
	int rc = sf_tokens_load(path, vocab, format, &t);
	if (rc != SF_OK) {
		if (t.ids || t.path || t.n)
			abort(); /* zeroed on failure */
		return;
	}
	/* where the ids start: an llm.c shard has its magic (or was asked for) */
	size_t at = 0;
	if (t.format == SF_TOKENS_LLMC) {
		if (format == SF_TOKENS_RAW || n < SF_LLMC_HEADER_BYTES || _sf_le32(file) != 20240520)
			abort();
		at = SF_LLMC_HEADER_BYTES;
	} else if (t.format != SF_TOKENS_RAW || format == SF_TOKENS_LLMC ||
	           (format == SF_TOKENS_AUTO && n >= SF_LLMC_HEADER_BYTES &&
	            _sf_le32(file) == 20240520)) {
		abort();
	}
	if (t.n < 1 || (size_t)t.n * 2 != n - at || t.vocab != vocab)
		abort();
	for (int64_t i = 0; i < t.n; i++)
		if (t.ids[i] >= vocab ||
		    t.ids[i] != (uint16_t)(file[at + 2 * i] | file[at + 2 * i + 1] << 8))
			abort();
	/* one batch of 3 rows, T from w's high byte */
	int T = 1 + (int)(w >> 8) % 16, B = 3;
	int32_t x[3 * 16], y[3 * 16];
	rc = sf_tokens_batch(&t, (int)(w & 1), w, (int64_t)(w >> 4), B, 0, B, T, x, y);
	if (t.n < (int64_t)T + 1) {
		if (rc != SF_ERR_INVALID)
			abort();
	} else {
		if (rc != SF_OK)
			abort();
		for (int r = 0; r < B; r++)
			for (int k = 0; k < T; k++)
				if (x[r * T + k] < 0 || x[r * T + k] >= vocab || y[r * T + k] < 0 ||
				    y[r * T + k] >= vocab || (k + 1 < T && y[r * T + k] != x[r * T + k + 1]))
					abort();
	}
	sf_tokens_free(&t);
}

static void table(const char *path, const uint8_t *file, size_t n, unsigned w)
{
	struct sf_vocab v;
	int rc = sf_vocab_load(path, &v);
	if (rc != SF_OK) {
		if (v.bytes || v.offset || v.path || v.n)
			abort();
		return;
	}
	if (n < SF_LLMC_HEADER_BYTES || _sf_le32(file) != 20240328 || v.n < 2 || v.n > 65536 ||
	    v.eot < -1 || v.eot >= v.n || (v.eot >= 0) != (_sf_le32(file + 4) == 2) ||
	    (uint32_t)v.n != _sf_le32(file + 8) || v.offset[0] != 0)
		abort();
	/* the entries, as the file lays them out: a length byte, then the bytes */
	size_t at = SF_LLMC_HEADER_BYTES;
	for (int i = 0; i < v.n; i++) {
		uint32_t len = v.offset[i + 1] - v.offset[i];
		if (at >= n || len != file[at] || len < 1 || len > 255 || at + 1 + len > n ||
		    memcmp(v.bytes + v.offset[i], file + at + 1, len))
			abort();
		at += 1 + len;
	}
	if (at != n)
		abort();
	/* decode every id once (and one outside), into a buffer of w % 4096 bytes */
	size_t total = v.offset[v.n], cap = w % 4096, got = 0;
	int32_t *ids = malloc((size_t)v.n * sizeof *ids + sizeof *ids);
	char *buf = malloc(cap ? cap : 1);
	if (ids && buf) {
		for (int i = 0; i < v.n; i++)
			ids[i] = i;
		if (sf_vocab_decode(&v, ids, v.n, cap ? buf : NULL, cap, &got) != SF_OK ||
		    got != total || memcmp(buf, v.bytes, cap < total ? cap : total))
			abort();
		ids[0] = v.n;
		if (sf_vocab_decode(&v, ids, 1, buf, cap, NULL) != SF_ERR_INVALID)
			abort();
	}
	free(ids);
	free(buf);
	sf_vocab_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init) {
		fuzz_quiet();
		init = 1;
	}
	if (size < 3)
		return 0;
	int mode = data[0] & 3;
	unsigned w = (unsigned)data[1] | (unsigned)data[2] << 8;
	data += 3;
	size -= 3;
	const char *path = fuzz_path(mode == 3 ? "gpt2-vocab.bin" : "train.bin");
	put(path, data, size);
	if (mode == 3)
		table(path, data, size, w);
	else
		tokens(path, data, size, mode, w);
	return 0;
}
