#!/bin/sh
# comm_timeout.sh — a rank that stops making progress without dying does not leave the
# others polling in a collective forever.
#
# 2 ranks train with SHARDFLOW_COMM_TIMEOUT=4; once both run, rank 1 is stopped
# (kill -STOP: alive, silent, as a hung or cut-off peer). Rank 0's next collective
# sees no progress for 4 s and ends the job: a non-zero exit well within the test's
# limit, and a message naming the collective, the unit (or the loss) and the
# variable. Without the watchdog the job runs into run-mpi.sh's time limit (124).
. "$(dirname "$0")/lib.sh"
require_progs "$MLP"

plan 3

SF_TEST_TIMEOUT=120
export SF_TEST_TIMEOUT
start=$(date +%s)
# each rank records its pid; the training is long enough to be stopped mid-way
SHARDFLOW_COMM_TIMEOUT=4 sh "$RUN_MPI" 2 sh -c \
	'echo $$ >"'"$tmp"'/pid.${OMPI_COMM_WORLD_RANK:-x}"; exec "$@"' sh \
	"$MLP" --steps 100000 --widths 64,256,256,10 --batch 64 \
	</dev/null >"$tmp/out" 2>"$tmp/err" &
job=$!
i=0
while [ ! -s "$tmp/pid.1" ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
sleep 3 # both ranks are in their steps
pid1=$(cat "$tmp/pid.1" 2>/dev/null)
[ -n "$pid1" ] && kill -STOP "$pid1"
wait $job
st=$?
elapsed=$(($(date +%s) - start))
[ -n "$pid1" ] && { kill -CONT "$pid1" 2>/dev/null; kill -KILL "$pid1" 2>/dev/null; }

[ -n "$pid1" ] && [ $st -ne 0 ] && [ $st -ne 124 ]
ok $? "the job ends with an error once rank 1 is stopped (exit $st, not the test's time limit)"
[ "$elapsed" -le 60 ]
ok $? "it ends within the timeout and teardown ($elapsed s in all, timeout 4 s)"
grep -E 'no progress for 4 s \(SHARDFLOW_COMM_TIMEOUT\)' "$tmp/err" >/dev/null &&
	grep -E '(all-gather|reduce-scatter|all-reduce) of (unit "[^"]+"|the loss) failed|the host-side sf_model_step'"'"'s agreement' "$tmp/err" >/dev/null
if ! ok $? "rank 0 names the collective, the unit and SHARDFLOW_COMM_TIMEOUT"; then
	diag_file "$tmp/err"
fi
finish
