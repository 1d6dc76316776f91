#!/bin/sh
# watchdog.sh — a rank stopped at any point of a job (start-up, between steps, before
# and inside a checkpoint save, at the end) ends the job within SHARDFLOW_COMM_TIMEOUT,
# with a message naming what the others waited in, without spinning while they wait,
# and with each waiting rank's flight record written, naming the rank that was behind.
#
# tests/stall_driver stops rank 1 (SIGSTOP: alive and silent, as a hung or cut-off
# peer) at the phase given; it writes its pid to a mark file first. With a timeout of
# 4 s, for each phase:
#  - the job exits non-zero (not the test's time limit) within 20 s of the stop;
#  - rank 0's stderr names the operation it waited in and SHARDFLOW_COMM_TIMEOUT;
#  - rank 0's waiting thread used under 25 % of a core between 1 and 3 s after the
#    stop (a blocking MPI call busy-polls at 100 %);
#  - rank 0 wrote its flight record — in the checkpoint directory during a save, else
#    in $TMPDIR — whose last host operation is the one named, and its log says rank 1
#    wrote none (it was behind); at start-up too, where rank 0 waits in
#    MPI_Init_thread (the record's rank, size and job from mpirun's environment).
# Then the comm worker's side: rank 1 stopped inside a matrix product of step 51 of
# 100 (on a StarPU worker, so never between steps: rank 0 is always in a step
# collective then) ends the job the same way, with a message naming the collective,
# the unit and the variable, and a record whose step operation under way is that
# collective, holding the last SHARDFLOW_FLIGHT_RECORD operations of about 350.
# A job where nobody stops must pass (the driver's own check).
#
# SF_WATCHDOG_PHASES (default: all of them) runs only the phases listed, the others
# skipped: .ci/run's CUDA build runs "mid-step none", its comm worker's side.
. "$(dirname "$0")/lib.sh"
STALL="$top_builddir/tests/stall_driver"
require_progs "$STALL"

plan 32

SF_TEST_TIMEOUT=30
export SF_TEST_TIMEOUT
tck=$(getconf CLK_TCK 2>/dev/null || echo 100)

# cpu PID: user + system clock ticks so far of the process's main thread (the one
# waiting in a host-side collective; StarPU's last awake worker yields in a loop
# whatever the main thread does: docs/robustness.md)
cpu() {
	awk '{ print $14 + $15 }' "/proc/$1/task/$1/stat" 2>/dev/null || echo 0
}

phases=${SF_WATCHDOG_PHASES:-init step save save-shards finalize mid-step none}
# wanted PHASE N: 0 when PHASE is to run, else skips its N points and returns 1
wanted() {
	case " $phases " in *" $1 "*) return 0 ;; esac
	i=0
	while [ $i -lt "$2" ]; do
		skip "$1: not in SF_WATCHDOG_PHASES" "$phases"
		i=$((i + 1))
	done
	return 1
}

# stall PHASE REGEX [driver args]: runs the driver with rank 1 stopping at PHASE
stall() {
	phase=$1
	want=$2
	shift 2
	d="$tmp/$phase"
	mkdir -p "$d/fl"
	TMPDIR="$d/fl" SHARDFLOW_COMM_TIMEOUT=4 sh "$RUN_MPI" 2 sh -c \
		'echo $$ >"'"$d"'/pid.${OMPI_COMM_WORLD_RANK:-x}"; exec "$@"' sh \
		"$STALL" --stop "$phase" --mark "$d/mark" "$@" \
		</dev/null >"$d/out" 2>"$d/err" &
	job=$!
	i=0
	while [ ! -s "$d/mark" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	t0=$(date +%s)
	pid0=$(cat "$d/pid.0" 2>/dev/null)
	sleep 1
	c1=$(cpu "$pid0")
	sleep 2
	c2=$(cpu "$pid0")
	wait $job
	st=$?
	elapsed=$(($(date +%s) - t0))
	pid1=$(cat "$d/pid.1" 2>/dev/null)
	[ -n "$pid1" ] && { kill -CONT "$pid1" 2>/dev/null; kill -KILL "$pid1" 2>/dev/null; }

	[ -s "$d/mark" ] && [ $st -ne 0 ] && [ $st -ne 124 ] && [ "$elapsed" -le 20 ]
	if ! ok $? "$phase: the job ends with an error (exit $st) $elapsed s after rank 1 stopped"; then
		diag_file "$d/err"
	fi
	grep -E "$want" "$d/err" >/dev/null && grep -F 'SHARDFLOW_COMM_TIMEOUT' "$d/err" >/dev/null
	if ! ok $? "$phase: rank 0 names what it waited in: /$want/"; then
		diag_file "$d/err"
	fi
	# ticks in 2 s; a spinning rank shows about 2 tck
	[ -n "$pid0" ] && [ $((c2 - c1)) -le $((tck / 2)) ]
	ok $? "$phase: rank 0's waiting thread does not spin ($((c2 - c1)) ticks of $((2 * tck)) in 2 s)"
}

# record FILE REGEX PHASE: rank 0's flight record, and its log's blame
record() {
	f=$1
	[ -s "$f" ] && grep -E "$2" "$f" >/dev/null && grep -F '"shardflow_flight_record": 1' "$f" >/dev/null
	if ! ok $? "$3: rank 0's flight record $(basename "$(dirname "$f")")/$(basename "$f") holds /$2/"; then
		ls -la "$(dirname "$f")" | sed 's/^/#   /'
		[ -f "$f" ] && head -c 1500 "$f" | sed 's/^/#   /'
	fi
	grep -E 'flight record written to .*rank 1 wrote no flight record' "$d/err" >/dev/null
	if ! ok $? "$3: the log names rank 1 as the rank behind (no record from it)"; then
		diag_file "$d/err"
	fi
}

if wanted init 5; then
	stall init "sf_init.*(MPI_Init_thread did not return|made no progress)"
	record "$tmp/init/fl/flight-rank-0.json" '"host_current": "(MPI_Init_thread|sf_init[^"]*)"' init
fi

if wanted step 5; then
	stall step "the host-side sf_model_step's agreement \(all-gather of the ranks' status\) made no progress for 4 s"
	record "$tmp/step/fl/flight-rank-0.json" '"host_current": "sf_model_step.s agreement' step
fi

if wanted save 5; then
	stall save "the host-side sf_checkpoint_save's agreement .* made no progress" --save "$tmp/save/ck"
	record "$tmp/save/ck/flight-rank-0.json" '"host_current": "sf_checkpoint_save.s agreement' save
fi

if wanted save-shards 5; then
	stall save-shards "the host-side .*sf_checkpoint_save.* made no progress" --save "$tmp/save-shards/ck"
	record "$tmp/save-shards/ck/flight-rank-0.json" '"host_current": ".*sf_checkpoint_save' save-shards
fi

if wanted finalize 5; then
	stall finalize "the host-side sf_finalize's last barrier made no progress"
	record "$tmp/finalize/fl/flight-rank-0.json" '"host_current": "sf_finalize.s last barrier' finalize
fi

# the comm worker: rank 1 stops inside step 51's first matrix product
if wanted mid-step 6; then
	stall mid-step '(all-gather|reduce-scatter|all-reduce) of (unit "[^"]+"|the loss) failed' --steps 100
	f="$tmp/mid-step/fl/flight-rank-0.json"
	record "$f" '"step_current": "(gather|rs|ar|ag|loss allreduce|grad norm) [^"]*"' mid-step
	n=$(grep -c '"channel": "step"' "$f" 2>/dev/null || echo 0)
	done=$(sed -n 's/.*(\([0-9]*\) step operations done).*/\1/p' "$d/err" | head -1)
	grep -E '"state": "(running|failed)"' "$f" >/dev/null && [ "$n" -ge 100 ] && [ "$n" -le 256 ] &&
		[ "${done:-0}" -gt 256 ]
	if ! ok $? "mid-step: the record holds the collective under way and the last SHARDFLOW_FLIGHT_RECORD (256) operations ($n step entries of ${done:-?})"; then
		[ -f "$f" ] && head -c 1500 "$f" | sed 's/^/#   /'
	fi
fi

# nobody stops: a clean run, no record
if wanted none 1; then
	d="$tmp/none"
	mkdir -p "$d/fl"
	TMPDIR="$d/fl" SHARDFLOW_COMM_TIMEOUT=60 sh "$RUN_MPI" 2 "$STALL" --stop none --save "$d/ck" \
		</dev/null >"$d/out" 2>"$d/err"
	st=$?
	[ $st -eq 0 ] && grep -q "step 5 loss" "$d/out" && [ ! -e "$d/fl/flight-rank-0.json" ] && [ ! -e "$d/ck/flight-rank-0.json" ]
	if ! ok $? "nobody stops: the job succeeds (exit $st) and writes no flight record"; then
		diag_file "$d/err"
	fi
fi
finish
