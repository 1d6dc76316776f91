#!/bin/sh
# launcher_loss.sh — when mpirun itself is killed, its ranks end with it and
# tools/shardflow-run restarts the job from the step those ranks really left,
# never refused by its own previous run (issue 47, item 1). Proves:
#  - ranks of examples/gpt whose mpirun is killed (kill -9) end at once (the
#    parent-death signal sf_init sets), with no progress line or checkpoint to write:
#    all of them gone within 0.5 s (Open MPI alone let them train on for a second
#    or more, until a write to mpirun's closed pipes killed them);
#  - the launcher waits for what a run left: a fake job whose rank 0 holds the
#    checkpoint directory's lock (flock, "pid host" as io/checkpoint_lock.c writes it)
#    and lingers 2 s after mpirun is killed, and "saves" step 7 meanwhile; the
#    restart is not refused (its run 2 takes the lock without waiting, or fails), the
#    wait is said with the processes and the lock's holder, the end of the wait is
#    said, and the restart line names step 7; one restart spent, exit 0;
#  - examples/gpt under shardflow-run --max-restarts 1 --backoff 0.1 with mpirun
#    killed after its first checkpoint, 3 times: each ends with exit 0 after one
#    restart, and "resuming from step N" names the step the program resumed at.
. "$(dirname "$0")/lib.sh"
RUN="$top_builddir/tools/shardflow-run"
GPT="$top_builddir/examples/gpt"
require_progs "$RUN" "$GPT"
command -v mpirun >/dev/null 2>&1 || skip_all "mpirun is not installed"
command -v flock >/dev/null 2>&1 || skip_all "flock (util-linux) is not installed"
[ -r /proc/self/stat ] || skip_all "no /proc (the parent-death signal is Linux's)"
[ -r /usr/share/common-licenses/GPL-3 ] || bail_out "/usr/share/common-licenses/GPL-3 is missing"
limit=${SF_TEST_TIMEOUT:-120}
mpi="--bind-to none --oversubscribe"
if [ "$(id -u)" = 0 ]; then
	mpi="$mpi --allow-run-as-root"
fi

plan 9

# alive PID: the process exists and is not a zombie
alive() {
	_s=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null) && [ "$_s" != Z ]
}
# wait_for FILE TENTHS: until FILE exists; false after TENTHS tenths of a second
wait_for() {
	_i=0
	while [ ! -e "$1" ] && [ $_i -lt "$2" ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	[ -e "$1" ]
}
gpt="--layers 2 --heads 2 --embd 32 --context 16 --batch 8 --text /usr/share/common-licenses/GPL-3
	--sample 0 --steps 100000"

# --- the ranks end with their mpirun ----------------------------------------------------
# nothing written to mpirun's pipes (no progress line, no checkpoint): only the
# metrics file, written by rank 0 itself, says that the ranks are training
# shellcheck disable=SC2086
timeout -k 10 "$limit" mpirun $mpi -np 2 "$GPT" $gpt --max-steps 5000 --progress-every 100000 \
	--eval-every 100000 --metrics "$tmp/orphan.jsonl" </dev/null >"$tmp/orphan.out" 2>&1 &
job=$!
wait_for "$tmp/orphan.jsonl" 600
sleep 0.5
# $job is timeout(1), mpirun its child, the ranks mpirun's
mpirun_pid=$(pgrep -x mpirun -P "$job")
ranks=$(pgrep -P "${mpirun_pid:-0}" | tr '\n' ' ')
[ -n "$ranks" ] && [ -n "$mpirun_pid" ]
ok $? "the ranks are training (ranks:${ranks:- none}; mpirun ${mpirun_pid:-not found})" ||
	diag_file "$tmp/orphan.out"
kill -KILL $mpirun_pid 2>/dev/null
i=0
left=$ranks
while [ -n "$left" ] && [ $i -lt 5 ]; do
	sleep 0.1
	i=$((i + 1))
	now=
	for p in $left; do alive "$p" && now="$now $p"; done
	left=$now
done
[ -z "$left" ]
ok $? "mpirun killed: its ranks gone within $((i * 100)) ms (at most 0.5 s)${left:+; left:$left}"
for p in $left; do kill -KILL "$p" 2>/dev/null; done
wait "$job" 2>/dev/null

# --- the launcher waits for what a run left ----------------------------------------------
ck="$tmp/ck-fake"
mkdir "$ck"
cat >"$tmp/fake.sh" <<EOF
# a fake rank: run 1 lingers 2 s after its mpirun is gone, rank 0 holding the lock
# and saving step 7 meanwhile; run 2 (--resume) fails if the lock is held
r=\${OMPI_COMM_WORLD_RANK:-0}
case " \$* " in
*" --resume "*)
	[ "\$r" = 0 ] || exit 0
	exec 9>>"$ck/.lock"
	flock -n -x 9 || { echo "fake: checkpoint directory $ck is being written by another job" >&2; exit 1; }
	echo "fake: run 2 took the lock" >&2
	exit 0 ;;
esac
ppid=\$(sed 's/.*) . \([0-9]*\).*/\1/' /proc/\$\$/stat)
if [ "\$r" = 0 ]; then
	exec 9>"$ck/.lock"
	flock -x 9
	echo "\$\$ \$(hostname)" >&9
	echo \$\$ >"$tmp/fake-holder"
fi
touch "$tmp/fake-ready.\$r"
while [ "\$(sed 's/.*) . \([0-9]*\).*/\1/' /proc/\$\$/stat)" = "\$ppid" ]; do sleep 0.05; done
sleep 2
if [ "\$r" = 0 ]; then
	mkdir "$ck/step-000000007" && echo '{}' >"$ck/step-000000007/manifest.json"
fi
EOF
timeout -k 10 "$limit" "$RUN" --np 2 --max-restarts 1 --backoff 0.1 --mpirun-args "$mpi" -- \
	sh "$tmp/fake.sh" --checkpoint-dir "$ck" </dev/null >"$tmp/fake.out" 2>"$tmp/fake.err" &
job=$!
wait_for "$tmp/fake-ready.0" 600 && wait_for "$tmp/fake-ready.1" 100
launcher=$(pgrep -P "$job")
kill -KILL "$(pgrep -x mpirun -P "$launcher")"
wait "$job"
st=$?
grep '^shardflow-run: ' "$tmp/fake.err" >"$tmp/fake.log"
holder=$(cat "$tmp/fake-holder" 2>/dev/null)
[ $st -eq 0 ] && grep -q '^fake: run 2 took the lock$' "$tmp/fake.err" &&
	[ "$(grep -c '^shardflow-run: restart ' "$tmp/fake.log")" -eq 1 ]
ok $? "mpirun killed, its ranks lingering 2 s with the lock: one restart, not refused, exit 0 (exit $st)" ||
	diag_file "$tmp/fake.err"
grep -q "^shardflow-run: waiting up to 30 s for what run 1 left to end: 2 processes (pids [0-9 ]*) and the lock of $ck (held by pid $holder on $(hostname))$" \
	"$tmp/fake.log"
ok $? "the wait is said: the processes left and the lock's holder (pid $holder)" || diag_file "$tmp/fake.log"
grep -q '^shardflow-run: run 1.s leftovers ended after [0-9.]* s$' "$tmp/fake.log"
ok $? "the wait's end is said" || diag_file "$tmp/fake.log"
grep -q "^shardflow-run: restart 1 of 1 in 0.1 s: run 1 ended after [0-9.]* s with mpirun killed by signal 9 (SIGKILL); resuming from step 7 ($ck/step-000000007)$" \
	"$tmp/fake.log"
ok $? "the restart names step 7, saved while the launcher waited" || diag_file "$tmp/fake.log"

# --- examples/gpt, mpirun killed after its first checkpoint, 3 times ---------------------
for t in 1 2 3; do
	ck="$tmp/ck-gpt$t"
	# shellcheck disable=SC2086
	timeout -k 10 "$limit" "$RUN" --np 2 --max-restarts 1 --backoff 0.1 --mpirun-args "$mpi" -- \
		"$GPT" $gpt --max-steps 400 --checkpoint-dir "$ck" --checkpoint-every 20 \
		</dev/null >"$tmp/gpt$t.out" 2>"$tmp/gpt$t.err" &
	job=$!
	wait_for "$ck/step-000000040" 600
	launcher=$(pgrep -P "$job")
	kill -KILL "$(pgrep -x mpirun -P "$launcher")"
	wait "$job"
	st=$?
	grep '^shardflow-run: ' "$tmp/gpt$t.err" >"$tmp/gpt$t.log"
	said=$(sed -n 's/^shardflow-run: restart 1 of 1 .*; resuming from step \([0-9]*\) .*/\1/p' "$tmp/gpt$t.log")
	did=$(sed -n 's/^gpt: resumed from .* at step \([0-9]*\)$/\1/p' "$tmp/gpt$t.err")
	[ $st -eq 0 ] && [ -n "$said" ] && [ "$said" = "$did" ] && ! grep -q 'giving up' "$tmp/gpt$t.log"
	ok $? "try $t: exit 0 after one restart (exit $st); the launcher said step ${said:-none}, gpt resumed at ${did:-none}" ||
		{ diag_file "$tmp/gpt$t.log"; grep -a '^gpt: \(resumed\|error\)\|being written' "$tmp/gpt$t.err" | sed 's/^/#   /'; }
done

finish
