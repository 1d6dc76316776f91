#!/bin/sh
# slots.sh — ring slots and gradient slots are sized per unit, not all by the largest.
#
# tests/slots_probe builds a model whose largest unit is its tied embedding (2 400
# parameters against 296 a block), trains 2 steps and evaluates (step.c refuses a slot
# smaller than the unit it hands it to), then checks sf_model_stats' parameter and
# gradient floats against the slot sizes it computes from the units' sizes and the
# documented rule, and that the ring and the gradient slots hold less than slots x
# the largest unit. On 1, 2 and 3 ranks (3: padded shards, 296 = 3 x 99 - 1),
# prefetch depths 0, 1, 2 and 4, sharding full, grad_op and none, recompute, each
# backward policy, the split backward and bf16 parameters.
. "$(dirname "$0")/lib.sh"
PROBE="$top_builddir/tests/slots_probe"
require_progs "$PROBE"

plan 13

# probe NP DESCRIPTION [VAR=VALUE ...]
probe() {
	_np=$1 _desc=$2
	shift 2
	env "$@" sh "$RUN_MPI" "$_np" "$PROBE" </dev/null >"$tmp/probe.out" 2>"$tmp/probe.err"
	_st=$?
	diag "$(head -n 1 "$tmp/probe.out")"
	[ $_st -eq 0 ] || { diag_file "$tmp/probe.out"; diag_file "$tmp/probe.err"; }
	ok $_st "$_desc"
}

for d in 0 1 2 4; do
	probe 2 "2 ranks, full, depth $d: slots as planned" SHARDFLOW_PREFETCH_DEPTH=$d
done
probe 1 "1 rank, full, depth 2: slots as planned"
probe 3 "3 ranks (padded shards), full, depth 2: slots as planned"
for s in grad_op none; do
	probe 2 "2 ranks, $s: gradient slots as planned" SHARDFLOW_SHARDING=$s
done
probe 2 "2 ranks, full, depth 1, recompute units: slots as planned" \
	SHARDFLOW_PREFETCH_DEPTH=1 SHARDFLOW_RECOMPUTE=units
for b in none post; do
	probe 2 "2 ranks, full, backward $b: slots as planned" SHARDFLOW_BACKWARD_PREFETCH=$b
done
probe 2 "2 ranks, full, split backward: slots as planned" SHARDFLOW_SPLIT_BACKWARD=on
probe 2 "2 ranks, full, bf16 parameters: slots as planned" SHARDFLOW_PARAM_DTYPE=bf16
finish
