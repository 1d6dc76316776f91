/*
 * kernels.h — the numerical kernels behind shardflow's built-in codelets.
 *
 * Plain C on plain pointers: no StarPU, no MPI, so tests can call them directly
 * against finite differences. Codelets in tasks/ unpack StarPU buffers and call
 * these. The rule for outputs: activations and parameter gradients are
 * overwritten ("="), input gradients are overwritten or accumulated ("+=") as the
 * `acc` flag says, because a node read by several consumers sums their gradients.
 *
 * Shape letters: B rows, I input width, O output width, C classes, n elements.
 */
#ifndef SF_TASKS_KERNELS_H
#define SF_TASKS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* y (B,O) = x (B,I) w^T (O,I) + b (O) */
void _sf_linear_fwd(int B, int I, int O, const float *x, const float *w, const float *b, float *y);
/* dx (B,I) (=|+=) dy (B,O) w (O,I); dw (O,I) = dy^T x; db (O) = sum_rows dy.
 * dx may be NULL (input needs no gradient). */
void _sf_linear_bwd(int B, int I, int O, const float *x, const float *w, const float *dy, float *dx,
                    int acc, float *dw, float *db);

void _sf_relu_fwd(size_t n, const float *x, float *y);
void _sf_relu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc);

/* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
void _sf_gelu_fwd(size_t n, const float *x, float *y);
void _sf_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc);

void _sf_add_fwd(size_t n, const float *a, const float *b, float *y);
/* d (=|+=) dy */
void _sf_pass_bwd(size_t n, const float *dy, float *d, int acc);

/* Softmax cross-entropy over rows: returns scale * sum_rows -log softmax(z)[label]
 * (in double) and writes dz (B,C) = scale * (softmax(z) - onehot(label)).
 * Labels must lie in [0, C) (checked by the caller). */
double _sf_softmax_xent(int B, int C, const float *z, const int32_t *labels, float scale,
                        float *dz);

/* SGD with momentum and L2 weight decay (PyTorch's formulation):
 *   g' = g + wd p;  buf = mu buf + g';  p -= lr buf
 * buf starts at zero, so the first step gives buf = g' exactly. */
void _sf_sgd(size_t n, float *p, const float *g, float *buf, float lr, float mu, float wd);

/* AdamW (decoupled weight decay), step t >= 1:
 *   p -= lr wd p;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   p -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) */
void _sf_adamw(size_t n, float *p, const float *g, float *m, float *v, float lr, float b1, float b2,
               float eps, float wd, int64_t t);

#endif
