#!/bin/sh
# fxt_trace.sh — StarPU's own trace (FxT) of a 2-rank training, read by our tool.
#
# Needs a StarPU built with FxT (scripts/build-starpu.sh, then
# ./configure --with-starpu=PREFIX); skipped otherwise. One 2-rank run is traced both
# ways at once: StarPU's FxT trace (prof_file_<user>_<rank>, merged by
# starpu_fxt_tool into tasks.rec, one file for all ranks with an MPIRank field) and
# shardflow's built-in trace (SHARDFLOW_TRACE). Proves:
#  - each rank writes its own FxT file and tasks.rec names both ranks;
#  - shardflow-overlap reads that tasks.rec and writes the report and the timeline;
#  - the two reports agree within 5 % on every total (wall, compute, comm, exposed).
# The tasks.rec is kept as tests/fxt-run.tasks.rec for tests/overlap_tool.sh.
. "$(dirname "$0")/lib.sh"
require_progs "$MLP" "$top_builddir/tools/shardflow-overlap"

[ "$SF_HAVE_FXT" = yes ] || skip_all "this StarPU has no FxT (build one with scripts/build-starpu.sh)"
FXT_TOOL="$STARPU_BINDIR/starpu_fxt_tool"
[ -x "$FXT_TOOL" ] || skip_all "$FXT_TOOL not found"

plan 8

# total FILE: the "total": {...} figures (one line in both JSON reports), sorted
total() {
	sed -n 's/.*"total": {\(.*\)}.*/\1/p' "$1" | tr ',' '\n' |
		sed -n 's/ *"\([a-z_]*_ms\)": \([0-9.e+-]*\)/\1 \2/p' | sort
}

# attempt DIR: one 2-rank run traced both ways, its tasks.rec, both reports and their
# comparison (DIR/cmp.txt; DIR/agree says whether every total is within 5 %).
attempt() {
	d=$1
	mkdir -p "$d/fxt"
	env STARPU_FXT_TRACE=1 STARPU_FXT_PREFIX="$d/fxt/" SHARDFLOW_TRACE="$d/bi" \
		sh "$RUN_MPI" 2 "$MLP" --steps 4 --widths 256,512,512,512,10 --batch 64 \
		</dev/null >"$d/run.out" 2>"$d/run.err"
	echo $? >"$d/run.rc"
	(cd "$d/fxt" && "$FXT_TOOL" -i prof_file_* >"$d/fxt_tool.log" 2>&1)
	"$top_builddir/tools/shardflow-overlap" --out "$d/fx" "$d/fxt/tasks.rec" >"$d/fx.out" 2>"$d/fx.err"
	echo $? >"$d/fx.rc"
	total "$d/fx.overlap.json" >"$d/t.fxt" 2>/dev/null
	total "$d/bi.overlap.json" >"$d/t.bi" 2>/dev/null
	join "$d/t.fxt" "$d/t.bi" | awk '
	{
		d = $2 - $3; if (d < 0) d = -d
		m = $2 > $3 ? $2 : $3
		rel = m > 0 ? d / m : 0
		printf "%-12s fxt %10.3f  built-in %10.3f  diff %5.2f %%\n", $1, $2, $3, 100 * rel
		if (rel > 0.05) bad++
		n++
	}
	END { exit (n >= 5 && !bad) ? 0 : 1 }' >"$d/cmp.txt"
	echo $? >"$d/agree"
}

# The comparison is of timings taken twice on a shared, noisy machine: once in a
# while (seen once in ~30 CI runs, cause not found yet) one total differed by more
# than 5 %. Then the run is repeated once, and the first attempt's figures are kept
# in the log for the investigation.
d="$tmp/a1"
attempt "$d"
if [ "$(cat "$d/agree")" != 0 ]; then
	diag "first attempt disagreed; its figures, then the per-step reports:"
	diag_file "$d/cmp.txt"
	diag_file "$d/fx.overlap.txt"
	diag_file "$d/bi.overlap.txt"
	d="$tmp/a2"
	attempt "$d"
fi

ok "$(cat "$d/run.rc")" "a 2-rank run traced with FxT and the built-in trace succeeds" ||
	diag_file "$d/run.err"

n=$(ls "$d/fxt" | grep -c '^prof_file_.*_[01]$')
[ "$n" -eq 2 ]
ok $? "each rank wrote its own FxT file ($n of 2)" || diag "$(ls "$d/fxt")"

[ -s "$d/fxt/tasks.rec" ]
ok $? "starpu_fxt_tool -i prof_file_* wrote tasks.rec" || diag_file "$d/fxt_tool.log"

r0=$(grep -c '^MPIRank: 0$' "$d/fxt/tasks.rec")
r1=$(grep -c '^MPIRank: 1$' "$d/fxt/tasks.rec")
[ "$r0" -gt 0 ] && [ "$r1" -gt 0 ]
ok $? "tasks.rec holds the tasks of rank 0 ($r0) and rank 1 ($r1)"
cp "$d/fxt/tasks.rec" "$top_builddir/tests/fxt-run.tasks.rec" 2>/dev/null

ok "$(cat "$d/fx.rc")" "shardflow-overlap reads the tasks.rec" || diag_file "$d/fx.err"

[ -s "$d/fx.overlap.txt" ] && [ -s "$d/fx.overlap.json" ] && grep -q '</svg>' "$d/fx.timeline.svg"
ok $? "it wrote the report (text, JSON) and the timeline (SVG)"

steps_fx=$(grep -c '^rank [01] step ' "$d/fx.overlap.txt")
steps_bi=$(grep -c '^rank [01] step ' "$d/bi.overlap.txt")
[ "$steps_fx" -eq 8 ] && [ "$steps_bi" -eq 8 ]
ok $? "both reports cover 2 ranks x 4 steps ($steps_fx, $steps_bi)"

diag_file "$d/cmp.txt"
ok "$(cat "$d/agree")" "FxT and built-in reports agree within 5 % on every total"

finish
