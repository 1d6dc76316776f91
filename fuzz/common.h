/*
 * common.h — what the fuzz targets share: quiet errors, a private temporary directory.
 * Built by scripts/fuzz.sh only (clang -fsanitize=fuzzer,address,undefined).
 */
#ifndef SF_FUZZ_COMMON_H
#define SF_FUZZ_COMMON_H

#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Called once by every target: errors are expected, printing them is noise, unless
 * SF_FUZZ_VERBOSE is set (to see why an input is refused when replaying it). */
static void fuzz_quiet(void)
{
	_sf_err_quiet = !getenv("SF_FUZZ_VERBOSE");
}

/* A directory of this process's own, removed at exit (with the files put in it by
 * fuzz_write). */
static char fuzz_dir[256];
static char fuzz_files[4][320];
static int fuzz_nfiles;

static void fuzz_cleanup(void)
{
	for (int i = 0; i < fuzz_nfiles; i++)
		unlink(fuzz_files[i]);
	if (fuzz_dir[0])
		rmdir(fuzz_dir);
}

static const char *fuzz_tmpdir(void)
{
	if (!fuzz_dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(fuzz_dir, sizeof fuzz_dir, "%s/sf-fuzz.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(fuzz_dir)) {
			perror("mkdtemp");
			abort();
		}
		atexit(fuzz_cleanup);
	}
	return fuzz_dir;
}

/* The path of file `name` in the private directory (remembered for the cleanup). */
static const char *fuzz_path(const char *name)
{
	for (int i = 0; i < fuzz_nfiles; i++)
		if (strstr(fuzz_files[i], name) && !strcmp(strrchr(fuzz_files[i], '/') + 1, name))
			return fuzz_files[i];
	if (fuzz_nfiles == 4)
		abort();
	snprintf(fuzz_files[fuzz_nfiles], sizeof fuzz_files[0], "%s/%s", fuzz_tmpdir(), name);
	return fuzz_files[fuzz_nfiles++];
}

#endif
