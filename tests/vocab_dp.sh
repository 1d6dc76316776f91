#!/bin/sh
# vocab_dp.sh — FSDP's vocabulary-parallel tied unit (issue 48 item 2,
# scheduler/vocabdp.c) against 1 rank.
#
# Under SHARDFLOW_TP=1 with N > 1 data-parallel ranks, a tied head's embedding_vp in a
# unit of its own is never gathered: rank r's shard is rows [r Vl, (r+1) Vl) of the
# matrix (Vl = ceil(V / N)), the embedding looks up the N ranks' ids and reduce-scatters
# its partial rows, the head all-gathers the N ranks' input rows and computes their
# logits over its Vl classes, the loss is the vocabulary-parallel cross-entropy over
# the N ranks' rows, and the unit's gradient goes into the shard without a
# reduce-scatter. Models (tests/test_models.h): nanogpt-vpo9 (the tied nanogpt,
# vocabulary 9: Vl 5 at dp 2 and 3 at dp 4, padded), nanogpt-vpt (vocabulary 16) and
# llama-hf-vpt (the tied Llama). Checked:
#  - dp 2 and dp 4 (full and grad_op sharding) = 1 rank within its rounding interval,
#    SGD and AdamW, with clipping's norm = 1 rank's; the info line saying so;
#  - bitwise across prefetch depths and backward prefetch policies;
#  - 3 micro-batches (sharded and local accumulation) = one batch of 24 on 1 rank;
#  - ignored labels: the loss counted once; sf_model_evaluate = 1 rank's;
#    sf_model_forward of the head (the group's rows over a rank's classes) refused;
#  - hybrid sharding (2 nodes of 2: the group a node, the unit's gradient all-reduced
#    across the nodes) = 1 rank; SHARDFLOW_VOCAB_PARALLEL=off at dp 2 = 1 rank;
#  - checkpoints: dp 2 (on) -> dp 4 (off) -> dp 4 (on) -> 1 rank = 1 rank
#    uninterrupted (the files hold ceil(P / N) shards whatever the unit's rows);
#  - refused with =on where it cannot apply (sharding none, a batch the ranks do not
#    divide, an untied head); auto then gathers the matrix as before (= 1 rank);
#  - examples/gpt (tied, byte vocabulary 256) with =on at dp 2 and dp 4 grad_op = 1 rank:
#    every step's loss, the validation loss and the sampled text (sf_model_predict's
#    logits made whole); under auto it builds it where sf_vocab_parallel_pays (a
#    sample a rank, not four).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
GPT="$top_builddir/examples/gpt"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE" "$GPT" "$CKPT_DRIVER"

plan 30

# ---- layouts against 1 rank ----
for c in nanogpt-vpo9:sgd nanogpt-vpo9:adamw nanogpt-vpt:adamw llama-hf-vpt:adamw; do
	model=${c%:*} opt=${c#*:}
	train_interval 1 "r1-$model-$opt" --model "$model" --optimizer "$opt" --steps 6 --clip 0.5
	train 2 "d2-$model-$opt" SHARDFLOW_LOG=info --model "$model" --optimizer "$opt" --steps 6 \
		--clip 0.5
	clipped_within "d2-$model-$opt" "r1-$model-$opt"
	ok $? "$model, $opt, clip: dp 2 = 1 rank (the clip norm and the run, within its rounding interval)" ||
		diag_file "$tmp/clip.cmp"
	sh=full
	[ "$opt" = adamw ] && sh=grad_op
	train 4 "d4-$model-$opt" SHARDFLOW_SHARDING=$sh --model "$model" --optimizer "$opt" \
		--steps 6 --clip 0.5
	clipped_within "d4-$model-$opt" "r1-$model-$opt"
	ok $? "$model, $opt, clip: dp 4, sharding $sh = 1 rank (within its rounding interval)" ||
		diag_file "$tmp/clip.cmp"
done
grep -q 'the tied unit "transformer.wte" is vocabulary-parallel over the 2 data-parallel ranks: each holds 5 of the 9 rows' \
	"$tmp/d2-nanogpt-vpo9-sgd.err"
ok $? "the info line: transformer.wte vocabulary-parallel, 5 of the 9 rows a rank (padded)" ||
	diag_file "$tmp/d2-nanogpt-vpo9-sgd.err"
grep -q 'the tied unit "model.embed_tokens" is vocabulary-parallel' "$tmp/d2-llama-hf-vpt-adamw.err"
ok $? "the Llama's tied unit model.embed_tokens vocabulary-parallel" ||
	diag_file "$tmp/d2-llama-hf-vpt-adamw.err"

# ---- schedules: the same sums in the same order ----
a="--model nanogpt-vpo9 --optimizer adamw --steps 6 --clip 0.5"
for c in 0:pre 3:none 1:post; do
	d=${c%:*} b=${c#*:}
	# shellcheck disable=SC2086
	train 2 "s$d$b" SHARDFLOW_PREFETCH_DEPTH="$d" SHARDFLOW_BACKWARD_PREFETCH="$b" $a
	compare "dp 2: prefetch depth $d, backward $b = depth 2, pre (bitwise)" "s$d$b" \
		d2-nanogpt-vpo9-adamw --bitwise
done

# ---- micro-batches, ignored labels, evaluation, off ----
train_interval 1 acc1 --model nanogpt-vpo9 --optimizer sgd --steps 4 --batch 24
for mode in sharded local; do
	train 2 "acc-$mode" SHARDFLOW_ACCUM_MODE=$mode --model nanogpt-vpo9 --optimizer sgd \
		--steps 4 --batch 8 --accum 3
	compare_within "dp 2, 3 micro-batches of 8 ($mode accumulation) = one batch of 24 on 1 rank" \
		"acc-$mode" acc1
done
train_interval 1 ig1 --model nanogpt-vpo9 --optimizer adamw --steps 5 --ignore-every 3 --evaluate 30
train 4 ig4 --model nanogpt-vpo9 --optimizer adamw --steps 5 --ignore-every 3 --evaluate 30
compare_within "dp 4, every third label ignored = 1 rank (the loss counted once)" ig4 ig1
e1=$(sed -n 's/^eval //p' "$tmp/ig1.out") e4=$(sed -n 's/^eval //p' "$tmp/ig4.out")
within_interval ig4 ig1 '^eval ' >"$tmp/ev.cmp"
ok $? "dp 4: sf_model_evaluate of 30 samples = 1 rank's: $e4, $e1 (within its rounding interval)"
diag_file "$tmp/ev.cmp"
train_refused "sf_model_forward of the vocabulary-parallel head: refused, naming sf_model_predict" \
	'lm_head.*is the vocabulary-parallel head.s logits.*ask sf_model_predict' \
	2 fwdh --model nanogpt-vpo9 --steps 1 --evaluate 4 --forward lm_head
# shellcheck disable=SC2086
train 4 hy SHARDFLOW_SHARDING=hybrid SHARDFLOW_NODE_SIZE=2 $a
compare_within "hybrid 2 x 2 (the group a node; the rows' gradient all-reduced across the nodes) = 1 rank" \
	hy r1-nanogpt-vpo9-adamw
# shellcheck disable=SC2086
train 2 off2 SHARDFLOW_VOCAB_PARALLEL=off $a
compare_within "dp 2 with SHARDFLOW_VOCAB_PARALLEL=off (the matrix gathered) = 1 rank" off2 \
	r1-nanogpt-vpo9-adamw

# the bytes rank 0 sends, exactly: nanogpt-vpo9 (width 10, 9 x 10 = 90 in wte, 45 a
# shard at dp 2), 24 samples of T 5 (R 60 rows a rank). Gathered (off), wte's unit is
# gathered once a step (kept from its last forward reader, the head, to its backward,
# which starts there) and reduce-scattered once: 2 shards of 45 floats. Vocabulary-
# parallel (on), never, but each step the embedding's partial rows are reduce-scattered
# and their gradient all-gathered, the head's input all-gathered twice (forward,
# backward) and its input gradient reduce-scattered (5 blocks of R x 10 floats) and the
# loss's partials all-gathered (3 floats of the group's 2 R rows); 6 steps, 4 bytes.
b_on=$(sed -n 's/^rank 0 comm_bytes \([0-9]*\) .*/\1/p' "$tmp/d2-nanogpt-vpo9-adamw.out")
b_off=$(sed -n 's/^rank 0 comm_bytes \([0-9]*\) .*/\1/p' "$tmp/off2.out")
want=$((6 * 4 * (5 * 60 * 10 + 2 * 60 * 3 - 2 * 45)))
[ -n "$b_on" ] && [ -n "$b_off" ] && [ $((b_on - b_off)) -eq "$want" ]
ok $? "dp 2, 6 steps: rank 0 sends $b_on bytes on, $b_off off: the difference $((b_on - b_off)) = $want (wte's gathers and reduce-scatters for the rows' collectives)"

# ---- checkpoints across layouts ----
rm -rf "$tmp/ck1" "$tmp/ck2" "$tmp/ck3"
for r in "" up down; do
	# shellcheck disable=SC2086
	drv 1 "cu${r:+.$r}" ${r:+SHARDFLOW_ROUNDING=${r}ward} --model nanogpt-vpo9 --optimizer adamw \
		--steps 8 --out-params "$tmp/cu${r:+.$r}.p"
done
o="--model nanogpt-vpo9 --optimizer adamw"
# shellcheck disable=SC2086
drv 2 ck-a $o --steps 2 --save "$tmp/ck1" --save-every 2 &&
	drv 4 ck-b SHARDFLOW_VOCAB_PARALLEL=off $o --steps 4 --resume "$tmp/ck1" \
		--save "$tmp/ck2" --save-every 4 &&
	drv 4 ck-c $o --steps 6 --resume "$tmp/ck2" --save "$tmp/ck3" --save-every 6 &&
	drv 1 ck-d $o --steps 8 --resume "$tmp/ck3" --out-params "$tmp/ck-d.p"
"$DUMP_COMPARE" --up "$tmp/cu.up.p" --down "$tmp/cu.down.p" "$tmp/ck-d.p" "$tmp/cu.p" \
	>"$tmp/ck.cmp" 2>&1
ok $? "checkpoints: dp 2 (on) -> dp 4 (off) -> dp 4 (on) -> 1 rank = 1 rank uninterrupted (within its rounding interval)"
diag_file "$tmp/ck.cmp"

# ---- refusals, and auto where it cannot apply ----
train_refused "=on with sharding none: refused, naming it" \
	'SHARDFLOW_VOCAB_PARALLEL=on: .* is not supported with SHARDFLOW_SHARDING=none' \
	2 rnone SHARDFLOW_VOCAB_PARALLEL=on SHARDFLOW_SHARDING=none --model nanogpt-vpo9 --steps 1
train_refused "=on with a batch the ranks do not divide: refused, naming it" \
	'a batch of 7 samples does not divide by the 2 ranks' \
	2 rodd SHARDFLOW_VOCAB_PARALLEL=on --model nanogpt-vpo9 --steps 1 --batch 7
train_refused "=on with an untied head: refused, naming what it needs" \
	'needs a head tied to it' 2 runtied SHARDFLOW_VOCAB_PARALLEL=on --model nanogpt-vp --steps 1
train_interval 1 u1 --model nanogpt-vp --optimizer adamw --steps 4
train 2 u2 --model nanogpt-vp --optimizer adamw --steps 4
compare_within "auto with an untied head at dp 2: gathered as before = 1 rank" u2 u1

# ---- examples/gpt ----
text="$tmp/corpus.txt"
sf_corpus "$text"
common="--layers 2 --heads 4 --embd 32 --context 32 --batch 8 --sample 1 \
--tokens 20 --eval-every 4 --eval-batches 1 --progress-every 1 --lr 0.004 --warmup 2 --steps 4"
gpt_run 1 g1 SHARDFLOW_VOCAB_PARALLEL=on --text "$text" --loss-log "$tmp/g1.loss"
gpt_run 2 g2 SHARDFLOW_VOCAB_PARALLEL=on --text "$text" --loss-log "$tmp/g2.loss"
st=$?
[ "$st" = 0 ] && gpt_same g1 g2 4 && grep -q '^val_loss' "$tmp/g2.f" && grep -q '^sample 1:' "$tmp/g2.f"
ok $? "examples/gpt, tied, =on at dp 2 = 1 rank: losses, val_loss, sample" ||
	{ diag_file "$tmp/g2.err"; diff "$tmp/g1.f" "$tmp/g2.f" | sed 's/^/# /'; }
gpt_run 4 g4 SHARDFLOW_VOCAB_PARALLEL=on SHARDFLOW_SHARDING=grad_op --text "$text" \
	--loss-log "$tmp/g4.loss"
st=$?
[ "$st" = 0 ] && gpt_same g1 g4 4
ok $? "examples/gpt, tied, =on at dp 4, grad_op = 1 rank: losses, val_loss, sample" ||
	{ diag_file "$tmp/g4.err"; diff "$tmp/g1.f" "$tmp/g4.f" | sed 's/^/# /'; }
# auto (the default): examples/gpt builds it where sf_vocab_parallel_pays says the rows
# send fewer bytes than the matrix: width 32, 256 classes, 2 ranks: 2 x 256 x 32 / 2 =
# 8 192 floats against 5 x 32 R + 6 R: R 32 (a sample a rank) pays (5 312), R 128 not
# (21 248)
gpt_run 2 ga2 SHARDFLOW_LOG=info --text "$text" --batch 2 --sample 0 --loss-log "$tmp/ga2.loss"
st=$?
gpt_run 1 ga1 --text "$text" --batch 2 --sample 0 --loss-log "$tmp/ga1.loss"
[ "$st" = 0 ] && grep -q 'is vocabulary-parallel over the 2 data-parallel ranks' "$tmp/ga2.err" &&
	loss_logs_within "$tmp/ga1.loss" "$tmp/ga2.loss" 4
ok $? "auto, 2 ranks of 32 rows: vocabulary-parallel (it pays), = 1 rank's losses" ||
	diag_file "$tmp/ga2.err"
gpt_run 2 ga8 SHARDFLOW_LOG=info --text "$text"
[ $? = 0 ] && ! grep -q 'is vocabulary-parallel over' "$tmp/ga8.err"
ok $? "auto, 2 ranks of 128 rows: gathered (it does not pay)" || diag_file "$tmp/ga8.err"

finish
