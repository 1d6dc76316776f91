/*
 * mpi_wait.h — waiting for MPI requests without spinning.
 *
 * Shared by the comm worker (comm/comm_mpi.c) and bench/ring_bw.c, so that the
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
#include <stdbool.h>
#include <time.h>

#ifdef SF_SIMULATION
/* In simulated time (sim/comm_sim.c) a nap is simulated time that the wait adds to
 * the collective: short, and between polls the rank's actor serves the other
 * actor's operation: the proxy plugs that in here (NULL: nothing to serve), so that
 * comm/ calls nothing of sim/ (defined in comm/comm_mpi.c) */
#define SF_NAP_MIN_NS 1000L
#define SF_NAP_MAX_NS 128000L
extern void (*_sf_wait_serve)(void);
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

/* The naps of one wait: after a poll that completed `got` requests (0: none), how
 * long to sleep, or SF_WAIT_TIMEOUT when nothing completed for `timeout` seconds. */
struct _sf_napper {
	long nap, mean;
	struct timespec last;
	double pace, timeout;
};

static inline void _sf_napper_init(struct _sf_napper *w, double pace, double timeout)
{
	w->nap = SF_NAP_MIN_NS;
	w->mean = 0;
	w->pace = pace;
	w->timeout = timeout;
	clock_gettime(CLOCK_MONOTONIC, &w->last);
}

/* Sleeps after a poll that completed `got` requests; SF_WAIT_TIMEOUT or 0. */
static inline int _sf_napper_sleep(struct _sf_napper *w, int got)
{
	struct timespec now;
	if (got == 0 && w->timeout > 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (_sf_ns_between(&w->last, &now) > (long)(w->timeout * 1e9))
			return SF_WAIT_TIMEOUT;
	}
	if (got > 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long each = _sf_ns_between(&w->last, &now) / got;
		w->last = now;
		w->mean = w->mean ? (3 * w->mean + each) / 4 : each;
		w->nap = w->pace > 0 ? (long)(w->pace * (double)w->mean) : SF_NAP_MIN_NS;
		if (w->nap < SF_NAP_MIN_NS)
			w->nap = SF_NAP_MIN_NS;
		if (w->nap > SF_NAP_MAX_NS)
			w->nap = SF_NAP_MAX_NS;
	} else {
		w->nap = 2 * w->nap < SF_NAP_MAX_NS ? 2 * w->nap : SF_NAP_MAX_NS;
	}
#ifdef SF_SIMULATION
	if (_sf_wait_serve)
		_sf_wait_serve();
#endif
	struct timespec ts = {0, w->nap};
	nanosleep(&ts, NULL);
	return 0;
}

/* Waits for the n requests; idx: n ints of scratch. Returns MPI_Testsome's error,
 * SF_WAIT_TIMEOUT when no request completed for `timeout` seconds (0: wait forever),
 * or MPI_SUCCESS once every request has completed. */
static inline int _sf_wait_all(int n, MPI_Request *req, int *idx, double pace, double timeout)
{
	int left = n, got = 0;
	struct _sf_napper w;
	_sf_napper_init(&w, pace, timeout);
	for (;;) {
		int rc = MPI_Testsome(n, req, &got, idx, MPI_STATUSES_IGNORE);
		if (rc != MPI_SUCCESS)
			return rc;
		if (got == MPI_UNDEFINED || (left -= got) == 0)
			return MPI_SUCCESS;
		if (_sf_napper_sleep(&w, got) == SF_WAIT_TIMEOUT)
			return SF_WAIT_TIMEOUT;
	}
}

/* What a ring step does with each piece as it arrives (elements [off, off + len) of
 * rbuf), while the later pieces are on the wire: a reduce-scatter's sums. */
typedef void (*_sf_piece_fn)(void *ctx, size_t off, size_t len);

/*
 * One ring step: S elements of `type` (esize bytes each: floats, or bf16 as
 * MPI_UINT16_T) from sbuf to rank `next`, S from rank `prev` into rbuf, cut into
 * pieces of at most `piece` elements (0: one message). A sliding window: up to
 * SF_RING_WINDOW pieces are in flight each way, and each piece that completes makes
 * room for the next one at once, so the sockets never drain between batches of
 * pieces. Pieces of one step match in order (same tag and peers; receives and sends
 * are each posted in piece order). on_recv (NULL: none) runs on each received piece,
 * in the order they complete. Waited for with naps (_sf_napper; timeout as
 * _sf_wait_all's). Returns the first MPI error, SF_WAIT_TIMEOUT, or MPI_SUCCESS.
 */
static inline int _sf_ring_exchange_fn(MPI_Comm comm, int next, int prev, int tag, const void *sbuf,
                                       void *rbuf, size_t S, MPI_Datatype type, size_t esize,
                                       size_t piece, double pace, double timeout,
                                       _sf_piece_fn on_recv, void *ctx)
{
	MPI_Request req[2 * SF_RING_WINDOW]; /* [0, W): receives, [W, 2W): sends */
	size_t at[2 * SF_RING_WINDOW];       /* each request's piece (its first element) */
	int idx[2 * SF_RING_WINDOW], rc, got = 2 * SF_RING_WINDOW;
	const char *sb = sbuf;
	char *rb = rbuf;
	if (piece == 0)
		piece = S ? S : 1;
	size_t npieces = (S + piece - 1) / piece, nrecv = 0, nsend = 0, done = 0;
	for (int i = 0; i < got; i++) {
		req[i] = MPI_REQUEST_NULL;
		idx[i] = i;
	}
	struct _sf_napper w;
	_sf_napper_init(&w, pace, timeout);
	/* The first pass fills every slot; after it, the slots Testsome found complete
	 * are done with their piece and take the next one of their direction. */
	for (bool filling = true;; filling = false) {
		for (int j = 0; j < got; j++) {
			int i = idx[j];
			bool recv = i < SF_RING_WINDOW;
			if (!filling) {
				done++;
				if (recv && on_recv)
					on_recv(ctx, at[i], S - at[i] < piece ? S - at[i] : piece);
			}
			size_t *posted = recv ? &nrecv : &nsend;
			if (*posted == npieces)
				continue;
			size_t off = at[i] = (*posted)++ * piece;
			int len = (int)(S - off < piece ? S - off : piece);
			rc = recv
			         ? MPI_Irecv(rb + off * esize, len, type, prev, tag, comm, &req[i])
			         : MPI_Isend(sb + off * esize, len, type, next, tag, comm, &req[i]);
			if (rc != MPI_SUCCESS)
				return rc;
		}
		if (done == 2 * npieces)
			return MPI_SUCCESS;
		if (!filling && _sf_napper_sleep(&w, got) == SF_WAIT_TIMEOUT)
			return SF_WAIT_TIMEOUT;
		rc = MPI_Testsome(2 * SF_RING_WINDOW, req, &got, idx, MPI_STATUSES_IGNORE);
		if (rc != MPI_SUCCESS)
			return rc;
		if (got == MPI_UNDEFINED) /* cannot happen while pieces are left */
			return MPI_SUCCESS;
	}
}

/* The same without work on the pieces (an all-gather's step). */
static inline int _sf_ring_exchange(MPI_Comm comm, int next, int prev, int tag, const void *sbuf,
                                    void *rbuf, size_t S, MPI_Datatype type, size_t esize,
                                    size_t piece, double pace, double timeout)
{
	return _sf_ring_exchange_fn(comm, next, prev, tag, sbuf, rbuf, S, type, esize, piece, pace,
	                            timeout, NULL, NULL);
}

#endif
