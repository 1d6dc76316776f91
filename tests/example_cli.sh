#!/bin/sh
# example_cli.sh — examples/mlp_synthetic behaves as its usage says.
#
# --help prints the usage on stdout and exits 0; each bad option or value exits 2 with
# the usage on stderr and names the offending option or value. A 2-rank run prints one
# "step <k> loss <x> ms <t>" line per step and "final_loss <x>" equal to the last
# step's loss, then a "comm_stats" line whose figures hold together (time in
# collectives > 0 and below the step, the comm worker's CPU in them below their wall
# time and below its CPU in all, the main thread's CPU > 0 and within the process's),
# and the loss falls over 30 steps (the synthetic data
# is learnable).
# Prefetch depth 0 and 2 give the identical final loss (prefetching only reorders
# communication), and 1 and 2 ranks with the same global batch agree to 1e-4.
. "$(dirname "$0")/lib.sh"
require_progs "$MLP"

limit=${SF_TEST_TIMEOUT:-180}
model="--widths 32,64,10 --batch 32 --lr 0.05"

plan 16

timeout -k 5 "$limit" "$MLP" --help </dev/null >"$tmp/help.out" 2>"$tmp/help.err"
st=$?
[ $st -eq 0 ] && grep -i '^usage:' "$tmp/help.out" >/dev/null && [ ! -s "$tmp/help.err" ]
ok $? "--help: usage on stdout, nothing on stderr, exit 0 (exit $st)"

# bad WORD ARGS...: exit 2, two lines on stderr naming WORD and --help, nothing on stdout
bad() {
	_word=$1
	shift
	timeout -k 5 "$limit" "$MLP" "$@" </dev/null >"$tmp/bad.out" 2>"$tmp/bad.err"
	_st=$?
	# two lines: the mistake, then where the usage is (the whole usage after it buried
	# the one line that mattered: issue 46)
	[ $_st -eq 2 ] && grep -i "^usage: .*--help" "$tmp/bad.err" >/dev/null &&
		grep -F -e "$_word" "$tmp/bad.err" >/dev/null && [ ! -s "$tmp/bad.out" ] &&
		[ "$(wc -l <"$tmp/bad.err")" -eq 2 ]
	if ! ok $? "'$*': exit 2 (exit $_st), two lines on stderr naming '$_word' and --help"; then
		diag_file "$tmp/bad.err"
	fi
}
bad '--steps "0"' --steps 0
bad '--steps "x"' --steps x
bad '--widths "784"' --widths 784
bad '--optimizer "rmsprop"' --optimizer rmsprop
bad '"--bogus"' --bogus
bad '--warmup "30"' --steps 30 --warmup 30

# A 2-rank run of 30 steps.
# shellcheck disable=SC2086
env SHARDFLOW_PREFETCH_DEPTH=2 sh "$RUN_MPI" 2 "$MLP" --steps 30 --warmup 5 $model \
	</dev/null >"$tmp/n2.out" 2>"$tmp/n2.err"
st=$?
ok $st "2 ranks, 30 steps: exit 0 (exit $st)" || diag_file "$tmp/n2.err"

nlines=$(grep -c . "$tmp/n2.out")
nstep=$(grep -cE '^step [0-9]+ loss [0-9.e+-]+ ms [0-9.]+$' "$tmp/n2.out")
order=$(sed -n 's/^step \([0-9]*\) .*/\1/p' "$tmp/n2.out" | tr '\n' ' ')
[ "$nstep" -eq 30 ] && [ "$nlines" -eq 32 ] && [ "$order" = "$(seq 1 30 | tr '\n' ' ')" ]
ok $? "stdout: 30 step lines in order, matching '^step N loss X ms T\$' ($nstep), two more lines"

last=$(sed -n 's/^step 30 loss \([^ ]*\) .*/\1/p' "$tmp/n2.out")
final=$(sed -n 's/^final_loss \([^ ]*\)$/\1/p' "$tmp/n2.out")
[ -n "$final" ] && [ "$final" = "$last" ] && [ "$(tail -n 2 "$tmp/n2.out" | head -n 1)" = "final_loss $final" ]
ok $? "the line after the steps is final_loss ($final), the loss of step 30 ($last)"

stats=$(tail -n 1 "$tmp/n2.out")
echo "$stats" | awk '$1 == "comm_stats" && $2 == "steps" && $3 == 25 && $4 == "wall_ms" &&
	$6 == "comm_ms" && $8 == "comm_cpu_ms" && $10 == "comm_worker_cpu_ms" &&
	$12 == "process_cpu_ms" && $14 == "main_thread_cpu_ms" && $16 == "comm_mb" && NF == 17 &&
	$7 > 0 && $7 < $5 && $9 > 0 && $9 <= $7 * 1.05 + 0.05 && $11 >= $9 * 0.95 && $13 > 0 &&
	$15 > 0 && $15 <= $13 && $17 > 0 {
	found = 1 } END { exit !found }'
ok $? "the last line is comm_stats over the 25 steps after --warmup 5, consistent: $stats"

# mean of steps 1..5 against steps 26..30
means=$(awk '/^step /{ if ($2 <= 5) a += $4; if ($2 > 25) b += $4 }
	END { printf "%.6f %.6f", a / 5, b / 5 }' "$tmp/n2.out")
diag "mean loss of steps 1-5 and 26-30: $means"
echo "$means" | awk '{ exit !($2 < 0.95 * $1) }'
ok $? "the loss falls: mean of the last 5 steps < 0.95 x mean of the first 5"

# shellcheck disable=SC2086
env SHARDFLOW_PREFETCH_DEPTH=0 sh "$RUN_MPI" 2 "$MLP" --steps 30 $model \
	</dev/null >"$tmp/d0.out" 2>"$tmp/d0.err"
st=$?
final0=$(sed -n 's/^final_loss \([^ ]*\)$/\1/p' "$tmp/d0.out")
[ $st -eq 0 ] && [ -n "$final0" ] && [ "$final0" = "$final" ]
ok $? "depth 0 and depth 2 print the identical final_loss ($final0, $final)" ||
	diag_file "$tmp/d0.err"

# 1 rank, and its rounding interval (every operation rounded upward, then downward:
# docs/testing.md), which the 2 ranks' final loss (other sums' order) must lie in
st=0
for r in "" up down; do
	# shellcheck disable=SC2086
	env ${r:+SHARDFLOW_ROUNDING=${r}ward} sh "$RUN_MPI" 1 "$MLP" --steps 30 $model </dev/null \
		>"$tmp/n1${r:+.$r}.out" 2>"$tmp/n1${r:+.$r}.err" || st=1
done
final1=$(sed -n 's/^final_loss \([^ ]*\)$/\1/p' "$tmp/n1.out")
[ $st -eq 0 ] && values_within "$tmp/n2.out" "$tmp/n1.out" "$tmp/n1.up.out" "$tmp/n1.down.out" \
	'^final_loss '
ok $? "1 rank and 2 ranks (same global batch) agree within 1 rank's rounding interval ($final1, $final)" ||
	diag_file "$tmp/n1.err"

# The run description on rank 0's stderr, once.
n=$(grep -c '^mlp_synthetic: 2 ranks, sharding full, prefetch depth 2, .*parameters' "$tmp/n2.err")
[ "$n" -eq 1 ]
ok $? "rank 0 describes the run once on stderr (ranks, sharding, depth, parameters)"

# --opt=value spelling and the adamw default learning rate
timeout -k 5 "$limit" "$MLP" --steps=1 --widths=8,4 --batch=4 --optimizer=adamw \
	</dev/null >"$tmp/eq.out" 2>"$tmp/eq.err"
st=$?
[ $st -eq 0 ] && grep 'adamw lr 0.001' "$tmp/eq.err" >/dev/null && grep '^final_loss' "$tmp/eq.out" >/dev/null
ok $? "--name=value options work; adamw defaults to lr 0.001 (exit $st)" || diag_file "$tmp/eq.err"
finish
