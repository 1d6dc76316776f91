/*
 * synthetic.h — deterministic synthetic classification data for examples and tests.
 *
 * Every number is a pure function of (seed, step, global row, column): a counter-based
 * generator (splitmix64's finaliser chained over the coordinates) rather than a
 * stream. So a rank generates exactly its own rows of global batch `step` without
 * generating anyone else's, and the global batches are the same for every world size
 * — which is what lets an N-rank run be compared against a 1-rank run.
 *
 * Inputs x ~ U(-1, 1) of width D. Labels are argmax over C classes of a fixed random
 * "teacher" linear map T (C, D), itself drawn from the seed: the classes are linearly
 * separable, so any of our models can learn them and the loss must fall.
 *
 * Header-only (static functions): the examples and tests that include it need no
 * extra library. Shape letters: D input width, C classes, rows of the batch.
 */
#ifndef SF_EXAMPLES_SYNTHETIC_H
#define SF_EXAMPLES_SYNTHETIC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Streams keep the teacher and the inputs independent even when their coordinates
 * coincide. */
enum { SF_SYNTH_STREAM_X = 1, SF_SYNTH_STREAM_TEACHER = 2 };

/* splitmix64's output function: a bijective mix of 64 bits. */
static inline uint64_t sf_synth_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The 64 random bits at coordinates (seed, stream, a, b, c): each coordinate is folded
 * in after a full mix of the previous ones, so nearby coordinates are unrelated. */
static inline uint64_t sf_synth_bits(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b,
                                     uint64_t c)
{
	uint64_t h = sf_synth_mix(seed);
	h = sf_synth_mix(h ^ stream);
	h = sf_synth_mix(h ^ a);
	h = sf_synth_mix(h ^ b);
	return sf_synth_mix(h ^ c);
}

/* A float uniform in [-1, 1): 24 random bits, so the value is exact in a float and
 * the same on every machine. */
static inline float sf_synth_uniform(uint64_t bits)
{
	return (float)(bits >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

/* Element (row, col) of global batch `step`: x ~ U(-1, 1). */
static inline float sf_synth_x(uint64_t seed, int64_t step, int64_t row, int col)
{
	return sf_synth_uniform(
	    sf_synth_bits(seed, SF_SYNTH_STREAM_X, (uint64_t)step, (uint64_t)row, (uint64_t)col));
}

/* Element (c, d) of the teacher map T (C, D): it depends on the seed only. */
static inline float sf_synth_teacher(uint64_t seed, int c, int d)
{
	return sf_synth_uniform(
	    sf_synth_bits(seed, SF_SYNTH_STREAM_TEACHER, (uint64_t)c, (uint64_t)d, 0));
}

/*
 * Fills rows [first_row, first_row + rows) of global batch `step`:
 * x (rows, D) row-major and labels (rows), labels[r] = argmax_c (T x_r)[c] (ties go to
 * the lowest class; the score is summed in double in a fixed order so every rank
 * agrees). labels may be NULL. Returns 0, or -1 on bad sizes or if the teacher
 * cannot be allocated.
 */
static inline int sf_synth_rows(uint64_t seed, int64_t step, int first_row, int rows, int D, int C,
                                float *x, int32_t *labels)
{
	if (first_row < 0 || rows < 0 || D <= 0 || C <= 0 || (rows > 0 && !x))
		return -1;
	for (int r = 0; r < rows; r++)
		for (int d = 0; d < D; d++)
			x[(size_t)r * D + d] = sf_synth_x(seed, step, (int64_t)first_row + r, d);
	if (!labels || rows == 0)
		return 0;
	float *t = malloc(sizeof(float) * (size_t)C * (size_t)D); /* (C, D) */
	if (!t)
		return -1;
	for (int c = 0; c < C; c++)
		for (int d = 0; d < D; d++)
			t[(size_t)c * D + d] = sf_synth_teacher(seed, c, d);
	for (int r = 0; r < rows; r++) {
		const float *xr = x + (size_t)r * D;
		int best = 0;
		double best_score = 0.0;
		for (int c = 0; c < C; c++) {
			const float *tc = t + (size_t)c * D;
			double s = 0.0;
			for (int d = 0; d < D; d++)
				s += (double)tc[d] * (double)xr[d];
			if (c == 0 || s > best_score) {
				best = c;
				best_score = s;
			}
		}
		labels[r] = best;
	}
	free(t);
	return 0;
}

#endif /* SF_EXAMPLES_SYNTHETIC_H */
