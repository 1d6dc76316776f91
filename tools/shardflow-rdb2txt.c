/*
 * shardflow-rdb2txt — character vectors of an R package's data, as plain UTF-8 text,
 * without R.
 *
 *   shardflow-rdb2txt --list .../janeaustenr/data/Rdata
 *   shardflow-rdb2txt -o austen.txt .../janeaustenr/data/Rdata sensesensibility \
 *       prideprejudice mansfieldpark emma northangerabbey persuasion
 *
 * scripts/install-deps.sh makes the default text corpus with it (docs/gpt.md, "Text datasets":
 * the six novels of Debian's r-cran-janeaustenr). The formats and the checks are in tools/rdb.h;
 * this file reads the two files, calls the parser on their bytes and writes the text.
 * A bad input is a message on stderr and exit status 1 (nothing is written: -o goes
 * through FILE.tmp, renamed at the end); a bad command line is one message (the
 * shared command line of tools/cli.h), exit 2. Only libc and zlib (tools/cli.h is
 * header-only and libc's), so it compiles alone: cc -I. tools/shardflow-rdb2txt.c
 * tools/rdb.c -lz.
 */
#include "tools/cli.h"
#include "tools/rdb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX ((size_t)2 << 30) /* bytes of an .rdb or .rdx read */

static const char *const usage_text =
    "usage: shardflow-rdb2txt [options] DB [NAME...]\n"
    "\n"
    "Writes character vectors stored in an R lazy-load database (an installed R\n"
    "package's data/Rdata.rdb, read through its index data/Rdata.rdx) as plain UTF-8\n"
    "text, without R: each element is one line ending with '\\n' (NA: an empty line),\n"
    "the vectors one after another, in the order of the NAMEs (default: every object\n"
    "of the index, in its order; each must be a character vector). Strings marked\n"
    "Latin-1 are converted to UTF-8; any other string must be valid UTF-8.\n"
    "Blobs compressed with zlib, or stored, are read (bzip2 and xz are refused).\n"
    "\n"
    "DB is the database's path without its extension (e.g. .../data/Rdata), or the\n"
    "path of its .rdb or .rdx file.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  write the text to FILE (through FILE.tmp, renamed when\n"
    "                     complete) instead of standard output\n"
    "  -l, --list         list the objects (name, offset, bytes in the .rdb, and for\n"
    "                     character vectors lines and bytes of text); write no text\n"
    "  -h, --help         print this help and exit\n"
    "\n"
    "Exit status: 0 done, 1 an input that cannot be read or is not as described\n"
    "(the message says which file and what is wrong), 2 a bad command line.\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

struct options {
	const char *out;
	int list;
	char **db; /* DB NAME..., NULL-terminated (argv's tail) */
};

static const char *const option_names[] = {"-o", "--output"};
static const char *const flag_names[] = {"-l", "--list"};

static int on_value(int k, char *val, void *ctx)
{
	(void)k;
	((struct options *)ctx)->out = val;
	return 0;
}

static int on_flag(int j, void *ctx)
{
	(void)j;
	((struct options *)ctx)->list = 1;
	return 0;
}

/* DB: it and the NAMEs after it end the options */
static int on_operand(char **argp, void *ctx)
{
	((struct options *)ctx)->db = argp;
	return CLI_STOP;
}

__attribute__((format(printf, 1, 2))) static int error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "shardflow-rdb2txt: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* Reads a whole regular file into *buf (*len bytes); 1 after a message. */
static int read_file(const char *path, const char *what, unsigned char **buf, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return error("cannot open the %s %s: %s", what, path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return error("cannot stat %s: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return error("the %s %s is not a regular file", what, path);
	}
	if ((uint64_t)st.st_size > FILE_MAX) {
		close(fd);
		return error("the %s %s has %lld bytes: more than the %zu this tool reads", what,
		             path, (long long)st.st_size, FILE_MAX);
	}
	size_t n = (size_t)st.st_size, got = 0;
	unsigned char *p = malloc(n ? n : 1);
	if (!p) {
		close(fd);
		return error("out of memory reading %s (%zu bytes)", path, n);
	}
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(p);
			close(fd);
			return error("cannot read %s: %s", path, strerror(e));
		}
		if (r == 0) {
			free(p);
			close(fd);
			return error("%s shrank while being read (%zu of %zu bytes)", path, got, n);
		}
		got += (size_t)r;
	}
	close(fd);
	if (n == 0) {
		free(p);
		return error("the %s %s is empty", what, path);
	}
	*buf = p;
	*len = n;
	return 0;
}

/* The .rdb and .rdx paths of DB (malloc'd). */
static int db_paths(const char *db, char **rdb, char **rdx)
{
	size_t n = strlen(db);
	const char *dot = n >= 4 ? db + n - 4 : NULL;
	if (dot && (!strcmp(dot, ".rdb") || !strcmp(dot, ".rdx")))
		n -= 4;
	*rdb = malloc(n + 5);
	*rdx = malloc(n + 5);
	if (!*rdb || !*rdx)
		return error("out of memory");
	snprintf(*rdb, n + 5, "%.*s.rdb", (int)n, db);
	snprintf(*rdx, n + 5, "%.*s.rdx", (int)n, db);
	return 0;
}

static int write_all(int fd, const char *p, size_t n, const char *path)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return error("cannot write %s: %s", path, w < 0 ? strerror(errno) : "no progress");
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes the text to path through path.tmp, or to stdout when path is NULL. */
static int write_text(const char *path, const struct rdb_text *t)
{
	if (!path)
		return write_all(STDOUT_FILENO, t->bytes, t->len, "standard output");
	size_t n = strlen(path) + 5;
	char *tmp = malloc(n);
	if (!tmp)
		return error("out of memory");
	snprintf(tmp, n, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		int e = errno;
		error("cannot create %s: %s", tmp, strerror(e));
		free(tmp);
		return 1;
	}
	int rc = write_all(fd, t->bytes, t->len, tmp);
	if (!rc && fsync(fd) != 0)
		rc = error("cannot sync %s: %s", tmp, strerror(errno));
	if (close(fd) != 0 && !rc)
		rc = error("cannot close %s: %s", tmp, strerror(errno));
	if (!rc && rename(tmp, path) != 0)
		rc = error("cannot rename %s to %s: %s", tmp, path, strerror(errno));
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	const struct cli_spec sp = {option_names, 2, flag_names, 2, on_value, on_flag};
	cli_prog = "shardflow-rdb2txt";
	cli_usage = usage;
	int prc = cli_parse_operands(argc, argv, &sp, on_operand, &o);
	if (prc)
		return prc == 1 ? 0 : prc;
	if (!o.db)
		return cli_bad_usage("no database given");
	const char *out = o.out, *db = o.db[0];
	int list = o.list;
	char **names = o.db + 1;
	if (out && !*out)
		return cli_bad_usage("-o needs a file name");
	if (list && out)
		return cli_bad_usage("--list writes no text: -o makes no sense with it");

	char *rdb_path = NULL, *rdx_path = NULL;
	unsigned char *rdb = NULL, *rdx = NULL;
	size_t rdb_len = 0, rdx_len = 0;
	struct rdb_index idx = {0};
	struct rdb_text text = {0};
	struct rdb_err e = {{0}};
	int status = 1;

	if (db_paths(db, &rdb_path, &rdx_path) || read_file(rdx_path, "index", &rdx, &rdx_len) ||
	    read_file(rdb_path, "database", &rdb, &rdb_len))
		goto done;
	if (rdb_index_parse(rdx, rdx_len, &idx, &e) < 0) {
		error("%s: %s", rdx_path, e.msg);
		goto done;
	}
	if (list) {
		printf("# %s: %d object(s), compression %d\n", rdx_path, idx.nvars, idx.compress);
		for (int k = 0; k < idx.nvars; k++) {
			const struct rdb_var *v = &idx.vars[k];
			struct rdb_text t = {0};
			int rc = rdb_fetch_lines(rdb, rdb_len, &idx, v, &t, &e);
			if (rc == RDB_OK)
				printf("%s\toffset %lld\tstored %lld bytes\t%lld lines\t%zu bytes of text\n",
				       v->name, (long long)v->offset, (long long)v->length,
				       (long long)t.lines, t.len);
			else if (rc == RDB_ENOTSTR)
				printf("%s\toffset %lld\tstored %lld bytes\tnot a character vector\n",
				       v->name, (long long)v->offset, (long long)v->length);
			rdb_text_free(&t);
			if (rc != RDB_OK && rc != RDB_ENOTSTR) {
				error("%s: %s", rdb_path, e.msg);
				goto done;
			}
		}
		status = 0;
		goto done;
	}
	if (*names) {
		for (char **k = names; *k; k++) {
			const struct rdb_var *v = rdb_index_find(&idx, *k);
			if (!v) {
				error("%s has no object '%s' (it has %d: run --list)", rdx_path, *k,
				      idx.nvars);
				goto done;
			}
			if (rdb_fetch_lines(rdb, rdb_len, &idx, v, &text, &e) < 0) {
				error("%s: %s", rdb_path, e.msg);
				goto done;
			}
		}
	} else {
		for (int k = 0; k < idx.nvars; k++)
			if (rdb_fetch_lines(rdb, rdb_len, &idx, &idx.vars[k], &text, &e) < 0) {
				error("%s: %s", rdb_path, e.msg);
				goto done;
			}
	}
	if (write_text(out, &text))
		goto done;
	if (out)
		fprintf(stderr, "shardflow-rdb2txt: %s: %lld lines (%lld NA), %zu bytes\n", out,
		        (long long)text.lines, (long long)text.na, text.len);
	status = 0;
done:
	rdb_text_free(&text);
	rdb_index_free(&idx);
	free(rdb);
	free(rdx);
	free(rdb_path);
	free(rdx_path);
	return status;
}
