#!/usr/bin/env python3
"""sim_calibrate.py — a calibration of the simulator's compute times from a real run.

    bench/sim_calibrate.py --peak-tflops P --bandwidth-gbs B [--device LABEL]
                           [--skip-steps K] [--out FILE] PREFIX.rank0.json [...]

Reads the built-in trace of a real run (SHARDFLOW_TRACE=PREFIX; each task's duration,
flops, buffer bytes and codelet model are in it) and the ceilings of the device it ran
on (P TFLOP/s for the products in the math the run used, B GB/s of memory: what
scripts/gpu-check.sh's speed stage measures). For each compute task of the steps after
the first K (default 1) its efficiency is its roofline time, max(flops / P, bytes / B),
over its measured time; per codelet model the file keeps the median of its tasks'
efficiencies, and "# fallback" the median over every task (for a model the run did not
have). SHARDFLOW_SIM_CALIBRATION=FILE (shardflow-sim --calibration FILE) then gives
each simulated task of that model max(flops / P, bytes / B) / efficiency: the run's
own speed, carried to other sizes and rank counts by the roofline (docs/scale.md).

Writes FILE (default stdout), tab-separated:

    # shardflow-sim calibration (bench/sim_calibrate.py)
    # device LABEL
    # peak_tflops P
    # bandwidth_gbs B
    # steps N                (steps measured, for a check of the file against its run)
    # fallback E
    model  tasks  efficiency  median_us

Exit status: 0; 1 on an unreadable trace or one without a task to calibrate from
(a trace written before 2026-11-27 has no flops, bytes or models); 2 on bad usage.
"""
import argparse
import os
import statistics
import sys

from sf_trace import load_events


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="+", help="PREFIX.rankN.json files of SHARDFLOW_TRACE")
    ap.add_argument("--peak-tflops", type=float, required=True, metavar="P",
                    help="the device's measured product ceiling in the run's math, TFLOP/s")
    ap.add_argument("--bandwidth-gbs", type=float, required=True, metavar="B",
                    help="the device's measured memory bandwidth, GB/s")
    ap.add_argument("--device", default="", metavar="LABEL",
                    help="where the run was measured (the file's '# device' line)")
    ap.add_argument("--skip-steps", type=int, default=1, metavar="K",
                    help="leave out the first K steps, 1 .. K (default 1: allocation and "
                         "warm-up)")
    ap.add_argument("--out", metavar="FILE", help="the calibration file (default stdout)")
    a = ap.parse_args()
    if not (a.peak_tflops > 0 and a.bandwidth_gbs > 0) or a.skip_steps < 0:
        ap.error("--peak-tflops and --bandwidth-gbs must be positive, --skip-steps >= 0")
    if "\n" in a.device:
        ap.error("--device must be one line")

    peak, bw = a.peak_tflops * 1e12, a.bandwidth_gbs * 1e9
    per_model = {}  # model -> ([efficiency], [duration us])
    steps = set()
    for path in a.traces:
        events = load_events(path, "sim_calibrate.py")
        if events is None:
            return 1
        for e in events:
            if e.get("ph") != "X" or e.get("cat") != "compute":
                continue
            args = e.get("args", {})
            step = args.get("step", 0)  # from 1, as the progress lines count
            model = args.get("model", "")
            if step <= a.skip_steps or not model:
                continue
            flops = float(args.get("flops", 0) or 0)
            nbytes = float(args.get("bytes", 0) or 0)
            dur = float(e.get("dur", 0.0))  # us
            ideal = max(flops / peak, nbytes / bw) * 1e6
            if ideal <= 0 or dur <= 0:
                continue  # nothing to scale: no flops counted and no buffer
            steps.add((path, step))
            eff, durs = per_model.setdefault(model, ([], []))
            eff.append(ideal / dur)
            durs.append(dur)
    if not per_model:
        print(f"sim_calibrate.py: no compute task with flops or bytes and a model after step "
              f"{a.skip_steps - 1} in {', '.join(a.traces)} (a trace of this version, "
              f"SHARDFLOW_TRACE, is needed)", file=sys.stderr)
        return 1

    every = [x for eff, _ in per_model.values() for x in eff]
    nsteps = len({s for _, s in steps})
    lines = ["# shardflow-sim calibration (bench/sim_calibrate.py)",
             f"# device {a.device or 'unnamed'}",
             f"# peak_tflops {a.peak_tflops:g}",
             f"# bandwidth_gbs {a.bandwidth_gbs:g}",
             f"# steps {nsteps}",
             f"# fallback {statistics.median(every):.6g}",
             "model\ttasks\tefficiency\tmedian_us"]
    for model in sorted(per_model):
        eff, durs = per_model[model]
        lines.append(f"{model}\t{len(eff)}\t{statistics.median(eff):.6g}\t"
                     f"{statistics.median(durs):.3f}")
    text = "\n".join(lines) + "\n"
    if not a.out:
        sys.stdout.write(text)
        return 0
    tmp = f"{a.out}.tmp{os.getpid()}"  # written whole, then renamed: never half a file
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.out)
    except OSError as e:
        print(f"sim_calibrate.py: --out {a.out}: {e}", file=sys.stderr)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
