/* read.c — _sf_data_read_file and _sf_llmc_header_check (data/read.h). */
#include "data/read.h"
#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK ((size_t)1 << 30) /* bytes per read() */

/* Reads exactly n bytes of fd into buf. */
static int read_exact(int fd, uint8_t *buf, size_t n, const char *what, const char *path)
{
	size_t got = 0;
	while (got < n) {
		size_t want = n - got < READ_CHUNK ? n - got : READ_CHUNK;
		ssize_t r = read(fd, buf + got, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return SF_ERR(SF_ERR_IO, "cannot read %s %s: %s", what, path,
			              strerror(errno));
		if (r == 0)
			return SF_ERR(SF_ERR_IO,
			              "%s %s shrank while being read: %zu of its %zu bytes", what,
			              path, got, n);
		got += (size_t)r;
	}
	return SF_OK;
}

int _sf_data_read_file(const char *path, const char *what, int64_t max, uint8_t **bytes, size_t *n)
{
	struct stat st;
	int rc = SF_OK;
	*bytes = NULL;
	*n = 0;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below) */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return SF_ERR(SF_ERR_IO, "cannot open %s %s: %s", what, path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = SF_ERR(SF_ERR_IO, "cannot stat %s %s: %s", what, path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = SF_ERR(SF_ERR_IO, "cannot read %s %s: it is a directory", what, path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = SF_ERR(SF_ERR_IO,
		            "cannot read %s %s: not a regular file (a device, FIFO or socket); a "
		            "dataset is read from a file of known size",
		            what, path);
		goto fail;
	}
	if (st.st_size == 0) {
		rc = SF_ERR(SF_ERR_IO, "%s %s is empty: a dataset needs its bytes", what, path);
		goto fail;
	}
	if ((int64_t)st.st_size > max) {
		rc = SF_ERR(
		    SF_ERR_IO,
		    "%s %s has %lld bytes: more than the %lld (%g GiB) a dataset reads into "
		    "memory",
		    what, path, (long long)st.st_size, (long long)max, (double)max / (1 << 30));
		goto fail;
	}
	size_t len = (size_t)st.st_size;
	uint8_t *buf = malloc(len);
	if (!buf) {
		rc = SF_ERR(SF_ERR_NOMEM, "cannot allocate %zu bytes to read %s %s", len, what,
		            path);
		goto fail;
	}
	rc = read_exact(fd, buf, len, what, path);
	if (rc == SF_OK && close(fd) != 0)
		rc = SF_ERR(SF_ERR_IO, "cannot close %s %s: %s", what, path, strerror(errno));
	fd = -1;
	if (rc < 0) {
		free(buf);
		goto fail;
	}
	*bytes = buf;
	*n = len;
	return SF_OK;
fail:
	if (fd >= 0)
		(void)close(fd);
	return rc;
}

int _sf_llmc_header_check(const uint8_t *b, size_t n, uint32_t magic, const char *what,
                          const char *path, const char *kind, const char *layout)
{
	if (_sf_llmc_has_magic(b, n, magic))
		return SF_OK;
	char why[64];
	if (n < SF_LLMC_HEADER_BYTES)
		snprintf(why, sizeof why, "shorter than its %d-byte header", SF_LLMC_HEADER_BYTES);
	else
		snprintf(why, sizeof why, "no magic %u at its start", (unsigned)magic);
	return SF_ERR(SF_ERR_INVALID, "%s %s is not %s: %s (%s, the first the magic %u)", what,
	              path, kind, why, layout, (unsigned)magic);
}
