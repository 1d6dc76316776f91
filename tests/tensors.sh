#!/bin/sh
# tensors.sh — parameters by name on 1 to 3 ranks and in every sharding mode:
# tests/test_tensors (its header says what each of its checks proves) under full
# sharding on 1, 2 and 3 ranks (3: every unit padded), grad_op and hybrid (2 nodes of
# 1) on 2, two micro-batches on 3, and sharding none on 2 (the gradient is not kept,
# refused with the reason). Each run's checks are agreed over its ranks.
. "$(dirname "$0")/lib.sh"
PROG="$top_builddir/tests/test_tensors"
require_progs "$PROG"

plan 7

run() { # run DESC NP [ENV...] [-- ARGS]
	_d=$1 _np=$2
	shift 2
	env "$@" sh "$RUN_MPI" "$_np" "$PROG" $TT_ARGS </dev/null >"$tmp/t.out" 2>"$tmp/t.err"
	_st=$?
	_n=$(grep -c '^ok ' "$tmp/t.out")
	[ $_st -eq 0 ] && [ "$_n" -ge 11 ] && ! grep -q '^not ok' "$tmp/t.out"
	ok $? "$_d: $_n checks pass" || { diag_file "$tmp/t.out"; diag_file "$tmp/t.err"; }
}
TT_ARGS=
run "full sharding, 1 rank" 1 SHARDFLOW_SHARDING=full
run "full sharding, 2 ranks" 2 SHARDFLOW_SHARDING=full
run "full sharding, 3 ranks (units padded)" 3 SHARDFLOW_SHARDING=full
run "grad_op, 2 ranks" 2 SHARDFLOW_SHARDING=grad_op
run "hybrid, 2 nodes of 1 rank" 2 SHARDFLOW_SHARDING=hybrid SHARDFLOW_NODE_SIZE=1
run "sharding none, 2 ranks: no gradient kept" 2 SHARDFLOW_SHARDING=none
TT_ARGS=2
run "full sharding, 3 ranks, 2 micro-batches: the gradient is their mean" 3 SHARDFLOW_SHARDING=full
finish
