/*
 * tmpfiles.h — the temporary directory of a test that writes files, and its clean-up.
 *
 * tmpdir_create("sf-test-x") makes $TMPDIR/sf-test-x.XXXXXX (/tmp without TMPDIR) and
 * sets tmpdir; tpath(name) is a path in it, remembered so that cleanup() removes it (a
 * file or an empty directory, made writable first in case a test took its permissions
 * away), then tmpdir itself. bail_out() ends the test with TAP's "Bail out!", status 99.
 * Header-only, as tests/tap.h is.
 */
#ifndef SF_TESTS_TMPFILES_H
#define SF_TESTS_TMPFILES_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMPFILES_MAX 64 /* paths one test may ask tpath for */

static char tmpdir[256];
static char tmpfiles[TMPFILES_MAX][320];
static int tmpfiles_n;

static inline void bail_out(const char *what)
{
	printf("Bail out! %s\n", what);
	exit(99);
}

static inline void tmpdir_create(const char *prefix)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/%s.XXXXXX", base && *base ? base : "/tmp", prefix);
	if (!mkdtemp(tmpdir)) {
		tmpdir[0] = '\0';
		bail_out("cannot create a temporary directory");
	}
}

/* A path in the temporary directory, remembered for the clean-up. */
static inline const char *tpath(const char *name)
{
	if (tmpfiles_n == TMPFILES_MAX)
		bail_out("too many test files");
	snprintf(tmpfiles[tmpfiles_n], sizeof tmpfiles[0], "%s/%s", tmpdir, name);
	return tmpfiles[tmpfiles_n++];
}

static inline void cleanup(void)
{
	for (int i = 0; i < tmpfiles_n; i++) {
		(void)chmod(tmpfiles[i], 0600);
		(void)unlink(tmpfiles[i]);
		(void)rmdir(tmpfiles[i]);
	}
	if (tmpdir[0])
		(void)rmdir(tmpdir);
}

#endif
