/*
 * mix.h — the random numbers of the data order: splitmix64's finalizer, a bijection of
 * 64-bit words that spreads every input bit over the output. A stream is
 * mix64(key + k * SF_GOLDEN) for k = 1, 2, ..., so a key names all of its draws, on
 * every platform and for any world size (data/idx.c: the order of an epoch,
 * data/text.c: the windows of a batch).
 */
#ifndef SF_DATA_MIX_H
#define SF_DATA_MIX_H

#include <stdint.h>

#define SF_GOLDEN 0x9E3779B97F4A7C15ull

static inline uint64_t _sf_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The window start of global row g of batch `index` of a split, uniform in [0, count)
 * (count >= 1): data/text.c's and data/tokens.c's draw. */
static inline uint64_t _sf_window_start(uint64_t seed, int split, int64_t index, int64_t g,
                                        uint64_t count)
{
	uint64_t key =
	    _sf_mix64(_sf_mix64(_sf_mix64(_sf_mix64(seed) ^ (uint64_t)split) ^ (uint64_t)index) ^
	              (uint64_t)g);
	/* [0, accept) holds a whole number of copies of [0, count): draws above it are
	 * redrawn (rarely: fewer than count in 2^64) */
	uint64_t accept = UINT64_MAX - UINT64_MAX % count;
	for (;;) {
		uint64_t r = _sf_mix64(key += SF_GOLDEN);
		if (r < accept)
			return r % count;
	}
}

#endif
