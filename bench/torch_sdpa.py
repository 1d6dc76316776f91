#!/usr/bin/env python3
"""torch_sdpa.py — PyTorch's fused attention (F.scaled_dot_product_attention, causal,
bf16) at the attention shapes tests/test_flash_gpu.cu --bench times shardflow's kernels
on: the forward and the backward apart, medians of 7 runs with CUDA events, and the
TFLOP/s counted as that program counts them (the causal half of the products: 2 in the
forward, 5 in the backward). Needs a GPU and PyTorch >= 2.0."""
import sys

import torch
import torch.nn.functional as F

SHAPES = [("gpt2-124M", 8, 1024, 12, 12, 64), ("llama-100m", 8, 1024, 12, 4, 64),
          ("hs128", 4, 2048, 16, 8, 128)]


def main():
    if not torch.cuda.is_available():
        print("torch_sdpa.py: no CUDA device", file=sys.stderr)
        return 1
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
          f"cuDNN {torch.backends.cudnn.version()}")
    for name, B, T, NH, NKV, hs in SHAPES:
        q = torch.randn(B, NH, T, hs, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(B, NKV, T, hs, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(B, NKV, T, hs, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        g = torch.randn(B, NH, T, hs, device="cuda", dtype=torch.bfloat16)
        tf, tb = [], []
        for it in range(9):
            e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            e0.record()
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=NKV != NH)
            e1.record()
            y.backward(g)
            e2.record()
            torch.cuda.synchronize()
            if it >= 2:
                tf.append(e0.elapsed_time(e1))
                tb.append(e1.elapsed_time(e2))
        tf.sort()
        tb.sort()
        f = 2.0 * B * NH * T * T * hs
        mf, mb = tf[len(tf) // 2], tb[len(tb) // 2]
        print(f"# torch sdpa {name} (B {B} T {T} heads {NH} kv {NKV} hs {hs}): forward "
              f"{mf:.3f} ms ({f / mf / 1e9:.1f} TFLOP/s), backward {mb:.3f} ms "
              f"({2.5 * f / mb / 1e9:.1f} TFLOP/s of 2.5x the forward's products)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
