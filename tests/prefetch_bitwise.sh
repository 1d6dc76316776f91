#!/bin/sh
# prefetch_bitwise.sh — prefetching changes when parameters arrive, never the result.
#
# SHARDFLOW_PREFETCH_DEPTH (0, 1, 2, 4) and SHARDFLOW_BACKWARD_PREFETCH (pre, post,
# none) only change the order in which gathers are submitted and how many gathered
# units may be resident; every kernel sees the same operands and the collectives
# reduce in the same order. So every setting must give bitwise identical losses and
# parameters (dump_compare --bitwise) as the default (depth 2, pre).
#
# Cases on 2 ranks: the full 4 x 3 grid for mlp + SGD and for residual + AdamW (the
# residual DAG accumulates the gradient of h from two consumers); a diagonal of the
# grid for mlp + AdamW and residual + SGD; and mlp + SGD with 3 steps in flight
# (train_dump --inflight 3), so consecutive steps overlap. On 3 ranks, a diagonal for
# mlp + SGD. Every depth and every backward mode appears in each group.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

steps=4
full_grid="0:pre 0:post 0:none 1:pre 1:post 1:none 2:post 2:none 4:pre 4:post 4:none"
diagonal="0:post 1:none 4:pre"

# group NP MODEL OPT CONFIGS: the baseline (2:pre) and one comparison per config.
group() {
	_gnp=$1 _gm=$2 _go=$3
	base="$_gm-$_go-n$_gnp-d2-pre"
	train "$_gnp" "$base" SHARDFLOW_PREFETCH_DEPTH=2 SHARDFLOW_BACKWARD_PREFETCH=pre \
		--model "$_gm" --optimizer "$_go" --steps $steps
	for c in $4; do
		d=${c%:*} b=${c#*:}
		name="$_gm-$_go-n$_gnp-d$d-$b"
		train "$_gnp" "$name" SHARDFLOW_PREFETCH_DEPTH="$d" SHARDFLOW_BACKWARD_PREFETCH="$b" \
			--model "$_gm" --optimizer "$_go" --steps $steps
		compare "$_gm, $_go, $_gnp ranks: depth $d, backward $b = depth 2, pre (bitwise)" \
			"$name" "$base" --bitwise
	done
}

plan 32

group 2 mlp sgd "$full_grid"
train 2 mlp-sgd-n2-inflight3 SHARDFLOW_PREFETCH_DEPTH=2 SHARDFLOW_BACKWARD_PREFETCH=pre --model mlp --optimizer sgd --steps $steps --inflight 3
compare "mlp, sgd, 2 ranks: 3 steps in flight = 1 step in flight (bitwise)" \
	mlp-sgd-n2-inflight3 mlp-sgd-n2-d2-pre --bitwise
group 2 residual adamw "$full_grid"
group 2 mlp adamw "$diagonal"
group 2 residual sgd "0:none 1:pre 4:post"
group 3 mlp sgd "0:pre 1:post 4:none"
finish
