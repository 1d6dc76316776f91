/*
 * rdb_fixture.c — writes small R lazy-load databases the way R does, for
 * tests/rdb2txt.sh and the seeds of fuzz/fuzz_rdb.c (R itself is not needed).
 *
 *   rdb_fixture DIR VARIANT     DIR/Rdata.rdb, DIR/Rdata.rdx and DIR/expected.txt
 *   rdb_fixture --seeds DIR     the fuzzer's seed inputs (fuzz/corpus/rdb/)
 *
 * The objects, as R would have them:
 *   alpha  c("First line", "", NA, "last of alpha")
 *   beta   c("£20,000 — café" (marked UTF-8), "caf\xe9" (marked Latin-1), "plain")
 *          written with the long-vector length encoding (-1, then two ints)
 *   gamma  structure(c("g1", "g2"), names = c("a", "b"), meta = list(names = 1L,
 *          x = 2.5, NULL), class = "myclass"): attributes, a nested list, the symbol
 *          "names" read a second time as a reference
 *   num    1:3, an integer vector (not text)
 * expected.txt is what shardflow-rdb2txt writes for alpha, beta, gamma (in that
 * order): an NA is an empty line, Latin-1 becomes UTF-8.
 *
 * VARIANTs: v3 (serialization version 3, native encoding UTF-8, compressed = TRUE:
 * zlib blobs, the index gzip-compressed, as Debian's r-cran-janeaustenr), v2 (version
 * 2, compressed = 3L with a type byte per blob: 'Z' for alpha and num, '0' (stored)
 * for beta and gamma, the index a plain serialization), stored (compressed = FALSE),
 * xz and bz2 (alpha's blob claims xz / bzip2), badoff (gamma's offset past the end),
 * latin1 (version 3, native encoding latin1, alpha's first line unmarked with a
 * Latin-1 byte), badutf8 (alpha's first line unmarked, invalid UTF-8).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tools/cli.h"

struct buf {
	unsigned char *p;
	size_t len, cap;
};

static void die(const char *what)
{
	fprintf(stderr, "rdb_fixture: %s\n", what);
	exit(99);
}

static void put(struct buf *b, const void *src, size_t n)
{
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap - b->len < n)
			cap *= 2;
		if (!(b->p = realloc(b->p, cap)))
			die("out of memory");
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void put_int(struct buf *b, uint32_t v)
{
	unsigned char be[4] = {v >> 24, v >> 16 & 0xff, v >> 8 & 0xff, v & 0xff};
	put(b, be, 4);
}

enum { SYMSXP = 1, LISTSXP = 2, CHARSXP = 9, INTSXP = 13, REALSXP = 14, STRSXP = 16,
       VECSXP = 19, LGLSXP = 10, NILVALUE = 254, REFSXP = 255 };
#define ATTR (1u << 9)
#define TAG (1u << 10)
#define OBJ (1u << 8)
#define UTF8 (8u << 12)
#define LATIN1 (4u << 12)
#define ASCII (64u << 12)

/* one serialization: its symbols for references */
struct ser {
	struct buf b;
	const char *syms[16];
	int nsyms;
};

static void header(struct ser *s, int version, const char *native)
{
	put(&s->b, "X\n", 2);
	put_int(&s->b, (uint32_t)version);
	put_int(&s->b, 0x040201); /* R 4.2.1 wrote it */
	put_int(&s->b, version == 3 ? 0x030500 : 0x020300);
	if (version == 3) {
		put_int(&s->b, (uint32_t)strlen(native));
		put(&s->b, native, strlen(native));
	}
}

static void charsxp(struct ser *s, const char *str, uint32_t levels)
{
	put_int(&s->b, CHARSXP | levels);
	if (!str) {
		put_int(&s->b, (uint32_t)-1);
		return;
	}
	put_int(&s->b, (uint32_t)strlen(str));
	put(&s->b, str, strlen(str));
}

static void strsxp(struct ser *s, int n, const char *const *v, const uint32_t *levels,
                   uint32_t flags, int long_length)
{
	put_int(&s->b, STRSXP | flags);
	if (long_length) {
		put_int(&s->b, (uint32_t)-1);
		put_int(&s->b, 0);
	}
	put_int(&s->b, (uint32_t)n);
	for (int i = 0; i < n; i++)
		charsxp(s, v[i], levels ? levels[i] : v[i] ? ASCII : 0);
}

static void symbol(struct ser *s, const char *name)
{
	for (int i = 0; i < s->nsyms; i++)
		if (!strcmp(s->syms[i], name)) {
			put_int(&s->b, (uint32_t)(i + 1) << 8 | REFSXP);
			return;
		}
	s->syms[s->nsyms++] = name;
	put_int(&s->b, SYMSXP);
	charsxp(s, name, ASCII);
}

static void nil(struct ser *s)
{
	put_int(&s->b, NILVALUE);
}

static void int_vec(struct ser *s, int n, const int32_t *v, uint32_t flags)
{
	put_int(&s->b, INTSXP | flags);
	put_int(&s->b, (uint32_t)n);
	for (int i = 0; i < n; i++)
		put_int(&s->b, (uint32_t)v[i]);
}

static void real1(struct ser *s, double d)
{
	uint64_t bits;
	memcpy(&bits, &d, sizeof bits);
	put_int(&s->b, REALSXP);
	put_int(&s->b, 1);
	put_int(&s->b, (uint32_t)(bits >> 32));
	put_int(&s->b, (uint32_t)bits);
}

/* a names attribute: the pairlist node's flags, tag and value (a character vector) */
static void names_node(struct ser *s, int n, const char *const *names, int last)
{
	put_int(&s->b, LISTSXP | TAG);
	symbol(s, "names");
	strsxp(s, n, names, NULL, 0, 0);
	if (last)
		nil(s);
}

/* ---- the objects ---------------------------------------------------------------------- */

static const char *alpha_v[] = {"First line", "", NULL, "last of alpha"};
static const char *beta_v[] = {"\xc2\xa3" "20,000 \xe2\x80\x94 caf\xc3\xa9", "caf\xe9", "plain"};
static const uint32_t beta_l[] = {UTF8, LATIN1, ASCII};

static struct buf obj_alpha(int version, const char *native, const char *first, uint32_t lev0)
{
	struct ser s = {0};
	const char *v[4] = {first ? first : alpha_v[0], alpha_v[1], alpha_v[2], alpha_v[3]};
	uint32_t lev[4] = {first ? lev0 : ASCII, ASCII, 0, ASCII};
	header(&s, version, native);
	strsxp(&s, 4, v, lev, 0, 0);
	return s.b;
}

static struct buf obj_beta(int version, const char *native)
{
	struct ser s = {0};
	header(&s, version, native);
	strsxp(&s, 3, beta_v, beta_l, 0, 1);
	return s.b;
}

static struct buf obj_gamma(int version, const char *native)
{
	struct ser s = {0};
	static const char *const g[] = {"g1", "g2"}, *const ab[] = {"a", "b"},
	                         *const mn[] = {"names", "x", ""}, *const cls[] = {"myclass"};
	header(&s, version, native);
	strsxp(&s, 2, g, NULL, OBJ | ATTR, 0);
	/* attributes: names, meta, class */
	names_node(&s, 2, ab, 0);
	put_int(&s.b, LISTSXP | TAG);
	symbol(&s, "meta");
	put_int(&s.b, VECSXP | ATTR);
	put_int(&s.b, 3);
	int_vec(&s, 1, (const int32_t[]){1}, 0);
	real1(&s, 2.5);
	nil(&s);
	names_node(&s, 3, mn, 1); /* "names" again: a reference */
	put_int(&s.b, LISTSXP | TAG);
	symbol(&s, "class");
	strsxp(&s, 1, cls, NULL, 0, 0);
	nil(&s);
	return s.b;
}

static struct buf obj_num(int version, const char *native)
{
	struct ser s = {0};
	header(&s, version, native);
	int_vec(&s, 3, (const int32_t[]){1, 2, 3}, 0);
	return s.b;
}

/* ---- the database ------------------------------------------------------------------------ */

/* A blob as R's lazyLoadDBinsertValue writes it for `compress` (kind: the type byte of
 * compress 2/3). */
static struct buf blob(const struct buf *ser, int compress, char kind)
{
	struct buf b = {0};
	if (compress == 0) {
		put(&b, ser->p, ser->len);
		return b;
	}
	put_int(&b, (uint32_t)ser->len);
	if (compress >= 2)
		put(&b, &kind, 1);
	if (compress >= 2 && kind != 'Z') { /* '0': stored; 'X' and '2' are not made */
		put(&b, ser->p, ser->len);
		return b;
	}
	uLongf zlen = compressBound(ser->len);
	unsigned char *z = malloc(zlen);
	if (!z || compress2(z, &zlen, ser->p, ser->len, 6) != Z_OK)
		die("compress2 failed");
	put(&b, z, zlen);
	free(z);
	return b;
}

static struct buf index_ser(int version, const char *native, int n, const char *const *names,
                            const int32_t (*pos)[2], int compress)
{
	struct ser s = {0};
	static const char *const top[] = {"variables", "references", "compressed"};
	header(&s, version, native);
	put_int(&s.b, VECSXP | ATTR);
	put_int(&s.b, 3);
	put_int(&s.b, VECSXP | ATTR); /* variables */
	put_int(&s.b, (uint32_t)n);
	for (int i = 0; i < n; i++)
		int_vec(&s, 2, pos[i], 0);
	names_node(&s, n, names, 1);
	put_int(&s.b, VECSXP); /* references: empty */
	put_int(&s.b, 0);
	if (compress == 1) {
		put_int(&s.b, LGLSXP);
		put_int(&s.b, 1);
		put_int(&s.b, 1);
	} else {
		int_vec(&s, 1, (const int32_t[]){compress}, 0);
	}
	names_node(&s, 3, top, 1);
	return s.b;
}

static void write_file(const char *dir, const char *name, const void *p, size_t n, int gz)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (gz) {
		gzFile g = gzopen(path, "wb");
		if (!g || (n && gzwrite(g, p, (unsigned)n) != (int)n) || gzclose(g) != Z_OK)
			die("cannot write a gzip file");
		return;
	}
	FILE *f = fopen(path, "wb");
	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
		die("cannot write a file");
}

static const char expected[] = "First line\n\n\nlast of alpha\n"
                               "\xc2\xa3" "20,000 \xe2\x80\x94 caf\xc3\xa9\ncaf\xc3\xa9\nplain\n"
                               "g1\ng2\n";

struct db {
	struct buf rdb, rdx_ser, objs[4];
	int gzip_rdx;
};

static struct db make(const char *variant)
{
	static const char *const names[] = {"alpha", "beta", "gamma", "num"};
	struct db d = {0};
	int version = 3, compress = 1;
	const char *native = "UTF-8";
	char kinds[4] = {'Z', 'Z', 'Z', 'Z'};
	int32_t pos[4][2];
	d.gzip_rdx = 1;
	if (!strcmp(variant, "v2")) {
		version = 2;
		compress = 3;
		kinds[1] = kinds[2] = '0';
		d.gzip_rdx = 0;
	} else if (!strcmp(variant, "stored")) {
		compress = 0;
	} else if (!strcmp(variant, "xz") || !strcmp(variant, "bz2")) {
		compress = 3;
		kinds[0] = variant[0] == 'x' ? 'X' : '2';
	} else if (!strcmp(variant, "latin1")) {
		native = "latin1";
	} else if (strcmp(variant, "v3") && strcmp(variant, "badoff") && strcmp(variant, "badutf8")) {
		die("unknown variant (v3, v2, stored, xz, bz2, badoff, latin1, badutf8)");
	}
	if (!strcmp(variant, "latin1"))
		d.objs[0] = obj_alpha(version, native, "na\xefve", 0);
	else if (!strcmp(variant, "badutf8"))
		d.objs[0] = obj_alpha(version, native, "bad \xc3\x28 byte", 0);
	else
		d.objs[0] = obj_alpha(version, native, NULL, 0);
	d.objs[1] = obj_beta(version, native);
	d.objs[2] = obj_gamma(version, native);
	d.objs[3] = obj_num(version, native);
	for (int i = 0; i < 4; i++) {
		struct buf b = blob(&d.objs[i], compress, kinds[i]);
		pos[i][0] = (int32_t)d.rdb.len;
		pos[i][1] = (int32_t)b.len;
		put(&d.rdb, b.p, b.len);
		free(b.p);
	}
	if (!strcmp(variant, "badoff"))
		pos[2][0] = (int32_t)d.rdb.len + 10;
	d.rdx_ser = index_ser(version, native, 4, names, (const int32_t(*)[2])pos, compress);
	return d;
}

static void free_db(struct db *d)
{
	free(d->rdb.p);
	free(d->rdx_ser.p);
	for (int i = 0; i < 4; i++)
		free(d->objs[i].p);
}

/* fuzz/fuzz_rdb.c's input: a mode byte, a 4-byte little-endian length L, then mode 0:
 * L bytes of index and the database; mode 1: one serialized object. */
static void seed(const char *dir, const char *name, int mode, const struct buf *a,
                 const struct buf *b)
{
	struct buf s = {0};
	unsigned char m = (unsigned char)mode;
	uint32_t L = (uint32_t)a->len;
	unsigned char le[4] = {L & 0xff, L >> 8 & 0xff, L >> 16 & 0xff, L >> 24};
	put(&s, &m, 1);
	put(&s, le, 4);
	put(&s, a->p, a->len);
	if (b)
		put(&s, b->p, b->len);
	write_file(dir, name, s.p, s.len, 0);
	free(s.p);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rdb_fixture DIR VARIANT | rdb_fixture --seeds DIR\n");
}

struct options {
	int seeds, n;
	char *args[2]; /* DIR VARIANT, or DIR */
};

static const char *const flag_names[] = {"--seeds"};

static int on_flag(int j, void *ctx)
{
	(void)j;
	((struct options *)ctx)->seeds = 1;
	return 0;
}

static int on_operand(char **argp, void *ctx)
{
	struct options *o = ctx;
	if (o->n == 2)
		return cli_bad_usage("unexpected argument \"%s\"", *argp);
	o->args[o->n++] = *argp;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	const struct cli_spec sp = {NULL, 0, flag_names, 1, NULL, on_flag};
	cli_prog = "rdb_fixture";
	cli_usage = usage;
	int prc = cli_parse_operands(argc, argv, &sp, on_operand, &o);
	if (!prc && o.n != 2 - o.seeds)
		prc = cli_bad_usage(o.seeds ? "--seeds DIR expected" : "DIR VARIANT expected");
	if (prc)
		return prc == 1 ? 0 : prc;
	if (o.seeds) {
		static const char *const variants[] = {"v3", "v2", "stored", "xz"};
		for (int v = 0; v < 4; v++) {
			struct db d = make(variants[v]);
			char name[64];
			struct buf rdx = {0};
			if (d.gzip_rdx) { /* as saveRDS would: gzip, header without a time */
				uLongf zlen = compressBound(d.rdx_ser.len) + 32;
				unsigned char *z = malloc(zlen);
				z_stream zs = {0};
				if (!z || deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
					die("deflateInit2 failed");
				zs.next_in = d.rdx_ser.p;
				zs.avail_in = (uInt)d.rdx_ser.len;
				zs.next_out = z;
				zs.avail_out = (uInt)zlen;
				if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
					die("deflate failed");
				put(&rdx, z, zs.total_out);
				deflateEnd(&zs);
				free(z);
			} else {
				put(&rdx, d.rdx_ser.p, d.rdx_ser.len);
			}
			snprintf(name, sizeof name, "db-%s", variants[v]);
			seed(o.args[0], name, 0, &rdx, &d.rdb);
			if (v == 0) {
				seed(o.args[0], "index-plain", 0, &d.rdx_ser, &d.rdb);
				for (int i = 0; i < 4; i++) {
					snprintf(name, sizeof name, "object-%d", i);
					seed(o.args[0], name, 1, &d.objs[i], NULL);
				}
			}
			free(rdx.p);
			free_db(&d);
		}
		return 0;
	}
	struct db d = make(o.args[1]);
	write_file(o.args[0], "Rdata.rdb", d.rdb.p, d.rdb.len, 0);
	write_file(o.args[0], "Rdata.rdx", d.rdx_ser.p, d.rdx_ser.len, d.gzip_rdx);
	write_file(o.args[0], "expected.txt", expected, sizeof expected - 1, 0);
	free_db(&d);
	return 0;
}
