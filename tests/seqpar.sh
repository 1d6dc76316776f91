#!/bin/sh
# seqpar.sh — sequence parallelism (SHARDFLOW_SEQUENCE_PARALLEL=on under SHARDFLOW_TP=K,
# issue 48 item 4) against 1 rank.
#
# With it the norms, residual adds and element-wise ops between a linear_row and the
# next linear_col run on a TP rank's R / K rows (scheduler/seqpar.c); a linear_row's
# all-reduce is a reduce-scatter of rows, a linear_col all-gathers its input's rows, a
# norm's weight gradient (over a rank's rows) is all-reduced over the TP group. Checked:
#  - tp 2 on 2 ranks and dp 2 x tp 2 on 4 = 1 rank within its rounding interval (as
#    tests/tp.sh: other sums, so not bitwise), SGD and AdamW, for the GPT with the
#    vocabulary-parallel head (nanogpt-vp: its token embedding keeps its all-reduce,
#    pos_embedding reading it by position), tied to the embedding_vp (nanogpt-vpt), the
#    replicated head (nanogpt-tp: ln_f's rows all-gathered for it), and the Llama
#    (llama-hf-tp, llama-hf-vp: the embedding_vp reduce-scattered into rows, rmsnorm);
#  - bitwise across prefetch depths; 3 micro-batches = one batch; clipping's norm and
#    run = 1 rank's; sf_model_evaluate = 1 rank's;
#  - the bytes of the TP collectives, exactly, and the activation bytes of
#    sf_model_stats below the run without SP by what the shapes say;
#  - refusals: SP without TP, rows that do not divide by K, with SHARDFLOW_RECOMPUTE.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 25

sp="SHARDFLOW_TP=2 SHARDFLOW_SEQUENCE_PARALLEL=on"
for c in nanogpt-vp:sgd nanogpt-vp:adamw nanogpt-tp:sgd nanogpt-tp:adamw llama-hf-tp:sgd \
	llama-hf-tp:adamw llama-hf-vp:adamw nanogpt-vpt:adamw; do
	model=${c%:*} opt=${c#*:}
	train_interval 1 "r1-$model-$opt" --model "$model" --optimizer "$opt" --steps 6
	# shellcheck disable=SC2086
	train 2 "s2-$model-$opt" $sp --model "$model" --optimizer "$opt" --steps 6
	compare_within "$model, $opt: SP, tp 2 on 2 ranks = 1 rank" "s2-$model-$opt" \
		"r1-$model-$opt"
	# shellcheck disable=SC2086
	train 4 "s22-$model-$opt" $sp --model "$model" --optimizer "$opt" --steps 6
	compare_within "$model, $opt: SP, dp 2 x tp 2 on 4 ranks = 1 rank" "s22-$model-$opt" \
		"r1-$model-$opt"
done

for d in 0 3; do
	# shellcheck disable=SC2086
	train 4 "d$d" $sp SHARDFLOW_PREFETCH_DEPTH=$d --model llama-hf-tp --optimizer sgd --steps 6
done
"$DUMP_COMPARE" --bitwise "$tmp/d0.dump" "$tmp/d3.dump" >"$tmp/d.cmp" 2>&1 &&
	"$DUMP_COMPARE" --bitwise "$tmp/d0.dump" "$tmp/s22-llama-hf-tp-sgd.dump" >>"$tmp/d.cmp" 2>&1
ok $? "SP, 2 x 2: prefetch depths 0, 2 and 3 bitwise equal" || diag_file "$tmp/d.cmp"

# shellcheck disable=SC2086
train 4 acc $sp --model nanogpt-vp --optimizer sgd --steps 6 --batch 8 --accum 3
compare_within "SP, 2 x 2, 3 micro-batches of 8 = one batch of 24 on 1 rank" acc \
	r1-nanogpt-vp-sgd

train_interval 1 clip1 --model llama-hf-tp --optimizer sgd --steps 4 --clip 0.05
# shellcheck disable=SC2086
train 4 clip22 $sp --model llama-hf-tp --optimizer sgd --steps 4 --clip 0.05
n1=$(sed -n 's/^norm 4 //p' "$tmp/clip1.out") n4=$(sed -n 's/^norm 4 //p' "$tmp/clip22.out")
within_interval clip22 clip1 '^norm 4 ' >"$tmp/clip.cmp" &&
	"$DUMP_COMPARE" --up "$tmp/clip1.up.dump" --down "$tmp/clip1.down.dump" "$tmp/clip22.dump" \
		"$tmp/clip1.dump" >>"$tmp/clip.cmp" 2>&1
ok $? "SP, 2 x 2 clipped: norm $n4 = 1 rank's $n1 (the norms' gradients summed over the TP group, counted once), the run = 1 rank's"
diag_file "$tmp/clip.cmp"

train_interval 1 ev1 --model llama-hf-vp --optimizer adamw --steps 3 --evaluate 30
# shellcheck disable=SC2086
train 4 ev22 $sp --model llama-hf-vp --optimizer adamw --steps 3 --evaluate 30
e1=$(sed -n 's/^eval //p' "$tmp/ev1.out") e4=$(sed -n 's/^eval //p' "$tmp/ev22.out")
within_interval ev22 ev1 '^eval ' >"$tmp/ev.cmp"
ok $? "SP, 2 x 2: sf_model_evaluate of 30 samples = 1 rank's: $e4, $e1 (within its rounding interval)"
diag_file "$tmp/ev.cmp"

# The TP collectives' bytes of nanogpt-vp at tp 2 (dp 1: no FSDP traffic). R = 24
# samples x T 5 = 120 rows of C = 10 floats, n = R C = 1 200, a rank's rows n / 2 = 600
# (a ring of K 2 sends (K - 1) / K of a reduce-scatter's n and (K - 1) blocks of an
# all-gather's): wte keeps its all-reduce (pos_embedding reads it whole), n; wpe's
# gradient rows all-gathered, 600; each of the 2 blocks: its 2 linear_col inputs
# all-gathered forward and again backward and their input gradients reduce-scattered
# (3 x 600 each), its 2 linear_row outputs reduce-scattered and their gradients
# all-gathered (2 x 600 each), ln_1's and ln_2's 20 parameters' gradients all-reduced
# (2 (K - 1) / K 20 = 20 each); lm_head as a linear_col, 3 x 600, and ln_f's 20; the
# loss's all-gather of 3 floats a row, 360. 6 steps, 4 bytes.
want=$((6 * (1200 + 600 + 2 * (10 * 600 + 2 * 20) + 3 * 600 + 20 + 360) * 4))
got=$(sed -n 's/^rank 0 tp 2 dp 1 .* tp_comm_bytes \([0-9]*\)$/\1/p' "$tmp/s2-nanogpt-vp-sgd.out")
[ "${got:-0}" -eq "$want" ]
ok $? "SP, tp 2, 6 steps: the TP collectives sent $got bytes (want $want)" ||
	diag_file "$tmp/s2-nanogpt-vp-sgd.out"

# Activations: without SP a rank holds every node's R rows; with it the 6 row-split
# nodes of a block (ln_1, attn.c_proj, the residual add, ln_2, mlp.c_proj, the add)
# and ln_f hold R / K rows of C (activation and gradient) and the 5 layernorms' 2
# saved floats a row R / K rows, while wpe, read by row-split nodes, adds its rows and
# their gradient (2 R / K C). The buffers add the shared whole rows a linear_col's
# input and a linear_row's output are gathered into (2 R C).
# shellcheck disable=SC2086
train 2 nosp SHARDFLOW_TP=2 --model nanogpt-vp --optimizer sgd --steps 6
R=120 K=2 C=10 L=2
dact=$(((R - R / K) * (2 * C * (6 * L + 1) + 2 * (2 * L + 1)) - 2 * R / K * C))
dbuf=$((2 * R * C))
set -- $(sed -n 's/^bytes 0 .* activations \([0-9]*\) buffers \([0-9]*\) .*/\1 \2/p' "$tmp/nosp.out")
a0=${1:-0} b0=${2:-0}
set -- $(sed -n 's/^bytes 0 .* activations \([0-9]*\) buffers \([0-9]*\) .*/\1 \2/p' \
	"$tmp/s2-nanogpt-vp-sgd.out")
a1=${1:-0} b1=${2:-0}
[ "$a0" -gt 0 ] && [ $((a0 - a1)) -eq $((4 * dact)) ] && [ $((b1 - b0)) -eq $((4 * dbuf)) ]
ok $? "SP, tp 2: activations $a1 bytes, $((a0 - a1)) below the $a0 without (want $((4 * dact))); buffers +$((b1 - b0)) (want $((4 * dbuf)))"

# refusals
# shellcheck disable=SC2086
train 1 no_tp SHARDFLOW_SEQUENCE_PARALLEL=on --model nanogpt-vp --steps 1
[ $? -ne 0 ] && grep -q 'SHARDFLOW_SEQUENCE_PARALLEL=on needs tensor parallelism' "$tmp/no_tp.err"
ok $? "SP without TP: refused" || diag_file "$tmp/no_tp.err"
# shellcheck disable=SC2086
train 2 odd $sp --model nanogpt-vp --steps 1 --batch 3
[ $? -ne 0 ] && grep -q "a rank's 15 rows (3 samples of 5 tokens) do not divide by SHARDFLOW_TP=2" \
	"$tmp/odd.err"
ok $? "SP with 15 rows a rank at tp 2: refused, naming the numbers" || diag_file "$tmp/odd.err"
# shellcheck disable=SC2086
train 2 rc $sp SHARDFLOW_RECOMPUTE=units --model nanogpt-vp --steps 1
[ $? -ne 0 ] && grep -q 'not supported with SHARDFLOW_RECOMPUTE' "$tmp/rc.err"
ok $? "SP with SHARDFLOW_RECOMPUTE: refused" || diag_file "$tmp/rc.err"

finish
