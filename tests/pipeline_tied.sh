#!/bin/sh
# pipeline_tied.sh — a pipeline of a graph whose units are read at both ends (issue 49:
# a tied embedding and head, and GPT's unit of wpe and ln_f): such a unit is held by
# the first and the last stage (both shard it over their dp ranks), each stage's
# backward sums its own readers' gradient (the last stage's head writes it, the first
# stage's embedding too), the two reduced shards are sent to each other's rank of the
# same place at the step's end and added (a + b = b + a: the same bits on both), and
# both stages apply the same update; the clip norm counts it once (the first stage's).
#
# As in tests/pipeline.sh a step of M micro-batches is 1 rank's step of M micro-batches
# accumulated, and a run must lie within that run's rounding interval (docs/testing.md).
# Models (tests/test_models.h): nanogpt (sf_gpt_graph, tied: its units transformer.wte,
# the matrix and the head, and transformer, wpe and ln_f, both read by the first and
# the last stage), blocks (a hand-built tied head), nanogpt-tp (tied, tensor-parallel).
# Checked:
#  - nanogpt, AdamW with clipping: pp 2 on 2 ranks and pp 2 x dp 2 = 1 rank (losses,
#    parameters, every step's clip norm); pp 3 (a middle stage holding neither) too;
#  - gpipe and zero-bubble = 1f1b, bitwise (the same sums in the same order);
#  - blocks, SGD without clipping (the update at the exchange itself) at pp 2 = 1 rank;
#  - the bytes, exactly (dp 1: no ring sends): each stage sends its boundary tensor a
#    micro-batch and the shared units' whole gradient once a step;
#  - the last stage holds the shared units' state too, and the memory plan
#    (SHARDFLOW_MEMORY_CHECK, logged) = sf_model_stats on every rank, part by part;
#  - checkpoints: pp 2 x dp 2 saved at step 2 resumed at pp 2 x dp 2 (bitwise the
#    uninterrupted run) and on 1 rank, 1 rank's resumed at pp 2 (within the interval);
#  - nanogpt-tp at pp 2 x tp 2 = 1 rank (the tied vocabulary-parallel head);
#  - examples/gpt (a tied GPT) at pp 2 = 1 rank: losses, val_loss and the sample;
#  - refused with the reason: a unit read in a middle stage (nanogpt at pp 4: its
#    transformer unit in stages 1 and 3).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
GPT="$top_builddir/examples/gpt"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE" "$GPT" "$CKPT_DRIVER"

plan 15

a="--model nanogpt --optimizer adamw --clip 0.5"
# shellcheck disable=SC2086
train_interval 1 r $a --steps 3 --batch 2 --accum 4 || bail_out "the reference run failed"
# shellcheck disable=SC2086
train 2 p2 SHARDFLOW_PP=2 SHARDFLOW_LOG=info $a --steps 3 --batch 8
compare_within "nanogpt (tied), adamw, clip: pp 2 on 2 ranks = 1 rank" p2 r
within_interval p2 r '^norm ' >"$tmp/w.out"
ok $? "nanogpt: pp 2's clip norms = 1 rank's (the shared units counted once)"
diag_file "$tmp/w.out"
grep -q 'pipeline stage 0 of 2: units 0\.\.2 (2 of them shared with stage 1),' "$tmp/p2.err" &&
	grep -q 'pipeline stage 1 of 2: units 3\.\.3 and 2 shared with stage 0,' "$tmp/p2.err"
ok $? "nanogpt at pp 2: transformer.wte and transformer held by both stages (the log)" ||
	diag_file "$tmp/p2.err"
for sch in gpipe zero-bubble; do
	# shellcheck disable=SC2086
	train 2 "p2-$sch" SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=$sch $a --steps 3 --batch 8
	compare "nanogpt: $sch = 1f1b on 2 stages, bitwise" "p2-$sch" p2 --bitwise
done
# shellcheck disable=SC2086
train_interval 1 r16 $a --steps 3 --batch 4 --accum 4 || bail_out "the reference run failed"
# shellcheck disable=SC2086
train 4 p22 SHARDFLOW_PP=2 SHARDFLOW_LOG=info $a --steps 3 --batch 16
compare_within "nanogpt, adamw, clip: pp 2 x dp 2 on 4 ranks = 1 rank" p22 r16
# shellcheck disable=SC2086
train_interval 1 r6 $a --steps 3 --batch 1 --accum 6 || bail_out "the reference run failed"
# shellcheck disable=SC2086
train 3 p3 SHARDFLOW_PP=3 $a --steps 3 --batch 6
compare_within "nanogpt, adamw, clip: pp 3 on 3 ranks (stage 1 holds no shared unit) = 1 rank" p3 r6

# blocks, SGD without clipping: the shared unit updated right after the exchange
train_interval 1 b-r --model blocks --optimizer sgd --steps 3 --batch 2 --accum 4 ||
	bail_out "the reference run failed"
train 2 b-p2 SHARDFLOW_PP=2 --model blocks --optimizer sgd --steps 3 --batch 8
compare_within "blocks (a hand-built tied head), sgd: pp 2 on 2 ranks = 1 rank" b-p2 b-r

# the bytes at dp 1, 3 steps: 4 micro-batches of 2 x 5 rows x 10 floats (the boundary,
# one tensor each way), and the shared units' gradients once a step each way:
# transformer.wte 16 x 10, transformer wpe 5 x 10 and ln_f 2 x 10
want=$((3 * (8 * 5 * 10 + 16 * 10 + 5 * 10 + 2 * 10) * 4))
got0=$(sent_bytes p2 0)
got1=$(sent_bytes p2 1)
[ "$got0" = "$want" ] && [ "$got1" = "$want" ]
ok $? "pp 2, dp 1: each stage sends the boundary and the shared gradients once ($want bytes: rank 0 $got0, rank 1 $got1)"

# the memory: the last stage holds the shared units' shards and optimizer state (AdamW:
# 2 floats a parameter of them: (160 + 70) x 8 bytes more than without them); the plan
# = sf_model_stats on every rank
st=0
for r in 0 1; do plan_ok p2 $r || st=1; done
for r in 0 1 2 3; do plan_ok p22 $r || st=1; done
o1=$(stats_of p2 1 optimizer)
grep -q "memory: rank 1 (pipeline stage 1 of 2) .*optimizer_bytes $o1 " "$tmp/p2.err" &&
	[ "$o1" -ge $(((160 + 70) * 8)) ] && [ $st = 0 ]
ok $? "the memory plan = sf_model_stats on every rank (pp 2, pp 2 x dp 2); the last stage's optimizer state holds the shared units' ($o1 bytes)"

# checkpoints across layouts
ck="$tmp/ck"
c="--model nanogpt --optimizer adamw --batch 8"
# shellcheck disable=SC2086
ckpt_ref 4 u22 SHARDFLOW_PP=2 $c --steps 4
# shellcheck disable=SC2086
drv 4 s22 SHARDFLOW_PP=2 $c --steps 2 --save "$ck" --save-every 2 &&
	drv 4 r22 SHARDFLOW_PP=2 $c --steps 4 --resume "$ck" --out "$tmp/r22.dump" &&
	"$DUMP_COMPARE" --bitwise "$tmp/r22.dump" "$tmp/u22.dump" >"$tmp/cmp.out" 2>&1 &&
	drv 1 r1 $c --steps 4 --resume "$ck" --out "$tmp/r1.dump" &&
	"$DUMP_COMPARE" --up "$tmp/u22.up.dump" --down "$tmp/u22.down.dump" "$tmp/r1.dump" \
		"$tmp/u22.dump" >>"$tmp/cmp.out" 2>&1
ok $? "nanogpt: pp 2 x dp 2's checkpoint resumed at pp 2 x dp 2 (bitwise) and on 1 rank (within the interval)"
diag_file "$tmp/cmp.out"
# shellcheck disable=SC2086
ckpt_ref 1 u1 $c --steps 4
# shellcheck disable=SC2086
drv 1 s1 $c --steps 2 --save "$ck.1" --save-every 2 &&
	drv 2 q2 SHARDFLOW_PP=2 $c --steps 4 --resume "$ck.1" --out "$tmp/q2.dump" &&
	"$DUMP_COMPARE" --up "$tmp/u1.up.dump" --down "$tmp/u1.down.dump" "$tmp/q2.dump" \
		"$tmp/u1.dump" >"$tmp/cmp.out" 2>&1
ok $? "nanogpt: 1 rank's checkpoint resumed at pp 2 (both stages load the shared units)"
diag_file "$tmp/cmp.out"

# the tied vocabulary-parallel head with TP: pp 2 x tp 2
train_interval 1 t-r --model nanogpt-tp --optimizer adamw --steps 3 --batch 2 --accum 4 \
	--clip 0.5 || bail_out "the reference run failed"
train 4 t-p SHARDFLOW_PP=2 SHARDFLOW_TP=2 --model nanogpt-tp --optimizer adamw --steps 3 \
	--batch 8 --clip 0.5
compare_within "nanogpt-tp (tied), adamw, clip: pp 2 x tp 2 on 4 ranks = 1 rank" t-p t-r

# examples/gpt, a tied GPT, at pp 2
text="$tmp/corpus.txt"
sf_corpus "$text"
common="--layers 2 --heads 4 --embd 32 --context 32 --batch 8 --sample 1 \
--tokens 20 --eval-every 4 --eval-batches 1 --progress-every 1 --lr 0.004 --warmup 2 --steps 4"
gpt_run 1 g1 --text "$text" --loss-log "$tmp/g1.loss"
gpt_run 2 g2 SHARDFLOW_PP=2 --text "$text" --loss-log "$tmp/g2.loss"
st=$?
[ "$st" = 0 ] && gpt_same g1 g2 4 && grep -q '^val_loss' "$tmp/g2.f" && grep -q '^sample 1:' "$tmp/g2.f"
ok $? "examples/gpt (tied) at pp 2 = 1 rank: losses, val_loss, sample" ||
	{ diag_file "$tmp/g2.err"; diff "$tmp/g1.f" "$tmp/g2.f" | sed 's/^/# /'; }

train_refused "a unit read in a middle stage (nanogpt at pp 4): refused" \
	'unit "transformer" is read in pipeline stages 1 to 3 of 4' \
	4 bad-mid SHARDFLOW_PP=4 --model nanogpt --steps 1 --batch 8
finish
