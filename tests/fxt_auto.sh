#!/bin/sh
# fxt_auto.sh — with an FxT StarPU (the default one), StarPU's trace comes with
# SHARDFLOW_TRACE and only then.
#
# Skipped when this StarPU has no FxT. Proves:
#  - a run without SHARDFLOW_TRACE writes no FxT file (StarPU 1.3's STARPU_FXT_TRACE
#    defaults to 1; shardflow sets it to 0 unless the user set it);
#  - a 2-rank run with SHARDFLOW_TRACE=P alone (no other variable, no other command)
#    leaves P.fxt/prof_file_<user>_<rank> for both ranks, P.fxt/tasks.rec (merged by
#    starpu_fxt_tool at sf_finalize) with the tasks of both ranks, and the overlap
#    report of that trace, P.fxt.overlap.txt/.json and P.fxt.timeline.svg, covering
#    2 ranks x 3 steps, beside the built-in trace's P.overlap.txt;
#  - the user's STARPU_FXT_TRACE=0 wins: no FxT directory, the built-in trace only.
. "$(dirname "$0")/lib.sh"
require_progs "$MLP"

[ "$SF_HAVE_FXT" = yes ] || skip_all "this StarPU has no FxT (configure without --with-starpu after scripts/install-deps.sh)"

plan 7

unset STARPU_FXT_TRACE STARPU_FXT_PREFIX STARPU_FXT_SUFFIX
mkdir -p "$tmp/plain"
env STARPU_FXT_PREFIX="$tmp/plain/" sh "$RUN_MPI" 2 "$MLP" --steps 2 </dev/null >"$tmp/plain.out" 2>"$tmp/plain.err"
rc=$?
n=$(ls "$tmp/plain" | wc -l)
[ "$rc" -eq 0 ] && [ "$n" -eq 0 ]
ok $? "a run without SHARDFLOW_TRACE writes no FxT file (exit $rc, $n file(s))" || diag_file "$tmp/plain.err"

P="$tmp/run"
env SHARDFLOW_TRACE="$P" sh "$RUN_MPI" 2 "$MLP" --steps 3 --widths 256,512,512,10 --batch 64 \
	</dev/null >"$tmp/run.out" 2>"$tmp/run.err"
ok $? "a 2-rank run with SHARDFLOW_TRACE succeeds" || diag_file "$tmp/run.err"

n=$(ls "$P.fxt" 2>/dev/null | grep -c '^prof_file_.*_[01]$')
[ "$n" -eq 2 ]
ok $? "each rank wrote its FxT file in $P.fxt ($n of 2)" || diag "$(ls "$P.fxt" 2>&1)"

r0=$(grep -c '^MPIRank: 0$' "$P.fxt/tasks.rec" 2>/dev/null)
r1=$(grep -c '^MPIRank: 1$' "$P.fxt/tasks.rec" 2>/dev/null)
[ "${r0:-0}" -gt 0 ] && [ "${r1:-0}" -gt 0 ]
ok $? "sf_finalize merged them into tasks.rec with both ranks' tasks ($r0, $r1)" ||
	diag_file "$P.fxt/starpu_fxt_tool.log"

[ -s "$P.fxt.overlap.json" ] && grep -q '</svg>' "$P.fxt.timeline.svg" && [ -s "$P.overlap.txt" ]
ok $? "the FxT report (txt, json, svg) is written beside the built-in one"

steps=$(grep -c '^rank [01] step ' "$P.fxt.overlap.txt" 2>/dev/null)
[ "${steps:-0}" -eq 6 ]
ok $? "the FxT report covers 2 ranks x 3 steps ($steps lines)" || diag_file "$P.fxt.overlap.txt"

Q="$tmp/off"
env SHARDFLOW_TRACE="$Q" STARPU_FXT_TRACE=0 sh "$RUN_MPI" 2 "$MLP" --steps 2 \
	</dev/null >"$tmp/off.out" 2>"$tmp/off.err"
rc=$?
[ "$rc" -eq 0 ] && [ ! -e "$Q.fxt" ] && [ -s "$Q.overlap.txt" ]
ok $? "STARPU_FXT_TRACE=0 set by the user: the built-in trace only (exit $rc)" || diag_file "$tmp/off.err"

finish
