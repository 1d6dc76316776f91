#!/bin/sh
# nonfinite.sh — a diverging run stops with an error naming the step, instead of
# training on NaN and exiting 0 with "loss nan".
#
# mlp_synthetic with lr 1e6 overflows to an infinite, then NaN, loss by its 5th step
# (seen: 1.5, 9.8e9, 1.4e21, 3.8e31, nan). sf_model_loss returns SF_ERR_NONFINITE
# naming the step and the example exits 1, on 1 and on 2 ranks (every rank sees the
# same global loss, so every rank stops at the same step: no hang).
. "$(dirname "$0")/lib.sh"
require_progs "$MLP"

plan 4
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
finish
