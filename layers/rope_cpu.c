/* rope_cpu.c — the rotary embedding and its gradient on plain pointers
 * (layers/rope.h), rows from layers/rope_math.h. */
#include "layers/rope.h"
#include "layers/rope_math.h"

void _sf_rope_fwd(int B, int T, int W, int rot, int d, float theta, const float *x, float *y,
                  float *cs)
{
	_sf_rope_fwd_at(B, T, W, rot, d, theta, T, 0, 0, x, y, cs);
}

void _sf_rope_fwd_at(int B, int T, int W, int rot, int d, float theta, int n0, int p0, int p1,
                     const float *x, float *y, float *cs)
{
	int h = d / 2;
	for (int t = 0; t < T; t++) {
		int pos = t < n0 ? p0 + t : p1 + (t - n0);
		for (int i = 0; i < h; i++)
			sf_rope_cs(pos, i, d, theta, &cs[(size_t)t * d + i],
			           &cs[(size_t)t * d + h + i]);
	}
	for (size_t r = 0; r < (size_t)B * T; r++)
		sf_rope_row(W, rot, d, cs + (r % T) * d, 1.0f, x + r * W, y + r * W, 0);
}

void _sf_rope_bwd(int B, int T, int W, int rot, int d, const float *cs, const float *dy, float *dx,
                  int acc)
{
	for (size_t r = 0; r < (size_t)B * T; r++)
		sf_rope_row(W, rot, d, cs + (r % T) * d, -1.0f, dy + r * W, dx + r * W, acc);
}
