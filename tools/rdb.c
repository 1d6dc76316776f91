/*
 * rdb.c — R lazy-load databases and R's XDR serialization, read without R (rdb.h).
 *
 * A serialized object is parsed into a small tree (struct robj) allocated from an arena
 * freed at once. Every count read from the input is checked against the bytes left
 * before anything is allocated for it (a string vector's element takes at least 8
 * bytes, a list's at least 4), so memory stays proportional to the input; nesting is
 * limited to RDB_DEPTH, and a pairlist's tail is read in a loop, not by recursion.
 * Only the types plain data can hold are read: vectors, pairlists, symbols (and
 * references to them), S4 and ALTREP wrappers; environments, closures' environments,
 * byte code and external pointers are refused by name.
 *
 * The format is R's (src/main/serialize.c, ReadItem): flags = type | object << 8 |
 * attributes << 9 | tag << 10 | levels << 12; a vector's length is an int, or -1 then
 * two ints (a long vector); a CHARSXP's length -1 is NA; a reference is type 255 with
 * its index in flags >> 8 (0: the index follows). A pairlist node is [attributes] [tag]
 * car cdr; any other item is its payload then [attributes].
 */
#include "tools/rdb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* R's SEXPTYPEs and the pseudo-types of serialization */
enum {
	NILSXP = 0, SYMSXP = 1, LISTSXP = 2, CLOSXP = 3, ENVSXP = 4, PROMSXP = 5, LANGSXP = 6,
	SPECIALSXP = 7, BUILTINSXP = 8, CHARSXP = 9, LGLSXP = 10, INTSXP = 13, REALSXP = 14,
	CPLXSXP = 15, STRSXP = 16, DOTSXP = 17, VECSXP = 19, EXPRSXP = 20, BCODESXP = 21,
	EXTPTRSXP = 22, WEAKREFSXP = 23, RAWSXP = 24, S4SXP = 25,
	ALTREP_SXP = 238, ATTRLISTSXP = 239, ATTRLANGSXP = 240, BASEENV_SXP = 241,
	EMPTYENV_SXP = 242, BCREPREF = 243, BCREPDEF = 244, GENERICREFSXP = 245,
	CLASSREFSXP = 246, PERSISTSXP = 247, PACKAGESXP = 248, NAMESPACESXP = 249,
	BASENAMESPACE_SXP = 250, MISSINGARG_SXP = 251, UNBOUNDVALUE_SXP = 252,
	GLOBALENV_SXP = 253, NILVALUE_SXP = 254, REFSXP = 255
};
/* a CHARSXP's encoding, in its levels */
#define BYTES_MASK (1u << 1)
#define LATIN1_MASK (1u << 2)
#define UTF8_MASK (1u << 3)
#define ASCII_MASK (1u << 6)

#define RDB_INDEX_MAX ((size_t)64 << 20) /* bytes of an uncompressed index */
#define ZLIB_RATIO 1032u                 /* deflate expands at most ~1032:1 */

static const char *type_name(int t)
{
	switch (t) {
	case NILSXP: case NILVALUE_SXP: return "NULL";
	case SYMSXP: return "symbol";
	case LISTSXP: case ATTRLISTSXP: return "pairlist";
	case CLOSXP: return "function";
	case ENVSXP: case GLOBALENV_SXP: case BASEENV_SXP: case EMPTYENV_SXP: return "environment";
	case PROMSXP: return "promise";
	case LANGSXP: case ATTRLANGSXP: return "call";
	case SPECIALSXP: case BUILTINSXP: return "builtin function";
	case CHARSXP: return "CHARSXP";
	case LGLSXP: return "logical vector";
	case INTSXP: return "integer vector";
	case REALSXP: return "double vector";
	case CPLXSXP: return "complex vector";
	case STRSXP: return "character vector";
	case DOTSXP: return "...";
	case VECSXP: return "list";
	case EXPRSXP: return "expression vector";
	case BCODESXP: return "byte code";
	case EXTPTRSXP: return "external pointer";
	case WEAKREFSXP: return "weak reference";
	case RAWSXP: return "raw vector";
	case S4SXP: return "S4 object";
	case ALTREP_SXP: return "ALTREP object";
	case PACKAGESXP: return "package environment";
	case NAMESPACESXP: return "namespace";
	case PERSISTSXP: return "persistent reference";
	case BASENAMESPACE_SXP: return "base namespace";
	case MISSINGARG_SXP: return "missing argument";
	case UNBOUNDVALUE_SXP: return "unbound value";
	default: return "unknown type";
	}
}

__attribute__((format(printf, 2, 3))) static int fail(struct rdb_err *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return RDB_EBAD;
}

static int nomem(struct rdb_err *e, size_t bytes)
{
	snprintf(e->msg, sizeof e->msg, "out of memory (%zu bytes)", bytes);
	return RDB_ENOMEM;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* ---- the object tree --------------------------------------------------------------------- */

struct rstr {
	const unsigned char *p;
	int32_t len; /* -1: NA */
	unsigned levels;
};

struct robj {
	int type;
	int64_t n;                 /* vectors: length */
	const unsigned char *data; /* LGL, INT (4 n bytes), REAL (8 n), CPLX (16 n), RAW (n) */
	struct rstr *str;          /* STRSXP: n elements */
	struct robj **elt;         /* VECSXP, EXPRSXP: n elements */
	struct robj *attr;         /* attributes (a pairlist) or NULL */
	struct robj *tag, *car, *cdr; /* pairlists; ALTREP: car = class info, cdr = state */
	struct rstr chars;         /* CHARSXP; SYMSXP: its name */
};

struct block {
	struct block *next;
	size_t used, cap;
	max_align_t data[];
};

struct rd {
	const unsigned char *p;
	size_t len, pos;
	struct rdb_err *e;
	struct block *arena;
	struct robj **refs;
	size_t nrefs, caprefs;
	int native_latin1; /* version 3's native encoding is Latin-1 */
	int native_known;  /* version 3: the writer said its encoding */
	int native_utf8;
	char native[64];
};

static void *aalloc(struct rd *r, size_t size)
{
	size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	struct block *b = r->arena;
	if (!b || b->cap - b->used < size) {
		size_t cap = size > ((size_t)64 << 10) ? size : (size_t)64 << 10;
		b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		b->next = r->arena;
		r->arena = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += size;
	return p;
}

static void rd_free(struct rd *r)
{
	while (r->arena) {
		struct block *n = r->arena->next;
		free(r->arena);
		r->arena = n;
	}
	free(r->refs);
	r->refs = NULL;
}

static struct robj *new_obj(struct rd *r, int type)
{
	struct robj *o = aalloc(r, sizeof *o);
	if (!o)
		return NULL;
	memset(o, 0, sizeof *o);
	o->type = type;
	return o;
}

static int truncated(struct rd *r, size_t need, const char *what)
{
	return fail(r->e, "truncated serialization: %s needs %zu byte(s) at byte %zu, %zu left", what,
	            need, r->pos, r->len - r->pos);
}

static int rd_int(struct rd *r, int32_t *v, const char *what)
{
	if (r->len - r->pos < 4)
		return truncated(r, 4, what);
	*v = (int32_t)be32(r->p + r->pos);
	r->pos += 4;
	return RDB_OK;
}

static int rd_bytes(struct rd *r, size_t n, const unsigned char **p, const char *what)
{
	if (r->len - r->pos < n)
		return truncated(r, n, what);
	*p = r->p + r->pos;
	r->pos += n;
	return RDB_OK;
}

/* A vector's length: an int, or -1 then the upper and lower 32 bits. Checked against
 * the bytes left, at `min_elt` bytes an element. */
static int rd_length(struct rd *r, int type, size_t min_elt, int64_t *n)
{
	int32_t v = 0, hi = 0, lo = 0;
	int rc;
	size_t at = r->pos;
	if ((rc = rd_int(r, &v, "a vector's length")) < 0)
		return rc;
	if (v == -1) {
		if ((rc = rd_int(r, &hi, "a long vector's length")) < 0 ||
		    (rc = rd_int(r, &lo, "a long vector's length")) < 0)
			return rc;
		if (hi < 0)
			return fail(r->e, "%s at byte %zu has a negative length", type_name(type), at);
		*n = (int64_t)((uint64_t)(uint32_t)hi << 32 | (uint32_t)lo);
	} else if (v < 0) {
		return fail(r->e, "%s at byte %zu has length %d", type_name(type), at, (int)v);
	} else {
		*n = v;
	}
	if (min_elt && (uint64_t)*n > (r->len - r->pos) / min_elt)
		return fail(r->e,
		            "truncated serialization: %s at byte %zu has %lld elements, more than "
		            "the %zu bytes left can hold",
		            type_name(type), at, (long long)*n, r->len - r->pos);
	return RDB_OK;
}

/* A CHARSXP's payload, its flags already read. */
static int rd_charsxp(struct rd *r, int32_t flags, struct rstr *s)
{
	int32_t len = 0;
	int rc;
	size_t at = r->pos;
	if ((rc = rd_int(r, &len, "a string's length")) < 0)
		return rc;
	s->levels = (uint32_t)flags >> 12;
	s->len = len;
	s->p = NULL;
	if (len == -1)
		return RDB_OK;
	if (len < 0)
		return fail(r->e, "a string at byte %zu has length %d", at, (int)len);
	return rd_bytes(r, (size_t)len, &s->p, "a string");
}

static int rd_item(struct rd *r, int depth, struct robj **out);

static int is_pairlist(int type)
{
	return type == LISTSXP || type == LANGSXP || type == CLOSXP || type == PROMSXP ||
	       type == DOTSXP || type == ATTRLISTSXP || type == ATTRLANGSXP;
}

static int add_ref(struct rd *r, struct robj *o)
{
	if (r->nrefs == r->caprefs) {
		size_t cap = r->caprefs ? 2 * r->caprefs : 32;
		struct robj **p = realloc(r->refs, cap * sizeof *p);
		if (!p)
			return nomem(r->e, cap * sizeof *p);
		r->refs = p;
		r->caprefs = cap;
	}
	r->refs[r->nrefs++] = o;
	return RDB_OK;
}

/* The item whose flags were just read (at byte `at`). */
static int rd_item_flags(struct rd *r, int depth, int32_t flags, size_t at, struct robj **out)
{
	int type = (int)((uint32_t)flags & 0xff);
	int has_attr = (flags >> 9) & 1, has_tag = (flags >> 10) & 1;
	struct robj *o = NULL;
	int64_t n = 0;
	int rc;

	*out = NULL;
	if (depth > RDB_DEPTH)
		return fail(r->e, "objects nested more than %d deep at byte %zu", RDB_DEPTH, at);
	switch (type) {
	case NILVALUE_SXP: case EMPTYENV_SXP: case BASEENV_SXP: case GLOBALENV_SXP:
	case UNBOUNDVALUE_SXP: case MISSINGARG_SXP: case BASENAMESPACE_SXP:
		if (!(o = new_obj(r, type)))
			return nomem(r->e, sizeof *o);
		*out = o;
		return RDB_OK;
	case REFSXP: {
		int32_t i = (int32_t)((uint32_t)flags >> 8);
		if (i == 0 && (rc = rd_int(r, &i, "a reference's index")) < 0)
			return rc;
		if (i < 1 || (size_t)i > r->nrefs)
			return fail(r->e, "a reference at byte %zu names object %d of the %zu read so far",
			            at, (int)i, r->nrefs);
		*out = r->refs[i - 1];
		return RDB_OK;
	}
	case SYMSXP: {
		struct robj *c;
		if (!(o = new_obj(r, type)))
			return nomem(r->e, sizeof *o);
		if ((rc = rd_item(r, depth + 1, &c)) < 0)
			return rc;
		if (c->type != CHARSXP)
			return fail(r->e, "the symbol at byte %zu is named by a %s, not a string", at,
			            type_name(c->type));
		o->chars = c->chars;
		if (o->chars.len < 0)
			return fail(r->e, "the symbol at byte %zu is named NA", at);
		if ((rc = add_ref(r, o)) < 0)
			return rc;
		*out = o;
		return RDB_OK;
	}
	case ALTREP_SXP:
		if (!(o = new_obj(r, type)))
			return nomem(r->e, sizeof *o);
		if ((rc = rd_item(r, depth + 1, &o->car)) < 0 || (rc = rd_item(r, depth + 1, &o->cdr)) < 0 ||
		    (rc = rd_item(r, depth + 1, &o->attr)) < 0)
			return rc;
		*out = o;
		return RDB_OK;
	default:
		break;
	}
	if (is_pairlist(type)) {
		/* a node, then its tail: another node (read here, in the loop) or anything */
		struct robj **link = out;
		for (;;) {
			if (!(o = new_obj(r, type)))
				return nomem(r->e, sizeof *o);
			*link = o;
			if (has_attr && (rc = rd_item(r, depth + 1, &o->attr)) < 0)
				return rc;
			if (has_tag && (rc = rd_item(r, depth + 1, &o->tag)) < 0)
				return rc;
			if ((rc = rd_item(r, depth + 1, &o->car)) < 0)
				return rc;
			link = &o->cdr;
			at = r->pos;
			if ((rc = rd_int(r, &flags, "an item's flags")) < 0)
				return rc;
			type = (int)((uint32_t)flags & 0xff);
			if (!is_pairlist(type))
				return rd_item_flags(r, depth + 1, flags, at, link);
			has_attr = (flags >> 9) & 1;
			has_tag = (flags >> 10) & 1;
		}
	}
	if (!(o = new_obj(r, type)))
		return nomem(r->e, sizeof *o);
	switch (type) {
	case CHARSXP:
		if ((rc = rd_charsxp(r, flags, &o->chars)) < 0)
			return rc;
		break;
	case S4SXP:
		break;
	case LGLSXP: case INTSXP: case REALSXP: case CPLXSXP: case RAWSXP: {
		size_t size = type == RAWSXP ? 1 : type == REALSXP ? 8 : type == CPLXSXP ? 16 : 4;
		if ((rc = rd_length(r, type, size, &n)) < 0 ||
		    (rc = rd_bytes(r, (size_t)n * size, &o->data, type_name(type))) < 0)
			return rc;
		o->n = n;
		break;
	}
	case STRSXP:
		if ((rc = rd_length(r, type, 8, &n)) < 0)
			return rc;
		if (n && !(o->str = aalloc(r, (size_t)n * sizeof *o->str)))
			return nomem(r->e, (size_t)n * sizeof *o->str);
		o->n = n;
		for (int64_t i = 0; i < n; i++) {
			int32_t ef = 0;
			size_t eat = r->pos;
			if ((rc = rd_int(r, &ef, "a string's flags")) < 0)
				return rc;
			if ((ef & 0xff) != CHARSXP)
				return fail(r->e,
				            "element %lld of the character vector at byte %zu is a %s "
				            "(byte %zu), not a string",
				            (long long)i + 1, at, type_name(ef & 0xff), eat);
			if ((rc = rd_charsxp(r, ef, &o->str[i])) < 0)
				return rc;
			if ((ef >> 9) & 1) { /* R reads and drops a CHARSXP's attributes */
				struct robj *drop;
				if ((rc = rd_item(r, depth + 1, &drop)) < 0)
					return rc;
			}
		}
		break;
	case VECSXP: case EXPRSXP:
		if ((rc = rd_length(r, type, 4, &n)) < 0)
			return rc;
		if (n && !(o->elt = aalloc(r, (size_t)n * sizeof *o->elt)))
			return nomem(r->e, (size_t)n * sizeof *o->elt);
		o->n = n;
		for (int64_t i = 0; i < n; i++)
			if ((rc = rd_item(r, depth + 1, &o->elt[i])) < 0)
				return rc;
		break;
	case ENVSXP: case PACKAGESXP: case NAMESPACESXP: case PERSISTSXP: case BCODESXP:
	case EXTPTRSXP: case WEAKREFSXP: case SPECIALSXP: case BUILTINSXP: case CLASSREFSXP:
	case GENERICREFSXP: case BCREPDEF: case BCREPREF:
		return fail(r->e, "an R %s (type %d) at byte %zu: only data (vectors, lists, "
		            "attributes) can be read without R",
		            type_name(type), type, at);
	default:
		return fail(r->e, "unknown R object type %d at byte %zu (flags 0x%08x)", type, at,
		            (unsigned)flags);
	}
	if (has_attr && (rc = rd_item(r, depth + 1, &o->attr)) < 0)
		return rc;
	*out = o;
	return RDB_OK;
}

static int rd_item(struct rd *r, int depth, struct robj **out)
{
	int32_t flags = 0;
	size_t at = r->pos;
	int rc = rd_int(r, &flags, "an item's flags");
	if (rc < 0)
		return rc;
	return rd_item_flags(r, depth, flags, at, out);
}

/* The header and the object; the whole buffer must be used. */
static int unserialize(struct rd *r, struct robj **out)
{
	int32_t version = 0, writer = 0, reader = 0, nelen = 0;
	const unsigned char *enc = NULL;
	int rc;
	if (r->len >= 2 && r->p[1] == '\n' && (r->p[0] == 'A' || r->p[0] == 'B'))
		return fail(r->e, "an R serialization in %s format: only XDR (\"X\\n\") is read",
		            r->p[0] == 'A' ? "ASCII" : "native binary");
	if (r->len >= 2 && r->p[0] == 0x1f && r->p[1] == 0x8b)
		return fail(r->e, "gzip data where an R serialization (\"X\\n\") was expected");
	if (r->len < 2 || r->p[0] != 'X' || r->p[1] != '\n')
		return fail(r->e, "not an R serialization: it does not start with \"X\\n\"");
	r->pos = 2;
	if ((rc = rd_int(r, &version, "the format version")) < 0 ||
	    (rc = rd_int(r, &writer, "the writer's R version")) < 0 ||
	    (rc = rd_int(r, &reader, "the reader's R version")) < 0)
		return rc;
	(void)writer;
	(void)reader;
	if (version != 2 && version != 3)
		return fail(r->e, "R serialization format version %d: versions 2 and 3 are read",
		            (int)version);
	if (version == 3) {
		if ((rc = rd_int(r, &nelen, "the native encoding's length")) < 0)
			return rc;
		if (nelen < 0 || nelen >= (int32_t)sizeof r->native)
			return fail(r->e, "the native encoding's name has length %d (at most %zu)",
			            (int)nelen, sizeof r->native - 1);
		if ((rc = rd_bytes(r, (size_t)nelen, &enc, "the native encoding")) < 0)
			return rc;
		memcpy(r->native, enc, (size_t)nelen);
		r->native[nelen] = '\0';
		r->native_known = 1;
		r->native_utf8 = !strcasecmp(r->native, "UTF-8") || !strcasecmp(r->native, "UTF8");
		r->native_latin1 = !strcasecmp(r->native, "latin1") ||
		                   !strcasecmp(r->native, "ISO-8859-1") ||
		                   !strcasecmp(r->native, "ISO8859-1");
	}
	if ((rc = rd_item(r, 0, out)) < 0)
		return rc;
	if (r->pos != r->len)
		return fail(r->e, "%zu trailing byte(s) after the serialized object (%zu bytes)",
		            r->len - r->pos, r->pos);
	return RDB_OK;
}

/* ---- text --------------------------------------------------------------------------------- */

static int text_reserve(struct rdb_text *t, size_t more, struct rdb_err *e)
{
	if (t->cap - t->len >= more)
		return RDB_OK;
	if (more > SIZE_MAX / 2 - t->len)
		return nomem(e, SIZE_MAX);
	size_t cap = t->cap ? t->cap : 4096;
	while (cap - t->len < more)
		cap *= 2;
	char *p = realloc(t->bytes, cap);
	if (!p)
		return nomem(e, cap);
	t->bytes = p;
	t->cap = cap;
	return RDB_OK;
}

/* Length of the valid UTF-8 sequence at p (n bytes left), or 0 (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (n < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f))
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (n < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

/* Appends element i of a character vector as a line. */
static int put_line(const struct rd *r, const struct rstr *s, int64_t i, struct rdb_text *t,
                    struct rdb_err *e)
{
	int rc;
	if (s->len < 0) {
		if ((rc = text_reserve(t, 1, e)) < 0)
			return rc;
		t->bytes[t->len++] = '\n';
		t->na++;
		t->lines++;
		return RDB_OK;
	}
	size_t n = (size_t)s->len;
	int latin1 = (s->levels & LATIN1_MASK) ||
	             (r->native_latin1 && !(s->levels & (UTF8_MASK | ASCII_MASK | BYTES_MASK)));
	if ((rc = text_reserve(t, 2 * n + 1, e)) < 0)
		return rc;
	char *out = t->bytes + t->len;
	for (size_t k = 0; k < n;) {
		unsigned char c = s->p[k];
		if (c == 0)
			return fail(e, "string %lld has a NUL byte at position %zu (R strings have none)",
			            (long long)i + 1, k + 1);
		if (latin1) {
			if (c < 0x80) {
				*out++ = (char)c;
			} else {
				*out++ = (char)(0xc0 | c >> 6);
				*out++ = (char)(0x80 | (c & 0x3f));
			}
			k++;
			continue;
		}
		size_t l = utf8_len(s->p + k, n - k);
		if (!l) {
			if (r->native_known && !r->native_utf8 && !(s->levels & (UTF8_MASK | ASCII_MASK)))
				return fail(e,
				            "string %lld is in the writer's native encoding %s: only "
				            "UTF-8 and Latin-1 strings are converted",
				            (long long)i + 1, r->native);
			return fail(e, "string %lld is not valid UTF-8 (byte 0x%02x at position %zu)",
			            (long long)i + 1, c, k + 1);
		}
		memcpy(out, s->p + k, l);
		out += l;
		k += l;
	}
	*out++ = '\n';
	t->len = (size_t)(out - t->bytes);
	t->lines++;
	return RDB_OK;
}

int rdb_unserialize_lines(const unsigned char *buf, size_t len, struct rdb_text *out,
                          struct rdb_err *e)
{
	struct rd r = {.p = buf, .len = len, .e = e};
	struct robj *o = NULL;
	size_t len0 = out->len;
	int64_t lines0 = out->lines, na0 = out->na;
	int rc = unserialize(&r, &o);
	if (rc < 0)
		goto done;
	if (o->type != STRSXP) {
		snprintf(e->msg, sizeof e->msg, "the object is a%s %s, not a character vector",
		         strchr("aeiouAEIOU", type_name(o->type)[0]) ? "n" : "",
		         type_name(o->type));
		rc = RDB_ENOTSTR;
		goto done;
	}
	for (int64_t i = 0; i < o->n; i++)
		if ((rc = put_line(&r, &o->str[i], i, out, e)) < 0)
			goto done;
done:
	if (rc < 0) { /* nothing half-appended */
		out->len = len0;
		out->lines = lines0;
		out->na = na0;
	}
	rd_free(&r);
	return rc;
}

void rdb_text_free(struct rdb_text *t)
{
	if (!t)
		return;
	free(t->bytes);
	memset(t, 0, sizeof *t);
}

/* ---- decompression ------------------------------------------------------------------------- */

/* Inflates (in, inlen) — a zlib stream (window_bits 15) or gzip (31) — into exactly
 * `want` bytes (want_exact; max = want) or at most `max` (then *outlen says how many).
 * The stream must end exactly where the input does. */
static int inflate_all(const unsigned char *in, size_t inlen, int window_bits, size_t want,
                       int want_exact, size_t max, unsigned char **outp, size_t *outlen,
                       struct rdb_err *e)
{
	const char *kind = window_bits > 15 ? "gzip" : "zlib";
	z_stream z;
	memset(&z, 0, sizeof z);
	size_t cap = want_exact ? want : inlen < max / 8 ? 8 * inlen + 1024 : max;
	if (cap > max)
		cap = max;
	unsigned char *out = malloc(cap ? cap : 1), probe;
	int rc = RDB_OK, zrc;
	if (!out)
		return nomem(e, cap);
	if (inflateInit2(&z, window_bits) != Z_OK) {
		free(out);
		return nomem(e, sizeof z);
	}
	size_t in_done = 0, out_done = 0;
	for (;;) {
		int full = 0;
		if (out_done == cap && cap < max) {
			size_t ncap = cap > max / 2 ? max : 2 * cap;
			unsigned char *p = realloc(out, ncap);
			if (!p) {
				rc = nomem(e, ncap);
				goto done;
			}
			out = p;
			cap = ncap;
		}
		size_t in_left = inlen - in_done, out_left = cap - out_done;
		z.next_in = (unsigned char *)in + in_done;
		z.avail_in = (uInt)(in_left > UINT32_MAX ? UINT32_MAX : in_left);
		if (out_left) {
			z.next_out = out + out_done;
			z.avail_out = (uInt)(out_left > UINT32_MAX ? UINT32_MAX : out_left);
		} else { /* at the limit: only the end of the stream may follow */
			full = 1;
			z.next_out = &probe;
			z.avail_out = 1;
		}
		uLong bin = z.total_in, bout = z.total_out;
		zrc = inflate(&z, Z_NO_FLUSH);
		size_t din = z.total_in - bin, dout = z.total_out - bout;
		in_done += din;
		if (full && dout) {
			rc = fail(e, "it decompresses to more than %s %zu bytes",
			          want_exact ? "the declared" : "the limit of", cap);
			goto done;
		}
		out_done += dout;
		if (zrc == Z_STREAM_END)
			break;
		if (zrc == Z_DATA_ERROR || zrc == Z_NEED_DICT) {
			rc = fail(e, "corrupt %s stream (%s)", kind,
			          zrc == Z_NEED_DICT ? "it needs a preset dictionary"
			          : z.msg            ? z.msg
			                             : "no detail");
			goto done;
		}
		if (zrc == Z_MEM_ERROR) {
			rc = nomem(e, 0);
			goto done;
		}
		if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			rc = fail(e, "zlib error %d", zrc);
			goto done;
		}
		if (!din && !dout) {
			if (in_done == inlen)
				rc = fail(e, "its %s stream is cut short (%zu bytes decompressed)", kind,
				          out_done);
			else
				rc = fail(e, "zlib makes no progress in its %s stream", kind);
			goto done;
		}
	}
	if (in_done != inlen) {
		rc = fail(e, "%zu byte(s) after the end of its %s stream", inlen - in_done, kind);
		goto done;
	}
	if (want_exact && out_done != want) {
		rc = fail(e, "it decompresses to %zu bytes, not the declared %zu", out_done, want);
		goto done;
	}
done:
	inflateEnd(&z);
	if (rc < 0) {
		free(out);
		return rc;
	}
	*outp = out;
	*outlen = out_done;
	return RDB_OK;
}

/* A blob's serialization: *ser points into the blob or, when *owned is set, to memory
 * to free. */
static int blob_open(const unsigned char *blob, size_t blen, int compress, const unsigned char **ser,
                     size_t *slen, unsigned char **owned, struct rdb_err *e)
{
	*owned = NULL;
	if (compress == 0) {
		*ser = blob;
		*slen = blen;
		return RDB_OK;
	}
	size_t head = compress == 1 ? 4 : 5;
	if (blen < head)
		return fail(e, "its blob has %zu byte(s): shorter than its %zu-byte header", blen, head);
	size_t want = be32(blob);
	int kind = compress == 1 ? 'Z' : blob[4];
	const unsigned char *data = blob + head;
	size_t dlen = blen - head;
	switch (kind) {
	case '0':
		if (dlen != want)
			return fail(e, "its stored blob declares %zu bytes but holds %zu", want, dlen);
		*ser = data;
		*slen = dlen;
		return RDB_OK;
	case 'Z':
		break;
	case '2':
		return fail(e, "its blob is bzip2-compressed: this tool reads zlib and stored blobs "
		               "only (R's compress = 2)");
	case 'X':
		return fail(e, "its blob is xz-compressed: this tool reads zlib and stored blobs "
		               "only (R's compress = 3)");
	default:
		return fail(e, "its blob has compression type byte 0x%02x: expected 'Z', '2', 'X' or '0'",
		            kind);
	}
	if (want > RDB_BLOB_MAX)
		return fail(e, "its blob declares %zu bytes: more than the %zu accepted", want,
		            RDB_BLOB_MAX);
	if (want / ZLIB_RATIO > dlen)
		return fail(e,
		            "its blob declares %zu bytes, more than %zu compressed bytes can hold "
		            "(zlib expands at most %u:1)",
		            want, dlen, ZLIB_RATIO);
	size_t got;
	int rc = inflate_all(data, dlen, 15, want, 1, want, owned, &got, e);
	if (rc < 0)
		return rc;
	*ser = *owned;
	*slen = got;
	return RDB_OK;
}

int rdb_fetch_lines(const unsigned char *db, size_t dblen, const struct rdb_index *idx,
                    const struct rdb_var *v, struct rdb_text *out, struct rdb_err *e)
{
	const unsigned char *ser = NULL;
	size_t slen = 0;
	unsigned char *owned = NULL;
	struct rdb_err sub;
	int rc;
	if (v->offset < 0 || v->length < 0 || (uint64_t)v->offset > dblen ||
	    (uint64_t)v->length > dblen - (uint64_t)v->offset) {
		fail(e, "object '%s': the index puts it at bytes [%lld, %lld), but the database "
		        "has %zu bytes",
		     v->name, (long long)v->offset, (long long)v->offset + (long long)v->length,
		     dblen);
		return RDB_EBAD;
	}
	rc = blob_open(db + v->offset, (size_t)v->length, idx->compress, &ser, &slen, &owned, &sub);
	if (rc == RDB_OK)
		rc = rdb_unserialize_lines(ser, slen, out, &sub);
	free(owned);
	if (rc < 0)
		snprintf(e->msg, sizeof e->msg, "object '%.64s' at bytes [%lld, %lld): %.200s", v->name,
		         (long long)v->offset, (long long)v->offset + (long long)v->length, sub.msg);
	return rc;
}

/* ---- the index ---------------------------------------------------------------------------- */

/* The attribute called name of o, or NULL. */
static const struct robj *get_attr(const struct robj *o, const char *name)
{
	size_t len = strlen(name);
	for (const struct robj *a = o->attr; a && is_pairlist(a->type); a = a->cdr)
		if (a->tag && a->tag->type == SYMSXP && (size_t)a->tag->chars.len == len &&
		    !memcmp(a->tag->chars.p, name, len))
			return a->car;
	return NULL;
}

/* Element called name of the named list o, or NULL. */
static const struct robj *list_get(const struct robj *o, const char *name)
{
	const struct robj *names = get_attr(o, "names");
	size_t len = strlen(name);
	if (!names || names->type != STRSXP || names->n != o->n)
		return NULL;
	for (int64_t i = 0; i < o->n; i++)
		if (names->str[i].len >= 0 && (size_t)names->str[i].len == len &&
		    !memcmp(names->str[i].p, name, len))
			return o->elt[i];
	return NULL;
}

/* Element k of a numeric vector (integer, double or logical) as an integer >= 0. */
static int num_at(const struct robj *o, int64_t k, int64_t *v)
{
	if (k >= o->n)
		return -1;
	if (o->type == INTSXP || o->type == LGLSXP) {
		int32_t x = (int32_t)be32(o->data + 4 * k);
		if (x < 0) /* NA is INT_MIN */
			return -1;
		*v = x;
		return 0;
	}
	if (o->type == REALSXP) {
		uint64_t bits = (uint64_t)be32(o->data + 8 * k) << 32 | be32(o->data + 8 * k + 4);
		double d;
		memcpy(&d, &bits, sizeof d);
		if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(int64_t)d)
			return -1;
		*v = (int64_t)d;
		return 0;
	}
	return -1;
}

static int index_from(const struct robj *root, struct rdb_index *idx, struct rdb_err *e)
{
	if (root->type != VECSXP)
		return fail(e, "the index is a%s %s, not a list", strchr("aeiou", type_name(root->type)[0]) ? "n" : "",
		            type_name(root->type));
	const struct robj *vars = list_get(root, "variables");
	const struct robj *comp = list_get(root, "compressed");
	if (!vars || !comp)
		return fail(e, "the index is a list without %s: not an R lazy-load index",
		            !vars ? "\"variables\"" : "\"compressed\"");
	int64_t c = 0;
	if ((comp->type != LGLSXP && comp->type != INTSXP && comp->type != REALSXP) || comp->n != 1 ||
	    num_at(comp, 0, &c) < 0 || c > 3)
		return fail(e, "the index's \"compressed\" is not one of FALSE, TRUE, 2 or 3");
	if (vars->type != VECSXP)
		return fail(e, "the index's \"variables\" is a %s, not a list", type_name(vars->type));
	const struct robj *names = get_attr(vars, "names");
	if (vars->n && (!names || names->type != STRSXP || names->n != vars->n))
		return fail(e, "the index's \"variables\" has no names");
	if (vars->n > INT32_MAX / 2)
		return fail(e, "the index has %lld objects", (long long)vars->n);
	idx->compress = (int)c;
	idx->nvars = 0;
	idx->vars = calloc(vars->n ? (size_t)vars->n : 1, sizeof *idx->vars);
	if (!idx->vars)
		return nomem(e, (size_t)vars->n * sizeof *idx->vars);
	for (int64_t i = 0; i < vars->n; i++) {
		const struct robj *p = vars->elt[i];
		const struct rstr *nm = &names->str[i];
		int64_t off = 0, len = 0;
		if (nm->len < 0)
			return fail(e, "object %lld of the index is named NA", (long long)i + 1);
		if (memchr(nm->p, 0, (size_t)nm->len))
			return fail(e, "object %lld of the index has a NUL byte in its name", (long long)i + 1);
		if ((p->type != INTSXP && p->type != REALSXP) || p->n != 2 || num_at(p, 0, &off) < 0 ||
		    num_at(p, 1, &len) < 0)
			return fail(e,
			            "object %lld of the index ('%.*s') is not an (offset, length) pair of "
			            "non-negative numbers",
			            (long long)i + 1, nm->len > 64 ? 64 : (int)nm->len, (const char *)nm->p);
		struct rdb_var *v = &idx->vars[idx->nvars];
		if (!(v->name = malloc((size_t)nm->len + 1)))
			return nomem(e, (size_t)nm->len + 1);
		memcpy(v->name, nm->p, (size_t)nm->len);
		v->name[nm->len] = '\0';
		v->offset = off;
		v->length = len;
		idx->nvars++;
	}
	return RDB_OK;
}

int rdb_index_parse(const unsigned char *buf, size_t len, struct rdb_index *idx, struct rdb_err *e)
{
	unsigned char *plain = NULL;
	size_t plen = len;
	const unsigned char *ser = buf;
	struct rd r = {.e = e};
	struct robj *root;
	int rc;

	memset(idx, 0, sizeof *idx);
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) { /* saveRDS: gzip */
		rc = inflate_all(buf, len, 31, 0, 0, RDB_INDEX_MAX, &plain, &plen, e);
		if (rc < 0)
			return rc;
		ser = plain;
	} else if (len >= 5 && buf[4] == 0x78 && !(len >= 2 && buf[0] == 'X' && buf[1] == '\n')) {
		/* a blob: length then zlib (how lazyLoadDBinsertValue stores objects) */
		size_t want = be32(buf);
		if (want > RDB_INDEX_MAX || want / ZLIB_RATIO > len - 4)
			return fail(e, "the index declares %zu bytes", want);
		rc = inflate_all(buf + 4, len - 4, 15, want, 1, want, &plain, &plen, e);
		if (rc < 0)
			return rc;
		ser = plain;
	}
	r.p = ser;
	r.len = plen;
	rc = unserialize(&r, &root);
	if (rc == RDB_OK)
		rc = index_from(root, idx, e);
	rd_free(&r);
	free(plain);
	if (rc < 0)
		rdb_index_free(idx);
	return rc;
}

void rdb_index_free(struct rdb_index *idx)
{
	if (!idx)
		return;
	for (int i = 0; i < idx->nvars; i++)
		free(idx->vars[i].name);
	free(idx->vars);
	memset(idx, 0, sizeof *idx);
}

const struct rdb_var *rdb_index_find(const struct rdb_index *idx, const char *name)
{
	for (int i = 0; i < idx->nvars; i++)
		if (!strcmp(idx->vars[i].name, name))
			return &idx->vars[i];
	return NULL;
}
