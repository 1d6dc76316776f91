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

#endif
