#!/bin/sh
# tp.sh — tensor parallelism (SHARDFLOW_TP=K, world = dp x K) against 1 rank.
#
# Models (tests/test_models.h): mlp-tp, the mlp with fc1 a linear_col and fc2 a
# linear_row (Megatron's MLP); mlp-tp-gather, fc1 a linear_col with gather_output (its
# output all-gathered, plain layers after it); residual-tp, where h feeds both such an MLP and the
# residual add (the col's all-reduced input gradient is added to the add's);
# nanogpt-tp, sf_gpt_graph with tensor_parallel 1 (c_attn a linear_col of 3 blocks, so
# each TP rank holds whole heads; c_fc a col; both c_proj rows); and llama-hf-tp,
# sf_llama_graph with tensor_parallel 1 (the q | k | v projection a linear_col of 3
# named blocks of unequal rows, grouped-query attention 4 on 2 heads, rope on a rank's
# heads, o_proj and down_proj rows, gate_proj and up_proj cols). Checked:
#  - K 1 is a "linear" model bitwise: nanogpt-tp = nanogpt, llama-hf-tp = llama-hf;
#  - tp 2 on 2 ranks and dp 2 x tp 2 on 4 ranks = 1 rank, SGD and AdamW, within the
#    1-rank run's rounding interval (that run again rounded upward and downward:
#    tests/dump_compare.c --up/--down, docs/testing.md);
#  - bitwise across prefetch depths and the backward prefetch policy; sharding
#    grad_op and none = full; micro-batches = one batch; recompute and a split
#    backward of the tied head bitwise; bf16 on the wire within bf16.sh's bounds;
#  - clipping: the norm of 2 x 2 = 1 rank's (each parameter counted once although the
#    norms, embeddings and linear_row biases are on every TP rank), sharding none too;
#  - the initial weights exported at 2 x 2 = 1 rank's, bitwise (each rank draws the
#    whole layer and keeps its slice); the trained export loads on 1 rank;
#  - checkpoints: 2 x 2 -> 4 x 1 -> 1 x 1 = uninterrupted 1 rank (SGD and AdamW), and
#    2 x 2 resumed = 2 x 2 uninterrupted, bitwise;
#  - the bytes of the TP all-reduces, exactly: tp 2 on 2 ranks (no data parallelism,
#    so no gather or reduce-scatter sends anything); sf_model_stats' model and TP
#    slice bytes;
#  - refused with the reason: K not dividing the world, hybrid sharding with TP, a
#    model whose blocks do not split over K, heads not divisible by K, a bad value.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 43


# K 1: the TP types are "linear", bitwise
train 1 gpt1 --model nanogpt --optimizer adamw --steps 4
train 1 gpttp1 --model nanogpt-tp --optimizer adamw --steps 4
compare "nanogpt-tp on 1 rank = nanogpt (linear_col/row with K 1 are linear), bitwise" \
	gpttp1 gpt1 --bitwise
train 1 llama1 --model llama-hf --optimizer adamw --steps 4
train 1 llamatp1 --model llama-hf-tp --optimizer adamw --steps 4
compare "llama-hf-tp on 1 rank = llama-hf (its split QKV, a linear_col of 3 named blocks), bitwise" \
	llamatp1 llama1 --bitwise

# layouts against 1 rank
for c in mlp-tp:sgd mlp-tp:adamw residual-tp:sgd nanogpt-tp:sgd nanogpt-tp:adamw \
	llama-hf-tp:sgd llama-hf-tp:adamw; do
	model=${c%:*} opt=${c#*:}
	train_interval 1 "r1-$model-$opt" --model "$model" --optimizer "$opt" --steps 6
	train 2 "t2-$model-$opt" SHARDFLOW_TP=2 --model "$model" --optimizer "$opt" --steps 6
	compare_within "$model, $opt: tp 2 on 2 ranks = 1 rank" "t2-$model-$opt" "r1-$model-$opt"
	train 4 "t22-$model-$opt" SHARDFLOW_TP=2 --model "$model" --optimizer "$opt" --steps 6
	compare_within "$model, $opt: dp 2 x tp 2 on 4 ranks = 1 rank" "t22-$model-$opt" \
		"r1-$model-$opt"
done
train_interval 1 r1-gather --model mlp-tp-gather --optimizer adamw --steps 6
train 2 t2-gather SHARDFLOW_TP=2 --model mlp-tp-gather --optimizer adamw --steps 6
compare_within "gather_output (a col whose output is gathered, then plain layers): tp 2 = 1 rank" \
	t2-gather r1-gather
train 4 t22-gather SHARDFLOW_TP=2 SHARDFLOW_RECOMPUTE=units --model mlp-tp-gather \
	--optimizer adamw --steps 6
compare_within "gather_output at dp 2 x tp 2, with recompute: = 1 rank" t22-gather r1-gather
train 4 t4-mlp SHARDFLOW_TP=4 --model mlp-tp --optimizer sgd --steps 6
compare_within "mlp-tp, sgd: tp 4 on 4 ranks = 1 rank" t4-mlp r1-mlp-tp-sgd

# schedules and knobs, at 2 x 2
t22="SHARDFLOW_TP=2"
for d in 0 3; do
	train 4 "d$d" $t22 SHARDFLOW_PREFETCH_DEPTH=$d --model nanogpt-tp --optimizer sgd --steps 6
done
train 4 dnone $t22 SHARDFLOW_PREFETCH_DEPTH=1 SHARDFLOW_BACKWARD_PREFETCH=none \
	--model nanogpt-tp --optimizer sgd --steps 6
"$DUMP_COMPARE" --bitwise "$tmp/d0.dump" "$tmp/d3.dump" >"$tmp/d.cmp" 2>&1 &&
	"$DUMP_COMPARE" --bitwise "$tmp/d0.dump" "$tmp/dnone.dump" >>"$tmp/d.cmp" 2>&1 &&
	"$DUMP_COMPARE" --bitwise "$tmp/d0.dump" "$tmp/t22-nanogpt-tp-sgd.dump" >>"$tmp/d.cmp" 2>&1
ok $? "2 x 2: depths 0, 1 (backward prefetch none), 2 and 3 bitwise equal"
diag_file "$tmp/d.cmp"
for sh in grad_op none; do
	train 4 "s-$sh" $t22 SHARDFLOW_SHARDING=$sh --model nanogpt-tp --optimizer sgd --steps 6
	compare_within "2 x 2, sharding $sh = full (as 1 rank)" "s-$sh" r1-nanogpt-tp-sgd
done
train 4 acc $t22 --model nanogpt-tp --optimizer sgd --steps 6 --batch 8 --accum 3
compare_within "2 x 2, 3 micro-batches of 8 = one batch of 24 on 1 rank" acc r1-nanogpt-tp-sgd
train 4 rc $t22 SHARDFLOW_RECOMPUTE=units --model nanogpt-tp --optimizer sgd --steps 6
compare "2 x 2 with recompute = without, bitwise (the row's all-reduce runs again)" rc \
	t22-nanogpt-tp-sgd --bitwise
# the Llama's recomputed units hold linear_cols whose partial input gradient has a
# buffer of its own, not the recomputed nodes' shared ones (it was never allocated:
# a crash)
train 2 rc-llama SHARDFLOW_TP=2 SHARDFLOW_RECOMPUTE=units --model llama-hf-tp --optimizer sgd \
	--steps 6
compare "llama-hf-tp, tp 2 with recompute = without, bitwise" rc-llama t2-llama-hf-tp-sgd --bitwise

# bf16 on the wire (against fp32 on 1 rank, tests/bf16.sh's bounds) and a split backward
train 1 b1 --model nanogpt-tp --optimizer sgd --steps 5
train_interval 4 b22 $t22 SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_REDUCE_DTYPE=bf16 --model nanogpt-tp \
	--optimizer sgd --steps 5
"$DUMP_COMPARE" --rtol 1e-4 --ignore 0:1000000000 "$tmp/b22.dump" "$tmp/b1.dump" \
	>"$tmp/b.cmp" 2>&1 &&
	"$DUMP_COMPARE" --up "$tmp/b22.up.dump" --down "$tmp/b22.down.dump" --no-losses \
		"$tmp/b1.dump" "$tmp/b22.dump" >>"$tmp/b.cmp" 2>&1
ok $? "2 x 2 with bf16 gathers and reduce-scatters: losses within 1e-4 of fp32 (flagged, bf16.sh), its parameters within the bf16 run's rounding interval"
diag_file "$tmp/b.cmp"
train 4 sb $t22 SHARDFLOW_SPLIT_BACKWARD=on --model nanogpt-tp --optimizer sgd --steps 6
compare "2 x 2 with the tied head's backward split = not split, bitwise" sb t22-nanogpt-tp-sgd \
	--bitwise

# clipping: the norm counts what every TP rank holds once
train_interval 1 clip1 --model nanogpt-tp --optimizer sgd --steps 4 --clip 0.05
for sh in full none; do
	train 4 "clip-$sh" $t22 SHARDFLOW_SHARDING=$sh --model nanogpt-tp --optimizer sgd \
		--steps 4 --clip 0.05
	n1=$(sed -n 's/^norm 4 //p' "$tmp/clip1.out") n4=$(sed -n 's/^norm 4 //p' "$tmp/clip-$sh.out")
	clipped_within "clip-$sh" clip1
	ok $? "2 x 2 clipped, sharding $sh: norm $n4 = 1 rank's $n1, and the run = 1 rank's (within its rounding interval)"
	diag_file "$tmp/clip.cmp"
done

# safetensors: the whole model, whatever the layout
train 1 e1 --model nanogpt-tp --optimizer sgd --steps 3 --export-init "$tmp/w0-1.st"
train 4 e22 $t22 --model nanogpt-tp --optimizer sgd --steps 3 --export-init "$tmp/w0-22.st" \
	--export "$tmp/w-22.st"
cmp "$tmp/w0-1.st" "$tmp/w0-22.st" >/dev/null 2>&1
ok $? "2 x 2: the initial weights exported = 1 rank's, bitwise"
train_interval 1 i1 --model nanogpt-tp --optimizer sgd --steps 3 --init "$tmp/w-22.st"
train 2 i2 SHARDFLOW_TP=2 --model nanogpt-tp --optimizer sgd --steps 3 --init "$tmp/w-22.st"
compare_within "a 2 x 2 export imported at tp 2 = imported on 1 rank" i2 i1

# checkpoints across layouts (ckpt_lib.sh's tp_ckpt_chain)
for opt in sgd adamw; do
	tp_ckpt_chain nanogpt-tp $opt
	ok $? "$opt: checkpoint 2 x 2 (manifest tp 2) -> 4 x 1 -> 1 x 1 = 1 rank uninterrupted (within its rounding interval)"
	diag_file "$tmp/ck.cmp"
done
a22="$t22 --model nanogpt-tp --optimizer adamw"
# shellcheck disable=SC2086
drv 4 cu22 $a22 --steps 4 --out "$tmp/cu22.dump" --dump-losses-from 2
# shellcheck disable=SC2086
drv 4 cs22 $a22 --steps 2 --save "$tmp/ck22" --save-every 2
# shellcheck disable=SC2086
drv 4 cr22 $a22 --steps 4 --resume "$tmp/ck22" --out "$tmp/cr22.dump"
compare "2 x 2 resumed from its own checkpoint = uninterrupted, bitwise" cr22 cu22 --bitwise

# the TP all-reduces' bytes, tp 2 on 2 ranks (dp 1: rings of one rank send nothing).
# nanogpt-tp: 24 samples of T 5 rows, width 10, 2 blocks; each step every block
# all-reduces 4 activations of 24 x 5 x 10 floats (the outputs of attn.c_proj and
# mlp.c_proj, the input gradients of attn.c_attn and mlp.c_fc); a ring all-reduce of
# n floats over K ranks sends 2 (K - 1) / K n of them: n for K 2. 6 steps, 4 bytes.
want=$((6 * 2 * 4 * 24 * 5 * 10 * 4))
got=$(sed -n 's/^rank 0 comm_bytes \([0-9]*\) .*/\1/p' "$tmp/t2-nanogpt-tp-sgd.out")
gtp=$(sed -n 's/^rank 0 tp 2 dp 1 .* tp_comm_bytes \([0-9]*\)$/\1/p' "$tmp/t2-nanogpt-tp-sgd.out")
[ "${got:-0}" -eq "$want" ] && [ "${gtp:-0}" -eq "$want" ]
ok $? "tp 2, 6 steps: rank 0 sent $got bytes, all in TP all-reduces ($gtp; want $want)" ||
	diag_file "$tmp/t2-nanogpt-tp-sgd.out"
# sf_model_stats' two dimensions: nanogpt-tp holds 2 890 parameters; a TP rank's slice
# is 1 620: wte 160, wpe 50 and ln_f 20 whole, and per block ln_1 and ln_2 (20 each)
# whole, c_attn 330 / 2, attn.c_proj's weight 100 / 2 and its bias 10, c_fc 440 / 2,
# mlp.c_proj's weight 400 / 2 and its bias 10: 695 a block.
grep -q '^rank 3 tp 2 dp 2 model_bytes 11560 tp_slice_bytes 6480 ' "$tmp/t22-nanogpt-tp-sgd.out"
ok $? "sf_model_stats at 2 x 2: tp 2, dp 2, the model's 11560 bytes, a TP slice of 6480" ||
	diag_file "$tmp/t22-nanogpt-tp-sgd.out"

# what leaves a node (nodes of 2 ranks, SHARDFLOW_NODE_SIZE=2): at 2 x 2 the TP groups
# are the nodes and the shard groups ({0, 2}, {1, 3}) span them, so every gather and
# reduce-scatter byte leaves its node and no TP byte does; at tp 4 the TP ring leaves a
# node at ranks 1 and 3, half of its bytes
bytes() { # bytes NAME: "<comm> <inter> <tp>" summed over the ranks
	awk '$1 == "rank" && $3 == "comm_bytes" { c += $4; i += $6 }
	     $1 == "rank" && $3 == "tp" { t += $NF } END { printf "%.0f %.0f %.0f\n", c, i, t }' \
		"$tmp/$1.out"
}
train 4 n22 $t22 SHARDFLOW_NODE_SIZE=2 --model nanogpt-tp --optimizer sgd --steps 3
# shellcheck disable=SC2046
set -- $(bytes n22)
[ "$2" -gt 0 ] && [ "$2" -eq $(($1 - $3)) ]
ok $? "2 x 2 on nodes of 2: the bytes leaving a node ($2) = the FSDP rings' (all $1 less TP's $3)"
train 4 n4 SHARDFLOW_TP=4 SHARDFLOW_NODE_SIZE=2 --model mlp-tp --optimizer sgd --steps 3
# shellcheck disable=SC2046
set -- $(bytes n4)
[ "$2" -gt 0 ] && [ "$1" -eq "$3" ] && [ $((2 * $2)) -eq "$3" ]
ok $? "tp 4 on nodes of 2: half the TP ring's bytes leave a node ($2 of $3; all $1 sent are TP's)"

# refusals
tp_refused() { # tp_refused DESC NP PATTERN ENV...
	r_desc=$1 r_np=$2 r_pat=$3
	shift 3
	env "$@" sh "$RUN_MPI" "$r_np" "$TRAIN_DUMP" --model nanogpt-tp --steps 1 \
		--out "$tmp/bad.dump" </dev/null >"$tmp/bad.out" 2>"$tmp/bad.err"
	r_st=$?
	[ $r_st -ne 0 ] && grep -q "$r_pat" "$tmp/bad.err"
	ok $? "$r_desc: refused with the reason (exit $r_st)" || diag_file "$tmp/bad.err"
}
tp_refused "SHARDFLOW_TP=3 on 4 ranks" 4 'SHARDFLOW_TP=3 does not divide the 4 ranks' SHARDFLOW_TP=3
tp_refused "SHARDFLOW_TP=2 with hybrid sharding" 4 'SHARDFLOW_TP=2 with SHARDFLOW_SHARDING=hybrid' \
	SHARDFLOW_TP=2 SHARDFLOW_SHARDING=hybrid SHARDFLOW_NODE_SIZE=2
tp_refused "SHARDFLOW_TP=4 on nanogpt-tp (c_attn: 3 blocks of 10 rows)" 4 \
	'transformer.h.0.attn.c_attn" (linear_col): out_dim 30 in 3 block(s) does not split over SHARDFLOW_TP=4' \
	SHARDFLOW_TP=4
tp_refused "SHARDFLOW_TP=5 on nanogpt-tp (2 heads; its blocks of 10 rows split)" 5 \
	'transformer.h.0.attn.attention" (attention): its 2 heads and 2 key/value heads must be divisible by SHARDFLOW_TP=5' \
	SHARDFLOW_TP=5
tp_refused "SHARDFLOW_TP=two" 2 'SHARDFLOW_TP="two" is invalid' SHARDFLOW_TP=two

finish
