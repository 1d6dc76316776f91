#!/bin/sh
# regression.sh — examples/regression (a linear map with a known answer, W* and b*,
# plus noise of sd 0.01) trained with the regression losses reaches the answer:
#  - MSE on 1 and 3 ranks: |W - W*| and |b - b*| within 0.01, the held-out MSE
#    (sf_model_evaluate, 1000 samples) within [0.5, 2] x the noise's variance 1e-4,
#    and 3 ranks' last loss = 1 rank's (relative 1e-4: sharding changes no update);
#  - L1 (lr 0.01, 600 steps: a sign's steps jitter by the lr) and Huber (delta 0.1) on
#    2 ranks reach it too;
#  - MSE written as a user's loss layer (--loss mse-layer: a "squared_error" layer type
#    and SF_LOSS_MEAN) on 2 ranks reaches it too, its last and held-out losses within
#    1e-6 of the built-in MSE's on 1 rank (the same sums, in another order);
#  - a bad --loss is refused naming the accepted ones.
. "$(dirname "$0")/lib.sh"
PROG="$top_builddir/examples/regression"
require_progs "$PROG"

plan 8

run() { # run NAME NP ARGS...
	_n=$1 _np=$2
	shift 2
	sh "$RUN_MPI" "$_np" "$PROG" "$@" </dev/null >"$tmp/$_n.out" 2>"$tmp/$_n.err"
}
last_loss() { sed -n 's/^step \([0-9]*\)\/\1 loss \(.*\)/\2/p' "$tmp/$1.out"; }
held_out() { sed -n 's/.*held-out loss \([^ ]*\) over.*/\1/p' "$tmp/$1.out"; }

for np in 1 3; do
	run "mse$np" "$np"
	st=$?
	h=$(held_out "mse$np")
	[ $st -eq 0 ] && grep -q "reached the known answer" "$tmp/mse$np.out" &&
		awk -v h="$h" 'BEGIN { exit !(h >= 0.5e-4 && h <= 2e-4) }'
	ok $? "MSE, $np rank(s): $(sed -n 's/^regression: \(.*\); held-out.*/\1/p' "$tmp/mse$np.out"); held-out MSE $h" ||
		{ diag_file "$tmp/mse$np.out"; diag_file "$tmp/mse$np.err"; }
done
a=$(last_loss mse1) b=$(last_loss mse3)
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-4 * a) }'
ok $? "MSE: 3 ranks' last loss $b = 1 rank's $a (relative 1e-4)"
for loss in l1 huber; do
	# L1's gradient is a sign: AdamW at the default lr jitters by ~lr around the answer
	args=
	[ "$loss" = l1 ] && args="--lr 0.01 --steps 600"
	# shellcheck disable=SC2086
	run "$loss" 2 --loss "$loss" $args
	ok $? "$(echo "$loss" | tr a-z A-Z), 2 ranks: $(sed -n 's/^regression: \(.*\); held-out.*/\1/p' "$tmp/$loss.out")" ||
		{ diag_file "$tmp/$loss.out"; diag_file "$tmp/$loss.err"; }
done
run layer 2 --loss mse-layer
ok $? "MSE as a loss layer, 2 ranks: $(sed -n 's/^regression: \(.*\); held-out.*/\1/p' "$tmp/layer.out")" ||
	{ diag_file "$tmp/layer.out"; diag_file "$tmp/layer.err"; }
a=$(last_loss mse1) b=$(last_loss layer) c=$(held_out mse1) d=$(held_out layer)
awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" 'BEGIN { x = a - b; y = c - d; if (x < 0) x = -x
	if (y < 0) y = -y; exit !(a > 0 && b > 0 && x <= 1e-6 * a && y <= 1e-6 * c) }'
ok $? "the loss layer = built-in MSE: last loss $b against $a, held-out $d against $c"
run bad 1 --loss hinge
st=$?
[ $st -eq 2 ] && grep -q 'accepted values are mse, l1, huber, mse-layer' "$tmp/bad.err"
ok $? "--loss hinge is refused (exit $st), naming the accepted losses"
finish
