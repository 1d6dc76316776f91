/*
 * rdb.h — character vectors out of an R lazy-load database, without R.
 *
 * An installed R package keeps its data sets in data/Rdata.rdb, read through the index
 * data/Rdata.rdx:
 *  - the index is one R object, saved by saveRDS (gzip; a plain serialization is
 *    accepted too): a list with "variables" (a named list: per object, its byte offset
 *    and length in the .rdb), "references" and "compressed" (FALSE/0: stored,
 *    TRUE/1: zlib, 2 or 3: a type byte per blob);
 *  - the .rdb is the objects' blobs one after another; a blob is the serialized
 *    object alone (compressed 0), or a 4-byte big-endian length of the serialization
 *    then its zlib stream (1), or that length, a type byte ('Z' zlib, '0' stored,
 *    '2' bzip2, 'X' xz) and the data (2, 3);
 *  - a serialized object is R's XDR format: "X\n", the format version (2 or 3), the
 *    writer's and the minimal reader's R versions, for version 3 the writer's native
 *    encoding, then the object, item by item (a 4-byte flags word: type, object bit,
 *    attribute bit, tag bit, levels; then what the type holds).
 * Debian's r-cran-janeaustenr (the six novels, one character vector of lines each)
 * uses compressed = TRUE: zlib only, so bzip2 and xz blobs are refused with a message
 * saying so.
 *
 * Everything here takes buffers and never trusts them: every length is checked against
 * what is left, nesting is limited to RDB_DEPTH, a blob may expand to RDB_BLOB_MAX
 * bytes and no more than zlib's ratio allows, and a malformed input is an error
 * message, never a crash (fuzz/fuzz_rdb.c). Only libc and zlib: scripts/install-deps.sh
 * compiles the tool with `cc ... -lz` before the project is configured.
 */
#ifndef SF_TOOLS_RDB_H
#define SF_TOOLS_RDB_H

#include <stddef.h>
#include <stdint.h>

#define RDB_DEPTH 64                 /* nesting of R objects (lists of lists, attributes) */
#define RDB_BLOB_MAX ((size_t)1 << 30) /* bytes one serialized object may have */
#define RDB_ERR_MAX 320

/* Return values: 0 on success, else a message is in the struct rdb_err. */
enum { RDB_OK = 0, RDB_EBAD = -1, RDB_ENOTSTR = -2, RDB_ENOMEM = -3 };

struct rdb_err {
	char msg[RDB_ERR_MAX];
};

/* One object of the index: its name and where its blob lies in the .rdb. */
struct rdb_var {
	char *name;
	int64_t offset, length;
};

struct rdb_index {
	int nvars;
	struct rdb_var *vars;
	int compress; /* 0 stored, 1 zlib, 2 or 3: a type byte per blob */
};

/* Text made of character vectors: each element, in UTF-8, followed by '\n'. */
struct rdb_text {
	char *bytes;
	size_t len, cap;
	int64_t lines; /* elements written */
	int64_t na;    /* of which NA (written as empty lines) */
};

/* Parses the index (the .rdx file's bytes). On success *idx owns its arrays
 * (rdb_index_free). */
int rdb_index_parse(const unsigned char *buf, size_t len, struct rdb_index *idx,
                    struct rdb_err *e);
void rdb_index_free(struct rdb_index *idx);
/* The entry called name, or NULL. */
const struct rdb_var *rdb_index_find(const struct rdb_index *idx, const char *name);

/* Appends the lines of the character vector serialized in (buf, len) ("X\n..." ) to
 * *out. RDB_ENOTSTR: the object is valid but not a character vector (the message
 * names its type). */
int rdb_unserialize_lines(const unsigned char *buf, size_t len, struct rdb_text *out,
                          struct rdb_err *e);

/* Appends the lines of object v, read from the .rdb's bytes (db, dblen) as the index
 * says, to *out. *out is unchanged on failure. */
int rdb_fetch_lines(const unsigned char *db, size_t dblen, const struct rdb_index *idx,
                    const struct rdb_var *v, struct rdb_text *out, struct rdb_err *e);
void rdb_text_free(struct rdb_text *t);

#endif
