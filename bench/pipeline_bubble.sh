#!/bin/sh
# pipeline_bubble.sh — a pipeline's bubble as the overlap report measures it, against
# the schedules' theory (S - 1) / (V M + S - 1), as a markdown table.
#
#   bench/pipeline_bubble.sh [--stages S] [--micro M] [--runs N] [--steps N]
#                            [--widths W] [--batch B] [--out DIR] [--build DIR]
#
# examples/mlp_synthetic on S ranks (SHARDFLOW_PP=S, dp 1, one compute worker a rank:
# STARPU_NCPU=2), M micro-batches, traced (SHARDFLOW_TRACE), under gpipe, 1f1b,
# zero-bubble and interleaved (V 2: 2 S chunks, at most the units); the runs are
# interleaved (round r runs all four). A run's figure per stage is the overlap
# report's median over its steps; the table has the median of --runs runs, with min
# and max, beside the schedule's theory (gpipe's and 1f1b's (S-1)/(M+S-1), the
# interleaved one's (S-1)/(2 M+S-1)) and the bubble replayed at the run's measured
# task times (the report's "replayed": free transfers and no gaps, so bubble -
# replayed is what the runtime added and replayed - theory what the stages' unequal
# or varying task times cost; docs/profiling.md). The default model is 5 units of 512 (2 x 512^2
# parameters on each of 2 stages) and 256 rows a micro-batch: compute-heavy, so that
# a unit's gather (a copy at dp 1) and the boundary's transfer are small beside it.
#
#   --stages S  pipeline stages, as many ranks (default 2; at most the units, 5)
#   --micro M   micro-batches a step (default 8: M >= 4 S)
#   --runs N    rounds (default 3); --steps N steps a run (default 6)
#   --widths W  the MLP's widths (default 512,512,512,512,512,10)
#   --batch B   the batch a step (default 2048: 256 rows a micro-batch)
#   --out DIR   table.md, raw.tsv and the runs' files (default pipeline-bubble-out)
#   --build DIR a configured and built shardflow tree (default: this checkout)
#
# The runs take the caller's environment: SHARDFLOW_SHARDING=grad_op
# SHARDFLOW_ACCUM_MODE=local bench/pipeline_bubble.sh measures ZeRO-2 under the pipeline
# (docs/performance.md has both).
set -u

prog=pipeline_bubble.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
usage_end=31
. "$here/cli.sh"

S=2 M=8 runs=3 steps=6 widths=512,512,512,512,512,10 batch=2048 out=pipeline-bubble-out
build=$top
while [ $# -gt 0 ]; do
	case $1 in
	--stages) [ $# -ge 2 ] || usage; posint "$1" "$2"; S=$2; shift 2 ;;
	--micro) [ $# -ge 2 ] || usage; posint "$1" "$2"; M=$2; shift 2 ;;
	--runs) [ $# -ge 2 ] || usage; posint "$1" "$2"; runs=$2; shift 2 ;;
	--steps) [ $# -ge 2 ] || usage; posint "$1" "$2"; steps=$2; shift 2 ;;
	--widths) [ -n "${2:-}" ] || die "--widths needs a list"; widths=$2; shift 2 ;;
	--batch) [ $# -ge 2 ] || usage; posint "$1" "$2"; batch=$2; shift 2 ;;
	--out) [ -n "${2:-}" ] || die "--out needs a directory"; out=$2; shift 2 ;;
	--build) [ -n "${2:-}" ] || die "--build needs a directory"; build=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "$prog: unknown option \"$1\"" >&2; usage ;;
	esac
done
MLP=$build/examples/mlp_synthetic
[ -x "$MLP" ] || die "$MLP is not built (make, or --build DIR)"
mkdir -p "$out" || die "cannot create $out"
export SF_TEST_STARPU_HOME="$out/starpu-home" STARPU_SILENT=1

printf 'schedule\trun\tstage\tbubble\ttheory\treplayed\n' >"$out/raw.tsv"
r=1
while [ "$r" -le "$runs" ]; do
	for sched in gpipe 1f1b zero-bubble interleaved; do
		p=$out/$sched-$r
		env SHARDFLOW_PP="$S" SHARDFLOW_PP_MICROBATCHES="$M" SHARDFLOW_PP_SCHEDULE=$sched \
			SHARDFLOW_TRACE="$p" STARPU_NCPU=2 sh "$top/tests/run-mpi.sh" "$S" "$MLP" \
			--steps "$steps" --widths "$widths" --batch "$batch" >"$p.log" 2>&1 ||
			die "$sched run $r failed: $(tail -3 "$p.log")"
		python3 -c '
import json, sys
pp = json.load(open(sys.argv[1]))["pipeline"]
for st in pp["per_stage"]:
    print("%s\t%s\t%d\t%.4f\t%.4f\t%.4f" % (sys.argv[2], sys.argv[3], st["stage"],
                                         st["bubble_median"], pp["theory"],
                                         st["replayed_median"]))
' "$p.overlap.json" "$sched" "$r" >>"$out/raw.tsv" || die "no pipeline in $p.overlap.json"
	done
	r=$((r + 1))
done

{
	echo "Pipeline bubble: $S stages, $M micro-batches, mlp $widths, batch $batch," \
		"$steps steps a run, $runs runs ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
	echo
	echo "| schedule | stage | bubble (median of runs) | min | max | replayed (median) | theory |"
	echo "|---|---|---|---|---|---|---|"
	python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
for sched in ("gpipe", "1f1b", "zero-bubble", "interleaved"):
    for s in sorted({int(r["stage"]) for r in rows}):
        mine = [r for r in rows if r["schedule"] == sched and int(r["stage"]) == s]
        x = sorted(float(r["bubble"]) for r in mine)
        y = sorted(float(r["replayed"]) for r in mine)
        n = len(x)
        med = lambda v: v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
        th = [r["theory"] for r in rows if r["schedule"] == sched][0]
        print("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f |" % (
            sched, s, med(x), x[0], x[-1], med(y), float(th)))
' "$out/raw.tsv"
} >"$out/table.md"
cat "$out/table.md"
