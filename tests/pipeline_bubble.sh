#!/bin/sh
# pipeline_bubble.sh — a pipeline's schedule as the order its stages compute in, and
# its bubble in the overlap report.
#
# An MLP of 5 units (512 wide: 2 x 512^2 parameters a stage, the head of 10 in the
# second) on 2 stages of one rank each (dp 1), 8 micro-batches of 256 rows, one
# compute worker a rank (STARPU_NCPU=2: it and the comm worker), the built-in trace.
# Checked, under gpipe, 1f1b and zero-bubble:
#  - order: on every rank and step the compute worker runs its stage's passes whole
#    (a forward: every forward node of the stage in graph order, and the loss on the
#    last; a backward: every backward node in reverse) in the schedule's order
#    (gpipe: 8 forwards, then 8 backwards; 1f1b and zero-bubble on stage s: 1 - s
#    forwards, then one forward and one backward in turn, then the backwards left).
#    The passes' tasks are ready as their data come, not in submission order; the
#    priorities make the worker keep to the schedule
#    (tests/mutants/pipeline-priority-inverted.patch);
#  - zero-bubble's split: a linear layer with an input gradient (all but stage 0's
#    first) runs its backward as the pass's input-gradient task (one product: the
#    trace's flops = its forward's) and a weight-gradient task ("bwd <name>.dW", the
#    other product), 8 of each a step; micro-batch k's weight gradients run after its
#    backward's first task and before the stage's next pass begins (the passes above
#    leave the .dW tasks out);
#  - the overlap report's bubble: "pipeline bubble: 2 stages, 8 micro-batches; theory
#    (S-1)/(M+S-1) = 0.111" and a line per stage, and the JSON's medians equal to
#    this script's own computation from the ranks' trace files (the span from the
#    first forward/loss/backward task of either rank to the last one's end, the union
#    of a rank's compute tasks within it), within 1e-4; the same for the bubble
#    replayed at the measured task times (trace/replay.c's rule, written again in
#    Python; tests/test_trace_write checks it on a step by hand);
#  - the boundary's transfers in the trace (1f1b): on each rank and step 8 posted
#    sends and 8 posted receives, each with its wait ("pp send relu5", "pp wait send
#    relu5" on stage 0; "pp recv relu5", "pp wait recv relu5" on stage 1; the
#    gradients' the other way), kind "pp transfer", on the comm worker (thread 1);
#  - interleaved (V 2): the report finds its 2 stages from their chunks, prints
#    "2 stages of 2 chunks each (interleaved), 8 micro-batches; theory (S-1)/(V M+S-1)
#    = 0.059", and its medians equal this script's;
#  - a run without a pipeline: no bubble line, "pipeline": null.
# The measured bubble against the theory is printed, not checked: on a loaded 2-core
# machine each stage's pace moves with the other processes, and the stages wait on
# each other every micro-batch (docs/performance.md, "Pipeline bubble", has figures
# and the bench that measures them, bench/pipeline_bubble.sh).
. "$(dirname "$0")/lib.sh"
require_progs "$MLP"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not found"

plan 17

mlp_args="--widths 512,512,512,512,512,10 --batch 2048"

# name schedule: a traced pipeline run of 3 steps
pp_run() {
	env SHARDFLOW_PP=2 SHARDFLOW_PP_MICROBATCHES=8 SHARDFLOW_PP_SCHEDULE="$2" \
		SHARDFLOW_TRACE="$tmp/$1" STARPU_NCPU=2 sh "$RUN_MPI" 2 "$MLP" --steps 3 \
		$mlp_args >"$tmp/$1.out" 2>&1
}

# name schedule: the order check, from the ranks' trace files
order() {
	python3 - "$tmp/$1" "$2" >"$tmp/order.out" 2>&1 <<'EOF'
import json, sys
prefix, sched = sys.argv[1], sys.argv[2]
S, M = 2, 8

def schedule(s):
    w = M if sched == "gpipe" else min(S - 1 - s, M)  # zero-bubble: 1f1b's order
    ops = ["F"] * w
    for i in range(M - w):
        ops += ["F", "B"]
    return ops + ["B"] * w

def dw_check(s, step, evs, passes):
    # evs: the step's tasks in time order; passes: the tasks of each of the schedule's
    # passes (the .dW tasks left out). The split nodes: those with a .dW task
    bad = 0
    isdw = [e["name"].split(" (")[0].endswith(".dW") for e in evs]
    fl = {e["args"]["layer"]: e["args"]["flops"] for e in evs if e["args"]["kind"] == "fwd"}
    split = sorted({e["args"]["layer"] for e, d in zip(evs, isdw) if d})
    want = sorted(l for l in fl if l != 2 and fl[l] > 10**6)  # linears but stage 0's fc1
    if split != want:
        print("rank %d step %d: split nodes %s, want %s" % (s, step, split, want))
        return 1
    # each pass's first task's place in evs, and the micro-batch of each pass
    start, i = [], 0
    for n in passes:
        while isdw[i]:
            i += 1
        start.append(i)
        for _ in range(n):
            i += 1
            while i < len(evs) and isdw[i]:
                i += 1
    ops, cnt, fwd_of, bwd_of = schedule(s), {"F": 0, "B": 0}, {}, {}
    for p, op in enumerate(ops):
        (fwd_of if op == "F" else bwd_of)[cnt[op]] = p
        cnt[op] += 1
    for l in split:
        dws = [i for i, e in enumerate(evs) if isdw[i] and e["args"]["layer"] == l]
        both = [e for e in evs if e["args"]["layer"] == l and e["args"]["kind"] == "bwd"]
        if len(dws) != M or len(both) != 2 * M or any(e["args"]["flops"] != fl[l] for e in both):
            print("rank %d step %d: node %d: %d .dW tasks of %d backward tasks, flops %s "
                  "(its forward's %d)" % (s, step, l, len(dws), len(both),
                                          sorted({e["args"]["flops"] for e in both}), fl[l]))
            bad += 1
            continue
        for k, i in enumerate(dws):  # micro-batch k's: after its forward, before the
            lo = start[fwd_of[k]]    # pass after its backward
            hi = start[bwd_of[k] + 1] if bwd_of[k] + 1 < len(start) else len(evs)
            if not lo < i < hi:
                print("rank %d step %d: node %d's weight gradient of micro-batch %d at task "
                      "%d, outside [%d, %d)" % (s, step, l, k, i, lo, hi))
                bad += 1
    return bad

bad = 0
for s in range(S):
    ev = [e for e in json.load(open("%s.rank%d.json" % (prefix, s)))["traceEvents"]
          if e.get("ph") == "X" and e["args"]["kind"] in ("fwd", "loss", "bwd")]
    dw = [e for e in ev if e["name"].split(" (")[0].endswith(".dW")]
    if sched != "zero-bubble" and dw:
        print("rank %d: %d weight-gradient tasks under %s" % (s, len(dw), sched))
        bad += 1
    every = ev
    ev = [e for e in ev if e not in dw]
    fwd = sorted({e["args"]["layer"] for e in ev if e["args"]["kind"] == "fwd"})
    bwd = sorted({e["args"]["layer"] for e in ev if e["args"]["kind"] == "bwd"}, reverse=True)
    loss = [("loss", -1)] if any(e["args"]["kind"] == "loss" for e in ev) else []
    passes = {"F": [("fwd", l) for l in fwd] + loss, "B": [("bwd", l) for l in bwd]}
    want = [t for op in schedule(s) for t in passes[op]]
    for step in sorted({e["args"]["step"] for e in every}) if sched == "zero-bubble" else []:
        bad += dw_check(s, step, sorted((e for e in every if e["args"]["step"] == step),
                                        key=lambda e: e["ts"]),
                        [len(passes[op]) for op in schedule(s)])
    for step in sorted({e["args"]["step"] for e in ev}):
        got = [(e["args"]["kind"], e["args"]["layer"])
               for e in sorted(ev, key=lambda e: e["ts"]) if e["args"]["step"] == step]
        if got != want:
            bad += 1
            at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            print("rank %d step %d: task %d is %s, the schedule's is %s" % (
                s, step, at, got[at] if at < len(got) else None, want[at] if at < len(want) else None))
print("schedule %s: %s" % (sched, " ".join(schedule(0)) + " | " + " ".join(schedule(1))))
sys.exit(1 if bad else 0)
EOF
}

# name: the report's medians against this script's own, from the trace files: the
# measured bubble, and the one replayed at the measured task times (trace/replay.c's
# rule, written again here: each compute task in its worker's order and for its
# duration, as soon as its worker is free and its sender's task across the boundary
# has ended; the k-th "pp wait recv X" of a rank pairs with the neighbour's k-th
# "pp send X", whose task is the last forward (X forwarded there) or backward to end
# before the post; the task that waited is the first forward or backward after it)
bubble() {
	python3 - "$tmp/$1" >"$tmp/bubble.out" 2>&1 <<'EOF'
import json, sys
prefix = sys.argv[1]
rep = json.load(open(prefix + ".overlap.json"))["pipeline"]
R = S = 2
ranks = [[e for e in json.load(open("%s.rank%d.json" % (prefix, r)))["traceEvents"]
          if e.get("ph") == "X"] for r in range(R)]
steps = sorted({e["args"]["step"] for r in ranks for e in r})
PASS = ("fwd", "loss", "bwd", "recompute")
FWD_SIDE = ("fwd", "loss", "recompute")
kind = lambda e: e["args"]["kind"]
end = lambda e: e["ts"] + e["dur"]

def bubbles(ev, times):
    """each rank's idle share of the passes' span; times(e) -> (start, end)"""
    span = [times(e) for r in range(R) for e in ev[r] if kind(e) in PASS]
    a, z = min(x for x, _ in span), max(y for _, y in span)
    out = []
    for r in range(R):
        iv = sorted((max(times(e)[0], a), min(times(e)[1], z)) for e in ev[r]
                    if e["cat"] == "compute")
        busy, at = 0.0, a
        for x, y in iv:
            x = max(x, at)
            if y > x:
                busy += y - x
                at = y
        out.append(1 - busy / (z - a))
    return out

def replayed(ev):
    dep = {}
    for r in range(R):
        seen = {}
        for w in sorted((e for e in ev[r] if e["name"].startswith("pp wait recv ")),
                        key=lambda e: e["ts"]):
            x = w["name"][len("pp wait recv "):]
            k = seen[x] = seen.get(x, -1) + 1
            for q in ((r + R // S) % R, (r - R // S) % R):
                posts = sorted((e for e in ev[q] if e["name"] == "pp send " + x),
                               key=lambda e: e["ts"])
                if len(posts) <= k:
                    continue
                act = any(e["name"].startswith("fwd %s (" % x) for e in ev[q])
                side = FWD_SIDE if act else ("bwd",)
                src = [e for e in ev[q] if kind(e) in side and end(e) <= posts[k]["ts"]]
                dst = sorted((e for e in ev[r] if kind(e) in side and e["ts"] >= end(w)),
                             key=lambda e: e["ts"])
                if src and dst:
                    s = max(src, key=end)
                    if id(dst[0]) not in dep or end(s) > end(dep[id(dst[0])]):
                        dep[id(dst[0])] = s
                break
    comp = sorted((e for r in range(R) for e in ev[r] if e["cat"] == "compute"),
                  key=lambda e: e["ts"])
    t0 = min(e["ts"] for r in range(R) for e in ev[r] if kind(e) in PASS)
    free, at = {}, {}
    for e in comp:
        w = (e["pid"], e["tid"])
        s = free[w] if w in free else min(e["ts"], t0)
        if id(e) in dep:  # a sender not replayed yet (the ranks' clocks skewed) holds
            s = max(s, at.get(id(dep[id(e)]), (0.0, 0.0))[1])  # nothing, as replay.c's 0
        at[id(e)] = (s, s + e["dur"])
        free[w] = s + e["dur"]
    return bubbles(ev, lambda e: at.get(id(e), (e["ts"], end(e))))

def median(x):
    x, n = sorted(x), len(x)
    return x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2

meas, repl = [], []
for t in steps:
    ev = [[e for e in ranks[r] if e["args"]["step"] == t] for r in range(R)]
    meas.append(bubbles(ev, lambda e: (e["ts"], end(e))))
    repl.append(replayed(ev))
med = [median([m[r] for m in meas]) for r in range(R)]
rmed = [median([m[r] for m in repl]) for r in range(R)]
got = [st["bubble_median"] for st in rep["per_stage"]]
rgot = [st["replayed_median"] for st in rep["per_stage"]]
print("report %s, recomputed %s; replayed: report %s, recomputed %s; theory %.4f" % (
    " ".join("%.4f" % x for x in got), " ".join("%.4f" % x for x in med),
    " ".join("%.4f" % x for x in rgot), " ".join("%.4f" % x for x in rmed), rep["theory"]))
sys.exit(0 if all(abs(x - y) <= 1e-4 for x, y in zip(got + rgot, med + rmed))
         and len(got) == 2 else 1)
EOF
}

for sched in gpipe 1f1b zero-bubble; do
	pp_run "pp-$sched" "$sched"
	rc=$?
	ok $rc "pp 2, 8 micro-batches, $sched: a traced run" || {
		diag_file "$tmp/pp-$sched.out"
		continue
	}
	order "pp-$sched" "$sched"
	ok $? "$sched: each rank's compute runs its passes whole, in the schedule's order"
	diag_file "$tmp/order.out"
	grep -q '^pipeline bubble: 2 stages, 8 micro-batches; theory (S-1)/(M+S-1) = 0.111 ' \
		"$tmp/pp-$sched.overlap.txt" &&
		[ "$(grep -c '^  stage [01] (ranks [01]): bubble median 0\.[0-9]*  min ' \
			"$tmp/pp-$sched.overlap.txt")" = 2 ]
	ok $? "$sched: the overlap report prints the stages' bubbles and the theory"
	grep '^  stage ' "$tmp/pp-$sched.overlap.txt" | sed 's/^/#  /'
	bubble "pp-$sched"
	ok $? "$sched: the report's medians, measured and replayed, = this script's (1e-4)"
	diag_file "$tmp/bubble.out"
done

# interleaved (V 2: 4 chunks of the 5 units, each rank two): the report finds the
# stages from their chunks, and the theory (S-1)/(V M+S-1)
pp_run pp-il interleaved
ok $? "pp 2, 8 micro-batches, interleaved: a traced run" || diag_file "$tmp/pp-il.out"
grep -q '^pipeline bubble: 2 stages of 2 chunks each (interleaved), 8 micro-batches; theory (S-1)/(V M+S-1) = 0.059 ' \
	"$tmp/pp-il.overlap.txt" &&
	[ "$(grep -c '^  stage [01] (ranks [01]): bubble median 0\.[0-9]*  min ' \
		"$tmp/pp-il.overlap.txt")" = 2 ]
ok $? "interleaved: the overlap report finds 2 stages of 2 chunks, their bubbles and the theory" ||
	diag_file "$tmp/pp-il.overlap.txt"
grep '^  stage ' "$tmp/pp-il.overlap.txt" | sed 's/^/#  /'
bubble pp-il
ok $? "interleaved: the report's medians, measured and replayed, = this script's (1e-4)"
diag_file "$tmp/bubble.out"

python3 - "$tmp/pp-1f1b" >"$tmp/pp-tasks.out" 2>&1 <<'EOF2'
import json, sys, collections
bad = 0
want = {0: {"pp send relu5", "pp wait send relu5", "pp recv drelu5", "pp wait recv drelu5"},
        1: {"pp recv relu5", "pp wait recv relu5", "pp send drelu5", "pp wait send drelu5"}}
for r in (0, 1):
    ev = [e for e in json.load(open("%s.rank%d.json" % (sys.argv[1], r)))["traceEvents"]
          if e.get("ph") == "X" and e["name"].startswith("pp ")]
    n = collections.Counter((e["args"]["step"], e["name"]) for e in ev)
    for step in (1, 2, 3):
        for name in want[r]:
            if n[(step, name)] != 8:
                print("rank %d step %d: %d \"%s\" tasks, want 8" % (r, step, n[(step, name)], name))
                bad = 1
    if len(ev) != 3 * 32 or any(e["args"]["kind"] != "pp transfer" or e["tid"] != 1 for e in ev):
        print("rank %d: %d pp tasks (want 96), kinds %s, threads %s" % (
            r, len(ev), sorted({e["args"]["kind"] for e in ev}), sorted({e["tid"] for e in ev})))
        bad = 1
sys.exit(bad)
EOF2
ok $? "1f1b: each boundary tensor posted and waited for, traced as \"pp transfer\" on the comm worker"
diag_file "$tmp/pp-tasks.out"

env SHARDFLOW_TRACE="$tmp/plain" STARPU_NCPU=2 sh "$RUN_MPI" 2 "$MLP" --steps 2 $mlp_args \
	>"$tmp/plain.out" 2>&1 &&
	! grep -q 'pipeline bubble' "$tmp/plain.overlap.txt" &&
	grep -q '"pipeline": null' "$tmp/plain.overlap.json"
ok $? "no pipeline: no bubble line, \"pipeline\": null"

finish
