#!/bin/sh
# perfmodel_flops.sh — every codelet's StarPU performance model records its flops, so
# starpu_perfmodel_display shows a rate (GFlop/s = flops / mean) for each one
# (docs/profiling.md section 5).
#
# Short calibrating runs (shardflow calibrates by default) into a fresh STARPU_HOME:
# train_dump's "wide" model with SGD (relu, linear), sf_gpt_graph with AdamW, 2
# micro-batches and clipping (gelu, add, embedding, pos_embedding, layernorm,
# attention, the cross-entropy, the gradient's sums and norm), sf_llama_graph with
# Lion (silu, mul, rope, rmsnorm, attention_gqa, linear_split) and examples/regression
# under Huber then MSE (sf_reg_loss, a footprint per kind). Then every entry of every
# sf_* model, as starpu_perfmodel_display prints it, has flops > 0, except the two
# codelets whose work is copies (sf_embedding_fwd, sf_grad_copy: 0, time alone), and
# none is NaN (two counts for one footprint); each model named above is there.
# Skipped without StarPU's starpu_perfmodel_display.
. "$(dirname "$0")/lib.sh"
REG="$top_builddir/examples/regression"
require_progs "$TRAIN_DUMP" "$REG"
DISPLAY_TOOL="$STARPU_BINDIR/starpu_perfmodel_display"
[ -n "$STARPU_BINDIR" ] && [ -x "$DISPLAY_TOOL" ] ||
	skip_all "no starpu_perfmodel_display (STARPU_BINDIR '$STARPU_BINDIR')"

plan 3

STARPU_HOME="$tmp/home"
export STARPU_HOME
mkdir -p "$STARPU_HOME"
{
	"$TRAIN_DUMP" --model wide --optimizer sgd --steps 2 --out "$tmp/w.dump" &&
		"$TRAIN_DUMP" --model nanogpt --optimizer adamw --accum 2 --clip 1 --steps 2 \
			--out "$tmp/g.dump" &&
		"$TRAIN_DUMP" --model llama-hf --optimizer lion --steps 2 --out "$tmp/l.dump"
} </dev/null >"$tmp/runs.out" 2>&1
st=$?
# examples/regression exits 1 when 3 steps do not reach its answer: only a crash counts
for loss in huber mse; do
	"$REG" --steps 3 --loss $loss --val 64 </dev/null >>"$tmp/runs.out" 2>&1
	r=$?
	[ $r -le 1 ] || st=$r
done
[ $st -eq 0 ] && [ -n "$(find "$STARPU_HOME" -name 'sf_reg_loss.*')" ]
ok $? "the calibrating runs recorded their models (exit $st)" || diag_file "$tmp/runs.out"

symbols=$("$DISPLAY_TOOL" -l 2>"$tmp/l.err" | sed -n 's/^file: <\(sf_[A-Za-z0-9_]*\)\..*>$/\1/p' | sort -u)
: >"$tmp/bad"
for s in $symbols; do
	"$DISPLAY_TOOL" -s "$s" 2>&1 | awk -v s="$s" '
		/^[0-9a-f]+\t/ {
			n++
			f = $3
			if (f != f + 0 || f == "nan" || f == "-nan") { print s ": flops " f " (NaN)"; next }
			zero = (s == "sf_embedding_fwd" || s == "sf_grad_copy")
			if (zero && f + 0 != 0) print s ": flops " f ", want 0 (copies)"
			if (!zero && !(f + 0 > 0)) print s ": flops " f ", want > 0 (mean " $4 " us)"
		}
		END { if (!n) print s ": no entries" }' >>"$tmp/bad"
done
[ -n "$symbols" ] && [ ! -s "$tmp/bad" ]
ok $? "every entry of the $(echo $symbols | wc -w) models has flops > 0 (0 for the copies), none NaN" || {
	diag_file "$tmp/bad"
	diag_file "$tmp/l.err"
}

missing=
for s in sf_relu_fwd sf_relu_bwd sf_gelu_fwd sf_gelu_bwd sf_silu_fwd sf_silu_bwd sf_add_fwd \
	sf_add_bwd sf_mul_fwd sf_mul_bwd sf_embedding_fwd sf_embedding_bwd sf_sgd sf_adamw sf_lion \
	sf_reg_loss sf_softmax_xent sf_grad_add sf_grad_sqnorm; do
	echo "$symbols" | grep -qx "$s" || missing="$missing $s"
done
[ -z "$missing" ]
ok $? "the element-wise ops', the optimizers' and the losses' models are among them${missing:+ (missing:$missing)}"
finish
