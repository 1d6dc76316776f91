#!/bin/sh
# checkpoint_async.sh — asynchronous checkpoints (examples/gpt --checkpoint-async:
# sf_checkpoint_save_async, sf_checkpoint_poll, sf_checkpoint_wait) are the synchronous
# ones, written later, and as crash-safe.
#
# examples/gpt on 2 ranks, 40 steps, a checkpoint every 10. Proves:
#  - the asynchronous run's step directories and latest are byte for byte the
#    synchronous run's (diff -r: the manifest has no timestamp; its step counters are
#    those of the step saved, not of the step that publishes it), and so is the final
#    export; with SHARDFLOW_TP=2 (the snapshot puts slices together: collectives) too;
#    the last save is published before the program exits;
#  - rank 1 killed (SIGKILL, tests/kill_save.so) right after its writer thread put its
#    file of step 30 in place: the run fails, step-000000030.tmp has no manifest,
#    latest names step 20, shardflow-ckpt verify passes; --resume --checkpoint-async
#    resumes from step 20 and its steps 30 and 40 and export are the uninterrupted
#    synchronous run's (bitwise);
#  - rank 1's write of step 30 failing (its rename fails: tests/kill_save.so's
#    SF_FAIL_SAVE) fails the run with exit 1 and a message naming the file, and step 30
#    is never published (latest stays on step 20);
#  - --checkpoint-async without --checkpoint-dir is a usage error (exit 2).
. "$(dirname "$0")/lib.sh"
GPT="$top_builddir/examples/gpt"
TOOL="$top_builddir/tools/shardflow-ckpt"
KILL_SO="$top_builddir/tests/.libs/kill_save.so"
require_progs "$GPT" "$TOOL" "$KILL_SO"

plan 10

text="$tmp/corpus.txt"
sf_corpus "$text"
g="--layers 2 --heads 2 --embd 32 --context 32 --batch 8 --text $text --val-fraction 0.2 --eval-every 20 --eval-batches 1 --sample 0 --steps 40 --checkpoint-every 10"
# gpt NAME ARGS...: examples/gpt on 2 ranks, output in $tmp/NAME.{out,err}, status in $st
gpt() {
	_n=$1
	shift
	# shellcheck disable=SC2086
	run_mpi 2 "$GPT" $g "$@" >"$tmp/$_n.out" 2>"$tmp/$_n.err"
	st=$?
}
# same A B: checkpoint directories A and B hold the same steps and latest, byte for byte
same() {
	diff -r -x .lock -x job.json "$1" "$2" >"$tmp/diff.out" 2>&1
}

gpt sync --checkpoint-dir "$tmp/sync" --export "$tmp/sync.st"
[ $st -eq 0 ] || { diag_file "$tmp/sync.err"; bail_out "the synchronous run failed"; }
gpt async --checkpoint-dir "$tmp/async" --checkpoint-async --export "$tmp/async.st"
[ $st -eq 0 ] && same "$tmp/sync" "$tmp/async" && [ "$(cd "$tmp/async" && ls -d step-*)" = "$(cd "$tmp/sync" && ls -d step-*)" ]
ok $? "asynchronous saves: steps 10..40 and latest byte for byte the synchronous run's (diff -r)" ||
	{ diag_file "$tmp/diff.out"; diag_file "$tmp/async.err"; }
cmp -s "$tmp/sync.st" "$tmp/async.st" &&
	[ "$(grep -c 'checkpoint of step [0-9]* saved in .*, asynchronous: [0-9.]* s at the step)' "$tmp/async.err")" -eq 4 ]
ok $? "... the same export, and a line for each of the 4 saves, step 40's before the exit"

SHARDFLOW_TP=2 gpt tpsync --checkpoint-dir "$tmp/tpsync" --steps 20
SHARDFLOW_TP=2 gpt tpasync --checkpoint-dir "$tmp/tpasync" --steps 20 --checkpoint-async
[ $st -eq 0 ] && same "$tmp/tpsync" "$tmp/tpasync" && [ -d "$tmp/tpasync/step-000000020" ]
ok $? "SHARDFLOW_TP=2: the asynchronous checkpoints are the synchronous ones (diff -r)" ||
	{ diag_file "$tmp/diff.out"; diag_file "$tmp/tpasync.err"; }

# --- killed while the writer threads write step 30 -------------------------------------
LD_PRELOAD=$KILL_SO SF_KILL_SAVE=1:30 gpt killed --checkpoint-dir "$tmp/k" --checkpoint-async
[ $st -ne 0 ] && grep -q "kill_save: rank 1 killed after writing .*/step-000000030.tmp/rank-00001.bin" "$tmp/killed.err"
ok $? "rank 1 killed by its writer's rename of step 30's file (exit $st)" || diag_file "$tmp/killed.err"
[ -d "$tmp/k/step-000000030.tmp" ] && [ ! -e "$tmp/k/step-000000030.tmp/manifest.json" ] &&
	[ ! -e "$tmp/k/step-000000030" ] && [ "$(cat "$tmp/k/latest")" = step-000000020 ]
ok $? "... step 30 staged without manifest, latest on step 20 ($(cat "$tmp/k/latest"))"
"$TOOL" verify "$tmp/k" >"$tmp/verify.out" 2>&1
ok $? "... and shardflow-ckpt verify passes (steps 10 and 20)" || diag_file "$tmp/verify.out"
gpt resumed --checkpoint-dir "$tmp/k" --checkpoint-async --resume --export "$tmp/resumed.st"
[ $st -eq 0 ] && grep -q "resumed from $tmp/k at step 20" "$tmp/resumed.err" &&
	cmp -s "$tmp/sync.st" "$tmp/resumed.st" && same "$tmp/sync" "$tmp/k"
ok $? "--resume: from step 20, then steps 30, 40 and the export are the uninterrupted run's (bitwise)" ||
	{ diag_file "$tmp/resumed.err"; diag_file "$tmp/diff.out"; }

# --- a write that fails -----------------------------------------------------------------
LD_PRELOAD=$KILL_SO SF_FAIL_SAVE=1:30 gpt failed --checkpoint-dir "$tmp/f" --checkpoint-async
[ $st -eq 1 ] &&
	grep -q "asynchronous checkpoint $tmp/f/step-000000030: cannot rename .*step-000000030.tmp/rank-00001.bin.tmp" "$tmp/failed.err"
ok $? "a failed write of step 30: the run fails (exit $st) naming the file" || diag_file "$tmp/failed.err"
[ ! -e "$tmp/f/step-000000030" ] && [ "$(cat "$tmp/f/latest")" = step-000000020 ] &&
	! grep -q "checkpoint of step 30 saved" "$tmp/failed.err"
ok $? "... and step 30 is never published (latest $(cat "$tmp/f/latest"))"

# --- the command line -------------------------------------------------------------------
"$GPT" --checkpoint-async >"$tmp/usage.out" 2>&1
st=$?
[ $st -eq 2 ] && grep -q -- "--checkpoint-async needs --checkpoint-dir" "$tmp/usage.out"
ok $? "--checkpoint-async without --checkpoint-dir: exit 2 ($st)" || diag_file "$tmp/usage.out"

finish
