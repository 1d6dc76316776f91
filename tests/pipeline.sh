#!/bin/sh
# pipeline.sh — pipeline parallelism (SHARDFLOW_PP=S, world = S x dp) against 1 rank.
#
# A pipeline step of M micro-batches must update the parameters as 1 rank does with M
# micro-batches accumulated (train_dump --accum M --batch B/M on 1 rank, as
# accumulation.sh's reference): each micro-batch's loss is the mean over its rows,
# the gradients are summed and scaled by 1/M. With dp 1 a micro-batch holds the same
# rows as the reference's; with dp 2 it holds other rows of the same batch, so the sums
# run in another order: the run must lie within the reference's rounding interval (the
# reference again rounded upward and downward: docs/testing.md), losses, parameters and
# clip norms. Models (tests/test_models.h): deep (7 linear units, a chain of float
# rows) and llama (token ids, 2 attention blocks, an untied head: the transformer whose
# units follow each other; blocks, gpt and nanogpt hold a tied head or the embedding
# and the final norm in one unit, which a pipeline refuses). Checked:
#  - pp 2 on 2 ranks, pp 4 on 4 ranks (8 micro-batches) and pp 2 x dp 2 on 4 ranks
#    = 1 rank, SGD and AdamW, with clipping (max norm 0.5: the norm summed across the
#    stages, printed and compared) and both accumulation modes;
#  - fewer micro-batches than stages; one micro-batch with 3 steps in flight and no
#    prefetch = a plain 1-rank step, bitwise;
#  - gpipe = 1f1b bitwise (both sum the micro-batches' gradients in micro-batch order);
#  - the safetensors export of pp 2 (each unit from its stage's ranks) = 1 rank's,
#    byte for byte (dp 1: the same sums in the same order);
#  - the transfers' bytes, exactly: pp 2 on 2 ranks (dp 1: no ring sends anything),
#    each stage sends steps x rows x 24 floats (deep's cut after its third unit);
#  - refused with the reason: S not dividing the world, more stages than units, a bad
#    schedule name (interleaved: not yet), a tied head, micro-batches not dividing the
#    batch, and sf_model_accumulate under a pipeline.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 20

# name: the norms of a run's steps (clipping), one per line
norms() {
	grep '^norm ' "$tmp/$1.out" | awk '{print $3}'
}

# desc a b: every step's norm of run a within b's rounding interval
same_norms() {
	within_interval "$2" "$3" '^norm ' >"$tmp/nw"
	ok $? "$1"
	norms "$2" >"$tmp/na"
	norms "$3" >"$tmp/nb"
	paste "$tmp/na" "$tmp/nb" | sed 's/^/#   norm /'
	diag_file "$tmp/nw"
}

# deep, SGD, clipping: pp 2 (M 4), pp 4 (M 8) against 1 rank
train 1 deep-r4 --model deep --optimizer sgd --steps 4 --batch 2 --accum 4 --clip 0.5 \
	--export "$tmp/deep-r4.st" &&
	interval_of 1 deep-r4 --model deep --optimizer sgd --steps 4 --batch 2 --accum 4 --clip 0.5 ||
	bail_out "the reference run failed"
train 2 deep-p2 SHARDFLOW_PP=2 --model deep --optimizer sgd --steps 4 --batch 8 --clip 0.5 \
	--export "$tmp/deep-p2.st"
compare_within "deep, sgd, clip: pp 2 on 2 ranks (4 micro-batches) = 1 rank" deep-p2 deep-r4
same_norms "deep: the clip norm of pp 2 = 1 rank's (both stages' units)" deep-p2 deep-r4
cmp -s "$tmp/deep-p2.st" "$tmp/deep-r4.st"
ok $? "deep: pp 2's safetensors export = 1 rank's, byte for byte (each unit from its stage)"
train 2 deep-p2g SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=gpipe --model deep --optimizer sgd \
	--steps 4 --batch 8 --clip 0.5
compare "deep: gpipe = 1f1b on 2 stages, bitwise" deep-p2g deep-p2 --bitwise
# dp 1: only the boundary moves: 8 rows x 24 floats a step each way
want=$((4 * 8 * 24 * 4))
got0=$(awk '$1 == "rank" && $2 == 0 {print $4}' "$tmp/deep-p2.out")
got1=$(awk '$1 == "rank" && $2 == 1 {print $4}' "$tmp/deep-p2.out")
[ "$got0" = "$want" ] && [ "$got1" = "$want" ]
ok $? "pp 2, dp 1: each stage sends its boundary tensor once a micro-batch ($want bytes: rank 0 $got0, rank 1 $got1)"

train_interval 1 deep-r8 --model deep --optimizer sgd --steps 3 --batch 1 --accum 8 --clip 0.5 ||
	bail_out "the reference run failed"
train 4 deep-p4 SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=8 --model deep --optimizer sgd \
	--steps 3 --batch 8 --clip 0.5
compare_within "deep, sgd, clip: pp 4 on 4 ranks (8 micro-batches, 1f1b) = 1 rank" deep-p4 deep-r8
train 4 deep-p4g SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=8 SHARDFLOW_PP_SCHEDULE=gpipe \
	--model deep --optimizer sgd --steps 3 --batch 8 --clip 0.5
compare "deep: gpipe = 1f1b on 4 stages, bitwise" deep-p4g deep-p4 --bitwise

# fewer micro-batches than stages (AdamW); one micro-batch, steps in flight, no
# prefetch: a plain step of the whole batch, bitwise
train_interval 1 deep-r2 --model deep --optimizer adamw --steps 3 --batch 4 --accum 2 ||
	bail_out "the reference run failed"
train 4 deep-p4m2 SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=2 --model deep --optimizer adamw \
	--steps 3 --batch 8
compare_within "deep, adamw: pp 4 with 2 micro-batches (fewer than the stages) = 1 rank" \
	deep-p4m2 deep-r2
train 1 deep-r1 --model deep --optimizer sgd --steps 3 --batch 8 ||
	bail_out "the reference run failed"
train 2 deep-p2m1 SHARDFLOW_PP=2 SHARDFLOW_PP_MICROBATCHES=1 SHARDFLOW_PREFETCH_DEPTH=0 \
	SHARDFLOW_BACKWARD_PREFETCH=none --model deep --optimizer sgd --steps 3 --batch 8 --inflight 3
compare "deep: pp 2 with 1 micro-batch, 3 steps in flight, depth 0 = 1 rank's step, bitwise" \
	deep-p2m1 deep-r1 --bitwise

# llama, pp 2 x dp 2 on 4 ranks: SGD; AdamW with clipping, both schedules
for opt in sgd adamw; do
	train_interval 1 "llama-r-$opt" --model llama --optimizer $opt --steps 4 --batch 2 --accum 4 \
		--clip 0.5 || bail_out "the reference run failed"
	train 4 "llama-p-$opt" SHARDFLOW_PP=2 --model llama --optimizer $opt --steps 4 \
		--batch 8 --clip 0.5
	compare_within "llama, $opt, clip: pp 2 x dp 2 on 4 ranks = 1 rank" "llama-p-$opt" \
		"llama-r-$opt"
done
same_norms "llama: the clip norm of pp 2 x dp 2 = 1 rank's" llama-p-adamw llama-r-adamw
train 4 llama-pg-adamw SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=gpipe --model llama \
	--optimizer adamw --steps 4 --batch 8 --clip 0.5
compare "llama, adamw: gpipe = 1f1b on pp 2 x dp 2, bitwise" llama-pg-adamw llama-p-adamw --bitwise
train 4 llama-pl-sgd SHARDFLOW_PP=2 SHARDFLOW_ACCUM_MODE=local --model llama --optimizer sgd \
	--steps 4 --batch 8 --clip 0.5
compare_within "llama, sgd: pp 2 x dp 2 with SHARDFLOW_ACCUM_MODE=local = 1 rank" \
	llama-pl-sgd llama-r-sgd

# refusals: a failed run whose stderr says why
refused() {
	_d=$1 _re=$2
	shift 2
	if train "$@" 2>/dev/null; then
		ok 1 "$_d: accepted"
		return
	fi
	grep -q "$_re" "$tmp/$2.err" "$tmp/$2.out"
	ok $? "$_d"
}
refused "SHARDFLOW_PP=3 on 2 ranks: refused" "SHARDFLOW_PP=3 does not divide the 2 ranks" \
	2 bad-div SHARDFLOW_PP=3 --model deep --steps 1 --batch 6
refused "SHARDFLOW_PP=4 for the mlp's 3 units: refused" "has 3 units, fewer than the 4 pipeline stages" \
	4 bad-units SHARDFLOW_PP=4 --model mlp --steps 1 --batch 8
refused "SHARDFLOW_PP_SCHEDULE=interleaved: refused, naming the schedules" \
	'SHARDFLOW_PP_SCHEDULE="interleaved" is invalid: accepted values are gpipe, 1f1b' \
	2 bad-sched SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=interleaved --model deep --steps 1 --batch 8
refused "a tied head under SHARDFLOW_PP=2: refused" "a tied head reads its embedding's unit" \
	2 bad-tied SHARDFLOW_PP=2 --model blocks --steps 1 --batch 8
refused "SHARDFLOW_PP_MICROBATCHES=3 for a batch of 8: refused" \
	"batch 8 does not split into 1 data-parallel ranks x 3 micro-batches" \
	2 bad-mb SHARDFLOW_PP=2 SHARDFLOW_PP_MICROBATCHES=3 --model deep --steps 1 --batch 8
refused "sf_model_accumulate under a pipeline: refused" "splits each step into its" \
	2 bad-acc SHARDFLOW_PP=2 --model deep --steps 1 --batch 8 --accum 2
