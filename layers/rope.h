/*
 * rope.h — rotary position embedding (Su et al. 2021) in Hugging Face's rotate_half
 * layout, as Llama applies it to its queries and keys: the first `rot` columns of a
 * row are heads of d features each (d even, rot a multiple of d); at the row's
 * position t (its row within its sequence) feature pair (i, i + d/2) of every head,
 * i < d/2, is rotated by the angle t theta^(-2i/d):
 *   y[i]       = x[i] cos - x[i + d/2] sin,
 *   y[i + d/2] = x[i + d/2] cos + x[i] sin,
 * and the columns from rot on pass through (the values, when the input is a fused
 * q | k | v projection). No parameters. The forward writes the table of cos and sin
 * (T rows of d/2 pairs, angles in double, rounded to float) into its saved buffer
 * (T d floats: the cos of row t then its sin), and the backward applies the inverse
 * rotation with it: dx = R(-angle) dy.
 *
 * Shape letters: B samples, T rows per sample, W features of a row.
 */
#ifndef SF_LAYERS_ROPE_H
#define SF_LAYERS_ROPE_H

#include "shardflow.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct sf_layer_type _sf_rope_type;

/* cs (T d): the table; y (B T, W) */
void _sf_rope_fwd(int B, int T, int W, int rot, int d, float theta, const float *x, float *y,
                  float *cs);
/* The same for a sample's rows at two runs of positions (struct sf_layer_info::pos_n0:
 * row t < n0 at p0 + t, the others at p1 + t - n0; context parallelism): the table's
 * row t is row t's position's */
void _sf_rope_fwd_at(int B, int T, int W, int rot, int d, float theta, int n0, int p0, int p1,
                     const float *x, float *y, float *cs);
/* dx (B T, W) (=|+= as acc) from dy and the forward's table */
void _sf_rope_bwd(int B, int T, int W, int rot, int d, const float *cs, const float *dy, float *dx,
                  int acc);

#ifdef SF_HAVE_CUDA
/* layers/rope_cuda.cu: the same on device pointers, on the worker's CUDA stream */
void _sf_rope_fwd_cuda(int B, int T, int W, int rot, int d, float theta, const float *x, float *y,
                       float *cs);
void _sf_rope_bwd_cuda(int B, int T, int W, int rot, int d, const float *cs, const float *dy,
                       float *dx, int acc);
#endif

#ifdef __cplusplus
}
#endif

#endif
