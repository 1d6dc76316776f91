/*
 * mpi_wait.h — waiting for MPI requests without spinning.
 *
 * Shared by the comm worker (tasks/comm_mpi.c) and bench/ring_bw.c, so that the
 * benchmark measures the library's own waiting. A blocking MPI wait busy-polls, and on
 * a rank that has one core for its compute and comm workers the poller takes that
 * core from the compute worker. Instead each poll (MPI_Testsome) drives MPI's
 * progress and the thread sleeps in between:
 *
 *   - after a poll that completed requests, SF_NAP_MIN_NS; or, with pace > 0, pace
 *     times the mean time between completions seen so far in this wait (an
 *     exponential average), at least SF_NAP_MIN_NS: over a 1 Gbit/s link a 60 KiB
 *     piece takes ~0.5 ms, and a 20 us nap wakes the thread many times per piece;
 *   - after a poll that completed nothing, twice the last nap, up to SF_NAP_MAX_NS
 *     (e.g. a late peer that has not entered the collective yet: 16 times fewer
 *     polls than a fixed 20 us nap).
 */
#ifndef SF_MPI_WAIT_H
#define SF_MPI_WAIT_H

#include <mpi.h>
#include <time.h>

#define SF_NAP_MIN_NS 20000L  /* shortest nap between polls */
#define SF_NAP_MAX_NS 320000L /* longest nap */
/* The comm worker's pace: 0, the plain policy. Pace 0.5 cut the comm worker's CPU
 * from ~21 to ~13 ms per step of the 1 Gbit/s cluster benchmark but made the
 * comm-bound step (batch 256) 6 % slower and left the compute-bound one (batch 1024)
 * unchanged (3 alternating runs each); bench/ring_bw --pace measures it. */
#define SF_COMM_PACE 0.0

static inline long _sf_ns_between(const struct timespec *a, const struct timespec *b)
{
	return (long)(b->tv_sec - a->tv_sec) * 1000000000L + (b->tv_nsec - a->tv_nsec);
}

/* Waits for the n requests; idx: n ints of scratch. Returns MPI_Testsome's error, or
 * MPI_SUCCESS once every request has completed. */
static inline int _sf_wait_all(int n, MPI_Request *req, int *idx, double pace)
{
	int left = n, got = 0;
	long nap = SF_NAP_MIN_NS, mean = 0;
	struct timespec last, now;
	clock_gettime(CLOCK_MONOTONIC, &last);
	for (;;) {
		int rc = MPI_Testsome(n, req, &got, idx, MPI_STATUSES_IGNORE);
		if (rc != MPI_SUCCESS)
			return rc;
		if (got == MPI_UNDEFINED || (left -= got) == 0)
			return MPI_SUCCESS;
		if (got > 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			long each = _sf_ns_between(&last, &now) / got;
			last = now;
			mean = mean ? (3 * mean + each) / 4 : each;
			nap = pace > 0 ? (long)(pace * (double)mean) : SF_NAP_MIN_NS;
			if (nap < SF_NAP_MIN_NS)
				nap = SF_NAP_MIN_NS;
			if (nap > SF_NAP_MAX_NS)
				nap = SF_NAP_MAX_NS;
		} else {
			nap = 2 * nap < SF_NAP_MAX_NS ? 2 * nap : SF_NAP_MAX_NS;
		}
		struct timespec ts = {0, nap};
		nanosleep(&ts, NULL);
	}
}

#endif
