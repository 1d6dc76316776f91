#!/bin/sh
# cp.sh — context parallelism (SHARDFLOW_CP=K, issue 48 item 5) against 1 rank.
#
# The K ranks of a CP group share each sample, rank k holding chunks k and 2K - 1 - k
# of its 2K; attention runs as a ring of K part tasks, the key/value blocks (and in the
# backward their gradients) passed around the CP group in comm tasks
# (scheduler/ctxpar.c, tasks/cp_attention.c). Other sums than 1 rank's, so each run is
# held to the 1-rank run's rounding interval (tests/lib.sh), as tests/tp.sh does:
#  - cp 2 on 2 ranks and cp 4 on 4 (a chunk of one row at context 8, and of two at
#    16), the GPT (learned positions) and the Llama (RoPE, grouped-query attention),
#    SGD and AdamW; cp 2 x dp 2 and cp 2 x tp 2 (the vocabulary-parallel head; and
#    with sequence parallelism, whose row-split ops run on a CP rank's rows), and cp 2
#    x dp 2 with hybrid sharding, and pp 2 x cp 2 (each stage's CP ring), on 4;
#  - bitwise across prefetch depths; 3 micro-batches = one batch; clipping's norm and
#    run; ignored labels counted once; sf_model_evaluate; sf_model_forward of the
#    logits gathered back into whole samples (sf_model_predict shares the gathering:
#    examples/gpt's validation at cp 2, tests/gpt.sh); examples/gpt --arch llama at
#    pp 2 x cp 2 (sf_model_predict through a pipeline's CP groups) = 1 rank: losses,
#    validation loss, sampled text;
#  - the ring's bytes, exactly: cp 2 sends dp 2's FSDP traffic plus 4 key/value blocks
#    a layer and step (the forward's one step, the backward's one step of the block
#    and two of its gradient); the built-in trace's report says the layout and holds
#    those steps as communication of their own kind;
#  - checkpoints: cp 2 x dp 2 resumes on 1 rank and 1 rank's at cp 4, within the
#    uninterrupted run's interval;
#  - refusals: a context 2K does not divide, K not dividing the world
#    (tests/recompute.sh runs CP with SHARDFLOW_RECOMPUTE).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 23

for c in nanogpt:sgd:8 llama-hf:adamw:16; do
	model=${c%%:*} rest=${c#*:} opt=${rest%:*} ctx=${c##*:}
	train_interval 1 "r1-$model" --model "$model" --optimizer "$opt" --steps 6 --context "$ctx"
	train 2 "c2-$model" SHARDFLOW_CP=2 --model "$model" --optimizer "$opt" --steps 6 \
		--context "$ctx"
	compare_within "$model, $opt, context $ctx: cp 2 on 2 ranks = 1 rank" "c2-$model" \
		"r1-$model"
	train 4 "c4-$model" SHARDFLOW_CP=4 --model "$model" --optimizer "$opt" --steps 6 \
		--context "$ctx"
	compare_within "$model, $opt, context $ctx: cp 4 on 4 ranks = 1 rank" "c4-$model" \
		"r1-$model"
done

for c in nanogpt:adamw llama-hf:sgd; do
	model=${c%:*} opt=${c#*:}
	train_interval 1 "q1-$model" --model "$model" --optimizer "$opt" --steps 6 --context 8
	train 4 "c22-$model" SHARDFLOW_CP=2 --model "$model" --optimizer "$opt" --steps 6 \
		--context 8
	compare_within "$model, $opt: cp 2 x dp 2 on 4 ranks = 1 rank" "c22-$model" "q1-$model"
done
train 4 cpp SHARDFLOW_CP=2 SHARDFLOW_PP=2 --model llama-hf --optimizer sgd --steps 6 --context 8
compare_within "llama-hf: pp 2 x cp 2 (a stage's CP ring, micro-batches of whole samples) = 1 rank" \
	cpp q1-llama-hf
train 4 chy SHARDFLOW_CP=2 SHARDFLOW_SHARDING=hybrid SHARDFLOW_NODE_SIZE=2 --model llama-hf \
	--optimizer sgd --steps 6 --context 8
compare_within "llama-hf: cp 2 x dp 2, hybrid sharding (a node a CP group) = 1 rank" chy \
	q1-llama-hf

for c in nanogpt-vp:sgd llama-hf-vp:adamw; do
	model=${c%:*} opt=${c#*:}
	train_interval 1 "t1-$model" --model "$model" --optimizer "$opt" --steps 6 --context 8
	train 4 "ct-$model" SHARDFLOW_CP=2 SHARDFLOW_TP=2 --model "$model" --optimizer "$opt" \
		--steps 6 --context 8
	compare_within "$model, $opt: cp 2 x tp 2 on 4 ranks = 1 rank" "ct-$model" "t1-$model"
done
train 4 csp SHARDFLOW_CP=2 SHARDFLOW_TP=2 SHARDFLOW_SEQUENCE_PARALLEL=on --model llama-hf-vp \
	--optimizer adamw --steps 6 --context 8
compare_within "llama-hf-vp, adamw: cp 2 x tp 2 with sequence parallelism = 1 rank" csp \
	t1-llama-hf-vp

for d in 0 3; do
	train 4 "d$d" SHARDFLOW_CP=2 SHARDFLOW_PREFETCH_DEPTH=$d --model llama-hf --optimizer sgd \
		--steps 6 --context 8
done
"$DUMP_COMPARE" --bitwise "$tmp/d0.dump" "$tmp/d3.dump" >"$tmp/d.cmp" 2>&1 &&
	"$DUMP_COMPARE" --bitwise "$tmp/d0.dump" "$tmp/c22-llama-hf.dump" >>"$tmp/d.cmp" 2>&1
ok $? "cp 2 x dp 2: prefetch depths 0, 2 and 3 bitwise equal" || diag_file "$tmp/d.cmp"

train 2 acc SHARDFLOW_CP=2 --model nanogpt --optimizer sgd --steps 6 --context 8 --batch 8 \
	--accum 3
compare_within "cp 2: 3 micro-batches of 8 = one batch of 24 on 1 rank" acc r1-nanogpt

train_interval 1 clip1 --model llama-hf --optimizer sgd --steps 4 --clip 0.05 --context 8
train 2 clip2 SHARDFLOW_CP=2 --model llama-hf --optimizer sgd --steps 4 --clip 0.05 --context 8
clipped_within clip2 clip1
ok $? "cp 2 clipped: norm and run = 1 rank's (every chunk's gradient counted once)"
diag_file "$tmp/clip.cmp"

train_interval 1 ig1 --model nanogpt --optimizer adamw --steps 4 --context 8 --ignore-every 3 \
	--evaluate 30 --forward lm_head
train 2 ig2 SHARDFLOW_CP=2 --model nanogpt --optimizer adamw --steps 4 --context 8 \
	--ignore-every 3 --evaluate 30 --forward lm_head
compare_within "cp 2, every 3rd label ignored: the loss's mean over the counted rows" ig2 ig1
within_interval ig2 ig1 '^eval ' >"$tmp/ev.cmp"
ok $? "cp 2: sf_model_evaluate of 30 samples = 1 rank's: $(sed -n 's/^eval //p' "$tmp/ig2.out")" ||
	diag_file "$tmp/ev.cmp"
within_interval ig2 ig1 '^fwd ' 128 >"$tmp/fwd.cmp"
ok $? "cp 2: sf_model_forward's logits of 30 samples = 1 rank's, each in its place (blocks of 128)"
	diag_file "$tmp/fwd.cmp"

# The ring's bytes: nanogpt at context 8, 2 layers, a rank's 24 samples of 2 chunks of
# 2 rows, a block of 24 x 4 rows of k and v (2 x 10 floats): 1 920 floats, 4 blocks a
# layer and step, 6 steps, 4 bytes; the rest is dp 2's FSDP traffic.
train 2 dp2 --model nanogpt --optimizer sgd --steps 6 --context 8
b_cp=$(sed -n 's/^rank 0 comm_bytes \([0-9]*\).*/\1/p' "$tmp/c2-nanogpt.out")
b_dp=$(sed -n 's/^rank 0 comm_bytes \([0-9]*\).*/\1/p' "$tmp/dp2.out")
want=$((1920 * 4 * 2 * 6 * 4))
[ -n "$b_cp" ] && [ -n "$b_dp" ] && [ $((b_cp - b_dp)) -eq "$want" ]
ok $? "cp 2: $b_cp bytes sent, dp 2's $b_dp plus the ring's $want"

# the built-in trace: the report's layout, the ring's steps as communication of their
# own kind, 4 a layer and step (3 steps, 2 layers)
rm -rf "$tmp/trc"
mkdir "$tmp/trc"
train 2 trc SHARDFLOW_CP=2 SHARDFLOW_TRACE="$tmp/trc/t" --model nanogpt --steps 3 --context 8
nring=$(grep -o '"kind": *"cp ring"' "$tmp/trc/t.rank0.json" | wc -l)
head -n 1 "$tmp/trc/t.overlap.txt" | grep -q '2 rank(s), dp 1 x cp 2 x tp 1;' && [ "$nring" -eq 24 ]
ok $? "cp 2 traced: the report says dp 1 x cp 2 x tp 1, rank 0 ran $nring cp_ring steps (want 24)" ||
	diag_file "$tmp/trc/t.overlap.txt"

# checkpoints across layouts, the uninterrupted 1-rank run's interval
rm -rf "$tmp/ck1" "$tmp/ck2"
for r in "" up down; do
	# shellcheck disable=SC2086
	drv 1 "cu${r:+.$r}" ${r:+SHARDFLOW_ROUNDING=${r}ward} --model llama-hf --optimizer adamw \
		--steps 6 --context 8 --out-params "$tmp/cu${r:+.$r}.p"
done
drv 4 ck22 SHARDFLOW_CP=2 --model llama-hf --optimizer adamw --steps 2 --context 8 \
	--save "$tmp/ck1" --save-every 2
drv 1 ck11 --model llama-hf --optimizer adamw --steps 4 --context 8 --resume "$tmp/ck1" \
	--save "$tmp/ck2" --save-every 4
drv 4 ck4 SHARDFLOW_CP=4 --model llama-hf --optimizer adamw --steps 6 --context 8 \
	--resume "$tmp/ck2" --out-params "$tmp/ck4.p"
"$DUMP_COMPARE" --up "$tmp/cu.up.p" --down "$tmp/cu.down.p" "$tmp/ck4.p" "$tmp/cu.p" \
	>"$tmp/ck.cmp" 2>&1
ok $? "checkpoints: 2 steps at cp 2 x dp 2, 2 on 1 rank, 2 at cp 4 = 6 on 1 rank" ||
	diag_file "$tmp/ck.cmp"

# examples/gpt --arch llama at pp 2 x cp 2: sf_model_predict through a pipeline of CP
# groups (the last stage's chunks of each sample put back in place) = 1 rank: every
# step's loss, the validation loss and the sampled text
GPT="$top_builddir/examples/gpt"
sf_corpus "$tmp/corpus.txt"
g="--arch llama --layers 2 --heads 4 --embd 32 --context 32 --batch 8 --sample 1 --tokens 20
--eval-every 4 --eval-batches 1 --progress-every 1 --lr 0.004 --warmup 2 --steps 4"
# shellcheck disable=SC2086
sh "$RUN_MPI" 1 "$GPT" $g --text "$tmp/corpus.txt" --loss-log "$tmp/g1.loss" </dev/null \
	>"$tmp/g1.out" 2>"$tmp/g1.err"
# shellcheck disable=SC2086
env SHARDFLOW_PP=2 SHARDFLOW_CP=2 SHARDFLOW_LOG=info sh "$RUN_MPI" 4 "$GPT" $g \
	--text "$tmp/corpus.txt" --loss-log "$tmp/g4.loss" </dev/null >"$tmp/g4.out" 2>"$tmp/g4.err"
st=$?
[ "$st" = 0 ] && gpt_same g1 g4 4 && grep -q 'layout pp 2 x dp 1 x cp 2 x tp 1' "$tmp/g4.err" &&
	grep -q '^step 4 val_loss' "$tmp/g4.f" && grep -q '^sample 1:' "$tmp/g4.f"
ok $? "examples/gpt --arch llama, pp 2 x cp 2 = 1 rank: losses, val_loss, sample (exit $st)" ||
	{ diag_file "$tmp/g4.err"; diff "$tmp/g1.f" "$tmp/g4.f" | sed 's/^/# /'; }

# refusals
cp_refused() { # cp_refused DESC NP PATTERN ENV... -- ARGS...
	r_desc=$1 r_np=$2 r_pat=$3
	shift 3
	r_env=
	while [ "$1" != -- ]; do
		r_env="$r_env $1"
		shift
	done
	shift
	# shellcheck disable=SC2086
	env $r_env sh "$RUN_MPI" "$r_np" "$TRAIN_DUMP" --steps 1 --out "$tmp/bad.dump" "$@" \
		</dev/null >"$tmp/bad.out" 2>"$tmp/bad.err"
	r_st=$?
	[ $r_st -ne 0 ] && grep -q "$r_pat" "$tmp/bad.err"
	ok $? "$r_desc: refused with the reason (exit $r_st)" || diag_file "$tmp/bad.err"
}
cp_refused "context 6 at cp 2" 2 'the context of 6 rows does not divide into 4 equal chunks' \
	SHARDFLOW_CP=2 -- --model nanogpt --context 6
cp_refused "SHARDFLOW_CP=2 on 3 ranks" 3 'SHARDFLOW_CP=2 does not divide the 3 ranks' \
	SHARDFLOW_CP=2 -- --model nanogpt --context 8

finish
