#!/bin/sh
# tp_vocab.sh — the vocabulary-parallel head and cross-entropy (SHARDFLOW_TP=K, issue 48
# item 1) against 1 rank.
#
# Models (tests/test_models.h): nanogpt-vp and llama-hf-vp, nanogpt-tp and llama-hf-tp
# with an untied lm_head that is a linear_col (vocab_parallel 1): each TP rank holds
# V / K rows of it and computes V / K columns of the logits, and the loss combines the
# rows' max, sum of exponentials and target logit over the TP group (layers/xent_vp.h)
# without gathering the logits; the token embedding an embedding_vp, each rank holding
# V / K of its rows, its masked lookups all-reduced. Checked:
#  - K 1 is the untied model bitwise (nanogpt-vp = nanogpt-untied, llama-hf-vp =
#    llama-hf), AdamW with weight decay: the same names, shapes, initial values and
#    parameter groups (embedding_vp and linear_col at K 1 are embedding and linear);
#  - tp 2 on 2 ranks and dp 2 x tp 2 on 4 ranks = 1 rank, SGD and AdamW, both models
#    within the 1-rank run's rounding interval (as tests/tp.sh);
#  - bitwise across prefetch depths; 3 micro-batches = one batch; clipping's norm
#    and run = 1 rank's; ignored labels (every third row): the loss counted once,
#    = 1 rank, and sf_model_evaluate's vocabulary-parallel path = 1 rank's (dp 2:
#    each TP group's partials combined);
#  - the bytes of the TP collectives, exactly: wte's forward all-reduce, the blocks'
#    all-reduces, lm_head's input-gradient all-reduce and the loss's all-gather of 3
#    floats a row — nothing of the B x T x V logits, nothing for wte's backward;
#    sf_model_stats' TP slice holds half of wte and of lm_head;
#  - checkpoints: 2 x 2 -> 4 x 1 -> 1 x 1 = 1 rank uninterrupted (the checkpoint holds
#    the whole model whatever the layout);
#  - examples/gpt --untied at dp 2 x tp 2 (SHARDFLOW_VOCAB_PARALLEL auto: on, said at
#    SHARDFLOW_LOG=info) = 1 rank: every step's loss, the validation loss
#    (sf_model_evaluate's vocabulary-parallel path) and the sampled text
#    (sf_model_predict's logits made whole); off keeps the head replicated;
#  - the tied head (nanogpt-vpt, llama-hf-vpt: lm_head a linear_nobias tied to the
#    embedding_vp, reading its rows of this TP rank, its logits split as a
#    linear_col's): K 1 = nanogpt bitwise, tp 2 and 2 x 2 = 1 rank, its backward split
#    (SHARDFLOW_SPLIT_BACKWARD=on) bitwise, examples/gpt's tied default at tp 2 = tp 1;
#  - auto keeps an untied head of a vocabulary K does not divide replicated (its
#    linear_col cannot pad); refused with the reason: on with such a head (naming
#    lm_head: the embedding_vp pads, tests/tp_vocab_pad.sh), a bad value.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
GPT="$top_builddir/examples/gpt"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE" "$GPT"

plan 35


# weight decay 0.1: an embedding_vp is of the embeddings' group, spared as embedding is
wd="--optimizer adamw --steps 4 --weight-decay 0.1"
train 1 u1 --model nanogpt-untied $wd
train 1 v1 --model nanogpt-vp $wd
compare "nanogpt-vp on 1 rank = nanogpt-untied (embedding_vp, linear_col of K 1), bitwise" \
	v1 u1 --bitwise
train 1 lu1 --model llama-hf $wd
train 1 lv1 --model llama-hf-vp $wd
compare "llama-hf-vp on 1 rank = llama-hf, bitwise" lv1 lu1 --bitwise
train 1 tu1 --model nanogpt $wd
train 1 tv1 --model nanogpt-vpt $wd
compare "nanogpt-vpt on 1 rank = nanogpt (the head tied to an embedding_vp), bitwise" tv1 tu1 \
	--bitwise

# layouts against 1 rank
# (llama-hf-vpt with SGD: one of its weights has a zero gradient (1e-8, rounding) at
# the first step, where AdamW's step is noise over noise, 1.7e-6 apart at tp 2; the
# tied nanogpt-vpt runs AdamW)
for c in nanogpt-vp:sgd nanogpt-vp:adamw llama-hf-vp:sgd llama-hf-vp:adamw nanogpt-vpt:sgd \
	nanogpt-vpt:adamw llama-hf-vpt:sgd; do
	model=${c%:*} opt=${c#*:}
	train_interval 1 "r1-$model-$opt" --model "$model" --optimizer "$opt" --steps 6
	train 2 "t2-$model-$opt" SHARDFLOW_TP=2 --model "$model" --optimizer "$opt" --steps 6
	compare_within "$model, $opt: tp 2 on 2 ranks = 1 rank" "t2-$model-$opt" "r1-$model-$opt"
	train 4 "t22-$model-$opt" SHARDFLOW_TP=2 --model "$model" --optimizer "$opt" --steps 6
	compare_within "$model, $opt: dp 2 x tp 2 on 4 ranks = 1 rank" "t22-$model-$opt" \
		"r1-$model-$opt"
done

t22="SHARDFLOW_TP=2"
for d in 0 3; do
	train 4 "d$d" $t22 SHARDFLOW_PREFETCH_DEPTH=$d --model nanogpt-vp --optimizer sgd --steps 6
done
"$DUMP_COMPARE" --bitwise "$tmp/d0.dump" "$tmp/d3.dump" >"$tmp/d.cmp" 2>&1 &&
	"$DUMP_COMPARE" --bitwise "$tmp/d0.dump" "$tmp/t22-nanogpt-vp-sgd.dump" >>"$tmp/d.cmp" 2>&1
ok $? "2 x 2: prefetch depths 0, 2 and 3 bitwise equal" || diag_file "$tmp/d.cmp"
train 4 sb $t22 SHARDFLOW_SPLIT_BACKWARD=on --model nanogpt-vpt --optimizer sgd --steps 6
compare "2 x 2, the tied head's backward split = not split, bitwise" sb t22-nanogpt-vpt-sgd \
	--bitwise
train 4 acc $t22 --model nanogpt-vp --optimizer sgd --steps 6 --batch 8 --accum 3
compare_within "2 x 2, 3 micro-batches of 8 = one batch of 24 on 1 rank" acc r1-nanogpt-vp-sgd

train_interval 1 clip1 --model nanogpt-vp --optimizer sgd --steps 4 --clip 0.05
train 4 clip22 $t22 --model nanogpt-vp --optimizer sgd --steps 4 --clip 0.05
n1=$(sed -n 's/^norm 4 //p' "$tmp/clip1.out") n4=$(sed -n 's/^norm 4 //p' "$tmp/clip22.out")
clipped_within clip22 clip1
ok $? "2 x 2 clipped: norm $n4 = 1 rank's $n1 (lm_head's halves counted once), the run = 1 rank's (within its rounding interval)"
diag_file "$tmp/clip.cmp"

for m in nanogpt-vp llama-hf-vp; do
	train_interval 1 "ig1-$m" --model $m --optimizer adamw --steps 5 --ignore-every 3 --evaluate 30
	train 4 "ig22-$m" $t22 --model $m --optimizer adamw --steps 5 --ignore-every 3 \
		--evaluate 30
	compare_within "$m, every third label ignored: 2 x 2 = 1 rank (the loss counted once)" \
		"ig22-$m" "ig1-$m"
	e1=$(sed -n 's/^eval //p' "$tmp/ig1-$m.out") e4=$(sed -n 's/^eval //p' "$tmp/ig22-$m.out")
	within_interval "ig22-$m" "ig1-$m" '^eval ' >"$tmp/ev.cmp"
	ok $? "$m: sf_model_evaluate of 30 samples (2 passes, labels ignored) at 2 x 2 = 1 rank's: $e4, $e1 (within its rounding interval)"
	diag_file "$tmp/ev.cmp"
done

# the TP collectives' bytes, tp 2 on 2 ranks (dp 1: the FSDP rings send nothing).
# 24 samples of T 5 rows, width 10: each step wte's partial lookups (1 200 floats) are
# all-reduced, the 2 blocks all-reduce 4 activations of 1 200 floats, lm_head's input
# gradient 1 200 (a ring of K 2 sends n floats of n), and the loss all-gathers 3
# floats a row (K - 1 blocks of 360 floats): the logits (24 x 5 x 16) never travel, and
# wte's backward sends nothing. 6 steps, 4 bytes.
want=$((6 * (1200 + 2 * 4 * 1200 + 1200 + 360) * 4))
got=$(sed -n 's/^rank 0 comm_bytes \([0-9]*\) .*/\1/p' "$tmp/t2-nanogpt-vp-sgd.out")
gtp=$(sed -n 's/^rank 0 tp 2 dp 1 .* tp_comm_bytes \([0-9]*\)$/\1/p' "$tmp/t2-nanogpt-vp-sgd.out")
[ "${got:-0}" -eq "$want" ] && [ "${gtp:-0}" -eq "$want" ]
ok $? "tp 2, 6 steps: rank 0 sent $got bytes, all TP's ($gtp; want $want: no logits)" ||
	diag_file "$tmp/t2-nanogpt-vp-sgd.out"
# nanogpt-vp holds 3 050 parameters (nanogpt-tp's 2 890 and lm_head's 160); a TP
# rank's slice is nanogpt-tp's 1 620 less half of wte (80: its 16 x 10 rows split) and
# half of lm_head (80)
grep -q '^rank 3 tp 2 dp 2 model_bytes 12200 tp_slice_bytes 6480 ' "$tmp/t22-nanogpt-vp-sgd.out"
ok $? "sf_model_stats at 2 x 2: the model's 12200 bytes, a TP slice of 6480 (wte, lm_head split)" ||
	diag_file "$tmp/t22-nanogpt-vp-sgd.out"

# checkpoints across layouts (ckpt_lib.sh's tp_ckpt_chain)
for opt in sgd adamw; do
	tp_ckpt_chain nanogpt-vp $opt
	ok $? "$opt: checkpoint 2 x 2 (manifest tp 2) -> 4 x 1 -> 1 x 1 = 1 rank uninterrupted (within its rounding interval)"
	diag_file "$tmp/ck.cmp"
done

# examples/gpt: SHARDFLOW_VOCAB_PARALLEL auto takes the untied head vocabulary-parallel
text="$tmp/corpus.txt"
sf_corpus "$text"
common="--layers 2 --heads 4 --embd 32 --context 32 --batch 8 --sample 1 \
--tokens 20 --eval-every 4 --eval-batches 1 --progress-every 1 --lr 0.004 --warmup 2 --steps 4"
gpt_run 1 g1 --text "$text" --untied --loss-log "$tmp/g1.loss"
gpt_run 4 g2 SHARDFLOW_TP=2 SHARDFLOW_LOG=info --text "$text" --untied \
	--loss-log "$tmp/g2.loss"
st=$?
[ "$st" = 0 ] && gpt_same g1 g2 4 &&
	grep -q 'the loss is vocabulary-parallel: each of the 2 TP ranks holds 128 of the 256' \
		"$tmp/g2.err" &&
	grep -q '^val_loss' "$tmp/g2.f" && grep -q '^sample 1:' "$tmp/g2.f"
ok $? "examples/gpt --untied, 2 x 2 (vocabulary-parallel) = 1 rank: losses, val_loss, sample" ||
	{ diag_file "$tmp/g2.err"; diff "$tmp/g1.f" "$tmp/g2.f" | sed 's/^/# /'; }
gpt_run 2 g2off SHARDFLOW_TP=2 SHARDFLOW_LOG=info SHARDFLOW_VOCAB_PARALLEL=off --text "$text" \
	--untied
[ $? -eq 0 ] && ! grep -q 'vocabulary-parallel' "$tmp/g2off.err"
ok $? "SHARDFLOW_VOCAB_PARALLEL=off: the head replicated" || diag_file "$tmp/g2off.err"

# a vocabulary of 257 (token files of the corpus's bytes, tests/gpt.sh's, the vocabulary
# padded) with an untied head: auto keeps it replicated, on is refused naming lm_head (a
# linear_col splits whole rows only; wte, an embedding_vp, would pad)
python3 - "$text" "$tmp/tr.bin" "$tmp/va.bin" "$tmp/bytes.vocab" <<'PY'
import math, struct, sys
b = open(sys.argv[1], "rb").read()
te = len(b) - int(math.floor(len(b) * 0.2))
open(sys.argv[2], "wb").write(b"".join(struct.pack("<H", x) for x in b[:te]))
open(sys.argv[3], "wb").write(b"".join(struct.pack("<H", x) for x in b[te:]))
h = struct.pack("<4I", 20240328, 2, 256, 10) + bytes(1008)
open(sys.argv[4], "wb").write(h + b"".join(bytes([1, i]) for i in range(256)))
PY
tok="--train-tokens $tmp/tr.bin --val-tokens $tmp/va.bin --vocab-file $tmp/bytes.vocab --vocab 257"
# shellcheck disable=SC2086
gpt_run 2 g257 SHARDFLOW_TP=2 SHARDFLOW_LOG=info --prompt "" $tok --untied
[ $? -eq 0 ] && ! grep -q 'vocabulary-parallel' "$tmp/g257.err"
ok $? "auto with --vocab 257 --untied at tp 2: the head replicated (257 does not divide by 2)" ||
	diag_file "$tmp/g257.err"
# shellcheck disable=SC2086
gpt_run 2 g257on SHARDFLOW_TP=2 SHARDFLOW_VOCAB_PARALLEL=on --prompt "" $tok --untied
[ $? -ne 0 ] && grep -q '"lm_head" (linear_col): out_dim 257 in 1 block(s) does not split over SHARDFLOW_TP=2' \
	"$tmp/g257on.err"
ok $? "on with --vocab 257 --untied at tp 2: refused, naming lm_head" || diag_file "$tmp/g257on.err"

# the tied head (examples/gpt's default): auto takes it vocabulary-parallel too
gpt_run 1 gt1 --text "$text" --loss-log "$tmp/gt1.loss"
gpt_run 2 gt2 SHARDFLOW_TP=2 SHARDFLOW_LOG=info --text "$text" --loss-log "$tmp/gt2.loss"
st=$?
[ "$st" = 0 ] && loss_logs_within "$tmp/gt1.loss" "$tmp/gt2.loss" 4 &&
	grep -q 'the loss is vocabulary-parallel' "$tmp/gt2.err"
ok $? "examples/gpt, tied head, tp 2 (vocabulary-parallel) = tp 1: every step's loss" ||
	diag_file "$tmp/gt2.err"
gpt_run 2 gbad SHARDFLOW_TP=2 SHARDFLOW_VOCAB_PARALLEL=yes --text "$text" --untied
[ $? -ne 0 ] && grep -q 'SHARDFLOW_VOCAB_PARALLEL="yes"' "$tmp/gbad.err" &&
	grep -q 'auto' "$tmp/gbad.err"
ok $? "SHARDFLOW_VOCAB_PARALLEL=yes: refused, naming the accepted values" ||
	diag_file "$tmp/gbad.err"

finish
