#!/usr/bin/env python3
"""trace_top.py — where a traced run's time goes, by task kind and op.

    bench/trace_top.py [--skip-steps K] [--top N] PREFIX.rank0.json [PREFIX.rank1.json ...]

Reads the built-in trace of SHARDFLOW_TRACE=PREFIX (docs/tracing.md) and prints, for
the steps after the first K (default 1: the first step carries allocation and
calibration), one row per (kind, op) — "fwd attention", "bwd linear", "gather",
"optimizer", ... — with its task count, total time, share of the summed task time,
mean and longest task (ms), and the rates it achieved over its summed time (the flops
its tasks were submitted with, TFLOP/s, and their buffers' bytes, GB/s: against a
device's ceilings, how far each op is from its roofline), largest first, then the
steps' wall time; then, for each
worker, its busy and idle time over those steps, and the compute workers' idle gaps
grouped by the task that ended each gap (a GPU idle between tasks: the host-side cost of what came next —
its submission, its data's allocation or transfer, a wait — or a dependency).

A task's time is StarPU's start-to-end of the codelet. On a GPU the codelets are
asynchronous: the end is when the stream's work for the task completed, so a task
queued behind another one's kernels counts part of that wait; the shares are a guide
to which ops cost most, not a kernel profile (ncu gives that).
Exit status: 0, 1 on an unreadable or empty trace, 2 on bad usage.
"""
import argparse
import math
import re
import sys

from sf_trace import load_events


# a task's name: "<kind> <node> (<type> L<n>)" or "<kind> <unit> (L<n>)" (trace/event.h)
NAME = re.compile(r"(\S+) .+ \((?:(.+) )?L\d+\)$", re.S)


def sig3(x):
    """x > 0 in 8 columns, fixed point, 3 significant digits (at most 6 decimals)"""
    d = min(6, max(0, 2 - math.floor(math.log10(x))))
    return f"{x:8.{d}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="+", help="PREFIX.rankN.json files of SHARDFLOW_TRACE")
    ap.add_argument("--skip-steps", type=int, default=1, metavar="K",
                    help="leave out the first K steps, 1 .. K (default 1)")
    ap.add_argument("--top", type=int, default=30, metavar="N", help="rows printed (default 30)")
    a = ap.parse_args()
    if a.skip_steps < 0 or a.top < 1:
        ap.error("--skip-steps must be >= 0 and --top >= 1")

    rows = {}
    steps = {}
    total = 0.0
    names = {}  # (path, pid, tid) -> the worker's name
    tasks = {}  # (path, pid, tid) -> [(start, end, key)] in ms
    for path in a.traces:
        events = load_events(path, "trace_top.py")
        if events is None:
            return 1
        for e in events:
            if e.get("ph") == "M" and e.get("name") == "thread_name":
                names[(path, e.get("pid"), e.get("tid"))] = e.get("args", {}).get("name", "")
            if e.get("ph") != "X":
                continue
            args = e.get("args", {})
            step = args.get("step", 0)  # from 1, as the progress lines count
            if step <= a.skip_steps:
                continue
            kind = args.get("kind", "?")
            # "fwd fc1 (linear L2)" -> "fwd linear"; "gather block3 (L4)" -> "gather";
            # the node's name ends at the last " (" (docs/profiling.md)
            name = e.get("name", "?")
            m = NAME.match(name)
            op = (m.group(1) + (" " + m.group(2) if m.group(2) else "")) if m else name
            key = op if op.startswith(kind) else f"{kind} {op}"
            dur = float(e.get("dur", 0.0)) / 1000.0  # us -> ms
            ts = float(e.get("ts", 0.0)) / 1000.0
            r = rows.setdefault(key, [0, 0.0, 0.0, 0.0, 0.0])
            r[0] += 1
            r[1] += dur
            r[2] = max(r[2], dur)
            r[3] += float(args.get("flops", 0) or 0)  # traces before 2026-11-27 lack them
            r[4] += float(args.get("bytes", 0) or 0)
            total += dur
            tasks.setdefault((path, e.get("pid"), e.get("tid")), []).append((ts, ts + dur, key))
            s = steps.setdefault((path, step), [ts, ts + dur])
            s[0] = min(s[0], ts)
            s[1] = max(s[1], ts + dur)
    if not rows:
        print(f"trace_top.py: no task after step {a.skip_steps} in {', '.join(a.traces)}",
              file=sys.stderr)
        return 1

    print(f"{'kind and op':<28} {'tasks':>7} {'total ms':>10} {'share':>6} {'mean ms':>9} "
          f"{'max ms':>9} {'TFLOP/s':>8} {'GB/s':>8}")
    for key, (n, t, mx, fl, by) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:a.top]:
        # achieved rates over the row's summed time: flops and buffer bytes per second
        tf = sig3(fl / (t * 1e-3) / 1e12) if fl > 0 and t > 0 else f"{'-':>8}"
        gb = sig3(by / (t * 1e-3) / 1e9) if by > 0 and t > 0 else f"{'-':>8}"
        print(f"{key:<28} {n:>7} {t:>10.3f} {t / total:>6.1%} {t / n:>9.4f} {mx:>9.4f} {tf} {gb}")
    walls = [s[1] - s[0] for s in steps.values()]
    walls.sort()
    print(f"{'all tasks':<28} {sum(r[0] for r in rows.values()):>7} {total:>10.3f}")
    print(f"steps {a.skip_steps + 1}.. ({len(walls)} rank-steps): wall ms median "
          f"{walls[len(walls) // 2]:.3f}, min {walls[0]:.3f}, max {walls[-1]:.3f} "
          f"(first task's start to last task's end)")

    # idle time: a worker's gaps between its tasks (the union of their intervals)
    print()
    print(f"{'worker':<28} {'tasks':>7} {'busy ms':>10} {'idle ms':>10} {'idle':>6}")
    gaps = {}  # (worker, key of the task ending the gap) -> [count, total, max]
    for w, ts_ in sorted(tasks.items(), key=lambda kv: (kv[0][0], str(kv[0][1]), str(kv[0][2]))):
        ts_.sort()
        busy, end = 0.0, ts_[0][0]
        label = f"rank {w[1]} " + (names.get(w) or f"worker {w[2]}")
        for start, stop, key in ts_:
            if start > end and "(comm)" not in label:  # a comm worker waits by design
                g = gaps.setdefault((label, key), [0, 0.0, 0.0])
                g[0] += 1
                g[1] += start - end
                g[2] = max(g[2], start - end)
            busy += max(0.0, stop - max(start, end))
            end = max(end, stop)
        span = end - ts_[0][0]
        idle = span - busy
        print(f"{label:<28} {len(ts_):>7} {busy:>10.3f} {idle:>10.3f} "
              f"{(idle / span if span > 0 else 0.0):>6.1%}")
    if gaps:
        print()
        print(f"{'compute workers: idle gaps, by the task after':<44} {'gaps':>6} {'total ms':>10} "
              f"{'mean ms':>9} {'max ms':>9}")
        for (label, key), (n, t, mx) in sorted(gaps.items(), key=lambda kv: -kv[1][1])[:a.top]:
            what = f"{label}: {key}"
            print(f"{what:<44} {n:>6} {t:>10.3f} {t / n:>9.4f} {mx:>9.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
