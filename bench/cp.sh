#!/bin/sh
# cp.sh — context parallelism against data parallelism on 4 ranks: tokens/s of cp 4
# and dp 4 side by side in one run, and how much of the CP ring's communication a
# traced cp 4 run hides behind compute, as markdown tables.
#
#   bench/cp.sh [--runs N] [--steps N] [--context T] [--batch B] [--layers L]
#               [--embd C] [--heads H] [--out DIR] [--build DIR]
#
# examples/gpt on 4 ranks of this machine (tests/run-mpi.sh), the same model, global
# batch and context in both rows, on Austen's bytes:
#   dp 4  SHARDFLOW_CP=1: each rank B / 4 whole samples (FSDP over the 4)
#   cp 4  SHARDFLOW_CP=4: the 4 ranks share every sample, each holding 2 of its 8
#         chunks; attention is a ring of 4 part tasks, cp_ring comm tasks passing the
#         key/value blocks (and in the backward their gradients); FSDP over the 4 too
# Both hold the same number of rows a rank (B / 4 x T against B x T / 4) and do the
# same FLOPs in all, so the ratio cp 4 / dp 4 is the ring's cost: its 2 (K - 1)
# transfers an attention node a step, its part tasks' smaller GEMMs and the
# log-sum-exp merges. tokens/s: the steps after a warm-up of 3 (rank 0's progress
# lines), the median of --runs interleaved rounds (round r runs both), with min and
# max. Then one cp 4 run traced (SHARDFLOW_TRACE; docs/profiling.md): its overlap
# report's totals (all collectives) and, from the ranks' Chrome traces, the cp_ring
# tasks' busy time (the union of their intervals, steps after the first) and the share
# of it during which a compute task ran: the ring's communication hidden behind
# compute (1 = all of it).
#
#   --runs N    rounds (default 5); --steps N steps a run (default 9: 6 timed)
#   --context T the context (default 512: a multiple of 2 x 4)
#   --batch B   sequences a step for the whole job (default 8)
#   --layers L, --embd C, --heads H  the GPT (default 2, 64, 4)
#   --out DIR   tables.md, raw.tsv and the logs (default cp-bench-out)
#   --build DIR a configured and built shardflow tree (default: this checkout)
set -u

prog=cp.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
WARMUP=3
usage_end=31
. "$here/cli.sh"

runs=5 steps=9 T=512 B=8 L=2 C=64 H=4 out=cp-bench-out build=$top
while [ $# -gt 0 ]; do
	case $1 in
	--runs) [ $# -ge 2 ] || usage; posint "$1" "$2"; runs=$2; shift 2 ;;
	--steps) [ $# -ge 2 ] || usage; posint "$1" "$2"; steps=$2; shift 2 ;;
	--context) [ $# -ge 2 ] || usage; posint "$1" "$2"; T=$2; shift 2 ;;
	--batch) [ $# -ge 2 ] || usage; posint "$1" "$2"; B=$2; shift 2 ;;
	--layers) [ $# -ge 2 ] || usage; posint "$1" "$2"; L=$2; shift 2 ;;
	--embd) [ $# -ge 2 ] || usage; posint "$1" "$2"; C=$2; shift 2 ;;
	--heads) [ $# -ge 2 ] || usage; posint "$1" "$2"; H=$2; shift 2 ;;
	--out) [ -n "${2:-}" ] || die "--out needs a directory"; out=$2; shift 2 ;;
	--build) [ -n "${2:-}" ] || die "--build needs a directory"; build=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "$prog: unknown option \"$1\"" >&2; usage ;;
	esac
done
[ $((T % 8)) -eq 0 ] || die "--context $T: cp 4 cuts it into 8 chunks; accepted: a multiple of 8"
[ $((B % 4)) -eq 0 ] || die "--batch $B: dp 4 gives each rank B / 4; accepted: a multiple of 4"
[ "$steps" -gt $WARMUP ] || die "--steps $steps: accepted: more than the warm-up, $WARMUP"
GPT=$build/examples/gpt
RUNMPI=$top/tests/run-mpi.sh
[ -x "$GPT" ] || die "$GPT is not built (make, or --build DIR)"
mkdir -p "$out/logs" || die "cannot create $out"
export SF_TEST_STARPU_HOME="$out/starpu-home" STARPU_SILENT=1
RAW=$out/raw.tsv
args="--layers $L --embd $C --heads $H --context $T --batch $B --steps $steps
	--progress-every $WARMUP --eval-every 100000 --sample 0"

# run NAME CP LOG [ENV...]: examples/gpt on 4 ranks at SHARDFLOW_CP=CP; a line of raw.tsv
# with the rate of the steps after the warm-up (rank 0's progress lines give the mean
# since the start at steps WARMUP and steps) and rank 0's activations
run() {
	name=$1 cp=$2 log=$3
	shift 3
	# shellcheck disable=SC2086
	env SHARDFLOW_CP="$cp" "$@" sh "$RUNMPI" 4 "$GPT" $args </dev/null >"$log" 2>&1 ||
		echo "$prog: warning: $name failed, see $log" >&2
	rw=$(progress_rates "$log" | awk -v k=$WARMUP -v n="$steps" '$1 == k && $2 == n { print $3 }')
	rn=$(progress_rates "$log" | awk -v n="$steps" '$1 == n && $2 == n { print $3 }')
	awk -v w=$WARMUP -v n="$steps" -v tok=$((B * T)) -v name="$name" -v r="$r" -v rw="${rw:-0}" \
		-v rn="${rn:-0}" '
		$1 == "gpt:" && $2 == "comm:" && $4 == 0 { act = $(NF - 1) }
		END { if (rw > 0 && rn > 0) { t = n * tok / rn - w * tok / rw; v = (n - w) * tok / t }
		      printf "%s\t%s\t%s\t%s\n", name, r, (v > 0 ? sprintf("%.1f", v) : "NA"), act }' \
		"$log" >>"$RAW"
}

echo "$prog: $runs rounds of $steps steps (warm-up $WARMUP), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)" >&2
t_start=$(date +%s)
printf 'layout\tround\ttokens_per_s\tact_mib\n' >"$RAW"
for r in $(seq 1 "$runs"); do
	echo "$prog: round $r/$runs ($(($(date +%s) - t_start)) s)" >&2
	run "dp 4" 1 "$out/logs/dp4.run$r.log"
	run "cp 4" 4 "$out/logs/cp4.run$r.log"
done
r=trace
rm -f "$out/trace/cp4".*
mkdir -p "$out/trace" || die "cannot create $out/trace"
run "cp 4 traced" 4 "$out/logs/cp4.trace.log" SHARDFLOW_TRACE="$out/trace/cp4"
[ -f "$out/trace/cp4.overlap.json" ] || die "the traced run wrote no overlap report, see $out/logs/cp4.trace.log"

python3 - "$RAW" "$out/trace/cp4" "$runs" "$steps" "$T" "$B" "$L" "$C" "$H" "$(nproc)" \
	"$(cut -d' ' -f1 /proc/loadavg)" >"$out/tables.md" <<'EOF'
import csv, glob, json, statistics, sys
raw, trace, runs, steps, T, B, L, C, H, cores, load = sys.argv[1:]
rows = list(csv.DictReader(open(raw), delimiter="\t"))
def med(name):
    v = [float(x["tokens_per_s"]) for x in rows if x["layout"] == name and x["tokens_per_s"] != "NA"]
    return (statistics.median(v), min(v), max(v), len(v)) if v else None
def act(name):
    v = [x["act_mib"] for x in rows if x["layout"] == name and x["act_mib"]]
    return v[0] if v else "?"
print(f"examples/gpt ({L} layers, embd {C}, {H} heads) at context {T}, {B} sequences a step, "
      f"4 ranks on {cores} cores (load {load} at the end); tokens/s of the steps after a "
      f"warm-up of 3, median of {runs} interleaved rounds of {steps} steps (min-max)\n")
print("| layout | tokens/s | vs dp 4 | activations MiB a rank |")
print("| --- | --- | --- | --- |")
dp = med("dp 4")
for name in ("dp 4", "cp 4"):
    t = med(name)
    ts = f"{t[0]:.0f} ({t[1]:.0f}-{t[2]:.0f}, {t[3]} runs)" if t else "failed"
    vs = f"{t[0] / dp[0]:.2f}x" if t and dp else ""
    print(f"| {name} | {ts} | {vs} | {act(name)} |")

# the ring's busy time and the share of it with a compute task running, per rank,
# over the steps after the first (its gathers and StarPU's start are not the ring's)
def union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out
def inter(u, v):
    i = j = 0
    s = 0.0
    while i < len(u) and j < len(v):
        a, b = max(u[i][0], v[j][0]), min(u[i][1], v[j][1])
        if a < b:
            s += b - a
        if u[i][1] < v[j][1]:
            i += 1
        else:
            j += 1
    return s
rep = json.load(open(trace + ".overlap.json"))
tot = rep["total"]
print(f"\ncp 4 traced ({steps} steps): the overlap report's totals over every rank and step "
      f"(all collectives: FSDP's gathers and reduce-scatters, the loss all-reduce and the "
      f"ring): wall {tot['wall_ms']:.1f} ms, compute {tot['compute_ms']:.1f} ms, comm "
      f"{tot['comm_ms']:.1f} ms, exposed {tot['exposed_ms']:.1f} ms, overlap "
      f"{tot['overlap']:.3f}, ratio {tot['ratio']:.3f}\n")
print("| rank | cp_ring tasks | cp_ring busy ms | of it behind compute ms | hidden share |")
print("| --- | --- | --- | --- | --- |")
ring_all = hid_all = 0.0
for f in sorted(glob.glob(trace + ".rank*.json")):
    d = json.load(open(f))
    ev = [e for e in d["traceEvents"] if e.get("ph") == "X" and e.get("args", {}).get("step", 0) > 1]
    ring = union([(e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"].startswith("cp_ring ")])
    comp = union([(e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "compute"])
    n = sum(1 for e in ev if e["name"].startswith("cp_ring "))
    busy = sum(b - a for a, b in ring) / 1000
    hid = inter(ring, comp) / 1000
    ring_all += busy
    hid_all += hid
    rank = f.rsplit(".rank", 1)[1].split(".")[0]
    print(f"| {rank} | {n} | {busy:.1f} | {hid:.1f} | {hid / busy if busy else 0:.3f} |")
print(f"| all | | {ring_all:.1f} | {hid_all:.1f} | {hid_all / ring_all if ring_all else 0:.3f} |")
EOF
cat "$out/tables.md"
echo "$prog: done in $(($(date +%s) - t_start)) s; $out/tables.md, $RAW, the trace $out/trace/cp4.*" >&2
