/*
 * fp32_bounds.h — the float32 rounding bounds that the tests' tolerances are derived
 * from (docs/testing.md, "Tolerances"), in one place; header-only, no library code.
 *
 * Every bound is a first-order worst case in units of eps32 = 2^-24, float's unit
 * roundoff: one float operation on exact inputs errs by at most eps32 of its result
 * (round to nearest). None is measured, so none depends on the CPU or on the BLAS it
 * runs: a value that a machine computes differently (OpenBLAS picks its kernels, and
 * so the order of a dot product's sums, by CPU and by shape) stays within them.
 * Products of two eps32 terms (below 1e-5 of these) are left out.
 */
#ifndef SF_TESTS_FP32_BOUNDS_H
#define SF_TESTS_FP32_BOUNDS_H

#include <math.h>

#define SF_EPS32 0x1p-24 /* float's unit roundoff, 5.96e-8 */

/* sf_exp_poly (layers/softmax_xent_math.h) and exp_v4 (common/vec4.h, the same
 * operations): relative error against exp of the same float argument, <= 29 eps32.
 * r = x - k ln 2 is exact but for its last subtraction (0.35 eps32: |r| <= ln 2 / 2);
 * Horner's 7 steps err by at most 14 eps32 times sum |c_i| |r|^i / p(r) <= e^(2 |r|) =
 * 2 (Higham, Accuracy and Stability, (5.3)): 28 eps32; the Taylor remainder r^8 / 8!
 * is 0.18 eps32, the coefficients' rounding 0.01; scaling by 2^k is exact. */
#define SF_EXP_POLY_EPS 29.0

/* One softmax cross-entropy row of C float logits (sf_softmax_xent_row and the CPU's
 * four-lane row, its bits): the absolute error of log(sum exp(z - max)) + max - z_y,
 * in eps32, against the exact value of the same float logits. Each exponential errs by
 * SF_EXP_POLY_EPS relative, and its float argument z_c - max by eps32 |z_c - max|,
 * which moves e^(z_c - max) by at most eps32 |t| e^-|t| <= eps32 / e; the sum (in
 * double) is >= 1 (the max's own term), so log(sum) moves by at most the sum of those
 * relative errors: SF_EXP_POLY_EPS + (C - 1) / e. The sum, the log and max - z_y are in
 * double (2^-53). A mean of such rows has the same bound. */
static inline double sf_fp32_xent_row(int C)
{
	return SF_EXP_POLY_EPS + (double)(C - 1) / exp(1.0);
}

/* A chain of layers, each output within k eps32 of the exact value (same float
 * parameters and inputs) where k is relative to m, the sum of the magnitudes that
 * reach it (for a linear layer m = |W| m_in + |b|): a linear layer of K inputs (K
 * products and the bias summed in any order, Higham's gamma_(K+1)) adds K + 1 to the
 * k of its input, whose error |W| carries to at most k_in eps32 m. */
static inline double sf_fp32_linear(double k_in, int K)
{
	return k_in + (double)K + 1.0;
}

/* GELU (tanh form, layers/gelu_cpu.c: v / (1 + exp(-2u)), u = sqrt(2/pi) (v + 0.044715
 * v^3)): its slope lies in [-0.13, 1.13] (1.1290 at v = 1.42), and its own rounding,
 * against the formula in exact arithmetic, is at most 12 eps32 |v|: -2u errs by 7 eps32
 * of itself (5 operations and the two float constants, on terms of one sign), the
 * exponential by that + SF_EXP_POLY_EPS, both damped by s (1 - s) in s = 1 / (1 + e)
 * (s (1 - s) <= 1/4, |2u| s (1 - s) <= 0.224), and 1 + e, the division and v s add
 * 3 eps32: 7 x 0.224 + 29 / 4 + 3 = 11.8. |gelu(v)| <= |v|: the magnitude passes
 * through. */
static inline double sf_fp32_gelu(double k_in)
{
	return 1.13 * k_in + 12.0;
}

/* The same bound per v, before it was coarsened to 12 |v|: |v| (s (1 - s) (7 |2u| + 29)
 * + 3 s) eps32, at most 8.4 eps32 max(|gelu(v)|, 1) on any v and 15 eps32 on [-5, 5]
 * (its maximum over v, in double). GELU's derivative s + 2 v e s^2 K (1 + 3 0.044715
 * v^2) (gelu_grad_v4, sf_gelu_d): s errs by (1 - s) (7 |2u| + 29) + 2 eps32 of itself,
 * the second term T by the exponential's error, twice s's, 7 for K (1 + 3 C v^2) (4
 * operations, 3 constants) and its 4 products, and the last sum by eps32: at most
 * 36.3 eps32 max(|gelu'(v)|, 1) (at v = -1.13). */
#define SF_GELU_D_EPS 37.0

#endif
