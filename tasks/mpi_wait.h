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
 *     exponential average), at least SF_NAP_MIN_NS, because a slow link completes a
 *     piece far less often than the shortest nap;
 *   - after a poll that completed nothing, twice the last nap, up to SF_NAP_MAX_NS
 *     (a late peer that has not entered the collective yet costs few polls).
 * docs/performance.md has what each choice measured.
 *
 * _sf_ring_exchange, one step of the ring collectives, is built on it here, so that
 * the benchmark sends exactly the library's messages.
 */
#ifndef SF_MPI_WAIT_H
#define SF_MPI_WAIT_H

#include "common/clock.h"

#include <mpi.h>
#include <time.h>

#ifdef SF_SIMULATION
/* In simulated time (tasks/comm_sim.c) a nap is simulated time that the wait adds to
 * the collective: short, and between polls the rank's actor serves the other
 * actor's operation (_sf_sim_serve) */
#define SF_NAP_MIN_NS 1000L
#define SF_NAP_MAX_NS 128000L
void _sf_sim_serve(void);
#else
#define SF_NAP_MIN_NS 20000L  /* shortest nap between polls */
#define SF_NAP_MAX_NS 320000L /* longest nap */
#endif
/* The comm worker's pace: 0, the plain policy: a paced nap saved comm CPU but slowed
 * the link-bound step (docs/performance.md; bench/ring_bw --pace measures it). */
#define SF_COMM_PACE 0.0
#define SF_RING_WINDOW 64 /* ring-step pieces in flight each way */

/* _sf_wait_all's return when nothing completed for `timeout` seconds (MPI error codes
 * are >= 0). */
#define SF_WAIT_TIMEOUT (-1)

/* Waits for the n requests; idx: n ints of scratch. Returns MPI_Testsome's error,
 * SF_WAIT_TIMEOUT when no request completed for `timeout` seconds (0: wait forever),
 * or MPI_SUCCESS once every request has completed. */
static inline int _sf_wait_all(int n, MPI_Request *req, int *idx, double pace, double timeout)
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
		if (got == 0 && timeout > 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (_sf_ns_between(&last, &now) > (long)(timeout * 1e9))
				return SF_WAIT_TIMEOUT;
		}
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
#ifdef SF_SIMULATION
		_sf_sim_serve();
#endif
		struct timespec ts = {0, nap};
		nanosleep(&ts, NULL);
	}
}

/*
 * One ring step: S elements of `type` (esize bytes each: floats, or bf16 as
 * MPI_UINT16_T) from sbuf to rank `next`, S from rank `prev` into rbuf, cut into
 * pieces of at most `piece` elements (0: one message), up to SF_RING_WINDOW of them in
 * flight each way, waited for by _sf_wait_all (timeout as there). Pieces of one step
 * match in order (same tag and peers). Returns the first MPI error, or MPI_SUCCESS.
 */
static inline int _sf_ring_exchange(MPI_Comm comm, int next, int prev, int tag, const void *sbuf,
                                    void *rbuf, size_t S, MPI_Datatype type, size_t esize,
                                    size_t piece, double pace, double timeout)
{
	MPI_Request req[2 * SF_RING_WINDOW];
	int idx[2 * SF_RING_WINDOW], rc;
	const char *sb = sbuf;
	char *rb = rbuf;
	if (piece == 0)
		piece = S;
	for (size_t off = 0; off < S;) {
		int n = 0;
		for (; n < SF_RING_WINDOW && off < S; n++, off += piece) {
			int len = (int)(S - off < piece ? S - off : piece);
			rc = MPI_Irecv(rb + off * esize, len, type, prev, tag, comm, &req[2 * n]);
			if (rc != MPI_SUCCESS)
				return rc;
			rc = MPI_Isend(sb + off * esize, len, type, next, tag, comm, &req[2 * n + 1]);
			if (rc != MPI_SUCCESS)
				return rc;
		}
		rc = _sf_wait_all(2 * n, req, idx, pace, timeout);
		if (rc != MPI_SUCCESS)
			return rc;
	}
	return MPI_SUCCESS;
}

#endif
