/*
 * fuzz_rdb.c — the R lazy-load database reader of shardflow-rdb2txt (tools/rdb.c) on
 * arbitrary bytes.
 *
 * Input: a mode byte, a 4-byte little-endian length L, then the rest. Mode even: the
 * rest's first L bytes (L taken modulo what is left) are an index (the .rdx file:
 * gzip, a plain serialization or a blob), the others a database (.rdb): the index is
 * parsed and every object it names is fetched as text. Mode odd: the rest is one
 * serialized object, read as a character vector. Any outcome but a crash, a sanitizer
 * report or a leak is fine; a success must give text whose size agrees with its
 * line count. Seeds: tests/rdb_fixture --seeds fuzz/corpus/rdb.
 */
#include "tools/rdb.h"

#include <stdlib.h>
#include <string.h>

static void check_text(const struct rdb_text *t)
{
	/* every line ends with '\n': as many newlines as lines, at least */
	int64_t nl = 0;
	for (size_t i = 0; i < t->len; i++)
		nl += t->bytes[i] == '\n';
	if (t->len > t->cap || nl < t->lines || t->na > t->lines || (t->len && t->bytes[t->len - 1] != '\n'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 5)
		return 0;
	int mode = data[0];
	uint32_t L = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
	             (uint32_t)data[4] << 24;
	data += 5;
	size -= 5;
	struct rdb_err e;
	struct rdb_text t = {0};
	if (mode & 1) {
		if (rdb_unserialize_lines(data, size, &t, &e) == RDB_OK)
			check_text(&t);
		else if (t.len || t.lines)
			abort(); /* a failure appends nothing */
		rdb_text_free(&t);
		return 0;
	}
	size_t li = size ? L % (size + 1) : 0;
	/* copies of their own, so ASan sees a read past either part */
	unsigned char *rdx = malloc(li ? li : 1), *rdb = malloc(size - li ? size - li : 1);
	if (!rdx || !rdb)
		abort();
	memcpy(rdx, data, li);
	memcpy(rdb, data + li, size - li);
	struct rdb_index idx;
	if (rdb_index_parse(rdx, li, &idx, &e) == RDB_OK) {
		if (idx.nvars < 0 || (idx.nvars && !idx.vars) || idx.compress < 0 || idx.compress > 3)
			abort();
		for (int i = 0; i < idx.nvars; i++) {
			size_t before = t.len;
			if (rdb_index_find(&idx, idx.vars[i].name) == NULL)
				abort();
			if (rdb_fetch_lines(rdb, size - li, &idx, &idx.vars[i], &t, &e) != RDB_OK &&
			    t.len != before)
				abort();
		}
		check_text(&t);
		rdb_index_free(&idx);
	}
	rdb_text_free(&t);
	free(rdx);
	free(rdb);
	return 0;
}
