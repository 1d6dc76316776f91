#!/bin/sh
# accumulation.sh — gradient accumulation (sf_model_accumulate) is the step of the
# whole batch.
#
# A step of K micro-batches of B samples must update the parameters as one step of
# K B samples: train_dump --accum K --batch B feeds micro-batch j of step k the rows
# [j B, (j + 1) B) of global batch k, which a --batch K·B run takes in one step (its
# loss is the mean of the micro-batches', which is the big batch's mean). The sums
# run in another order (the micro-batches' gradients are added, then scaled by 1/K),
# so the run must lie within the reference's rounding interval (the reference again
# with every operation rounded upward, then downward: docs/testing.md).
# Cases: both SHARDFLOW_ACCUM_MODE (sharded: a reduce-scatter per micro-batch added
# into the shard; local: a full local sum reduced once), N = 1, 2, 3, for full
# sharding; grad_op and none on 2 ranks; SGD and AdamW; the MLP (K = 4) and
# sf_gpt_graph (K = 3, sequences of 5 tokens); and bitwise equality across prefetch
# depths and backward prefetch policies with accumulation, in both modes. And the
# buffers: with SHARDFLOW_GRAD_ACCUM=2 and the local mode, examples/gpt's memory line
# (sf_model_stats right after sf_model_create) counts the full-unit sums already
# (4.9 MiB of gradients against 4.0 without): a step then allocates nothing.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE" "$top_builddir/examples/gpt"

steps=4

plan 19

# model optimizer K B: the reference, one step of K B samples on 1 rank
ref() {
	train_interval 1 "ref-$1-$2" --model "$1" --optimizer "$2" --steps $steps --batch $(($3 * $4)) ||
		bail_out "the reference run failed"
}

# model optimizer K B ranks sharding mode
case_() {
	_n="acc-$1-$2-$5-$6-$7"
	train "$5" "$_n" SHARDFLOW_SHARDING="$6" SHARDFLOW_ACCUM_MODE="$7" --model "$1" \
		--optimizer "$2" --steps $steps --batch "$4" --accum "$3"
	compare_within "$1, $2: $3 micro-batches of $4 = one batch of $(($3 * $4)); $5 rank(s), $6, $7" \
		"$_n" "ref-$1-$2"
}

ref mlp sgd 4 6
ref mlp adamw 4 6
ref nanogpt sgd 3 4
for mode in sharded local; do
	for n in 1 2 3; do
		case_ mlp sgd 4 6 "$n" full "$mode"
	done
	case_ mlp sgd 4 6 2 grad_op "$mode"
	case_ mlp sgd 4 6 2 none "$mode"
	case_ mlp adamw 4 6 3 full "$mode"
	case_ nanogpt sgd 3 4 2 full "$mode"
	case_ nanogpt sgd 3 4 3 none "$mode"
done

# the schedule does not change a bit: prefetch depth 0 against 4 with backward
# prefetch post (local mode), depth 1 with none against the default (sharded)
for mode in local:0:4:post sharded:1:2:none; do
	IFS=: read -r m d1 d2 bwd <<EOS
$mode
EOS
	train 2 "bw-$m-a" SHARDFLOW_ACCUM_MODE="$m" SHARDFLOW_PREFETCH_DEPTH="$d1" \
		--model nanogpt --optimizer adamw --steps $steps --batch 4 --accum 3
	train 2 "bw-$m-b" SHARDFLOW_ACCUM_MODE="$m" SHARDFLOW_PREFETCH_DEPTH="$d2" \
		SHARDFLOW_BACKWARD_PREFETCH="$bwd" --model nanogpt --optimizer adamw --steps $steps \
		--batch 4 --accum 3
	compare "$m mode: depth $d1 = depth $d2 with backward prefetch $bwd, bitwise" \
		"bw-$m-a" "bw-$m-b" --bitwise
done

# the accumulation buffers exist from sf_model_create when SHARDFLOW_GRAD_ACCUM > 1
sf_corpus "$tmp/corpus.txt"
gpt_mem() { # ENV...: the gradients' MiB of examples/gpt's memory line
	env "$@" "$top_builddir/examples/gpt" --text "$tmp/corpus.txt" --layers 1 --steps 1 \
		--sample 0 --eval-every 100 </dev/null 2>&1 |
		sed -n 's/.*memory per rank:.*gradients \([0-9.]*\) MiB.*/\1/p'
}
g1=$(gpt_mem SHARDFLOW_ACCUM_MODE=local)
g2=$(gpt_mem SHARDFLOW_ACCUM_MODE=local SHARDFLOW_GRAD_ACCUM=2)
[ -n "$g1" ] && [ -n "$g2" ] && awk -v a="$g1" -v b="$g2" 'BEGIN { exit !(b > a) }'
ok $? "SHARDFLOW_GRAD_ACCUM=2, local mode: the sums are made by sf_model_create (gradients ${g2:-?} MiB at start, ${g1:-?} without)"
finish
