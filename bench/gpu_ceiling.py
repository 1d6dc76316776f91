#!/usr/bin/python3
"""gpu_ceiling.py — what one GPU can do at most, measured once, so that every other
figure of scripts/gpu-check.sh is also a fraction of a limit.

  gpu_ceiling.py [--n N] [--copy-mib M] [--reps R] [--device cuda:0]

Through PyTorch (cuBLAS and the CUDA runtime underneath):
  sgemm_tflops   an N x N x N fp32 GEMM with TF32 off (cublasSgemm's path: the math
                 mode shardflow's cuBLAS calls use)
  tf32_tflops    the same with TF32 on
  bf16_tflops    the same in bf16 (tensor cores, fp32 accumulation)
  d2d_gbps       a device-to-device copy of M MiB, counting bytes read plus written
Each figure is the best of R timed repetitions (after one warm-up), timed by CUDA
events. Prints one JSON line. Exit 0, or 2 when torch or a GPU is missing (with the
reason on stderr).
"""
import argparse
import json
import sys

PROG = "gpu_ceiling.py"


def best_ms(torch, fn, reps):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        best = min(best, a.elapsed_time(b))
    return best


def main(argv):
    ap = argparse.ArgumentParser(prog=PROG)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--copy-mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--device", default="cuda:0")
    a = ap.parse_args(argv)
    if a.n < 256 or a.copy_mib < 1 or a.reps < 1:
        ap.error("--n >= 256, --copy-mib >= 1, --reps >= 1")
    try:
        import torch
    except ImportError as e:
        print("%s: cannot import torch (%s)" % (PROG, e), file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("%s: torch %s sees no GPU (torch.cuda.is_available() is False)"
              % (PROG, torch.__version__), file=sys.stderr)
        return 2
    dev = torch.device(a.device)
    n = a.n
    out = dict(device=torch.cuda.get_device_name(dev), torch=torch.__version__,
               cuda=torch.version.cuda, n=n, copy_mib=a.copy_mib)
    flops = 2.0 * n * n * n
    for name, dtype, tf32 in (("sgemm", torch.float32, False), ("tf32", torch.float32, True),
                              ("bf16", torch.bfloat16, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        x = torch.randn(n, n, device=dev, dtype=dtype)
        y = torch.randn(n, n, device=dev, dtype=dtype)
        z = torch.empty(n, n, device=dev, dtype=dtype)
        ms = best_ms(torch, lambda: torch.mm(x, y, out=z), a.reps)
        out[name + "_tflops"] = round(flops / ms / 1e9, 2)
        del x, y, z
    torch.backends.cuda.matmul.allow_tf32 = False
    src = torch.empty(a.copy_mib << 20, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    ms = best_ms(torch, lambda: dst.copy_(src), a.reps)
    out["d2d_gbps"] = round(2.0 * src.numel() / ms / 1e6, 1)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
