#!/bin/sh
# checkpoint_lock.sh — one writer per checkpoint directory for a whole job: the lock
# is taken at a model's first lock, save or load of a directory and held until the
# model is destroyed, so a second job is refused at once, before it trains.
#
# Proves:
#  - issue 25's two writers: examples/gpt saving every 50 steps into a directory; once
#    its first checkpoint is there, a second gpt job on the same --checkpoint-dir
#    (another --seed) exits non-zero at once, on both ranks, with SF_ERR_BUSY's message
#    naming the directory, the first job's rank-0 pid (the one recorded in .lock) and
#    host, without a step of training; the first job ends normally and every step of
#    the directory is its own (data_seed 1 in each manifest), intact (a resume loads
#    step 300, every CRC-32 verified), and the lock is free and empty after it;
#  - with tests/ckpt_driver (--pause keeps a model, and its locks, alive at a known
#    point, so nothing here depends on timing): a writer still holds the lock after its
#    save (the bug of issue 25: the lock was released after each save); a reader is
#    refused while a writer holds the lock, naming the writer; two readers share it;
#    a writer is refused while a reader holds it, with a message saying so (not a
#    stale pid left in the file by a writer that was killed); a killed writer's lock is
#    free at once; a model that loaded a directory (shared) and then saves there
#    converts its lock; one model writing two directories holds both locks until it
#    is destroyed, then neither.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
GPT="$top_builddir/examples/gpt"
require_progs "$GPT"
command -v flock >/dev/null 2>&1 || skip_all "flock(1) (util-linux) is not installed"

plan 18

host=$(hostname)
# wait_for PATTERN FILE: until FILE holds a line matching PATTERN (60 s at most)
wait_for() {
	_i=0
	while ! grep -q -- "$1" "$2" 2>/dev/null; do
		[ $_i -ge 600 ] && return 1
		sleep 0.1
		_i=$((_i + 1))
	done
}
# held DIR: another process holds DIR/.lock (a non-blocking exclusive flock fails)
held() {
	! flock -n -x "$1/.lock" true
}

# --- issue 25's reproducer: two gpt jobs on one --checkpoint-dir -----------------------
text=/usr/share/common-licenses/GPL-3
if [ -f "$text" ]; then
	ck="$tmp/ck"
	G="--text $text --layers 2 --embd 64 --context 64 --steps 400 --sample 0 --checkpoint-dir $ck --checkpoint-every 50 --max-steps 300"
	# shellcheck disable=SC2086
	run_mpi 2 "$GPT" $G >"$tmp/first.out" 2>"$tmp/first.err" &
	first=$!
	i=0
	while [ ! -f "$ck/latest" ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	pid=$(cut -d' ' -f1 "$ck/.lock" 2>/dev/null)
	# shellcheck disable=SC2086
	run_mpi 2 "$GPT" $G --seed 2 >"$tmp/second.out" 2>"$tmp/second.err"
	st=$?
	kill -0 $first 2>/dev/null
	running=$?
	[ $st -ne 0 ] && [ -n "$pid" ] &&
		grep -q "\[rank 0\] checkpoint directory $ck is being written by another job (pid $pid on $host holds $ck/.lock)" "$tmp/second.err"
	ok $? "a second gpt job on $ck is refused with SF_ERR_BUSY naming the directory, pid $pid and $host (exit $st)" ||
		{ diag_file "$tmp/second.err"; [ $running -eq 0 ] || diag "the first job had ended already"; }
	grep -q "\[rank 1\] sf_checkpoint_lock: stopping: rank 0 failed" "$tmp/second.err" &&
		grep -q 'sf_checkpoint_lock.*failed: busy' "$tmp/second.err" && ! grep -q '^step ' "$tmp/second.out"
	ok $? "... on both ranks, before a step of training" || { diag_file "$tmp/second.err"; diag_file "$tmp/second.out"; }
	wait $first
	st=$?
	seeds=$(grep -h '"data_seed"' "$ck"/step-*/manifest.json | tr -d ' ,' | sort | uniq -c | tr -s ' ')
	[ $st -eq 0 ] && [ "$(cat "$ck/latest")" = step-000000300 ] &&
		[ "$(ls -d "$ck"/step-* | wc -l)" -eq 6 ] && [ "$seeds" = ' 6 "data_seed":"1"' ]
	ok $? "the first job ends normally; its 6 steps are all its own (data_seed: $seeds)" ||
		{ diag_file "$tmp/first.err"; ls -la "$ck" | sed 's/^/#   /'; }
	# shellcheck disable=SC2086
	run_mpi 2 "$GPT" $G --resume >"$tmp/check.out" 2>"$tmp/check.err"
	st=$?
	[ $st -eq 0 ] && grep -q "resumed from $ck at step 300" "$tmp/check.err" &&
		! grep -q "damaged" "$tmp/check.err" && [ ! -s "$ck/.lock" ] && ! held "$ck"
	ok $? "... and intact: a resume loads step 300, every CRC-32 verified; the lock is free and empty" ||
		diag_file "$tmp/check.err"
else
	for d in "second gpt job refused" "... on both ranks" "first job's steps its own" "... intact"; do
		skip "$d" "$text is missing"
	done
fi

# --- ckpt_driver: writers and readers, deterministic -------------------------------------
lk="$tmp/lk"
drv 2 base --steps 3 --save "$lk" --save-every 3 >/dev/null
ok $? "a checkpoint to read (step 3)"

# pause NAME ARGS...: ckpt_driver on 2 ranks in the background, paused (--pause
# $tmp/NAME.go) once its locks are taken; $paused is its shell job's pid
pause() {
	_n=$1
	shift
	drv 2 "$_n" "$@" --pause "$tmp/$_n.go" >/dev/null &
	paused=$!
	wait_for '^paused$' "$tmp/$_n.out"
}
# resume NAME: lets the paused job NAME go on, and waits for it
resume() {
	touch "$tmp/$1.go"
	wait "$2"
}

# a writer paused after its first save, before its second: still holding the lock
pause w1 --steps 2 --save "$lk" --save-every 1 --pause-after 1
pid=$(cut -d' ' -f1 "$lk/.lock")
held "$lk" && [ "$pid" -gt 0 ] 2>/dev/null
ok $? "a writer between two saves still holds $lk/.lock (pid $pid)"
drv 2 w1-second --steps 1 --save "$lk" --save-every 1 >/dev/null
st=$?
[ $st -ne 0 ] && grep -q "checkpoint directory $lk is being written by another job (pid $pid on $host holds" "$tmp/w1-second.err"
ok $? "... so a second writer is refused naming it (exit $st)" || diag_file "$tmp/w1-second.err"
drv 2 r-under-w --steps 3 --lock-read "$lk" --resume "$lk" >/dev/null
st=$?
[ $st -ne 0 ] &&
	grep -q "checkpoint directory $lk is being written by another job (pid $pid on $host holds $lk/.lock): a job that only reads a checkpoint directory is refused while a writer holds it" "$tmp/r-under-w.err"
ok $? "a reader (SF_CHECKPOINT_READ) is refused while the writer holds it, naming it (exit $st)" ||
	diag_file "$tmp/r-under-w.err"
drv 2 load-under-w --steps 3 --resume "$lk" >/dev/null
st=$?
[ $st -ne 0 ] && grep -q "\[rank 0\] checkpoint directory $lk is being written by another job (pid $pid" "$tmp/load-under-w.err" &&
	grep -q "\[rank 1\] sf_checkpoint_load: stopping: rank 0 failed" "$tmp/load-under-w.err" &&
	[ "$(grep -c '^ckpt_driver: sf_checkpoint_load failed: busy$' "$tmp/load-under-w.err")" -eq 1 ]
ok $? "... and so is a plain sf_checkpoint_load, which locks for reading (exit $st)" ||
	diag_file "$tmp/load-under-w.err"
resume w1 $paused
ok $? "the paused writer finishes its second save" || diag_file "$tmp/w1.err"

# a writer killed while it holds the lock: its death frees the lock, its pid stays
pause w2 --steps 2 --lock "$lk"
pid=$(cut -d' ' -f1 "$lk/.lock")
kill -9 "$pid"
wait $paused
held "$lk"
lk_held=$?
[ $lk_held -ne 0 ] && grep -q "^$pid " "$lk/.lock"
ok $? "a writer killed (pid $pid, SIGKILL) frees the lock at once, its record left in the file"

# two readers share the lock; a writer is refused while they hold it
pause r1 --steps 3 --lock-read "$lk" --resume "$lk"
drv 2 r2 --steps 3 --lock-read "$lk" --resume "$lk" --out-params "$tmp/r2.dump"
ok $? "a second reader loads while the first holds the lock shared"
drv 2 w-under-r --steps 3 --lock "$lk" >/dev/null
st=$?
[ $st -ne 0 ] &&
	grep -q "checkpoint directory $lk is being read by another job (it holds $lk/.lock shared: a job that only loads)" "$tmp/w-under-r.err" &&
	! grep -q "pid $pid" "$tmp/w-under-r.err"
ok $? "a writer is refused while a reader holds it, saying so (not the killed writer's stale pid $pid) (exit $st)" ||
	diag_file "$tmp/w-under-r.err"
drv 2 convert-under-r --steps 4 --resume "$lk" --save "$lk" --save-every 4 >/dev/null
st=$?
[ $st -ne 0 ] && grep -q "is being read by another job" "$tmp/convert-under-r.err"
ok $? "a model that loaded (shared) cannot convert its lock to save while another reader holds it (exit $st)" ||
	diag_file "$tmp/convert-under-r.err"
resume r1 $paused
ok $? "the paused reader ends" || diag_file "$tmp/r1.err"
drv 2 convert --steps 4 --resume "$lk" --save "$lk" --save-every 4 >/dev/null &&
	[ "$(cat "$lk/latest")" = step-000000004 ]
ok $? "alone, it loads the latest step (shared lock) and saves step 4 (converted to exclusive)"

# one model, two directories: both held until the model is destroyed
pause two --steps 3 --lock "$tmp/A" --save "$tmp/B" --save-every 3 --pause-after 3
held "$tmp/A" && held "$tmp/B"
ok $? "a model writing two directories holds both locks"
resume two $paused
! held "$tmp/A" && ! held "$tmp/B" && [ ! -s "$tmp/A/.lock" ] && [ ! -s "$tmp/B/.lock" ]
ok $? "... and releases both (emptied) when it is destroyed"
finish
