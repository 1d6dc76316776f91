#!/bin/sh
# grad_check.sh — a whole model's gradient against finite differences of its loss,
# each sampled parameter within a bound derived from the run's own rounding
# (tests/grad_check.c's header says what it proves and how the bound is made).
#
# tests/grad_check measures on 1 rank, three times: with every CPU worker rounding
# upward, then downward (SHARDFLOW_ROUNDING: the run's rounding interval, --dump),
# then to nearest, the run checked, which reads the two others (--up, --down) and
# prints the TAP results.
. "$(dirname "$0")/lib.sh"
PROG="$top_builddir/tests/grad_check"
require_progs "$PROG"

for r in up down; do
	if ! env SHARDFLOW_ROUNDING=${r}ward sh "$RUN_MPI" 1 "$PROG" --dump "$tmp/$r.txt" \
		</dev/null >"$tmp/$r.out" 2>"$tmp/$r.err"; then
		plan 1
		ok 1 "grad_check rounded ${r}ward measures its loss and gradient"
		diag_file "$tmp/$r.err"
		finish
	fi
done
sh "$RUN_MPI" 1 "$PROG" --up "$tmp/up.txt" --down "$tmp/down.txt" </dev/null
