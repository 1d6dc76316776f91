#!/bin/sh
# tied.sh — a tied lm_head receives both gradients: the GPT's head reads the token
# embedding's matrix (sf_graph_layer_tied), so one SGD step must move that matrix by
# the sum of what the embedding and the head contribute. The reference is the untied
# twin (nanogpt-untied: the same model with lm_head's own weights) started from the
# same values, lm_head.weight a copy of transformer.wte.weight (tests/st_tool.py):
#  - on 1 and 2 ranks: the tied wte's move = the untied wte's move + lm_head's move,
#    every other tensor moves as in the twin, within the tied run's rounding interval
#    (the same run with every CPU worker rounding upward and downward,
#    SHARDFLOW_ROUNDING; blocks of 128 by 2-norm, docs/testing.md; measured at most
#    0.07 of it): the twin sums the same two gradients in other groups; and both
#    untied moves are more than 10 times the interval's bound (each gradient matters);
#  - a tied run whose head gradient is dropped would fail: the untied embedding's move
#    alone is checked to differ from the tied move.
# And the split backward (SHARDFLOW_SPLIT_BACKWARD=on; off by default): the tied head's
# backward runs as an input-gradient task and a weight-gradient task deferred to just
# before the embedding's end. It must happen (the trace names "bwd lm_head.dW") and
# change nothing: on = off bitwise (dump_compare --bitwise) for AdamW with clipping on
# 1 and 2 ranks at depths 0 and 2, ZeRO-2, gradient accumulation and recompute.
# SGD, one step, lr 0.5: the first step of SGD with momentum is -lr * gradient, linear,
# so moves add (AdamW's normalised step would not).
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
ST="python3 $top_srcdir/tests/st_tool.py"
args="--optimizer sgd --lr 0.5 --steps 1 --batch 6"

plan 12

# run NP NAME ARGS...: train_dump, rounding as $rounding says (SHARDFLOW_ROUNDING, unset
# when empty)
rounding=
run() {
	_np=$1 _name=$2
	shift 2
	env ${rounding:+SHARDFLOW_ROUNDING=$rounding} sh "$RUN_MPI" "$_np" "$TRAIN_DUMP" "$@" \
		--out "$tmp/$_name.dump" </dev/null >"$tmp/$_name.out" 2>"$tmp/$_name.err"
	_st=$?
	[ $_st -eq 0 ] || { diag "train_dump $* (exit $_st)"; diag_file "$tmp/$_name.err"; }
	return $_st
}

run 1 w0 --model nanogpt $args --export-init "$tmp/w0.st" &&
	$ST untie "$tmp/w0.st" "$tmp/w0u.st"
ok $? "initial tied weights exported, and their untied twin made (lm_head = wte)"

for np in 1 2; do
	for rounding in upward downward; do
		run $np "t$np.$rounding" --model nanogpt $args --init "$tmp/w0.st" \
			--export "$tmp/t$np.$rounding.st" || break
	done
	rounding=
	run $np "t$np" --model nanogpt $args --init "$tmp/w0.st" --export "$tmp/t$np.st" &&
		run $np "u$np" --model nanogpt-untied $args --init "$tmp/w0u.st" \
			--export "$tmp/u$np.st" &&
		$ST tied-check "$tmp/w0.st" "$tmp/t$np.st" "$tmp/u$np.st" "$tmp/t$np.upward.st" \
			"$tmp/t$np.downward.st" >"$tmp/c$np.out" 2>&1
	st=$?
	diag_file "$tmp/c$np.out"
	ok $st "$np rank(s): the tied matrix moves by the embedding's + the head's untied moves"
done

# the check can fail: the untied run's embedding move alone (no head gradient) as the
# "tied" run must be refused
$ST tied-check "$tmp/w0.st" "$tmp/u1.st" "$tmp/u1.st" "$tmp/t1.upward.st" "$tmp/t1.downward.st" \
	>"$tmp/neg.out" 2>&1
st=$?
diag_file "$tmp/neg.out"
[ $st -eq 1 ]
ok $? "the embedding's move alone is refused as a tied move (exit $st)"

# split on = off, bitwise: NP TAG [SHARDFLOW_*=V...] [train_dump args...]
split_case() {
	_snp=$1 _tag=$2
	shift 2
	train "$_snp" "on-$_tag" SHARDFLOW_SPLIT_BACKWARD=on "$@" &&
		train "$_snp" "off-$_tag" SHARDFLOW_SPLIT_BACKWARD=off "$@" &&
		compare "$_snp rank(s), $_tag: split backward on = off (bitwise)" "on-$_tag" "off-$_tag" --bitwise ||
		ok 1 "$_snp rank(s), $_tag: split backward on = off (a run failed)"
}
sargs="--model nanogpt --optimizer adamw --steps 3 --batch 6 --clip 0.5"
mkdir -p "$tmp/tr"
train 2 traced SHARDFLOW_SPLIT_BACKWARD=on SHARDFLOW_TRACE="$tmp/tr/p" $sargs &&
	grep -q '"bwd lm_head.dW (linear_nobias L[0-9]*)"' "$tmp/tr/p.rank0.json" &&
	grep -q '"bwd lm_head (linear_nobias L[0-9]*)"' "$tmp/tr/p.rank0.json"
ok $? "the tied head's backward runs as two tasks (the trace names bwd lm_head and bwd lm_head.dW)"
split_case 1 "adamw, clip" $sargs
split_case 2 "adamw, clip, depth 2" $sargs
split_case 2 "adamw, clip, depth 0" SHARDFLOW_PREFETCH_DEPTH=0 $sargs
split_case 2 "ZeRO-2" SHARDFLOW_SHARDING=grad_op $sargs
split_case 2 "3 micro-batches" $sargs --accum 3
split_case 2 "recompute" SHARDFLOW_RECOMPUTE=units $sargs

# a malformed file is an error, not a pass
printf 'not a safetensors file' >"$tmp/bad.st"
$ST tied-check "$tmp/bad.st" "$tmp/t1.st" "$tmp/u1.st" "$tmp/t1.upward.st" "$tmp/t1.downward.st" \
	>/dev/null 2>"$tmp/bad.err"
st=$?
[ $st -eq 2 ]
ok $? "a malformed file: exit 2 (exit $st)"
finish
