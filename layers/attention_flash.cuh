/*
 * attention_flash.cuh — fused causal attention on the tensor cores in bf16 (nvcc only):
 * the forward and backward of layers/attention.h without a T x T buffer, FlashAttention's
 * way (tiles of 64 queries by 64 keys kept in shared memory, an online softmax), the
 * products bf16 x bf16 with fp32 accumulation (WMMA 16 x 16 x 16 fragments), the softmax,
 * its statistics and every sum in fp32. Inputs and outputs stay fp32 (the layer's
 * buffers): a tile is rounded to bf16 as it is loaded.
 *
 * The layout is the layer's: qkv (B*T, C + 2 NKV hs) with q, then NKV key heads, then NKV
 * value heads; y (B*T, C); the saved statistics (B, NH, T, 2) as the cuBLAS plan's, the
 * row's max m of the scaled scores and the inverse of its sum, so P = exp(s - m) inv.
 *
 * The backward is deterministic (no atomics): one kernel per key tile accumulates dK and
 * dV over the tile's query heads (head order) and query tiles, another per query tile
 * accumulates dQ over its key tiles; D = rowsum(dY Y) per query row and head (the
 * softmax backward's rowsum(dP P), since Y = P V) comes from a first small kernel. Both
 * recompute S and P from the statistics; the dQ kernel computes dP again, two products
 * more than FlashAttention-2's atomics, for one answer whatever the schedule.
 *
 * Serves head sizes that are multiples of 16 up to 128 and buffers aligned to 16 bytes
 * with a width divisible by 4 (sf_flash_supported); the launcher falls back to the cuBLAS
 * plan otherwise.
 */
#ifndef SF_LAYERS_ATTENTION_FLASH_CUH
#define SF_LAYERS_ATTENTION_FLASH_CUH

#include "common/cuda_mma.cuh"

#include <math.h>
#include <stdint.h>

#define SF_FLASH_TILE 64   /* queries and keys a tile */
#define SF_FLASH_WARPS 4   /* 16 rows of the tile each */
#define SF_FLASH_THREADS (32 * SF_FLASH_WARPS)
#define SF_FLASH_SLD (SF_FLASH_TILE + 4) /* fp32 score tiles' leading dimension */
#define SF_FLASH_PLD (SF_FLASH_TILE + 8) /* bf16 probability tiles' */

/* whether the fused kernels serve this shape and these buffers */
static inline bool sf_flash_supported(int hs, int W, const void *qkv, const void *y,
                                      const void *dy, const void *dqkv)
{
	if (hs < 16 || hs > 128 || hs % 16 || W % 4)
		return false;
	const void *p[4] = {qkv, y, dy, dqkv};
	for (int i = 0; i < 4; i++)
		if (p[i] && ((uintptr_t)p[i] % 16))
			return false;
	return true;
}

namespace sf_flash
{
using namespace nvcuda;
typedef __nv_bfloat16 bf16;
typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> frag_b;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> frag_bt;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

/* the problem; a head's columns in the qkv, y rows */
struct shape {
	int B, T, C, NH, NKV, hs, W; /* W = C + 2 NKV hs */
	float scale;                 /* 1 / sqrt(hs) */
	__device__ size_t row(int b, int t) const
	{
		return (size_t)b * T + t;
	}
	__device__ int qcol(int h) const
	{
		return h * hs;
	}
	__device__ int kcol(int g) const
	{
		return C + g * hs;
	}
	__device__ int vcol(int g) const
	{
		return C + NKV * hs + g * hs;
	}
	__device__ size_t stat(int b, int h, int t) const
	{
		return (((size_t)b * NH + h) * T + t) * 2;
	}
};

/* rows [t0, t0 + 64) of columns [col, col + D) of a row-major fp32 matrix (leading
 * dimension ld, rows < T valid) as bf16 into dst (leading dimension D + 8); rows past T
 * are zeros */
template <int D>
__device__ void load_tile(bf16 *dst, const float *src, size_t row0, int t0, int T, size_t ld,
                          int col)
{
	constexpr int V = D / 4; /* float4s a row */
	for (int i = threadIdx.x; i < SF_FLASH_TILE * V; i += SF_FLASH_THREADS) {
		int r = i / V, c = (i % V) * 4;
		float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
		if (t0 + r < T)
			v = *(const float4 *)(src + (row0 + r) * ld + col + c);
		__nv_bfloat162 *d = (__nv_bfloat162 *)(dst + r * (D + 8) + c);
		d[0] = __floats2bfloat162_rn(v.x, v.y);
		d[1] = __floats2bfloat162_rn(v.z, v.w);
	}
}

/* a warp's 16 rows x 64 columns of A B^T into s (leading dimension SF_FLASH_SLD): A's
 * and B's rows hold D bf16 (leading dimension D + 8) */
template <int D>
__device__ void rows_abt(float *s, const bf16 *a, const bf16 *b)
{
	frag_a fa;
	frag_bt fb;
	frag_c acc;
#pragma unroll
	for (int n = 0; n < SF_FLASH_TILE / 16; n++) {
		wmma::fill_fragment(acc, 0.0f);
#pragma unroll
		for (int k = 0; k < D / 16; k++) {
			wmma::load_matrix_sync(fa, a + k * 16, D + 8);
			wmma::load_matrix_sync(fb, b + n * 16 * (D + 8) + k * 16, D + 8);
			wmma::mma_sync(acc, fa, fb, acc);
		}
		wmma::store_matrix_sync(s + n * 16, acc, SF_FLASH_SLD, wmma::mem_row_major);
	}
}

/* acc[n] (16 x 16 column block n of a 16 x D result) += P (a warp's 16 rows x 64, bf16,
 * leading dimension SF_FLASH_PLD) X (64 rows x D, bf16, leading dimension D + 8) */
template <int D>
__device__ void rows_px(frag_c *acc, const bf16 *p, const bf16 *x)
{
	frag_a fa;
	frag_b fb;
#pragma unroll
	for (int k = 0; k < SF_FLASH_TILE / 16; k++) {
		wmma::load_matrix_sync(fa, p + k * 16, SF_FLASH_PLD);
#pragma unroll
		for (int n = 0; n < D / 16; n++) {
			wmma::load_matrix_sync(fb, x + k * 16 * (D + 8) + n * 16, D + 8);
			wmma::mma_sync(acc[n], fa, fb, acc[n]);
		}
	}
}

/* a warp's 16 x D accumulators, times f, to rows [t0, t0 + 16) (rows < T) of columns
 * [col, col + D) of the fp32 out (leading dimension ld): out = or += (acc); staged through
 * the warp's 16 x (D + 4) floats of stage */
template <int D>
__device__ void store_rows(frag_c *acc, float *stage, float f, float *out, size_t row0, int t0,
                           int T, size_t ld, int col, int acc_out)
{
	int lane = threadIdx.x & 31;
#pragma unroll
	for (int n = 0; n < D / 16; n++)
		wmma::store_matrix_sync(stage + n * 16, acc[n], D + 4, wmma::mem_row_major);
	__syncwarp();
	for (int i = lane; i < 16 * D; i += 32) {
		int r = i / D, c = i % D;
		if (t0 + r >= T)
			continue;
		float v = stage[r * (D + 4) + c] * f;
		float *o = out + (row0 + r) * ld + col + c;
		*o = acc_out ? *o + v : v;
	}
	__syncwarp();
}

/* Forward: a block per (query tile, head, sample). Warp w owns query rows 16w..16w+15; two
 * lanes a row, the even and the odd score columns (fewer bank conflicts than halves). O is kept in shared memory (fp32) so that the
 * online softmax can rescale it between tiles. */
template <int D>
__global__ void __launch_bounds__(SF_FLASH_THREADS)
    fwd_k(shape s, const float *__restrict__ qkv, float *__restrict__ y, float *__restrict__ stat)
{
	extern __shared__ __align__(16) unsigned char smem[];
	constexpr int BL = D + 8, OL = D + 4;
	bf16 *Qs = (bf16 *)smem;
	bf16 *Ks = Qs + SF_FLASH_TILE * BL;
	bf16 *Vs = Ks + SF_FLASH_TILE * BL;
	bf16 *Ps = Vs + SF_FLASH_TILE * BL;
	float *Ss = (float *)(Ps + SF_FLASH_TILE * SF_FLASH_PLD);
	float *Os = Ss + SF_FLASH_TILE * SF_FLASH_SLD;

	int qt = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
	int g = h / (s.NH / s.NKV);
	int t0 = qt * SF_FLASH_TILE;
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int rw = warp * 16 + (lane >> 1), half = lane & 1; /* this lane's row of the tile */
	int qi = t0 + rw;                                  /* and its query */

	load_tile<D>(Qs, qkv, s.row(b, t0), t0, s.T, s.W, s.qcol(h));
	for (int i = threadIdx.x; i < SF_FLASH_TILE * OL; i += SF_FLASH_THREADS)
		Os[i] = 0.0f;
	float m = -INFINITY, l = 0.0f;

	for (int kt = 0; kt <= qt; kt++) {
		int k0 = kt * SF_FLASH_TILE;
		__syncthreads(); /* every warp done with the last K, V */
		load_tile<D>(Ks, qkv, s.row(b, k0), k0, s.T, s.W, s.kcol(g));
		load_tile<D>(Vs, qkv, s.row(b, k0), k0, s.T, s.W, s.vcol(g));
		__syncthreads();
		rows_abt<D>(Ss + warp * 16 * SF_FLASH_SLD, Qs + warp * 16 * BL, Ks);
		__syncwarp();
		/* the online softmax of this lane's half row */
		float *sr = Ss + rw * SF_FLASH_SLD + half; /* columns 2c + half */
		int j0 = k0 + half;
		float mx = -INFINITY;
		for (int c = 0; c < 32; c++) {
			float v = j0 + 2 * c <= qi ? sr[2 * c] * s.scale : -INFINITY;
			sr[2 * c] = v;
			mx = fmaxf(mx, v);
		}
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
		float mn = fmaxf(m, mx); /* finite: key k0 <= qi */
		float alpha = __expf(m - mn);
		float sum = 0.0f;
		bf16 *pr = Ps + rw * SF_FLASH_PLD + half;
		for (int c = 0; c < 32; c++) {
			float p = __expf(sr[2 * c] - mn);
			sum += p;
			pr[2 * c] = __float2bfloat16(p);
		}
		sum += __shfl_xor_sync(0xffffffffu, sum, 1);
		l = l * alpha + sum;
		m = mn;
		float *orow = Os + rw * OL + half;
		for (int c = 0; c < D / 2; c++)
			orow[2 * c] *= alpha;
		__syncwarp();
		frag_c acc[D / 16];
#pragma unroll
		for (int n = 0; n < D / 16; n++)
			wmma::load_matrix_sync(acc[n], Os + warp * 16 * OL + n * 16, OL,
			                       wmma::mem_row_major);
		rows_px<D>(acc, Ps + warp * 16 * SF_FLASH_PLD, Vs);
#pragma unroll
		for (int n = 0; n < D / 16; n++)
			wmma::store_matrix_sync(Os + warp * 16 * OL + n * 16, acc[n], OL,
			                        wmma::mem_row_major);
		__syncwarp();
	}
	if (qi < s.T) {
		float inv = 1.0f / l;
		const float *orow = Os + rw * OL + half * (D / 2);
		float *yr = y + s.row(b, qi) * s.C + s.qcol(h) + half * (D / 2);
		for (int c = 0; c < D / 2; c += 4)
			*(float4 *)(yr + c) = make_float4(orow[c] * inv, orow[c + 1] * inv,
			                                  orow[c + 2] * inv, orow[c + 3] * inv);
		if (!half) {
			stat[s.stat(b, h, qi)] = m;
			stat[s.stat(b, h, qi) + 1] = inv;
		}
	}
}

/* Dd (B, NH, T) = rowsum(dY Y) over each head's hs columns: a warp a row */
__global__ void rowdot_k(shape s, const float *__restrict__ y, const float *__restrict__ dy,
                         float *__restrict__ Dd)
{
	size_t nrows = (size_t)s.B * s.NH * s.T;
	int lane = threadIdx.x & 31;
	for (size_t r = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5; r < nrows;
	     r += ((size_t)gridDim.x * blockDim.x) >> 5) {
		int t = (int)(r % s.T);
		int h = (int)((r / s.T) % s.NH);
		int b = (int)(r / ((size_t)s.T * s.NH));
		size_t o = s.row(b, t) * s.C + s.qcol(h);
		float a = 0.0f;
		for (int c = lane; c < s.hs; c += 32)
			a += y[o + c] * dy[o + c];
		for (int d = 16; d; d >>= 1)
			a += __shfl_xor_sync(0xffffffffu, a, d);
		if (!lane)
			Dd[r] = a;
	}
}

/* Backward, dK and dV: a block per (key tile, key/value head, sample); warp w owns keys
 * 16w..16w+15 of the tile. For each query head of the group, in order, and each query
 * tile at or after the key tile: S^T = K Q^T, P^T from the statistics, dV += P^T dY,
 * dP^T = V dY^T, dS^T = P^T (dP^T - D), dK += dS^T Q; dK scaled at the end. */
template <int D>
__global__ void __launch_bounds__(SF_FLASH_THREADS)
    bwd_kv_k(shape s, const float *__restrict__ qkv, const float *__restrict__ stat,
             const float *__restrict__ Dd, const float *__restrict__ dy, float *__restrict__ dqkv,
             int acc_out)
{
	extern __shared__ __align__(16) unsigned char smem[];
	constexpr int BL = D + 8;
	bf16 *Ks = (bf16 *)smem;
	bf16 *Vs = Ks + SF_FLASH_TILE * BL;
	bf16 *Qs = Vs + SF_FLASH_TILE * BL;
	bf16 *Gs = Qs + SF_FLASH_TILE * BL; /* dY */
	bf16 *Ps = Gs + SF_FLASH_TILE * BL; /* P^T, then dS^T */
	float *St = (float *)(Ps + SF_FLASH_TILE * SF_FLASH_PLD); /* S^T, then P^T */
	float *Dp = St + SF_FLASH_TILE * SF_FLASH_SLD;             /* dP^T; the final stage */
	float *Mq = Dp + SF_FLASH_TILE * SF_FLASH_SLD;             /* a query's m, inv, D */
	float *Iq = Mq + SF_FLASH_TILE;
	float *Dq = Iq + SF_FLASH_TILE;

	int kt = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
	int gs = s.NH / s.NKV;
	int k0 = kt * SF_FLASH_TILE;
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int rw = warp * 16 + (lane >> 1), half = lane & 1;
	int kj = k0 + rw; /* this lane's key */
	int nqt = (s.T + SF_FLASH_TILE - 1) / SF_FLASH_TILE;

	load_tile<D>(Ks, qkv, s.row(b, k0), k0, s.T, s.W, s.kcol(g));
	load_tile<D>(Vs, qkv, s.row(b, k0), k0, s.T, s.W, s.vcol(g));
	frag_c dk[D / 16], dv[D / 16];
#pragma unroll
	for (int n = 0; n < D / 16; n++) {
		wmma::fill_fragment(dk[n], 0.0f);
		wmma::fill_fragment(dv[n], 0.0f);
	}
	for (int r = 0; r < gs; r++) {
		int h = g * gs + r;
		for (int qt = kt; qt < nqt; qt++) {
			int q0 = qt * SF_FLASH_TILE;
			__syncthreads(); /* every warp done with the last Q, dY */
			load_tile<D>(Qs, qkv, s.row(b, q0), q0, s.T, s.W, s.qcol(h));
			load_tile<D>(Gs, dy, s.row(b, q0), q0, s.T, s.C, s.qcol(h));
			for (int i = threadIdx.x; i < SF_FLASH_TILE; i += SF_FLASH_THREADS) {
				bool in = q0 + i < s.T;
				Mq[i] = in ? stat[s.stat(b, h, q0 + i)] : 0.0f;
				Iq[i] = in ? stat[s.stat(b, h, q0 + i) + 1] : 0.0f;
				Dq[i] = in ? Dd[((size_t)b * s.NH + h) * s.T + q0 + i] : 0.0f;
			}
			__syncthreads();
			float *sr = St + rw * SF_FLASH_SLD + half; /* columns 2c + half */
			bf16 *pr = Ps + rw * SF_FLASH_PLD + half;
			rows_abt<D>(St + warp * 16 * SF_FLASH_SLD, Ks + warp * 16 * BL, Qs);
			__syncwarp();
			for (int c = 0; c < 32; c++) {
				int j = 2 * c + half, qi = q0 + j;
				/* Iq is 0 past T, so those queries add nothing */
				float p = kj <= qi ? __expf(sr[2 * c] * s.scale - Mq[j]) * Iq[j] : 0.0f;
				sr[2 * c] = p;
				pr[2 * c] = __float2bfloat16(p);
			}
			__syncwarp();
			rows_px<D>(dv, Ps + warp * 16 * SF_FLASH_PLD, Gs);
			rows_abt<D>(Dp + warp * 16 * SF_FLASH_SLD, Vs + warp * 16 * BL, Gs);
			__syncwarp();
			float *dr = Dp + rw * SF_FLASH_SLD + half;
			for (int c = 0; c < 32; c++)
				pr[2 * c] = __float2bfloat16(sr[2 * c] * (dr[2 * c] - Dq[2 * c + half]));
			__syncwarp();
			rows_px<D>(dk, Ps + warp * 16 * SF_FLASH_PLD, Qs);
		}
	}
	__syncthreads(); /* Dp becomes the stage: D + 4 <= 2 SF_FLASH_SLD floats a row */
	float *stage = St + warp * 16 * (D + 4);
	store_rows<D>(dk, stage, s.scale, dqkv, s.row(b, k0 + warp * 16), k0 + warp * 16, s.T, s.W,
	              s.kcol(g), acc_out);
	store_rows<D>(dv, stage, 1.0f, dqkv, s.row(b, k0 + warp * 16), k0 + warp * 16, s.T, s.W,
	              s.vcol(g), acc_out);
}

/* Backward, dQ: a block per (query tile, head, sample); warp w owns queries 16w..16w+15.
 * For each key tile up to the diagonal: S = Q K^T, P from the statistics, dP = dY V^T,
 * dS = P (dP - D), dQ += dS K; scaled at the end. */
template <int D>
__global__ void __launch_bounds__(SF_FLASH_THREADS)
    bwd_q_k(shape s, const float *__restrict__ qkv, const float *__restrict__ stat,
            const float *__restrict__ Dd, const float *__restrict__ dy, float *__restrict__ dqkv,
            int acc_out)
{
	extern __shared__ __align__(16) unsigned char smem[];
	constexpr int BL = D + 8;
	bf16 *Qs = (bf16 *)smem;
	bf16 *Gs = Qs + SF_FLASH_TILE * BL;
	bf16 *Ks = Gs + SF_FLASH_TILE * BL;
	bf16 *Vs = Ks + SF_FLASH_TILE * BL;
	bf16 *Ps = Vs + SF_FLASH_TILE * BL;
	float *Ss = (float *)(Ps + SF_FLASH_TILE * SF_FLASH_PLD);
	float *Dp = Ss + SF_FLASH_TILE * SF_FLASH_SLD;

	int qt = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
	int g = h / (s.NH / s.NKV);
	int q0 = qt * SF_FLASH_TILE;
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int rw = warp * 16 + (lane >> 1), half = lane & 1;
	int qi = q0 + rw;
	bool in = qi < s.T;
	float m = in ? stat[s.stat(b, h, qi)] : 0.0f;
	float inv = in ? stat[s.stat(b, h, qi) + 1] : 0.0f; /* 0: a row past T adds nothing */
	float dd = in ? Dd[((size_t)b * s.NH + h) * s.T + qi] : 0.0f;

	load_tile<D>(Qs, qkv, s.row(b, q0), q0, s.T, s.W, s.qcol(h));
	load_tile<D>(Gs, dy, s.row(b, q0), q0, s.T, s.C, s.qcol(h));
	frag_c dq[D / 16];
#pragma unroll
	for (int n = 0; n < D / 16; n++)
		wmma::fill_fragment(dq[n], 0.0f);
	for (int kt = 0; kt <= qt; kt++) {
		int k0 = kt * SF_FLASH_TILE;
		__syncthreads();
		load_tile<D>(Ks, qkv, s.row(b, k0), k0, s.T, s.W, s.kcol(g));
		load_tile<D>(Vs, qkv, s.row(b, k0), k0, s.T, s.W, s.vcol(g));
		__syncthreads();
		rows_abt<D>(Ss + warp * 16 * SF_FLASH_SLD, Qs + warp * 16 * BL, Ks);
		rows_abt<D>(Dp + warp * 16 * SF_FLASH_SLD, Gs + warp * 16 * BL, Vs);
		__syncwarp();
		float *sr = Ss + rw * SF_FLASH_SLD + half; /* columns 2c + half */
		float *dr = Dp + rw * SF_FLASH_SLD + half;
		bf16 *pr = Ps + rw * SF_FLASH_PLD + half;
		int j0 = k0 + half;
		for (int c = 0; c < 32; c++) {
			float p = j0 + 2 * c <= qi ? __expf(sr[2 * c] * s.scale - m) * inv : 0.0f;
			pr[2 * c] = __float2bfloat16(p * (dr[2 * c] - dd));
		}
		__syncwarp();
		rows_px<D>(dq, Ps + warp * 16 * SF_FLASH_PLD, Ks);
	}
	__syncthreads();
	float *stage = Ss + warp * 16 * (D + 4);
	store_rows<D>(dq, stage, s.scale, dqkv, s.row(b, q0 + warp * 16), q0 + warp * 16, s.T, s.W,
	              s.qcol(h), acc_out);
}

/* ---- v2: mma.sync m16n8k16 on registers (FlashAttention-2's layout) -----------------
 * The same math as the WMMA kernels above with the fragments' documented layouts (PTX
 * ISA, "Matrix Fragments for mma.m16n8k16"): a warp's scores stay in registers, the
 * softmax works on them (a row's four lanes combine by shuffles), and the probabilities
 * become the next product's A operand in place, so that no tile but the inputs goes
 * through shared memory. Lane l: g = l / 4 (the fragment's row, and row g + 8), t = l % 4
 * (its column pair t*2, t*2+1). Operands that the product needs as pairs along k where
 * the matrix is stored along n (V in P V; dY and Q in the backward's dV and dK; K in dQ)
 * are loaded transposed into shared memory. */
#define SF_FLASH_TLD (SF_FLASH_TILE + 8) /* transposed tiles' leading dimension (bf16) */

/* d (16 x 8, fp32) += a (16 x 16, bf16, row) b (16 x 8, bf16, col) */
__device__ __forceinline__ void mma16816(float *d, const uint32_t *a, uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
	             "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
	             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
	             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t ld32(const bf16 *p)
{
	return *(const uint32_t *)p;
}

__device__ __forceinline__ uint32_t pack2(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
	return *(uint32_t *)&v;
}

/* the A fragment of rows [r0, r0 + 16), columns [k0, k0 + 16) of a row-major bf16 tile
 * (leading dimension ld) */
__device__ __forceinline__ void frag_a_rm(uint32_t *a, const bf16 *x, int ld, int r0, int k0)
{
	int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
	a[0] = ld32(x + (r0 + g) * ld + k0 + t * 2);
	a[1] = ld32(x + (r0 + g + 8) * ld + k0 + t * 2);
	a[2] = ld32(x + (r0 + g) * ld + k0 + 8 + t * 2);
	a[3] = ld32(x + (r0 + g + 8) * ld + k0 + 8 + t * 2);
}

/* acc[nb] (16 x 8 blocks n0 + 8 nb of a 16 x (8 NB) result) += A (16 x 16 K) B, where
 * B[k][n] = y[(n0 + 8 nb + n) ld + k0 + k]: y holds B's columns as rows (K in Q K^T, or
 * any tile stored transposed) */
template <int KB, int NB>
__device__ __forceinline__ void mma_rows(float (*acc)[4], const uint32_t (*a)[4], const bf16 *y,
                                         int ld)
{
	int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
	for (int kb = 0; kb < KB; kb++)
#pragma unroll
		for (int nb = 0; nb < NB; nb++) {
			const bf16 *p = y + (nb * 8 + g) * ld + kb * 16 + t * 2;
			mma16816(acc[nb], a[kb], ld32(p), ld32(p + 8));
		}
}

/* acc[nb] += A (16 x 16 K) B, where B[k][n] = x[(kb 16 + k) ld + 8 nb + n]: B stored
 * k-major (V in P V, dY and Q in dV and dK, K in dQ), its fragments loaded transposed by
 * ldmatrix (.trans: lane l receives rows 2 (l % 4), +1 of column l / 4 of each 8 x 8
 * matrix, which is the B fragment's layout); the rows' addresses 16-byte aligned */
template <int KB, int NB>
__device__ __forceinline__ void mma_rows_k(float (*acc)[4], const uint32_t (*a)[4], const bf16 *x,
                                           int ld)
{
	int lane = threadIdx.x & 31;
#pragma unroll
	for (int kb = 0; kb < KB; kb++)
#pragma unroll
		for (int nb = 0; nb < NB; nb++) {
			/* lanes 0-7 address rows kb 16 + 0..7, lanes 8-15 rows kb 16 + 8..15 */
			const bf16 *p = x + (kb * 16 + (lane & 15)) * ld + nb * 8;
			uint32_t b0, b1, sa = (uint32_t)__cvta_generic_to_shared(p);
			asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
			             : "=r"(b0), "=r"(b1)
			             : "r"(sa));
			mma16816(acc[nb], a[kb], b0, b1);
		}
}

/* the A fragments (16 x 64, 4 of 16 x 16) of a 16 x 64 fp32 accumulator (8 blocks of 16 x 8),
 * rounded to bf16: FlashAttention-2's reuse of C's layout as A's */
__device__ __forceinline__ void acc_to_a(uint32_t (*a)[4], const float (*c)[4])
{
#pragma unroll
	for (int kb = 0; kb < SF_FLASH_TILE / 16; kb++) {
		a[kb][0] = pack2(c[2 * kb][0], c[2 * kb][1]);
		a[kb][1] = pack2(c[2 * kb][2], c[2 * kb][3]);
		a[kb][2] = pack2(c[2 * kb + 1][0], c[2 * kb + 1][1]);
		a[kb][3] = pack2(c[2 * kb + 1][2], c[2 * kb + 1][3]);
	}
}

/* rows [t0, t0 + 64) of columns [col, col + D) of a row-major fp32 matrix, transposed to
 * dst[c][r] (bf16, leading dimension SF_FLASH_TLD); rows past T are zeros */
template <int D>
__device__ void load_tile_t(bf16 *dst, const float *src, size_t row0, int t0, int T, size_t ld,
                            int col)
{
	constexpr int V = D / 4;
	for (int i = threadIdx.x; i < SF_FLASH_TILE * V; i += SF_FLASH_THREADS) {
		int r = i % SF_FLASH_TILE, c = (i / SF_FLASH_TILE) * 4;
		float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
		if (t0 + r < T)
			v = *(const float4 *)(src + (row0 + r) * ld + col + c);
		dst[(c + 0) * SF_FLASH_TLD + r] = __float2bfloat16(v.x);
		dst[(c + 1) * SF_FLASH_TLD + r] = __float2bfloat16(v.y);
		dst[(c + 2) * SF_FLASH_TLD + r] = __float2bfloat16(v.z);
		dst[(c + 3) * SF_FLASH_TLD + r] = __float2bfloat16(v.w);
	}
}

/* a warp's 16 x D fp32 accumulators (D / 8 blocks of 16 x 8), times f, to rows
 * [t0, t0 + 16) (rows < T) of columns [col, col + D) of out (leading dimension ld):
 * = or += */
template <int D>
__device__ __forceinline__ void store_acc(const float (*acc)[4], float f, float *out,
                                          size_t row0, int t0, int T, size_t ld, int col,
                                          int acc_out)
{
	int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
	for (int h = 0; h < 2; h++) {
		if (t0 + g + 8 * h >= T)
			continue;
		float *o = out + (row0 + g + 8 * h) * ld + col + t * 2;
#pragma unroll
		for (int nb = 0; nb < D / 8; nb++) {
			float2 v = make_float2(acc[nb][2 * h] * f, acc[nb][2 * h + 1] * f);
			float2 *p = (float2 *)(o + nb * 8);
			if (acc_out) {
				float2 w = *p;
				v.x += w.x, v.y += w.y;
			}
			*p = v;
		}
	}
}

/* Forward: a block per (query tile, head, sample), warp w owns queries 16w..16w+15. */
template <int D, bool LDM>
__global__ void __launch_bounds__(SF_FLASH_THREADS)
    fwd2_k(shape s, const float *__restrict__ qkv, float *__restrict__ y, float *__restrict__ stat)
{
	extern __shared__ __align__(16) unsigned char smem[];
	constexpr int BL = D + 8;
	bf16 *Qs = (bf16 *)smem;
	bf16 *Ks = Qs + SF_FLASH_TILE * BL;
	bf16 *Vt = Ks + SF_FLASH_TILE * BL; /* D x 64; with LDM, V as loaded (64 x D) */

	/* the last query tiles, which meet the most key tiles, first: no long tail */
	int qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z;
	int gh = h / (s.NH / s.NKV);
	int t0 = qt * SF_FLASH_TILE;
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int g = lane >> 2, t = lane & 3;
	int qa = t0 + warp * 16 + g; /* this lane's two queries: qa, qa + 8 */

	load_tile<D>(Qs, qkv, s.row(b, t0), t0, s.T, s.W, s.qcol(h));
	__syncthreads();
	uint32_t qf[D / 16][4];
#pragma unroll
	for (int kb = 0; kb < D / 16; kb++)
		frag_a_rm(qf[kb], Qs, BL, warp * 16, kb * 16);
	float o[D / 8][4];
#pragma unroll
	for (int nb = 0; nb < D / 8; nb++)
		o[nb][0] = o[nb][1] = o[nb][2] = o[nb][3] = 0.0f;
	float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

	for (int kt = 0; kt <= qt; kt++) {
		int k0 = kt * SF_FLASH_TILE;
		__syncthreads();
		load_tile<D>(Ks, qkv, s.row(b, k0), k0, s.T, s.W, s.kcol(gh));
		if constexpr (LDM)
			load_tile<D>(Vt, qkv, s.row(b, k0), k0, s.T, s.W, s.vcol(gh));
		else
			load_tile_t<D>(Vt, qkv, s.row(b, k0), k0, s.T, s.W, s.vcol(gh));
		__syncthreads();
		float sc[SF_FLASH_TILE / 8][4];
#pragma unroll
		for (int nb = 0; nb < SF_FLASH_TILE / 8; nb++)
			sc[nb][0] = sc[nb][1] = sc[nb][2] = sc[nb][3] = 0.0f;
		mma_rows<D / 16, SF_FLASH_TILE / 8>(sc, qf, Ks, BL);
		/* the online softmax of rows qa (e = 0, 1) and qa + 8 (e = 2, 3) */
		float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
		for (int nb = 0; nb < SF_FLASH_TILE / 8; nb++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				int key = k0 + nb * 8 + t * 2 + (e & 1);
				float v = key <= qa + 8 * (e >> 1) ? sc[nb][e] * s.scale : -INFINITY;
				sc[nb][e] = v;
				mx[e >> 1] = fmaxf(mx[e >> 1], v);
			}
		float alpha[2];
#pragma unroll
		for (int r = 0; r < 2; r++) {
			mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
			mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
			float mn = fmaxf(m[r], mx[r]); /* finite: key k0 <= the query */
			alpha[r] = __expf(m[r] - mn);
			m[r] = mn;
			l[r] *= alpha[r];
		}
#pragma unroll
		for (int nb = 0; nb < SF_FLASH_TILE / 8; nb++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				float p = __expf(sc[nb][e] - m[e >> 1]);
				sc[nb][e] = p;
				l[e >> 1] += p; /* this lane's part; the row's four lanes added at the end */
			}
#pragma unroll
		for (int nb = 0; nb < D / 8; nb++) {
			o[nb][0] *= alpha[0], o[nb][1] *= alpha[0];
			o[nb][2] *= alpha[1], o[nb][3] *= alpha[1];
		}
		uint32_t pf[SF_FLASH_TILE / 16][4];
		acc_to_a(pf, sc);
		if constexpr (LDM)
			mma_rows_k<SF_FLASH_TILE / 16, D / 8>(o, pf, Vt, BL);
		else
			mma_rows<SF_FLASH_TILE / 16, D / 8>(o, pf, Vt, SF_FLASH_TLD);
	}
	float inv[2];
#pragma unroll
	for (int r = 0; r < 2; r++) {
		l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
		l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
		inv[r] = 1.0f / l[r];
	}
#pragma unroll
	for (int nb = 0; nb < D / 8; nb++) {
		o[nb][0] *= inv[0], o[nb][1] *= inv[0];
		o[nb][2] *= inv[1], o[nb][3] *= inv[1];
	}
	store_acc<D>(o, 1.0f, y + s.qcol(h), s.row(b, t0 + warp * 16), t0 + warp * 16, s.T, s.C, 0,
	             0);
	if (t == 0)
#pragma unroll
		for (int r = 0; r < 2; r++)
			if (qa + 8 * r < s.T) {
				stat[s.stat(b, h, qa + 8 * r)] = m[r];
				stat[s.stat(b, h, qa + 8 * r) + 1] = inv[r];
			}
}

/* Backward, dK and dV: a block per (key tile, key/value head, sample), warp w owns keys
 * 16w..16w+15; the query heads of the group in order, each one's query tiles from the
 * diagonal on. */
template <int D, bool LDM>
__global__ void __launch_bounds__(SF_FLASH_THREADS)
    bwd_kv2_k(shape s, const float *__restrict__ qkv, const float *__restrict__ stat,
              const float *__restrict__ Dd, const float *__restrict__ dy,
              float *__restrict__ dqkv, int acc_out)
{
	extern __shared__ __align__(16) unsigned char smem[];
	constexpr int BL = D + 8;
	bf16 *Ks = (bf16 *)smem;
	bf16 *Vs = Ks + SF_FLASH_TILE * BL;
	bf16 *Qs = Vs + SF_FLASH_TILE * BL;
	bf16 *Gs = Qs + SF_FLASH_TILE * BL;        /* dY */
	bf16 *Qt = Gs + SF_FLASH_TILE * BL;        /* D x 64 (not with LDM) */
	bf16 *Gt = Qt + (LDM ? 0 : D * SF_FLASH_TLD); /* D x 64 (not with LDM) */
	float *Mq = (float *)(Gt + (LDM ? 0 : D * SF_FLASH_TLD)); /* a query's m, inv, D */
	float *Iq = Mq + SF_FLASH_TILE;
	float *Dq = Iq + SF_FLASH_TILE;

	int kt = blockIdx.x, gh = blockIdx.y, b = blockIdx.z;
	int gs = s.NH / s.NKV;
	int k0 = kt * SF_FLASH_TILE;
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int g = lane >> 2, t = lane & 3;
	int ka = k0 + warp * 16 + g; /* this lane's keys: ka, ka + 8 */
	int nqt = (s.T + SF_FLASH_TILE - 1) / SF_FLASH_TILE;

	load_tile<D>(Ks, qkv, s.row(b, k0), k0, s.T, s.W, s.kcol(gh));
	load_tile<D>(Vs, qkv, s.row(b, k0), k0, s.T, s.W, s.vcol(gh));
	float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
	for (int nb = 0; nb < D / 8; nb++)
#pragma unroll
		for (int e = 0; e < 4; e++)
			dk[nb][e] = dv[nb][e] = 0.0f;
	for (int r = 0; r < gs; r++) {
		int h = gh * gs + r;
		for (int qt = kt; qt < nqt; qt++) {
			int q0 = qt * SF_FLASH_TILE;
			__syncthreads();
			load_tile<D>(Qs, qkv, s.row(b, q0), q0, s.T, s.W, s.qcol(h));
			load_tile<D>(Gs, dy, s.row(b, q0), q0, s.T, s.C, s.qcol(h));
			if constexpr (!LDM) {
				load_tile_t<D>(Qt, qkv, s.row(b, q0), q0, s.T, s.W, s.qcol(h));
				load_tile_t<D>(Gt, dy, s.row(b, q0), q0, s.T, s.C, s.qcol(h));
			}
			for (int i = threadIdx.x; i < SF_FLASH_TILE; i += SF_FLASH_THREADS) {
				bool in = q0 + i < s.T;
				Mq[i] = in ? stat[s.stat(b, h, q0 + i)] : 0.0f;
				Iq[i] = in ? stat[s.stat(b, h, q0 + i) + 1] : 0.0f;
				Dq[i] = in ? Dd[((size_t)b * s.NH + h) * s.T + q0 + i] : 0.0f;
			}
			__syncthreads();
			uint32_t af[D / 16][4];
			/* S^T = K Q^T: the warp's keys against the tile's queries */
			float st[SF_FLASH_TILE / 8][4];
#pragma unroll
			for (int nb = 0; nb < SF_FLASH_TILE / 8; nb++)
				st[nb][0] = st[nb][1] = st[nb][2] = st[nb][3] = 0.0f;
#pragma unroll
			for (int kb = 0; kb < D / 16; kb++)
				frag_a_rm(af[kb], Ks, BL, warp * 16, kb * 16);
			mma_rows<D / 16, SF_FLASH_TILE / 8>(st, af, Qs, BL);
			/* P^T from the queries' statistics (Iq 0 past T: those add nothing) */
#pragma unroll
			for (int nb = 0; nb < SF_FLASH_TILE / 8; nb++)
#pragma unroll
				for (int e = 0; e < 4; e++) {
					int j = nb * 8 + t * 2 + (e & 1);
					st[nb][e] = ka + 8 * (e >> 1) <= q0 + j
					                ? __expf(st[nb][e] * s.scale - Mq[j]) * Iq[j]
					                : 0.0f;
				}
			uint32_t pf[SF_FLASH_TILE / 16][4];
			acc_to_a(pf, st);
			/* dV += P^T dY */
			if constexpr (LDM)
				mma_rows_k<SF_FLASH_TILE / 16, D / 8>(dv, pf, Gs, BL);
			else
				mma_rows<SF_FLASH_TILE / 16, D / 8>(dv, pf, Gt, SF_FLASH_TLD);
			/* dP^T = V dY^T */
			float dp[SF_FLASH_TILE / 8][4];
#pragma unroll
			for (int nb = 0; nb < SF_FLASH_TILE / 8; nb++)
				dp[nb][0] = dp[nb][1] = dp[nb][2] = dp[nb][3] = 0.0f;
#pragma unroll
			for (int kb = 0; kb < D / 16; kb++)
				frag_a_rm(af[kb], Vs, BL, warp * 16, kb * 16);
			mma_rows<D / 16, SF_FLASH_TILE / 8>(dp, af, Gs, BL);
			/* dS^T = P^T (dP^T - D) */
#pragma unroll
			for (int nb = 0; nb < SF_FLASH_TILE / 8; nb++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					dp[nb][e] = st[nb][e] * (dp[nb][e] - Dq[nb * 8 + t * 2 + (e & 1)]);
			acc_to_a(pf, dp);
			/* dK += dS^T Q */
			if constexpr (LDM)
				mma_rows_k<SF_FLASH_TILE / 16, D / 8>(dk, pf, Qs, BL);
			else
				mma_rows<SF_FLASH_TILE / 16, D / 8>(dk, pf, Qt, SF_FLASH_TLD);
		}
	}
	store_acc<D>(dk, s.scale, dqkv, s.row(b, k0 + warp * 16), k0 + warp * 16, s.T, s.W,
	             s.kcol(gh), acc_out);
	store_acc<D>(dv, 1.0f, dqkv, s.row(b, k0 + warp * 16), k0 + warp * 16, s.T, s.W,
	             s.vcol(gh), acc_out);
}

/* Backward, dQ: a block per (query tile, head, sample), warp w owns queries
 * 16w..16w+15, the key tiles up to the diagonal. */
template <int D, bool LDM>
__global__ void __launch_bounds__(SF_FLASH_THREADS)
    bwd_q2_k(shape s, const float *__restrict__ qkv, const float *__restrict__ stat,
             const float *__restrict__ Dd, const float *__restrict__ dy, float *__restrict__ dqkv,
             int acc_out)
{
	extern __shared__ __align__(16) unsigned char smem[];
	constexpr int BL = D + 8;
	bf16 *Qs = (bf16 *)smem;
	bf16 *Gs = Qs + SF_FLASH_TILE * BL;
	bf16 *Ks = Gs + SF_FLASH_TILE * BL;
	bf16 *Vs = Ks + SF_FLASH_TILE * BL;
	bf16 *Kt = Vs + SF_FLASH_TILE * BL; /* D x 64 */

	/* the last query tiles, which meet the most key tiles, first: no long tail */
	int qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z;
	int gh = h / (s.NH / s.NKV);
	int q0 = qt * SF_FLASH_TILE;
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int g = lane >> 2, t = lane & 3;
	int qa = q0 + warp * 16 + g; /* this lane's queries: qa, qa + 8 */
	float m[2], inv[2], dd[2];
#pragma unroll
	for (int r = 0; r < 2; r++) {
		bool in = qa + 8 * r < s.T;
		m[r] = in ? stat[s.stat(b, h, qa + 8 * r)] : 0.0f;
		inv[r] = in ? stat[s.stat(b, h, qa + 8 * r) + 1] : 0.0f; /* 0: adds nothing */
		dd[r] = in ? Dd[((size_t)b * s.NH + h) * s.T + qa + 8 * r] : 0.0f;
	}

	load_tile<D>(Qs, qkv, s.row(b, q0), q0, s.T, s.W, s.qcol(h));
	load_tile<D>(Gs, dy, s.row(b, q0), q0, s.T, s.C, s.qcol(h));
	__syncthreads();
	uint32_t qf[D / 16][4], gf[D / 16][4];
#pragma unroll
	for (int kb = 0; kb < D / 16; kb++) {
		frag_a_rm(qf[kb], Qs, BL, warp * 16, kb * 16);
		frag_a_rm(gf[kb], Gs, BL, warp * 16, kb * 16);
	}
	float dq[D / 8][4];
#pragma unroll
	for (int nb = 0; nb < D / 8; nb++)
		dq[nb][0] = dq[nb][1] = dq[nb][2] = dq[nb][3] = 0.0f;
	for (int kt = 0; kt <= qt; kt++) {
		int k0 = kt * SF_FLASH_TILE;
		__syncthreads();
		load_tile<D>(Ks, qkv, s.row(b, k0), k0, s.T, s.W, s.kcol(gh));
		load_tile<D>(Vs, qkv, s.row(b, k0), k0, s.T, s.W, s.vcol(gh));
		if constexpr (!LDM)
			load_tile_t<D>(Kt, qkv, s.row(b, k0), k0, s.T, s.W, s.kcol(gh));
		__syncthreads();
		float sc[SF_FLASH_TILE / 8][4], dp[SF_FLASH_TILE / 8][4];
#pragma unroll
		for (int nb = 0; nb < SF_FLASH_TILE / 8; nb++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				sc[nb][e] = dp[nb][e] = 0.0f;
		mma_rows<D / 16, SF_FLASH_TILE / 8>(sc, qf, Ks, BL);
		mma_rows<D / 16, SF_FLASH_TILE / 8>(dp, gf, Vs, BL);
#pragma unroll
		for (int nb = 0; nb < SF_FLASH_TILE / 8; nb++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				int r = e >> 1, key = k0 + nb * 8 + t * 2 + (e & 1);
				float p = key <= qa + 8 * r ? __expf(sc[nb][e] * s.scale - m[r]) * inv[r] : 0.0f;
				dp[nb][e] = p * (dp[nb][e] - dd[r]);
			}
		uint32_t pf[SF_FLASH_TILE / 16][4];
		acc_to_a(pf, dp);
		if constexpr (LDM)
			mma_rows_k<SF_FLASH_TILE / 16, D / 8>(dq, pf, Ks, BL);
		else
			mma_rows<SF_FLASH_TILE / 16, D / 8>(dq, pf, Kt, SF_FLASH_TLD);
	}
	store_acc<D>(dq, s.scale, dqkv, s.row(b, q0 + warp * 16), q0 + warp * 16, s.T, s.W,
	             s.qcol(h), acc_out);
}

static inline size_t fwd2_smem(int D, bool ldm)
{
	size_t v = ldm ? SF_FLASH_TILE * (D + 8) : D * SF_FLASH_TLD;
	return sizeof(bf16) * (2 * SF_FLASH_TILE * (D + 8) + v);
}
static inline size_t bwd_kv2_smem(int D, bool ldm)
{
	return sizeof(bf16) * (4 * SF_FLASH_TILE * (D + 8) + (ldm ? 0 : 2 * D * SF_FLASH_TLD)) +
	       sizeof(float) * 3 * SF_FLASH_TILE;
}
static inline size_t bwd_q2_smem(int D, bool ldm)
{
	return sizeof(bf16) * (4 * SF_FLASH_TILE * (D + 8) + (ldm ? 0 : D * SF_FLASH_TLD));
}

/* shared memory of each kernel for head size D */
static inline size_t fwd_smem(int D)
{
	return sizeof(bf16) * (3 * SF_FLASH_TILE * (D + 8) + SF_FLASH_TILE * SF_FLASH_PLD) +
	       sizeof(float) * (SF_FLASH_TILE * SF_FLASH_SLD + SF_FLASH_TILE * (D + 4));
}
static inline size_t bwd_kv_smem(int D)
{
	return sizeof(bf16) * (4 * SF_FLASH_TILE * (D + 8) + SF_FLASH_TILE * SF_FLASH_PLD) +
	       sizeof(float) * (2 * SF_FLASH_TILE * SF_FLASH_SLD + 3 * SF_FLASH_TILE);
}
static inline size_t bwd_q_smem(int D)
{
	return sizeof(bf16) * (4 * SF_FLASH_TILE * (D + 8) + SF_FLASH_TILE * SF_FLASH_PLD) +
	       sizeof(float) * (2 * SF_FLASH_TILE * SF_FLASH_SLD);
}

/* the kernels: 1, the WMMA ones (scores through shared memory); 2, the mma.sync ones
 * (scores in registers) with transposed tiles loaded from global memory; 3, the same
 * with those operands read from the row-major tiles by ldmatrix.trans (the default) */
template <int D>
static cudaError_t fwd_launch(int impl, const shape &s, const float *qkv, float *y, float *stat,
                              cudaStream_t st)
{
	size_t sm = impl == 1 ? fwd_smem(D) : fwd2_smem(D, impl == 3);
	const void *k = impl == 1   ? (const void *)fwd_k<D>
	                : impl == 2 ? (const void *)fwd2_k<D, false>
	                            : (const void *)fwd2_k<D, true>;
	cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
	if (e != cudaSuccess)
		return e;
	dim3 grid((s.T + SF_FLASH_TILE - 1) / SF_FLASH_TILE, s.NH, s.B);
	if (impl == 1)
		fwd_k<D><<<grid, SF_FLASH_THREADS, sm, st>>>(s, qkv, y, stat);
	else if (impl == 2)
		fwd2_k<D, false><<<grid, SF_FLASH_THREADS, sm, st>>>(s, qkv, y, stat);
	else
		fwd2_k<D, true><<<grid, SF_FLASH_THREADS, sm, st>>>(s, qkv, y, stat);
	return cudaGetLastError();
}

template <int D>
static cudaError_t bwd_launch(int impl, const shape &s, const float *qkv, const float *stat,
                              const float *Dd, const float *dy, float *dqkv, int acc,
                              cudaStream_t st)
{
	size_t sk = impl == 1 ? bwd_kv_smem(D) : bwd_kv2_smem(D, impl == 3);
	size_t sq = impl == 1 ? bwd_q_smem(D) : bwd_q2_smem(D, impl == 3);
	const void *kk = impl == 1   ? (const void *)bwd_kv_k<D>
	                 : impl == 2 ? (const void *)bwd_kv2_k<D, false>
	                             : (const void *)bwd_kv2_k<D, true>;
	const void *kq = impl == 1   ? (const void *)bwd_q_k<D>
	                 : impl == 2 ? (const void *)bwd_q2_k<D, false>
	                             : (const void *)bwd_q2_k<D, true>;
	cudaError_t e = cudaFuncSetAttribute(kk, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sk);
	if (e == cudaSuccess)
		e = cudaFuncSetAttribute(kq, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sq);
	if (e != cudaSuccess)
		return e;
	int nt = (s.T + SF_FLASH_TILE - 1) / SF_FLASH_TILE;
	dim3 gk(nt, s.NKV, s.B), gq(nt, s.NH, s.B);
	if (impl == 1)
		bwd_kv_k<D><<<gk, SF_FLASH_THREADS, sk, st>>>(s, qkv, stat, Dd, dy, dqkv, acc);
	else if (impl == 2)
		bwd_kv2_k<D, false><<<gk, SF_FLASH_THREADS, sk, st>>>(s, qkv, stat, Dd, dy, dqkv, acc);
	else
		bwd_kv2_k<D, true><<<gk, SF_FLASH_THREADS, sk, st>>>(s, qkv, stat, Dd, dy, dqkv, acc);
	e = cudaGetLastError();
	if (e != cudaSuccess)
		return e;
	if (impl == 1)
		bwd_q_k<D><<<gq, SF_FLASH_THREADS, sq, st>>>(s, qkv, stat, Dd, dy, dqkv, acc);
	else if (impl == 2)
		bwd_q2_k<D, false><<<gq, SF_FLASH_THREADS, sq, st>>>(s, qkv, stat, Dd, dy, dqkv, acc);
	else
		bwd_q2_k<D, true><<<gq, SF_FLASH_THREADS, sq, st>>>(s, qkv, stat, Dd, dy, dqkv, acc);
	return cudaGetLastError();
}
} // namespace sf_flash

static inline sf_flash::shape sf_flash_shape(int B, int T, int C, int NH, int NKV)
{
	sf_flash::shape s;
	s.B = B, s.T = T, s.C = C, s.NH = NH, s.NKV = NKV, s.hs = C / NH;
	s.W = C + 2 * NKV * s.hs;
	s.scale = 1.0f / sqrtf((float)s.hs);
	return s;
}

/* y, stat = the fused forward (sf_flash_supported must hold); a CUDA error or cudaSuccess.
 * impl: 3 (the default), 2, 1: the kernel sets above (tests/test_flash_gpu checks each) */
static inline cudaError_t sf_flash_fwd(int B, int T, int C, int NH, int NKV, const float *qkv,
                                       float *y, float *stat, cudaStream_t st, int impl = 3)
{
	sf_flash::shape s = sf_flash_shape(B, T, C, NH, NKV);
	switch (s.hs) {
	case 16: return sf_flash::fwd_launch<16>(impl, s, qkv, y, stat, st);
	case 32: return sf_flash::fwd_launch<32>(impl, s, qkv, y, stat, st);
	case 48: return sf_flash::fwd_launch<48>(impl, s, qkv, y, stat, st);
	case 64: return sf_flash::fwd_launch<64>(impl, s, qkv, y, stat, st);
	case 80: return sf_flash::fwd_launch<80>(impl, s, qkv, y, stat, st);
	case 96: return sf_flash::fwd_launch<96>(impl, s, qkv, y, stat, st);
	case 112: return sf_flash::fwd_launch<112>(impl, s, qkv, y, stat, st);
	case 128: return sf_flash::fwd_launch<128>(impl, s, qkv, y, stat, st);
	}
	return cudaErrorInvalidValue;
}

/* dqkv (= | += as acc) = the fused backward from the forward's y and stat; Dd is a
 * device scratch of B NH T floats */
static inline cudaError_t sf_flash_bwd(int B, int T, int C, int NH, int NKV, const float *qkv,
                                       const float *y, const float *stat, const float *dy,
                                       float *dqkv, int acc, float *Dd, cudaStream_t st,
                                       int impl = 3)
{
	sf_flash::shape s = sf_flash_shape(B, T, C, NH, NKV);
	size_t rows = (size_t)B * NH * T;
	unsigned blocks = (unsigned)((rows * 32 + 255) / 256);
	if (blocks > 4096)
		blocks = 4096;
	sf_flash::rowdot_k<<<blocks, 256, 0, st>>>(s, y, dy, Dd);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		return e;
	switch (s.hs) {
	case 16: return sf_flash::bwd_launch<16>(impl, s, qkv, stat, Dd, dy, dqkv, acc, st);
	case 32: return sf_flash::bwd_launch<32>(impl, s, qkv, stat, Dd, dy, dqkv, acc, st);
	case 48: return sf_flash::bwd_launch<48>(impl, s, qkv, stat, Dd, dy, dqkv, acc, st);
	case 64: return sf_flash::bwd_launch<64>(impl, s, qkv, stat, Dd, dy, dqkv, acc, st);
	case 80: return sf_flash::bwd_launch<80>(impl, s, qkv, stat, Dd, dy, dqkv, acc, st);
	case 96: return sf_flash::bwd_launch<96>(impl, s, qkv, stat, Dd, dy, dqkv, acc, st);
	case 112: return sf_flash::bwd_launch<112>(impl, s, qkv, stat, Dd, dy, dqkv, acc, st);
	case 128: return sf_flash::bwd_launch<128>(impl, s, qkv, stat, Dd, dy, dqkv, acc, st);
	}
	return cudaErrorInvalidValue;
}

#endif
