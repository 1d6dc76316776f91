#!/bin/sh
# sharding_modes.sh — the sharding mode is a memory/communication trade-off only.
#
# SHARDFLOW_SHARDING=full (ZeRO-3), grad_op (ZeRO-2: parameters replicated) and none
# (DDP: all-reduce) must train to the same parameters and losses. The gradient
# reduction differs (reduce-scatter vs all-reduce), so the comparison is within full
# sharding's rounding interval (tests/dump_compare.c --up/--down, docs/testing.md).
# On 2 ranks (mlp) and 3 ranks (uneven: every unit padded), with SGD and AdamW.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

steps=6

plan 8

for np in 2 3; do
	model=mlp
	[ "$np" -eq 3 ] && model=uneven
	for opt in sgd adamw; do
		train_interval "$np" "$model-$opt-n$np-full" SHARDFLOW_SHARDING=full \
			--model $model --optimizer $opt --steps $steps
		for mode in grad_op none; do
			train "$np" "$model-$opt-n$np-$mode" SHARDFLOW_SHARDING=$mode \
				--model $model --optimizer $opt --steps $steps
		done
		for mode in grad_op none; do
			compare_within "$model, $opt, $np ranks: sharding $mode = full" \
				"$model-$opt-n$np-$mode" "$model-$opt-n$np-full"
		done
	done
done
finish
