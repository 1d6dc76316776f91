/*
 * bpe.c — GPT-2's byte-level BPE encoder (sf_vocab_encode), from a decode table alone.
 *
 * tiktoken's GPT-2 encoding ranks every token by its id, so the decode table that
 * tools/gpt2-tokens.cjs writes (id -> bytes) is the whole encoder: a text is cut into
 * pieces by GPT-2's pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * and each piece, from its single bytes, repeatedly merges the adjacent pair whose
 * joined bytes have the lowest id (tiktoken's byte_pair_merge), until no pair is a
 * token. The pattern is matched by hand on code points: letters are what the C.UTF-8
 * locale calls alphabetic (iswalpha_l), numbers ASCII digits and the other Unicode
 * digits the locale knows (iswdigit_l), whitespace Unicode's White_Space list below;
 * bytes that are not UTF-8 count as "other" each. The locale's classes are close to
 * Unicode's general categories, not equal (letter-like numbers such as Roman numerals
 * or vulgar fractions may differ): tests/bpe.sh compares with tiktoken on a corpus.
 */
#include "common/error.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

enum cls { C_LETTER, C_NUMBER, C_SPACE, C_OTHER };

/* ---- bytes -> id, open addressing ------------------------------------------------- */

struct table {
	const struct sf_vocab *v;
	int32_t *slot; /* ids, -1 empty; size a power of two */
	size_t mask;
};

static uint64_t hash(const uint8_t *b, size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* the id whose bytes are b[0 .. n), or -1 */
static int32_t lookup(const struct table *t, const uint8_t *b, size_t n)
{
	for (size_t k = hash(b, n) & t->mask;; k = (k + 1) & t->mask) {
		int32_t id = t->slot[k];
		if (id < 0)
			return -1;
		uint32_t o = t->v->offset[id], len = t->v->offset[id + 1] - o;
		if (len == n && !memcmp(t->v->bytes + o, b, n))
			return id;
	}
}

/* every id of v but the end-of-text one (a special token, never a merge's result); the
 * lowest id wins where two have the same bytes */
static int table_build(const struct sf_vocab *v, struct table *t)
{
	size_t cap = 1;
	while (cap < 2 * (size_t)v->n)
		cap <<= 1;
	t->v = v, t->mask = cap - 1;
	t->slot = malloc(cap * sizeof *t->slot);
	if (!t->slot)
		return SF_ERR(SF_ERR_NOMEM, "sf_vocab_encode: out of memory");
	memset(t->slot, 0xff, cap * sizeof *t->slot);
	for (int32_t id = 0; id < v->n; id++) {
		const uint8_t *b = v->bytes + v->offset[id];
		size_t n = v->offset[id + 1] - v->offset[id];
		if (id == v->eot || lookup(t, b, n) >= 0)
			continue;
		size_t k = hash(b, n) & t->mask;
		while (t->slot[k] >= 0)
			k = (k + 1) & t->mask;
		t->slot[k] = id;
	}
	for (int c = 0; c < 256; c++) {
		uint8_t b = (uint8_t)c;
		if (lookup(t, &b, 1) < 0) {
			free(t->slot);
			return SF_ERR(
			    SF_ERR_INVALID,
			    "sf_vocab_encode: decode table %s has no token for byte 0x%02x: "
			    "not a byte-level BPE vocabulary (GPT-2's)",
			    v->path ? v->path : "", c);
		}
	}
	return SF_OK;
}

/* ---- the pattern -------------------------------------------------------------------- */

/* One code point decoded at s (n bytes left): its value and length (an invalid byte: -1,
 * length 1) */
static int32_t utf8(const uint8_t *s, size_t n, size_t *len)
{
	int k = s[0] < 0x80             ? 1
	        : (s[0] & 0xe0) == 0xc0 ? 2
	        : (s[0] & 0xf0) == 0xe0 ? 3
	        : (s[0] & 0xf8) == 0xf0 ? 4
	                                : 0;
	*len = 1;
	if (k == 0 || (size_t)k > n)
		return -1;
	int32_t c = k == 1 ? s[0] : s[0] & (0x7f >> k);
	for (int i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		c = (c << 6) | (s[i] & 0x3f);
	}
	static const int32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
	if (c < least[k] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return -1;
	*len = (size_t)k;
	return c;
}

/* Unicode's White_Space, what \s matches */
static int is_space(int32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
	       c == 0x205f || c == 0x3000;
}

static enum cls classify(int32_t c, locale_t loc)
{
	if (c < 0)
		return C_OTHER;
	if (is_space(c))
		return C_SPACE;
	if (c < 0x80)
		return (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? C_LETTER
		       : c >= '0' && c <= '9'                 ? C_NUMBER
		                                              : C_OTHER;
	if (loc && iswdigit_l((wint_t)c, loc))
		return C_NUMBER;
	if (loc && iswalpha_l((wint_t)c, loc))
		return C_LETTER;
	return C_OTHER;
}

struct cp {
	size_t at, len; /* bytes in the text */
	enum cls k;
	int32_t c;
};

/* The length in code points of the piece starting at p[i] (of n) */
static size_t piece(const struct cp *p, size_t i, size_t n)
{
	size_t j = i;
	if (p[i].c == '\'' && i + 1 < n) { /* 's 't 'm 'd, 'll 've 're */
		int32_t a = p[i + 1].c, b = i + 2 < n ? p[i + 2].c : 0;
		if (a == 's' || a == 't' || a == 'm' || a == 'd')
			return 2;
		if ((a == 'l' && b == 'l') || (a == 'v' && b == 'e') || (a == 'r' && b == 'e'))
			return 3;
	}
	/* ' ?' then a run of one class: letters, numbers, or neither nor space */
	if (p[i].c == ' ' && i + 1 < n && p[i + 1].k != C_SPACE)
		j = i + 1;
	if (p[j].k != C_SPACE) {
		enum cls k = p[j].k;
		while (j < n && p[j].k == k)
			j++;
		return j - i;
	}
	/* \s+(?!\S) : the whitespace run but its last code point when a non-space follows
	 * (it then starts the next piece, as ' ?'), unless that leaves nothing; else \s+ */
	while (j < n && p[j].k == C_SPACE)
		j++;
	return j < n && j - i > 1 ? j - i - 1 : j - i;
}

/* ---- merges ----------------------------------------------------------------------- */

/* The ids of piece b[0 .. n) appended to ids (while below cap), *count advanced;
 * start: n + 1 scratch offsets */
static void merge(const struct table *t, const uint8_t *b, size_t n, size_t *start, int32_t *ids,
                  int64_t cap, int64_t *count)
{
	size_t parts = n;
	for (size_t i = 0; i <= n; i++)
		start[i] = i; /* part i is b[start[i] .. start[i + 1]) */
	int32_t whole = lookup(t, b, n);
	if (whole >= 0)
		parts = 1, start[1] = n;
	while (parts > 1) {
		int32_t best = -1;
		size_t at = 0;
		for (size_t i = 0; i + 1 < parts; i++) {
			int32_t id = lookup(t, b + start[i], start[i + 2] - start[i]);
			if (id >= 0 && (best < 0 || id < best))
				best = id, at = i;
		}
		if (best < 0)
			break;
		memmove(start + at + 1, start + at + 2, (parts - at - 1) * sizeof *start);
		parts--;
	}
	for (size_t i = 0; i < parts; i++, (*count)++)
		if (*count < cap)
			ids[*count] = lookup(t, b + start[i], start[i + 1] - start[i]);
}

SF_API int sf_vocab_encode(const struct sf_vocab *v, const char *text, size_t len, int32_t *ids,
                           int64_t cap, int64_t *count)
{
	int rc = SF_OK;
	struct table t = {0};
	struct cp *p = NULL;
	size_t *start = NULL, n = 0;
	locale_t loc = (locale_t)0;
	if (!v || !v->bytes || !v->offset || (!text && len) || (!ids && cap > 0) || cap < 0 ||
	    !count)
		return SF_ERR(SF_ERR_INVALID, "sf_vocab_encode: NULL table, text, ids or count");
	*count = 0;
	SF_CHECK(table_build(v, &t));
	p = malloc((len + 1) * sizeof *p);
	start = malloc((len + 2) * sizeof *start);
	if (!p || !start) {
		rc = SF_ERR(SF_ERR_NOMEM, "sf_vocab_encode: out of memory");
		goto out;
	}
	loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	const uint8_t *s = (const uint8_t *)text;
	for (size_t at = 0, k; at < len; at += k, n++) {
		int32_t c = utf8(s + at, len - at, &k);
		p[n] = (struct cp){at, k, classify(c, loc), c};
	}
	for (size_t i = 0; i < n;) {
		size_t m = piece(p, i, n);
		size_t a = p[i].at, b = p[i + m - 1].at + p[i + m - 1].len;
		merge(&t, s + a, b - a, start, ids, cap, count);
		i += m;
	}
out:
	if (loc)
		freelocale(loc);
	free(t.slot);
	free(p);
	free(start);
	return rc;
}
