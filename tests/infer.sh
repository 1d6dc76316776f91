#!/bin/sh
# infer.sh — sf_model_forward and sf_model_evaluate, no MPI in the caller, on 1, 2 and 3
# ranks (3: the batch of 12 splits 4/4/4, 2: 6/6; 29 samples are three passes, the
# last padded): tests/test_infer's checks (its header says what each proves) pass on
# each world size, and the worlds agree with the 1-rank run: the evaluation of 29
# samples, a weighted sum of their forward outputs and the loss of a step with ignored
# labels (cross-entropy's ignore index). And through a pipeline (SHARDFLOW_PP, issue 49):
# pp 2 on 2 ranks (4 micro-batches of 3: a pass is 3 samples, each through both
# stages) and pp 2 x dp 2 on 4 ranks (2 micro-batches of 3 a dp rank), where
# sf_model_predict, forward and evaluate go through the stages and every rank returns
# what it would without one: the same checks pass and the worlds agree as above; and
# pp 3 on 3 ranks (6 micro-batches of 2, the ignored labels 1, 4, 7, 10 in 4 of
# them): a step's loss is the mean over the step's counted rows, not of the
# micro-batches' means.
#
# Agree within what: not bitwise, and no measured figure. The worlds run the same
# float32 forward on other row counts (12, 6 or 4 rows a rank), and OpenBLAS picks its
# kernels, so the order of each logit's dot products, by shape and by CPU. test_infer
# prints each figure with the bound of its float32 rounding (derived in its header and
# tests/fp32_bounds.h: the same quantity in exact arithmetic lies within it), so two
# worlds agree within the sum of their two bounds, on any machine.
. "$(dirname "$0")/lib.sh"
PROG="$top_builddir/tests/test_infer"
require_progs "$PROG"

plan 9

# world NAME NP [VAR=VALUE...]: test_infer on NP ranks, its output in NAME.out
world() {
	_n=$1
	_np=$2
	shift 2
	env "$@" sh "$RUN_MPI" "$_np" "$PROG" </dev/null >"$tmp/$_n.out" 2>"$tmp/$_n.err"
	st=$?
	n=$(grep -c '^ok ' "$tmp/$_n.out")
	[ $st -eq 0 ] && [ "$n" -ge 10 ] && ! grep -q '^not ok' "$tmp/$_n.out"
	ok $? "$_np rank(s)${*:+ $*}: $n checks pass" || { diag_file "$tmp/$_n.out"; diag_file "$tmp/$_n.err"; }
}
for np in 1 2 3; do
	world "n$np" "$np"
done
world p2 2 SHARDFLOW_PP=2
world p22 4 SHARDFLOW_PP=2 SHARDFLOW_PP_MICROBATCHES=2
world p3 3 SHARDFLOW_PP=3
close() { # close KEY: every world's "KEY value bound" within its bound + 1 rank's of 1 rank's
	awk -v k="$1" '$1 == k { v[FILENAME] = $2; b[FILENAME] = $3
			if (FILENAME ~ /n1.out$/) { ref = $2; rb = $3 } }
		END { worst = 0; for (f in v) { d = v[f] - ref; if (d < 0) d = -d; d /= b[f] + rb
		      if (d > worst) worst = d }
		      printf "%.1e of the bound, %.1e", worst, rb; exit !(length(v) == 6 && worst <= 1) }' \
		"$tmp/n1.out" "$tmp/n2.out" "$tmp/n3.out" "$tmp/p2.out" "$tmp/p22.out" "$tmp/p3.out"
}
w=$(close eval)
ok $? "evaluate of 29 samples: 2 and 3 ranks, pp 2, pp 2 x dp 2 and pp 3 = 1 rank within their float32 rounding (worst $w)"
w=$(close fwd)
ok $? "forward of 29 samples: 2 and 3 ranks, pp 2, pp 2 x dp 2 and pp 3 = 1 rank within their float32 rounding (worst $w)"
w=$(close ign)
ok $? "a step with ignored labels: 2 and 3 ranks', pp 2's, pp 2 x dp 2's and pp 3's loss = 1 rank's within their float32 rounding (worst $w)"
finish
