#!/bin/sh
# equivalence.sh — sharding does not change the maths.
#
# Training on N ranks (each rank holding 1/N of every unit, padded when P is not a
# multiple of N, and computing on its slice of the global batch) must give the same
# losses and parameters as training on 1 rank with the same global batch. The gradient
# is summed in a different order (per-rank partial sums, then the reduce-scatter), so
# the comparison is not bitwise: the N-rank run must lie within the 1-rank run's
# rounding interval (that run again with every operation rounded upward, then downward:
# tests/dump_compare.c --up/--down, docs/testing.md), which no CPU's order of the sums
# can leave and a wrong sharding or average does by orders of magnitude.
#
# Cases: N = 2, 3, 4 for models mlp and uneven (every unit padded at 3 and 4 ranks,
# the first also at 2), residual (a DAG) at N = 2, 6 SGD steps and 6 AdamW steps,
# batch 24 (divisible by 1..4); batch 25 for two cases so the slices are uneven too;
# Lion (its sign() turns a gradient's last-bit difference into a 2 lr step only where
# the interpolation c is within rounding of 0, which these models' gradients are not)
# on mlp at N = 2, 3, 4, uneven at 3, residual at 2; and Llama's block ops (rmsnorm,
# silu, mul: the swiglu model) with SGD at N = 2, 3 and AdamW at 3; a small Llama (rope
# and attention too, on sequences) with SGD at N = 2, 3 and AdamW at 2; sf_llama_graph
# itself (llama-hf) with SGD at 2, 3 and AdamW at 3.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

steps=6

plan 30

# model optimizer batch ranks-to-compare-with-1-rank
while read -r model opt batch nps; do
	ref="$model-$opt-$batch-n1"
	args="--model $model --optimizer $opt --batch $batch --steps $steps"
	# shellcheck disable=SC2086
	train_interval 1 "$ref" $args
	for n in $(echo "$nps" | tr , ' '); do
		name="$model-$opt-$batch-n$n"
		# shellcheck disable=SC2086
		train "$n" "$name" $args
		compare_within "$model, $opt, batch $batch: $n ranks = 1 rank" "$name" "$ref"
	done
done <<EOF
mlp sgd 24 2,3,4
mlp adamw 24 2,3,4
uneven sgd 24 2,3,4
uneven adamw 24 2,3,4
residual sgd 24 2
residual adamw 24 2
mlp sgd 25 4
uneven adamw 25 3
mlp lion 24 2,3,4
uneven lion 24 3
residual lion 24 2
swiglu sgd 24 2,3
swiglu adamw 24 3
llama sgd 24 2,3
llama adamw 24 2
llama-hf sgd 24 2,3
llama-hf adamw 24 3
EOF
finish
