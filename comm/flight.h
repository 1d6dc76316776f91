/*
 * flight.h — the flight record: each rank's last N communication operations, kept
 * in memory and written out when the job ends on a failed or stalled collective, so
 * that one can see which rank was behind and what each was doing (PyTorch's answer
 * is the NCCL Flight Recorder, off by default; this one is on: a mutex and two clock
 * reads a collective).
 *
 * Two channels, each numbered in the order every rank issues its operations: the
 * step's collectives (submitted by the main thread, run one at a time by the comm
 * worker in submission order: the comm-order handle) and the host-side ones
 * (barriers, broadcasts, gathers, agreements, on the calling thread). The k-th
 * operation of a channel is the same collective on every rank, so the ranks' counts
 * of completed operations say who is behind.
 *
 * An entry: channel, its number there, name (the task's: "gather transformer.h.3
 * (L34)", or "broadcast of 8 bytes from rank 0"), bytes, times (submitted, started,
 * ended; seconds of CLOCK_REALTIME, comparable across the ranks of a machine) and
 * state. A run is paired with its submission by `key` (the collective's argument
 * block): the oldest queued entry of that key is the one running, since collectives
 * of one key run in the order they were submitted.
 *
 * Written to <dir>/flight-rank-K.json (a file per rank, whole or not at all) by
 * _sf_flight_dump; _sf_flight_blame reads the others' files and says which rank was
 * behind. docs/robustness.md shows a record and how to read it.
 */
#ifndef SF_COMM_FLIGHT_H
#define SF_COMM_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

enum _sf_flight_channel { SF_FLIGHT_STEP, SF_FLIGHT_HOST, SF_FLIGHT_NCHANNELS };
enum _sf_flight_state { SF_FLIGHT_QUEUED, SF_FLIGHT_RUNNING, SF_FLIGHT_DONE, SF_FLIGHT_FAILED };

struct _sf_flight;

/* A record of the last `cap` operations (cap 0: *out = NULL, nothing recorded; every
 * call below accepts a NULL record). key: a number the job's ranks share, written in
 * the files so that a stale file of an earlier job is not read as this one's. */
int _sf_flight_create(int cap, int rank, int size, uint64_t key, struct _sf_flight **out);
void _sf_flight_destroy(struct _sf_flight *f);

/* A collective submitted (step channel): queued until _sf_flight_start. */
void _sf_flight_submit(struct _sf_flight *f, const void *key, const char *name, double bytes);
/* A collective starts: the oldest queued entry of `key` (or a new one named `name`
 * when the record has overwritten it); returns its id for _sf_flight_end. */
int64_t _sf_flight_start(struct _sf_flight *f, enum _sf_flight_channel ch, const void *key,
                         const char *name, double bytes);
void _sf_flight_end(struct _sf_flight *f, int64_t id, int ok);

/* The directory the record is written to (a checkpoint directory, a trace prefix's
 * directory); "" or never set: $TMPDIR, else /tmp. */
void _sf_flight_set_dir(struct _sf_flight *f, const char *dir);

/* Writes this rank's record (reason: why the job ends) to <dir>/flight-rank-K.json
 * and returns SF_OK, the path in `path` (n bytes). */
int _sf_flight_dump(struct _sf_flight *f, const char *reason, char *path, size_t n);

/* After this rank's dump: waits up to `grace` seconds for the other ranks' files of
 * this job, then writes into msg (n bytes) which rank is behind on channel ch (the
 * one this rank is stuck in) and in which operation, and which ranks wrote no record
 * (stopped, dead or cut off). */
void _sf_flight_blame(struct _sf_flight *f, enum _sf_flight_channel ch, double grace, char *msg,
                      size_t n);

#endif
