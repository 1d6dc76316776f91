#!/usr/bin/python3
"""torch_ddp.py — the PyTorch side of "shardflow's step vs PyTorch".

Trains the MLP of examples/mlp_synthetic (input -> [linear -> relu]* -> linear ->
softmax cross-entropy; widths from --widths) with torch.distributed over gloo, on
synthetic data of the same shapes (x ~ U(-1, 1), random labels: the values do not
matter for timing). The global batch --batch is split over the ranks as evenly as
possible (the first batch % ranks ranks get one row more).

  --mode ddp   DistributedDataParallel, replicated optimizer (like SHARDFLOW_SHARDING=none)
  --mode zero  DistributedDataParallel + ZeroRedundancyOptimizer: optimizer state
               sharded, updated parameters broadcast after the step (ZeRO-1)

Debian's python3-torch 1.13 has FSDP, but it does not run on CPU, hence these two.

Run under Open MPI's mpirun (bench/torch_ddp.sh does it): rank and world size come
from OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE (else RANK / WORLD_SIZE, else a
single rank); the rendezvous is MASTER_ADDR:MASTER_PORT (options, else environment,
else 127.0.0.1 and a port derived from the Open MPI job id, so that concurrent jobs
do not collide). One CPU thread per rank.

Each rank times --warmup untimed steps, then --steps steps, each with
time.perf_counter() around zero_grad + forward + backward + optimizer step, with no
barrier inside or between the timed steps (DDP's backward waits for its all-reduce
and ZeRO's step for its broadcasts, so communication is inside the time). Then the
ranks reduce their results, and rank 0 prints one JSON line on stdout:

  framework, mode, ranks, batch, widths, optimizer, warmup, steps,
  step_ms (rank 0's, in order), median_ms / min_ms / max_ms (of step_ms),
  step_ms_slowest (per step, the max over ranks), median_ms_slowest,
  peak_rss_mb (ru_maxrss, max over ranks),
  param_state_mb (parameters + gradients + optimizer state held by one rank,
  computed from the tensors; max over ranks), with its parts param_mb, grad_mb,
  opt_state_mb. DDP's gradient buckets (another copy of the gradients unless
  --grad-as-bucket-view) are not counted in param_state_mb but are in the RSS.

Bad options print the usage on stderr and exit with status 2.
"""
import argparse
import gc
import json
import os
import resource
import statistics
import sys
import time

PROG = "torch_ddp.py"


def positive_int(s):
    try:
        v = int(s, 10)
    except ValueError:
        raise argparse.ArgumentTypeError('"%s" is invalid: expected a positive integer' % s)
    if v <= 0:
        raise argparse.ArgumentTypeError('"%s" is invalid: expected a positive integer' % s)
    return v


def nonneg_int(s):
    try:
        v = int(s, 10)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError('"%s" is invalid: expected a non-negative integer' % s)
    return v


def port(s):
    try:
        v = int(s, 10)
    except ValueError:
        v = 0
    if not 1 <= v <= 65535:
        raise argparse.ArgumentTypeError('"%s" is invalid: expected a port from 1 to 65535' % s)
    return v


def widths(s):
    try:
        w = [int(t, 10) for t in s.split(",")]
    except ValueError:
        w = []
    if len(w) < 2 or any(v <= 0 for v in w):
        raise argparse.ArgumentTypeError(
            '"%s" is invalid: expected at least 2 comma-separated positive integers '
            "(input,...,classes)" % s)
    return w


def positive_float(s):
    try:
        v = float(s)
    except ValueError:
        v = -1.0
    if not (v > 0.0 and v <= 1e6):
        raise argparse.ArgumentTypeError('"%s" is invalid: expected a positive number' % s)
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Time DDP / DDP+ZeroRedundancyOptimizer steps of the mlp_synthetic "
        "MLP on CPU ranks (gloo). Rank 0 prints one JSON line.")
    p.add_argument("--mode", choices=("ddp", "zero"), default="ddp",
                   help="ddp: DistributedDataParallel; zero: DDP + ZeroRedundancyOptimizer (default ddp)")
    p.add_argument("--widths", type=widths, default=[784, 1024, 1024, 1024, 10],
                   help="input,hidden...,classes (default 784,1024,1024,1024,10)")
    p.add_argument("--batch", type=positive_int, default=64,
                   help="global rows per step, split over the ranks (default 64)")
    p.add_argument("--steps", type=positive_int, default=20, help="timed steps (default 20)")
    p.add_argument("--warmup", type=nonneg_int, default=3,
                   help="untimed steps before them (default 3)")
    p.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd",
                   help="sgd (momentum 0.9) or adamw (default sgd)")
    p.add_argument("--lr", type=positive_float, default=None,
                   help="learning rate (default 0.1 for sgd, 0.001 for adamw)")
    p.add_argument("--seed", type=nonneg_int, default=1, help="seed of weights and data (default 1)")
    p.add_argument("--master-addr", default=None,
                   help="rendezvous address (default $MASTER_ADDR, else 127.0.0.1)")
    p.add_argument("--master-port", type=port, default=None,
                   help="rendezvous port (default $MASTER_PORT, else derived from the Open MPI job id)")
    p.add_argument("--ifname", default=None,
                   help="network interface gloo uses (sets GLOO_SOCKET_IFNAME; e.g. lo, or sf0 "
                   "under scripts/cluster.sh)")
    p.add_argument("--grad-as-bucket-view", action="store_true",
                   help="DDP(gradient_as_bucket_view=True): gradients live in the buckets (no copy)")
    p.add_argument("--timeout", type=positive_int, default=300,
                   help="seconds for the rendezvous and each collective (default 300)")
    # argparse prints the usage and exits with status 2 on a bad option
    a = p.parse_args(argv)
    if a.lr is None:
        a.lr = 1e-3 if a.optimizer == "adamw" else 0.1
    return a


def env_int(names, default):
    for n in names:
        v = os.environ.get(n)
        if v is not None and v != "":
            try:
                return int(v, 10)
            except ValueError:
                sys.exit("%s: error: %s=\"%s\" is not an integer" % (PROG, n, v))
    return default


def default_port():
    # Every rank of one mpirun sees the same job id; its upper 16 bits (the job
    # family) are a hash of mpirun's pid and host, so concurrent jobs differ.
    jobid = env_int(["OMPI_MCA_ess_base_jobid"], 0)
    return 20000 + (jobid >> 16) % 30000 if jobid else 29500


def tensors_bytes(ts):
    return sum(t.numel() * t.element_size() for t in ts if t is not None)


def optimizer_state_bytes(opt):
    import torch
    n = 0
    for st in opt.state.values():
        for v in st.values():
            if torch.is_tensor(v):
                n += v.numel() * v.element_size()
    return n


def main(argv):
    a = parse_args(argv)
    rank = env_int(["OMPI_COMM_WORLD_RANK", "RANK"], 0)
    world = env_int(["OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"], 1)
    if world < 1 or not 0 <= rank < world:
        sys.exit("%s: error: rank %d of %d is invalid" % (PROG, rank, world))
    if a.batch < world:
        print("%s: error: --batch %d is smaller than the %d ranks" % (PROG, a.batch, world),
              file=sys.stderr)
        return 2
    addr = a.master_addr or os.environ.get("MASTER_ADDR") or "127.0.0.1"
    mport = a.master_port or env_int(["MASTER_PORT"], 0) or default_port()
    os.environ["MASTER_ADDR"] = addr
    os.environ["MASTER_PORT"] = str(mport)
    if a.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = a.ifname
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    try:
        import torch
    except ImportError:
        print("%s: error: cannot import torch: install Debian's python3-torch "
              "(apt-get install -y python3-torch) and run /usr/bin/python3" % PROG, file=sys.stderr)
        return 1
    import datetime
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.manual_seed(a.seed)

    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=a.timeout))

    # input(D) -> [linear -> relu]* -> linear(C); same initial weights on every rank
    layers = []
    w = a.widths
    for i in range(1, len(w)):
        layers.append(nn.Linear(w[i - 1], w[i]))
        if i < len(w) - 1:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    ddp = DDP(model, gradient_as_bucket_view=a.grad_as_bucket_view)
    loss_fn = nn.CrossEntropyLoss()

    if a.optimizer == "sgd":
        opt_class, opt_kw = torch.optim.SGD, dict(lr=a.lr, momentum=0.9)
    else:
        opt_class, opt_kw = torch.optim.AdamW, dict(lr=a.lr, weight_decay=0.0)
    if a.mode == "zero":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=opt_class, **opt_kw)
        local_opt = opt.optim  # the optimizer of this rank's shard: its state is the rank's
    else:
        opt = opt_class(ddp.parameters(), **opt_kw)
        local_opt = opt

    # This rank's rows of the global batch, a few distinct batches made beforehand.
    D, C = w[0], w[-1]
    rows = a.batch // world + (1 if rank < a.batch % world else 0)
    g = torch.Generator().manual_seed(a.seed * 1000003 + rank)
    nbatches = 4
    xs = [torch.rand(rows, D, generator=g) * 2 - 1 for _ in range(nbatches)]
    ys = [torch.randint(0, C, (rows,), generator=g) for _ in range(nbatches)]

    def step(k):
        opt.zero_grad(set_to_none=False)
        out = ddp(xs[k % nbatches])
        loss = loss_fn(out, ys[k % nbatches])
        loss.backward()
        opt.step()
        return loss

    for k in range(a.warmup):
        step(k)
    times = []
    for k in range(a.steps):
        t0 = time.perf_counter()
        loss = step(a.warmup + k)
        t1 = time.perf_counter()
        times.append((t1 - t0) * 1e3)
    final_loss = float(loss.item())

    params = list(model.parameters())
    param_b = tensors_bytes(params)
    grad_b = tensors_bytes([p.grad for p in params])
    opt_b = optimizer_state_bytes(local_opt)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux

    # After the timed steps: per-step max over ranks, and the maxima of the rest.
    t_max = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t_max, op=dist.ReduceOp.MAX)
    mem = torch.tensor([rss_mb, param_b + grad_b + opt_b, param_b, grad_b, opt_b],
                       dtype=torch.float64)
    dist.all_reduce(mem, op=dist.ReduceOp.MAX)

    if rank == 0:
        MB = 1024.0 * 1024.0
        slowest = t_max.tolist()
        res = {
            "framework": "torch",
            "torch": torch.__version__,
            "mode": a.mode,
            "ranks": world,
            "batch": a.batch,
            "widths": w,
            "optimizer": a.optimizer,
            "params": sum(p.numel() for p in params),
            "warmup": a.warmup,
            "steps": a.steps,
            "step_ms": [round(t, 3) for t in times],
            "median_ms": round(statistics.median(times), 3),
            "min_ms": round(min(times), 3),
            "max_ms": round(max(times), 3),
            "step_ms_slowest": [round(t, 3) for t in slowest],
            "median_ms_slowest": round(statistics.median(slowest), 3),
            "peak_rss_mb": round(mem[0].item(), 1),
            "param_state_mb": round(mem[1].item() / MB, 3),
            "param_mb": round(mem[2].item() / MB, 3),
            "grad_mb": round(mem[3].item() / MB, 3),
            "opt_state_mb": round(mem[4].item() / MB, 3),
            "final_loss": round(final_loss, 6),
        }
        print(json.dumps(res), flush=True)

    # Teardown. With torch 1.13 and gloo, letting Python free the DDP module after
    # (or without) destroy_process_group() can deadlock: ~Reducer drops the last
    # reference to the process group and joins its worker threads while holding the
    # GIL, and a worker that frees a tensor with a Python object waits for the GIL
    # (seen here: rank 0 hung after printing, its TCPStore thread spinning at 100 %
    # CPU once the peer had gone). So: free the model's C++ side while the group is
    # still registered, make sure every rank is past every collective, and leave
    # without running the process group's or the interpreter's destructors.
    del opt, local_opt, ddp
    gc.collect()
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
