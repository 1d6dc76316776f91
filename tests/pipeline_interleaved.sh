#!/bin/sh
# pipeline_interleaved.sh — the interleaved 1F1B schedule (issue 49:
# SHARDFLOW_PP_SCHEDULE=interleaved, SHARDFLOW_PP_VIRTUAL=V chunks a rank): the units cut
# into S x V chunks, rank s holding chunks s, s + S, ..., the activations going from
# chunk to chunk (the last stage's chunk j to the first stage's chunk j + 1), 1F1B's
# order over the chunks (Megatron-LM's), the transfers matched by their tags.
#
# Every chunk's backwards run in micro-batch order, as 1f1b's, so the gradients' sums
# are the same: an interleaved run is bitwise the 1f1b run of the same layout, and
# within the 1-rank run's rounding interval (docs/testing.md). Models
# (tests/test_models.h): deep (7 linear units), llama (4 units), llama-hf-tp; and
# examples/gpt. Checked:
#  - deep, SGD with clipping, pp 2 x V 2 and V 3 = 1f1b bitwise, V 2 = 1 rank;
#  - llama, AdamW with clipping, pp 2 x dp 2 = 1f1b bitwise; llama-hf-tp at pp 2 x tp 2
#    = 1f1b bitwise;
#  - examples/gpt untied at pp 4 x V 2 (8 chunks of its 8 units on 4 ranks: the last
#    stage's chunk 0 sends to the first stage's chunk 1) and tied at pp 2 x V 2 (its
#    tied units on the first and the last stage) = 1 rank: losses, val_loss, sample;
#  - the chunks each rank holds (the log), the bytes exactly at dp 1 (each rank sends
#    its three boundary tensors a micro-batch), the memory plan = sf_model_stats;
#  - checkpoints: interleaved pp 2 x dp 2 saved at step 2, resumed interleaved
#    (bitwise the uninterrupted run), under 1f1b and on 1 rank (within the interval);
#  - refused with the reason: micro-batches not a multiple of the stages, more chunks
#    than units, SHARDFLOW_PP_VIRTUAL out of range.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
GPT="$top_builddir/examples/gpt"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE" "$GPT" "$CKPT_DRIVER"

plan 16

IL="SHARDFLOW_PP_SCHEDULE=interleaved"
d="--model deep --optimizer sgd --steps 3 --batch 8 --clip 0.5"
train_interval 1 r --model deep --optimizer sgd --steps 3 --batch 2 --accum 4 --clip 0.5 ||
	bail_out "the reference run failed"
# shellcheck disable=SC2086
train 2 p1 SHARDFLOW_PP=2 $d
# shellcheck disable=SC2086
train 2 pi SHARDFLOW_PP=2 $IL SHARDFLOW_LOG=info $d
compare "deep, sgd, clip: pp 2, interleaved (V 2) = 1f1b, bitwise" pi p1 --bitwise
compare_within "deep, sgd, clip: pp 2, interleaved (V 2) = 1 rank" pi r
grep -q 'pipeline stage 0 of 2: chunk 0: units 0\.\.1, nodes 0\.\.[0-9]*; chunk 2: units 3\.\.4, nodes' "$tmp/pi.err" &&
	grep -q 'pipeline stage 1 of 2: chunk 1: units 2\.\.2, nodes [0-9.]*; chunk 3: units 5\.\.6, nodes' "$tmp/pi.err"
ok $? "deep at pp 2 x V 2: rank 0 holds chunks 0 and 2, rank 1 chunks 1 and 3 (the log)" ||
	diag_file "$tmp/pi.err"
# shellcheck disable=SC2086
train 2 pi3 SHARDFLOW_PP=2 $IL SHARDFLOW_PP_VIRTUAL=3 $d
compare "deep: pp 2, interleaved V 3 (6 chunks) = 1f1b, bitwise" pi3 p1 --bitwise
# dp 1, 3 steps of 8 rows: rank 0 sends chunk 0's and chunk 2's activations and chunk
# 2's input gradient, rank 1 chunk 1's activations and chunks 1's and 3's input
# gradients, each 24 floats a row
want=$((3 * 3 * 8 * 24 * 4))
got0=$(sent_bytes pi 0)
got1=$(sent_bytes pi 1)
[ "$got0" = "$want" ] && [ "$got1" = "$want" ]
ok $? "pp 2 x V 2, dp 1: each rank sends its three boundary tensors once a micro-batch ($want bytes: rank 0 $got0, rank 1 $got1)"
st=0
for r in 0 1; do plan_ok pi $r || st=1; done
ok $st "deep at pp 2 x V 2: the memory plan = sf_model_stats on both ranks, part by part"

l="--model llama --optimizer adamw --steps 3 --batch 16 --clip 0.5"
# shellcheck disable=SC2086
train 4 l1 SHARDFLOW_PP=2 $l
# shellcheck disable=SC2086
train 4 li SHARDFLOW_PP=2 $IL SHARDFLOW_LOG=info $l
compare "llama, adamw, clip: pp 2 x dp 2, interleaved = 1f1b, bitwise" li l1 --bitwise
st=0
for r in 0 1 2 3; do plan_ok li $r || st=1; done
ok $st "llama at pp 2 x dp 2 x V 2: the memory plan = sf_model_stats on every rank"
t="--model llama-hf-tp --optimizer adamw --steps 3 --batch 8 --clip 0.5"
# shellcheck disable=SC2086
train 4 t1 SHARDFLOW_PP=2 SHARDFLOW_TP=2 $t
# shellcheck disable=SC2086
train 4 ti SHARDFLOW_PP=2 SHARDFLOW_TP=2 $IL $t
compare "llama-hf-tp, adamw, clip: pp 2 x tp 2, interleaved = 1f1b, bitwise" ti t1 --bitwise

# examples/gpt: inference and sampling through the chunks
text="$tmp/corpus.txt"
sf_corpus "$text"
common="--layers 6 --heads 2 --embd 16 --context 16 --batch 8 --sample 1 \
--tokens 12 --eval-every 4 --eval-batches 1 --progress-every 1 --lr 0.004 --warmup 2 --steps 4"
gpt_run 1 u1 --untied --text "$text" --loss-log "$tmp/u1.loss"
gpt_run 4 u4 SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=4 $IL --untied --text "$text" \
	--loss-log "$tmp/u4.loss"
st=$?
[ "$st" = 0 ] && gpt_same u1 u4 4 && grep -q '^val_loss' "$tmp/u4.f" && grep -q '^sample 1:' "$tmp/u4.f"
ok $? "examples/gpt untied at pp 4 x V 2 (8 chunks) = 1 rank: losses, val_loss, sample" ||
	{ diag_file "$tmp/u4.err"; diff "$tmp/u1.f" "$tmp/u4.f" | sed 's/^/# /'; }
gpt_run 1 g1 --text "$text" --loss-log "$tmp/g1.loss"
gpt_run 2 g2 SHARDFLOW_PP=2 $IL --text "$text" --loss-log "$tmp/g2.loss"
st=$?
[ "$st" = 0 ] && gpt_same g1 g2 4
ok $? "examples/gpt tied at pp 2 x V 2 = 1 rank: losses, val_loss, sample" ||
	{ diag_file "$tmp/g2.err"; diff "$tmp/g1.f" "$tmp/g2.f" | sed 's/^/# /'; }

# checkpoints
ck="$tmp/ck"
c="--model deep --optimizer adamw --batch 8"
# shellcheck disable=SC2086
ckpt_ref 4 u22 SHARDFLOW_PP=2 $IL $c --steps 4
# shellcheck disable=SC2086
drv 4 s22 SHARDFLOW_PP=2 $IL $c --steps 2 --save "$ck" --save-every 2 &&
	drv 4 r22 SHARDFLOW_PP=2 $IL $c --steps 4 --resume "$ck" --out "$tmp/r22.dump" &&
	"$DUMP_COMPARE" --bitwise "$tmp/r22.dump" "$tmp/u22.dump" >"$tmp/cmp.out" 2>&1
ok $? "deep: an interleaved pp 2 x dp 2 checkpoint resumed interleaved = uninterrupted, bitwise"
diag_file "$tmp/cmp.out"
# shellcheck disable=SC2086
drv 4 r1f SHARDFLOW_PP=2 $c --steps 4 --resume "$ck" --out "$tmp/r1f.dump" &&
	drv 1 r1 $c --steps 4 --resume "$ck" --out "$tmp/r1.dump" &&
	"$DUMP_COMPARE" --up "$tmp/u22.up.dump" --down "$tmp/u22.down.dump" "$tmp/r1f.dump" \
		"$tmp/u22.dump" >"$tmp/cmp.out" 2>&1 &&
	"$DUMP_COMPARE" --up "$tmp/u22.up.dump" --down "$tmp/u22.down.dump" "$tmp/r1.dump" \
		"$tmp/u22.dump" >>"$tmp/cmp.out" 2>&1
ok $? "deep: the interleaved checkpoint (stages in turn in its manifest) resumed under 1f1b and on 1 rank"
diag_file "$tmp/cmp.out"

train_refused "interleaved with 3 micro-batches on 2 stages: refused" \
	"do not make whole groups; accepted: a multiple of 2" \
	2 bad-m SHARDFLOW_PP=2 $IL SHARDFLOW_PP_MICROBATCHES=3 --model deep --steps 1 --batch 6
train_refused "interleaved with more chunks than units: refused" \
	"has 7 units, fewer than the 8 chunks of SHARDFLOW_PP=2 x SHARDFLOW_PP_VIRTUAL=4" \
	2 bad-v SHARDFLOW_PP=2 $IL SHARDFLOW_PP_VIRTUAL=4 --model deep --steps 1 --batch 8
train_refused "SHARDFLOW_PP_VIRTUAL=0: refused, naming the range" \
	'SHARDFLOW_PP_VIRTUAL="0" is invalid: accepted values are integers from 1 to 16' \
	2 bad-v0 SHARDFLOW_PP=2 $IL SHARDFLOW_PP_VIRTUAL=0 --model deep --steps 1 --batch 8
finish
