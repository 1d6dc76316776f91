#!/bin/sh
# nonfinite.sh — a diverging run stops with an error naming the step, instead of
# training on NaN and exiting 0 with "loss nan".
#
# mlp_synthetic with lr 1e6 overflows to an infinite, then NaN, loss by its 5th step
# (seen: 1.5, 9.8e9, 1.4e21, 3.8e31, nan). sf_model_loss returns SF_ERR_NONFINITE
# naming the step and the example exits 1, on 1 and on 2 ranks (every rank sees the
# same global loss, so every rank stops at the same step: no hang). Rank 0 alone says
# why; the other ranks say only that they stop because rank 0 failed.
. "$(dirname "$0")/lib.sh"
require_progs "$MLP"

plan 5
args="--steps 20 --widths 16,8,4 --batch 8 --lr 1e6"
for np in 1 2; do
	# shellcheck disable=SC2086
	sh "$RUN_MPI" $np "$MLP" $args </dev/null >"$tmp/out$np" 2>"$tmp/err$np"
	st=$?
	[ $st -ge 1 ] && [ $st -le 123 ] && ! grep -q '^final_loss' "$tmp/out$np"
	ok $? "$np rank(s): the diverging run exits with an error ($st) before its end"
	grep -q 'the loss of step [0-9]* (ticket [0-9]*) is .*nan.*diverged' "$tmp/err$np"
	if ! ok $? "$np rank(s): the message names the step and says the run diverged"; then
		diag_file "$tmp/err$np"
	fi
done

# one line per failure: rank 0 says it (and the program which call failed), rank 1
# only that it stops because of rank 0
counts=$(awk '/diverged/ { m++ } /^mlp_synthetic: .*failed/ { p++ } /\[rank 1\]/ { r1++ }
	/^shardflow: error: \[rank 1\] sf_model_loss: stopping: rank 0 failed$/ { s++ }
	END { printf "%d %d %d %d", m, p, r1, s }' "$tmp/err2")
[ "$counts" = "1 1 1 1" ]
ok $? "2 ranks: the message and the program's line once, rank 1 one line: stopping: rank 0 failed (message, program, rank 1, stopping: $counts; want 1 1 1 1)" ||
	diag_file "$tmp/err2"
finish
