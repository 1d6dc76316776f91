#!/bin/sh
# stress.sh — no hang, no flake: 20 consecutive 2-rank runs of 50 steps.
#
# A collective issued in a different order on two ranks, or a rare race between the
# comm worker and the compute workers, shows up as a hang or a crash only now and
# then. Each run must exit 0 and print final_loss within the time limit
# (SF_TEST_TIMEOUT, default here 120 s). Run by `make stress`, not by `make check`.
. "$(dirname "$0")/lib.sh"
require_progs "$MLP"

: "${SF_TEST_TIMEOUT:=120}"
export SF_TEST_TIMEOUT
runs=${SF_STRESS_RUNS:-20}

plan "$runs"
i=1
while [ $i -le "$runs" ]; do
	start=$(date +%s)
	run_mpi 2 "$MLP" --steps 50 --widths 64,128,128,10 --batch 64 \
		>"$tmp/run.out" 2>"$tmp/run.err"
	st=$?
	secs=$(($(date +%s) - start))
	[ $st -eq 0 ] && grep '^final_loss ' "$tmp/run.out" >/dev/null
	if ! ok $? "run $i of $runs: 2 ranks x 50 steps (exit $st, ${secs} s)"; then
		[ $st -eq 124 ] && diag "TIMEOUT after $SF_TEST_TIMEOUT s: a hang"
		diag_file "$tmp/run.err"
	fi
	i=$((i + 1))
done
finish
