/*
 * interpose.h — the test programs' interposers: a definition of a libc or OpenBLAS
 * function in the program, found before the library's by the dynamic linker, that
 * does the test's part (crash, stop) around the real one.
 *
 * SF_INTERPOSE marks the definition with default visibility: the build hides symbols,
 * and a hidden definition would not interpose the library's for libshardflow.
 * SF_NEXT(ptr, "name") resolves the next definition (the real one) into ptr once.
 */
#ifndef SF_TESTS_INTERPOSE_H
#define SF_TESTS_INTERPOSE_H

#ifndef _GNU_SOURCE
#error "tests/interpose.h needs _GNU_SOURCE (RTLD_NEXT) defined before any include"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#define SF_INTERPOSE __attribute__((visibility("default")))
#define SF_NEXT(ptr, name)                                                                 \
	do {                                                                                   \
		if (!(ptr))                                                                        \
			*(void **)&(ptr) = dlsym(RTLD_NEXT, (name));                                   \
	} while (0)

/* libc's rename, for an interposed rename (ENOSYS if it cannot be found) */
static inline int sf_real_rename(const char *from, const char *to)
{
	static int (*real)(const char *, const char *);
	SF_NEXT(real, "rename");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(from, to);
}

#endif
