#!/bin/sh
# shardflow_run.sh — tools/shardflow-run restarts a failed job from its newest
# checkpoint, and the job ends with the weights of an uninterrupted run, bitwise.
#
# The crash is deterministic: tests/kill_save.so (LD_PRELOAD, given to the ranks only
# through mpirun's -x) kills rank 1 with SIGKILL once it has written its file of step
# S's checkpoint, once per step (a stamp file), so the steps are never complete and a
# resume takes the one before. Proves:
#  - bad command lines exit 2 with a message naming the option, the value and what is
#    accepted (the options, integer and seconds ranges, a missing PROGRAM or value), and
#    --max-restarts without the program's --checkpoint-dir is refused before mpirun
#    runs; an mpirun that cannot be started exits 127, with no restart;
#  - examples/gpt (2 ranks, 36 steps, a checkpoint every 6) under shardflow-run
#    --max-restarts 2 that succeeds needs no restart and prints nothing of its own;
#  - the same job with rank 1 killed in the saves of steps 12 and 24 exits 0 after two
#    restarts, each logged with the exit status (137, SIGKILL) and the step resumed from
#    (6, then 18); the program says it resumed at those steps (--resume was passed);
#    its exported weights equal the uninterrupted run's, byte for byte;
#  - with --max-restarts 1 it gives up after one restart with the last run's exit
#    status (137), and says so;
#  - a program (a script under mpirun) failing with 3, 3, then 4 under --max-restarts
#    2 --backoff 0.1: two restarts, 0.1 s then 0.2 s apart, no --resume on the first run
#    and one on each restart; it gives up with 4, the last status;
#  - exit status 2 (a bad command line) is not retried;
#  - SIGTERM to the launcher reaches the ranks through mpirun: exit 143 within seconds,
#    no restart, no rank left.
. "$(dirname "$0")/lib.sh"
RUN="$top_builddir/tools/shardflow-run"
GPT="$top_builddir/examples/gpt"
KILL_SO="$top_builddir/tests/.libs/kill_save.so"
require_progs "$RUN" "$GPT"
[ -f "$KILL_SO" ] || bail_out "$KILL_SO is not built (make check builds it)"
command -v mpirun >/dev/null 2>&1 || skip_all "mpirun is not installed"

limit=${SF_TEST_TIMEOUT:-120}
# unbound ranks, whatever the cores (lib.sh's StarPU home is the unbound one); the
# session directory under $tmp comes from lib.sh's OMPI_MCA_orte_tmpdir_base
mpi="--bind-to none --oversubscribe"

plan 23

# launch NAME ARGS...: shardflow-run ARGS under a time limit, stdout and stderr in
# $tmp/NAME.out and .err, its own lines in $tmp/NAME.log; sets $st
launch() {
	_name=$1
	shift
	timeout -k 10 "$limit" "$RUN" "$@" </dev/null >"$tmp/$_name.out" 2>"$tmp/$_name.err"
	st=$?
	grep '^shardflow-run: ' "$tmp/$_name.err" >"$tmp/$_name.log"
}

# --- the command line ---------------------------------------------------------------
"$RUN" --help >"$tmp/help.out" 2>"$tmp/help.err"
st=$?
missing=
for o in --np --max-restarts --backoff --mpirun-args --mpirun --help; do
	grep -q -e "  $o" "$tmp/help.out" || missing="$missing $o"
done
[ $st -eq 0 ] && grep -q '^usage: shardflow-run ' "$tmp/help.out" && [ ! -s "$tmp/help.err" ] &&
	[ -z "$missing" ]
ok $? "--help: usage on stdout naming every option, exit 0 (exit $st)${missing:+; missing:$missing}"

# bad TEXT ARGS...: exit 2, TEXT and the usage on stderr, nothing on stdout
bad() {
	_text=$1
	shift
	launch bad "$@"
	[ $st -eq 2 ] && grep -qF -e "$_text" "$tmp/bad.err" && grep -q '^usage: ' "$tmp/bad.err" &&
		[ ! -s "$tmp/bad.out" ]
	ok $? "'$*': exit 2 (exit $st), '$_text' and the usage" || diag_file "$tmp/bad.err"
}
bad '--max-restarts "-1" is invalid: accepted values are integers from 0 to 1000' \
	--max-restarts -1 -- true
bad '--backoff "soon" is invalid: accepted values are numbers of seconds from 0 to 600' \
	--backoff soon true
bad '--np "0" is invalid: accepted values are integers from 1 to' --np=0 true
bad 'unknown option "--restarts"' \
	--restarts 2 true
bad '--max-restarts needs a value' --max-restarts
bad 'no PROGRAM to run' --np 2 --

# restarts need checkpoints: refused before mpirun runs (a fake one would leave a mark)
printf '#!/bin/sh\ntouch "%s/mpirun-ran"\n' "$tmp" >"$tmp/fake-mpirun"
chmod +x "$tmp/fake-mpirun"
launch nockpt --mpirun "$tmp/fake-mpirun" --max-restarts 2 -- "$GPT" --steps 3
[ $st -eq 2 ] && [ ! -e "$tmp/mpirun-ran" ] &&
	grep -qF -e "--max-restarts 2 needs checkpoints to restart from, and $GPT has no --checkpoint-dir DIR" \
		"$tmp/nockpt.err"
ok $? "--max-restarts 2 and a program without --checkpoint-dir: exit 2 (exit $st), mpirun not run" ||
	diag_file "$tmp/nockpt.err"

launch nompirun --mpirun "$tmp/no-such-mpirun" --max-restarts 2 -- true --checkpoint-dir "$tmp/x"
[ $st -eq 127 ] && grep -q "^shardflow-run: cannot run $tmp/no-such-mpirun: No such file" \
	"$tmp/nompirun.log" && ! grep -q restart "$tmp/nompirun.log"
ok $? "an mpirun that cannot be started: exit 127 (exit $st), said, no restart" ||
	diag_file "$tmp/nompirun.err"

# --- examples/gpt, uninterrupted and killed twice -------------------------------------
gpt="$GPT --text /usr/share/common-licenses/GPL-3 --layers 2 --embd 64 --context 64 --sample 0
	--steps 36 --checkpoint-every 6 --eval-every 36 --eval-batches 1 --progress-every 12"
[ -r /usr/share/common-licenses/GPL-3 ] || bail_out "/usr/share/common-licenses/GPL-3 is missing"
# kills STAMPS: mpirun's options that give the ranks, and only them, the killing
# library and its settings (split at blanks by shardflow-run)
kills() {
	echo "-x LD_PRELOAD=$KILL_SO -x SF_KILL_SAVE=1:12,1:24 -x SF_KILL_STAMPS=$1"
}

# shellcheck disable=SC2086
launch ref --np 2 --max-restarts 2 --mpirun-args "$mpi" -- $gpt --checkpoint-dir "$tmp/ck-ref" \
	--export "$tmp/ref.safetensors"
[ $st -eq 0 ] && [ -s "$tmp/ref.safetensors" ] && [ ! -s "$tmp/ref.log" ] &&
	grep -q '^step 36/36 ' "$tmp/ref.out"
ok $? "uninterrupted: exit 0 (exit $st), 36 steps, no restart and no line of the launcher's" ||
	{ diag_file "$tmp/ref.log"; diag_file "$tmp/ref.err"; }

mkdir "$tmp/stamps"
# shellcheck disable=SC2086
launch killed --np 2 --max-restarts 2 --backoff 0.1 \
	--mpirun-args "$mpi $(kills "$tmp/stamps")" -- $gpt --checkpoint-dir "$tmp/ck" --export "$tmp/killed.safetensors"
[ $st -eq 0 ] && [ -e "$tmp/stamps/killed-1-12" ] && [ -e "$tmp/stamps/killed-1-24" ]
ok $? "rank 1 killed in the saves of steps 12 and 24: exit 0 (exit $st)" ||
	{ diag_file "$tmp/killed.log"; diag_file "$tmp/killed.err"; ls "$tmp/stamps" | sed 's/^/#   /'; }
diag_file "$tmp/killed.log"
grep -q '^shardflow-run: restart 1 of 2 in 0.1 s: run 1 ended after [0-9.]* s with exit status 137 (128 + 9, which mpirun gives when a rank is killed by SIGKILL); resuming from step 6 (.*/ck/step-000000006)$' \
	"$tmp/killed.log"
ok $? "restart 1 logged: exit status 137 (SIGKILL), resuming from step 6"
grep -q '^shardflow-run: restart 2 of 2 in 0.2 s: run 2 ended after [0-9.]* s with exit status 137 (.*SIGKILL); resuming from step 18 (.*/ck/step-000000018)$' \
	"$tmp/killed.log"
ok $? "restart 2 logged: exit status 137 (SIGKILL), resuming from step 18, backoff doubled"
[ "$(grep -c restart "$tmp/killed.log")" -eq 3 ] &&
	grep -q '^shardflow-run: the job finished after 2 restarts (3 runs, ' "$tmp/killed.log"
ok $? "two restarts in all, and the job's end said"
[ "$(sed -n 's/^gpt: resumed from .*\/ck at step \([0-9]*\)$/\1/p' "$tmp/killed.err" | tr '\n' ' ')" = "6 18 " ]
ok $? "the program resumed (--resume) at steps 6 and 18" ||
	grep '^gpt: ' "$tmp/killed.err" | sed 's/^/#   /'
cmp "$tmp/ref.safetensors" "$tmp/killed.safetensors" >"$tmp/cmp.out" 2>&1
ok $? "the final weights equal the uninterrupted run's, bitwise (cmp of the exports)" ||
	diag_file "$tmp/cmp.out"

mkdir "$tmp/stamps1"
# shellcheck disable=SC2086
launch gaveup --np 2 --max-restarts 1 --backoff 0 \
	--mpirun-args "$mpi $(kills "$tmp/stamps1")" -- $gpt --checkpoint-dir "$tmp/ck1"
[ $st -eq 137 ] && [ "$(grep -c '^shardflow-run: restart ' "$tmp/gaveup.log")" -eq 1 ] &&
	grep -q '^shardflow-run: giving up after 1 restart (--max-restarts 1): run 2 ended after [0-9.]* s with exit status 137 (.*SIGKILL); exit status 137$' \
		"$tmp/gaveup.log"
ok $? "--max-restarts 1, killed twice: gives up after 1 restart with exit status 137 (exit $st)" ||
	{ diag_file "$tmp/gaveup.log"; diag_file "$tmp/gaveup.err"; }

# --- a program that fails, by its exit status -----------------------------------------
# rank 0 records its arguments and exits with 3, 3, then 4; the other ranks exit 0
cat >"$tmp/fails.sh" <<EOF
[ "\${OMPI_COMM_WORLD_RANK:-0}" = 0 ] || exit 0
echo "\$*" >>"$tmp/fails.args"
[ "\$(wc -l <"$tmp/fails.args")" -ge 3 ] && exit 4
exit 3
EOF
launch fails --np 2 --max-restarts 2 --backoff 0.1 --mpirun-args "$mpi" -- \
	sh "$tmp/fails.sh" --checkpoint-dir "$tmp/ck-none" --steps 5
[ $st -eq 4 ]
ok $? "failing with 3, 3, 4 under --max-restarts 2: exit 4, the last status (exit $st)" ||
	diag_file "$tmp/fails.err"
grep -q "^shardflow-run: restart 1 of 2 in 0.1 s: run 1 ended after [0-9.]* s with exit status 3; no checkpoint in $tmp/ck-none yet: starting afresh (with --resume)$" \
	"$tmp/fails.log" &&
	grep -q '^shardflow-run: restart 2 of 2 in 0.2 s: run 2 ended after [0-9.]* s with exit status 3; ' \
		"$tmp/fails.log"
ok $? "each restart logged with its status, 0.1 s then 0.2 s of backoff" || diag_file "$tmp/fails.log"
grep -q '^shardflow-run: giving up after 2 restarts (--max-restarts 2): run 3 ended after [0-9.]* s with exit status 4; exit status 4$' \
	"$tmp/fails.log"
ok $? "giving up is said, with the last run's status" || diag_file "$tmp/fails.log"
printf '%s\n' "--checkpoint-dir $tmp/ck-none --steps 5" "--checkpoint-dir $tmp/ck-none --steps 5 --resume" \
	"--checkpoint-dir $tmp/ck-none --steps 5 --resume" >"$tmp/fails.want"
cmp -s "$tmp/fails.want" "$tmp/fails.args"
ok $? "the first run without --resume, each restart with it once, at the end" ||
	diag_file "$tmp/fails.args"

launch usage2 --np 2 --max-restarts 2 --backoff 0 --mpirun-args "$mpi" -- \
	sh -c 'exit 2' prog --checkpoint-dir "$tmp/ck-none"
[ $st -eq 2 ] && ! grep -q 'restart [0-9]' "$tmp/usage2.log" &&
	grep -q '^shardflow-run: not restarting: run 1 ended after [0-9.]* s with exit status 2, a bad command line, which a restart would repeat$' \
		"$tmp/usage2.log"
ok $? "exit status 2 (a bad command line) is not retried (exit $st)" || diag_file "$tmp/usage2.err"

# --- SIGTERM to the launcher -----------------------------------------------------------
cat >"$tmp/sleeps.sh" <<EOF
echo \$\$ >"$tmp/pid.\${OMPI_COMM_WORLD_RANK:-0}"
exec sleep 60
EOF
timeout -k 10 "$limit" "$RUN" --np 2 --max-restarts 2 --backoff 0 --mpirun-args "$mpi" -- \
	sh "$tmp/sleeps.sh" --checkpoint-dir "$tmp/ck-none" </dev/null >"$tmp/term.out" 2>"$tmp/term.err" &
launcher=$!
i=0
while { [ ! -s "$tmp/pid.0" ] || [ ! -s "$tmp/pid.1" ]; } && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
t0=$(date +%s)
kill -TERM "$launcher"
wait "$launcher"
st=$?
took=$(($(date +%s) - t0))
# the ranks, ended by mpirun, are gone (reaped) within seconds
alive=
for r in 0 1; do
	p=$(cat "$tmp/pid.$r" 2>/dev/null)
	i=0
	while [ -n "$p" ] && kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null && alive="$alive $p" && kill -KILL "$p"
done
grep '^shardflow-run: ' "$tmp/term.err" >"$tmp/term.log"
[ $st -eq 143 ] && [ $took -le 10 ] && [ -z "$alive" ] && ! grep -q 'restart [0-9]' "$tmp/term.log" &&
	grep -q '^shardflow-run: stopped by SIGTERM (passed on to mpirun) during run 1: mpirun ended after ' \
		"$tmp/term.log"
ok $? "SIGTERM: passed on to mpirun, exit 143 in ${took} s (exit $st), no restart${alive:+, ranks left:$alive}" ||
	diag_file "$tmp/term.err"

finish
