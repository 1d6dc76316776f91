#!/bin/sh
# bad_batch.sh — one rank's bad batch fails every rank at once, with that rank's message.
#
# sf_model_step checks each rank's batch (ids and labels in range, float inputs finite)
# and the ranks agree on the outcome before any collective is submitted, so a label out
# of range on rank 1 of 2 at step 3 ends the job right away on both ranks — not after
# SHARDFLOW_COMM_TIMEOUT (set to 60 s here) with a message blaming a stuck peer — and
# rank 1 prints its message (the label, its row and sample) while the others say only
# that they stop because rank 1 failed: one line per failure, not one per rank.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP"

plan 6

now() { date +%s.%N; }
t0=$(now)
train 2 clean --model mlp --steps 6
t1=$(now)
# each rank's exit time (mpirun itself takes seconds more to report a failed job);
# mpirun told not to kill the other ranks when the first exits non-zero
# (orte_abort_on_non_zero_status 0), so that each rank's own exit is seen: otherwise
# it may kill one in the moment between the other's exit and its own exit line
env SHARDFLOW_COMM_TIMEOUT=60 OMPI_MCA_orte_abort_on_non_zero_status=0 sh "$RUN_MPI" 2 sh -c '"$0" "$@"; st=$?; echo "exit $st $(date +%s.%N)" >&2; exit $st' \
	"$TRAIN_DUMP" --out "$tmp/bad.dump" --model mlp --steps 6 --bad-label 1:3 \
	</dev/null >"$tmp/bad.out" 2>"$tmp/bad.err"
st=$?
clean=$(echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }')
took=$(awk -v t="$t1" '$1 == "exit" { d = $3 - t; if (d > m) m = d } END { printf "%.1f", m }' "$tmp/bad.err")
codes=$(awk '$1 == "exit" { printf "%s%s", s, $2; s = "," }' "$tmp/bad.err")
# (mpirun's own status: not abort_on_non_zero's; the ranks' are the point)
[ "$codes" = "1,1" ]
ok $? "a label out of range on rank 1 at step 3 fails the job: both ranks exit 1 ($codes; mpirun $st)"
awk -v t="$took" -v c="$clean" 'BEGIN { exit !(t < c + 1) }'
ok $? "both ranks are out within $took s of the start, a clean run of 6 steps takes $clean s (the timeout is 60 s)"
grep -q -F "[rank 1] sf_model_step: label 13 of local row" "$tmp/bad.err"
ok $? "rank 1 names the label, its row and sample" || diag_file "$tmp/bad.err"
grep -q -F "[rank 0] sf_model_step: stopping: rank 1 failed" "$tmp/bad.err"
ok $? "rank 0 says it stops because rank 1 failed" || diag_file "$tmp/bad.err"
grep -q -i "stuck\|unreachable\|timed out\|no progress" "$tmp/bad.err"
[ $? -ne 0 ]
ok $? "no rank blames a stuck peer or a timeout" || diag_file "$tmp/bad.err"

# One line per failure: on 3 ranks, rank 1's message is said once (by rank 1, and one
# line of the program's), and ranks 0 and 2 each print one line, that they stop.
sh "$RUN_MPI" 3 "$TRAIN_DUMP" --out "$tmp/bad3.dump" --model mlp --steps 6 --bad-label 1:3 \
	</dev/null >"$tmp/bad3.out" 2>"$tmp/bad3.err"
st=$?
counts=$(awk '/label 13 of local row/ { m++ } /^train_dump: / { p++ }
	/\[rank 0\]/ { r0++ } /\[rank 2\]/ { r2++ }
	/^shardflow: error: \[rank [02]\] sf_model_step: stopping: rank 1 failed$/ { s++ }
	END { printf "%d %d %d %d %d", m, p, r0, r2, s }' "$tmp/bad3.err")
[ $st -ne 0 ] && [ "$counts" = "1 1 1 1 2" ]
ok $? "3 ranks: the message once, the program's line once, one 'stopping: rank 1 failed' line on ranks 0 and 2 (message, program, rank 0, rank 2, stopping: $counts; want 1 1 1 1 2)" ||
	diag_file "$tmp/bad3.err"
finish
