#!/bin/bash
# knobs.sh — what the FSDP knobs of docs/training.md cost and buy, on the GPT, side by
# side in one run, as a markdown table (each figure: the median of --runs interleaved
# runs, with min and max; the machine is shared and noisy).
#
#   bench/knobs.sh [--runs N] [--steps N] [--layers L] [--out DIR] [--build DIR]
#
# examples/gpt on 2 ranks (embd 128, context 128, batch 16 sequences a step, --layers
# blocks, default 6; Jane Austen), --steps steps a run (default 20), each of:
#   base         the defaults
#   recompute    SHARDFLOW_RECOMPUTE=units: the blocks' inner activations dropped
#                after forward and recomputed before backward
#   accum4       SHARDFLOW_GRAD_ACCUM=4 with --batch 4: the same 16 sequences a step
#                as 4 micro-batches (sharded mode)
#   accum4_local the same with SHARDFLOW_ACCUM_MODE=local
#   clip         --grad-clip 1.0
# Columns: tokens per second of training (examples/gpt's own figure over the run),
# the ratio to base, the activation memory per rank it prints (sf_model_stats: every
# buffer of activations, their gradients and saved buffers, allocated once, so also
# the peak) and the peak RSS of rank 0.
#
#   --out DIR   tables.md, raw.tsv and the logs (default knobs-bench)
#   --build DIR a configured and built shardflow tree (default: this checkout)
set -u

prog=knobs.sh
usage_end=22
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/cli.sh"

runs=5
steps=20
layers=6
out=knobs-bench
build=$top
while [ $# -gt 0 ]; do
	case $1 in
	--runs) [ $# -ge 2 ] || usage; posint "$1" "$2"; runs=$2; shift 2 ;;
	--steps) [ $# -ge 2 ] || usage; posint "$1" "$2"; steps=$2; shift 2 ;;
	--layers) [ $# -ge 2 ] || usage; posint "$1" "$2"; layers=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	--build) [ $# -ge 2 ] || usage; build=$(cd "$2" && pwd) || die "--build $2: no such directory"; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "$prog: unknown option \"$1\"" >&2; usage 2 ;;
	esac
done
[ "$runs" -ge 5 ] || echo "$prog: warning: --runs $runs < 5: medians of few runs are noisy" >&2
GPT=$build/examples/gpt
[ -x "$GPT" ] || die "$GPT not found: build shardflow first"
mkdir -p "$out/logs" || die "cannot create $out"
out=$(cd "$out" && pwd)
RAW=$out/raw.tsv
printf 'config\trun\ttokens_per_s\tact_mib\trss_mib\n' >"$RAW"
export SF_TEST_TIMEOUT=600

# one NAME BATCH ENV... -- ARGS...
one() {
	local name=$1 b=$2 log=$out/logs/$1.run$r.log
	shift 2
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" "$top/tests/run-mpi.sh" 2 /usr/bin/time -f "maxrss_kb %M" "$GPT" \
		--layers "$layers" --batch "$b" --steps "$steps" --progress-every "$steps" \
		--eval-every 100000 --sample 0 "$@" >"$log" 2>&1
	local tps act rss
	tps=$(progress_rates "$log" | awk '{ v = $3 } END { print v ? v : "NA" }')
	act=$(sed -n 's/.*activations \([0-9.]*\) MiB.*/\1/p' "$log" | head -1)
	rss=$(awk '$1 == "maxrss_kb" && $2 > m { m = $2 } END { if (m) printf "%.1f", m / 1024; else print "NA" }' "$log")
	[ "$tps" = NA ] && echo "$prog: warning: $name run $r failed, see $log" >&2
	printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$r" "$tps" "${act:-NA}" "$rss" >>"$RAW"
}

echo "$prog: examples/gpt, $layers blocks, 2 ranks, $runs runs x $steps steps" >&2
for r in $(seq 1 "$runs"); do
	echo "$prog: round $r/$runs" >&2
	one base 16 SHARDFLOW_RECOMPUTE=none --
	one recompute 16 SHARDFLOW_RECOMPUTE=units --
	one accum4 4 SHARDFLOW_GRAD_ACCUM=4 --
	one accum4_local 4 SHARDFLOW_GRAD_ACCUM=4 SHARDFLOW_ACCUM_MODE=local --
	one clip 16 SHARDFLOW_RECOMPUTE=none -- --grad-clip 1.0
done

/usr/bin/python3 - "$RAW" "$layers" "$runs" "$steps" <<'PY' | tee "$out/tables.md"
import statistics, sys
raw, layers, runs, steps = sys.argv[1:]
rows = {}
for line in open(raw).read().splitlines()[1:]:
    c, r, t, a, m = line.split("\t")
    rows.setdefault(c, []).append((t, a, m))
def col(c, i):
    return [float(x[i]) for x in rows.get(c, []) if x[i] != "NA"]
def cell(v, fmt):
    return "failed" if not v else (fmt + " (" + fmt + "–" + fmt + ")") % (statistics.median(v), min(v), max(v))
base = col("base", 0)
print("## The FSDP knobs on the GPT (examples/gpt, %s blocks, 2 ranks)" % layers)
print()
print("Median (min–max) of %s interleaved runs of %s steps; 16 sequences of 128 bytes a step in every row." % (runs, steps))
print()
print("| configuration | tokens/s | / base | activations MiB per rank | peak RSS MiB (rank 0) |")
print("| --- | --- | --- | --- | --- |")
labels = [("base", "defaults"), ("recompute", "SHARDFLOW_RECOMPUTE=units"),
          ("accum4", "4 micro-batches of 4 (sharded)"), ("accum4_local", "4 micro-batches of 4 (local)"),
          ("clip", "--grad-clip 1.0")]
for c, label in labels:
    t = col(c, 0)
    ratio = statistics.median(t) / statistics.median(base) if t and base else None
    print("| %s | %s | %s | %s | %s |" % (label, cell(t, "%.0f"), "%.3f" % ratio if ratio else "n/a",
          cell(col(c, 1), "%.1f"), cell(col(c, 2), "%.1f")))
PY
echo "$prog: table in $out/tables.md, data in $out/raw.tsv" >&2
