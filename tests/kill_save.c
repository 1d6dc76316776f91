/*
 * kill_save.c — an LD_PRELOAD library that kills a rank in the middle of a checkpoint
 * save, for tests/shardflow_run.sh and tests/checkpoint_async.sh: a crash at a chosen step of an
 * unmodified program (examples/gpt), without timing.
 *
 *   SF_KILL_SAVE="R:S,..."   rank R (OMPI_COMM_WORLD_RANK) dies of SIGKILL right after
 *                            it has put its rank file of step S's checkpoint in place:
 *                            the step never completes, and a resume takes the one
 *                            before it
 *   SF_FAIL_SAVE="R:S,..."   rank R's rename of that file fails instead (EIO, nothing
 *                            renamed): a failed write, which the save reports
 *   SF_KILL_STAMPS=DIR       each R:S kills once: DIR/killed-R-S is created (O_EXCL)
 *                            first, and a run that finds it there lives on — so the run
 *                            restarted from an older step saves step S this time
 *
 * The library has no hook for this: the save renames each rank's file into its step's
 * directory (io/fileio.c's atomic write), and this rename(3) wins over libc's, as
 * tests/ckpt_driver.c's does inside that program. Without SF_KILL_SAVE it only renames.
 */
#include "tests/interpose.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The step of a path's directory named step-<digits>[.tmp] whose file is rank-*, or
 * -1. */
static long long rank_file_step(const char *to)
{
	const char *base = strrchr(to, '/'), *dir;
	if (!base || strncmp(base + 1, "rank-", 5))
		return -1;
	for (dir = base; dir > to && dir[-1] != '/'; dir--)
		;
	if (strncmp(dir, "step-", 5) || !strchr("0123456789", dir[5]) || !dir[5])
		return -1;
	return strtoll(dir + 5, NULL, 10);
}

/* Whether the variable `var` (SF_KILL_SAVE, SF_FAIL_SAVE) names (rank, step) and its
 * stamp was not there yet. */
static int armed(const char *var, long rank, long long step)
{
	const char *spec = getenv(var), *stamps = getenv("SF_KILL_STAMPS");
	char path[4096];
	long r;
	long long s;
	int used;
	for (const char *p = spec; p && sscanf(p, " %ld:%lld%n", &r, &s, &used) == 2;
	     p += used + (p[used] == ',')) {
		if (r != rank || s != step)
			continue;
		if (!stamps)
			return 1;
		snprintf(path, sizeof path, "%s/killed-%ld-%lld", stamps, r, s);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			return 0;
		close(fd);
		return 1;
	}
	return 0;
}

SF_INTERPOSE int rename(const char *from, const char *to)
{
	const char *rank = getenv("OMPI_COMM_WORLD_RANK");
	long long step = rank ? rank_file_step(to) : -1;
	if (step >= 0 && armed("SF_FAIL_SAVE", atol(rank), step)) {
		fprintf(stderr, "kill_save: rank %s fails renaming %s\n", rank, to);
		errno = EIO;
		return -1;
	}
	int r = sf_real_rename(from, to);
	if (r == 0 && step >= 0 && armed("SF_KILL_SAVE", atol(rank), step)) {
		fprintf(stderr, "kill_save: rank %s killed after writing %s\n", rank, to);
		raise(SIGKILL);
	}
	return r;
}
