#!/bin/sh
# pipeline_tp.sh — pipeline parallelism composed with tensor parallelism (issue 49:
# world = pp x dp x tp; stage s the dp tp ranks [s dp tp, (s+1) dp tp), TP groups of
# tp consecutive ranks inside it, the boundary sent between the same dp and TP place
# of neighbouring stages) against 1 rank.
#
# As in tests/pipeline.sh, a step of M micro-batches is 1 rank's step of M
# micro-batches accumulated (train_dump --accum M --batch B/M), and a run must lie
# within that run's rounding interval (the reference again rounded upward and
# downward: docs/testing.md), losses, parameters, clip norms and evaluations. Models
# (tests/test_models.h): llama-hf-tp (sf_llama_graph with tensor_parallel 1: its units
# follow each other, an untied head) and llama-hf-vp (the same vocabulary-parallel:
# an embedding_vp first, a linear_col head and the split loss last). nanogpt-tp's
# tied head (its embedding's unit read at both ends) is tests/pipeline_tied.sh's.
# Checked:
#  - pp 2 x tp 2 on 4 ranks (4 micro-batches) = 1 rank: llama-hf-tp with SGD and with
#    AdamW, clipping (max norm 0.5: the norm over both stages and both TP ranks'
#    slices, each parameter once), sf_model_evaluate and sf_model_forward of lm_head
#    after training; llama-hf-vp with AdamW, clipping and evaluation (the split loss
#    counted by the last stage's TP group once);
#  - pp 2 x dp 2 x tp 2 on 8 ranks = 1 rank (SGD, clipping);
#  - examples/gpt --arch llama at pp 2 x tp 2 (its head vocabulary-parallel) = 1 rank:
#    every step's loss, the validation loss and the sampled text (sf_model_predict);
#  - checkpoints: pp 2 x tp 2 resumed at pp 2 x tp 2 = uninterrupted, bitwise; resumed
#    on 1 rank, at tp 2 and at pp 2 within the uninterrupted run's interval; 1 rank's
#    checkpoint resumed at pp 2 x tp 2 within the 1-rank run's; the manifest holds
#    pp 2 and tp 2;
#  - refused with the reason: TP not dividing a stage's ranks, sequence parallelism
#    with a pipeline.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 17

PT="SHARDFLOW_PP=2 SHARDFLOW_TP=2"

# run_ok DESC A B [REGEX]: A's dump within B's interval, and (REGEX) A's matching
# output lines within B's (blocks of 16 values)
run_ok() {
	if [ -n "${4:-}" ] && ! within_interval "$2" "$3" "$4" 16 >"$tmp/w.out"; then
		ok 1 "$1: $4 lines outside the interval"
		diag_file "$tmp/w.out"
		return
	fi
	compare_within "$1" "$2" "$3"
}

# llama-hf-tp, pp 2 x tp 2 on 4 ranks: SGD; AdamW with evaluation and forward
e="--evaluate 4 --forward lm_head"
train_interval 1 r-sgd --model llama-hf-tp --optimizer sgd --steps 4 --batch 2 --accum 4 \
	--clip 0.5 || bail_out "the reference run failed"
# shellcheck disable=SC2086
train 4 p-sgd $PT --model llama-hf-tp --optimizer sgd --steps 4 --batch 8 --clip 0.5
run_ok "llama-hf-tp, sgd, clip: pp 2 x tp 2 on 4 ranks = 1 rank" p-sgd r-sgd
# shellcheck disable=SC2086
train_interval 1 r-adamw --model llama-hf-tp --optimizer adamw --steps 4 --batch 2 --accum 4 \
	--clip 0.5 $e || bail_out "the reference run failed"
# shellcheck disable=SC2086
train 4 p-adamw $PT --model llama-hf-tp --optimizer adamw --steps 4 --batch 8 --clip 0.5 $e
run_ok "llama-hf-tp, adamw, clip: pp 2 x tp 2 on 4 ranks = 1 rank" p-adamw r-adamw
for w in norm eval fwd; do
	within_interval p-adamw r-adamw "^$w " 16 >"$tmp/w.out"
	ok $? "llama-hf-tp: pp 2 x tp 2's $w lines = 1 rank's ($(grep -c "^$w " "$tmp/p-adamw.out") of them)"
	diag_file "$tmp/w.out"
done

# llama-hf-vp: the vocabulary-parallel embedding and head at both ends
train_interval 1 r-vp --model llama-hf-vp --optimizer adamw --steps 4 --batch 2 --accum 4 \
	--clip 0.5 --evaluate 4 || bail_out "the reference run failed"
# shellcheck disable=SC2086
train 4 p-vp $PT --model llama-hf-vp --optimizer adamw --steps 4 --batch 8 --clip 0.5 \
	--evaluate 4
run_ok "llama-hf-vp, adamw, clip: pp 2 x tp 2 on 4 ranks = 1 rank" p-vp r-vp
within_interval p-vp r-vp '^norm ' >"$tmp/w.out" &&
	within_interval p-vp r-vp '^eval ' >>"$tmp/w.out"
ok $? "llama-hf-vp: pp 2 x tp 2's clip norms and evaluation = 1 rank's"
diag_file "$tmp/w.out"

# pp 2 x dp 2 x tp 2 on 8 ranks
train_interval 1 r8 --model llama-hf-tp --optimizer sgd --steps 3 --batch 4 --accum 4 \
	--clip 0.5 || bail_out "the reference run failed"
# shellcheck disable=SC2086
train 8 p8 $PT --model llama-hf-tp --optimizer sgd --steps 3 --batch 16 --clip 0.5
run_ok "llama-hf-tp, sgd, clip: pp 2 x dp 2 x tp 2 on 8 ranks = 1 rank" p8 r8 '^norm '

# examples/gpt --arch llama (an untied head, vocabulary-parallel at K 2 by default):
# every step's loss, the validation loss and the sampled text (sf_model_predict's
# logits: the last stage's TP ranks' columns) = 1 rank's
GPT="$top_builddir/examples/gpt"
text="$tmp/corpus.txt"
sf_corpus "$text"
g="--arch llama --layers 2 --heads 4 --embd 32 --context 32 --batch 8 --sample 1 --tokens 20
--eval-every 4 --eval-batches 1 --progress-every 1 --lr 0.004 --warmup 2 --steps 4"
# shellcheck disable=SC2086
sh "$RUN_MPI" 1 "$GPT" $g --text "$text" --loss-log "$tmp/g1.loss" </dev/null >"$tmp/g1.out" \
	2>"$tmp/g1.err"
# shellcheck disable=SC2086
env $PT SHARDFLOW_LOG=info sh "$RUN_MPI" 4 "$GPT" $g --text "$text" --loss-log "$tmp/g4.loss" \
	</dev/null >"$tmp/g4.out" 2>"$tmp/g4.err"
st=$?
[ "$st" = 0 ] && gpt_same g1 g4 4 &&
	grep -q 'layout pp 2 x dp 1 x tp 2' "$tmp/g4.err" &&
	grep -q 'the loss is vocabulary-parallel' "$tmp/g4.err" &&
	grep -q '^step 4 val_loss' "$tmp/g4.f" && grep -q '^sample 1:' "$tmp/g4.f"
ok $? "examples/gpt --arch llama, pp 2 x tp 2 (vocabulary-parallel) = 1 rank: losses, val_loss, sample" ||
	{ diag_file "$tmp/g4.err"; diff "$tmp/g1.f" "$tmp/g4.f" | sed 's/^/# /'; }

# ---- checkpoints ----
a="--model llama-hf-tp --optimizer adamw --batch 8"
ck="$tmp/ck"
# shellcheck disable=SC2086
ckpt_ref 4 u22 $PT $a --steps 4 || bail_out "the uninterrupted pp 2 x tp 2 run failed"
# shellcheck disable=SC2086
drv 4 s22 $PT $a --steps 2 --save "$ck" --save-every 2
# shellcheck disable=SC2086
drv 4 r22 $PT $a --steps 4 --resume "$ck" --out "$tmp/r22.dump"
compare "pp 2 x tp 2 resumed at pp 2 x tp 2 = uninterrupted, bitwise" r22 u22 --bitwise
# shellcheck disable=SC2086
drv 1 r1 $a --steps 4 --resume "$ck" --out "$tmp/r1.dump"
compare_within "pp 2 x tp 2 resumed on 1 rank" r1 u22
# shellcheck disable=SC2086
drv 2 rt2 SHARDFLOW_TP=2 $a --steps 4 --resume "$ck" --out "$tmp/rt2.dump"
compare_within "pp 2 x tp 2 resumed at tp 2" rt2 u22
# shellcheck disable=SC2086
drv 2 rp2 SHARDFLOW_PP=2 $a --steps 4 --resume "$ck" --out "$tmp/rp2.dump"
compare_within "pp 2 x tp 2 resumed at pp 2" rp2 u22
# shellcheck disable=SC2086
ckpt_ref 1 u1 $a --steps 4 || bail_out "the uninterrupted 1-rank run failed"
# shellcheck disable=SC2086
drv 1 s1 $a --steps 2 --save "$ck.1" --save-every 2
# shellcheck disable=SC2086
drv 4 q22 $PT $a --steps 4 --resume "$ck.1" --out "$tmp/q22.dump"
compare_within "1 rank's checkpoint resumed at pp 2 x tp 2" q22 u1
python3 - "$ck/step-000000002/manifest.json" >"$tmp/mf.out" 2>&1 <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["version"] == 3 and m["pp"] == 2 and m["tp"] == 2 and m["ranks"] == 4, m
assert m["world_size"] == 2, m  # one file a stage: TP place 0 of each writes
assert sorted(set(u["stage"] for u in m["units"])) == [0, 1], m["units"]
print("pp", m["pp"], "tp", m["tp"], "files", m["world_size"])
PY
ok $? "pp 2 x tp 2's manifest: version 3, pp 2, tp 2, one file a stage" || diag_file "$tmp/mf.out"

# refusals: a failed run whose stderr says why (lib.sh's train_refused)
train_refused "SHARDFLOW_TP=4 with SHARDFLOW_PP=2 on 4 ranks: refused" \
	"SHARDFLOW_TP=4 does not divide the 2 ranks of a pipeline stage" \
	4 bad-tp SHARDFLOW_PP=2 SHARDFLOW_TP=4 --model llama-hf-tp --steps 1 --batch 8
train_refused "SHARDFLOW_SEQUENCE_PARALLEL=on with SHARDFLOW_PP: refused" \
	"SHARDFLOW_SEQUENCE_PARALLEL=on is not supported with SHARDFLOW_PP" \
	4 bad-sp $PT SHARDFLOW_SEQUENCE_PARALLEL=on --model llama-hf-tp --steps 1 --batch 8
finish
