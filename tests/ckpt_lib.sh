# ckpt_lib.sh — tests/ckpt_driver helpers for the checkpoint tests; sourced after
# lib.sh, not run.
#
#   drv NP NAME [SHARDFLOW_VAR=VALUE...] ARGS...
#                           ckpt_driver on NP ranks, output in $tmp/NAME.{out,err}
#                           (with drv_split set, rank r's stderr in $tmp/NAME.err.r);
#                           its stderr as diagnostics when it fails
#   ckpt_ref NP NAME ARGS...
#                           an uninterrupted run and its two directed-rounding twins
#   refused NAME PATTERN DESC
#                           one result: the run NAME reported a refused load
#                           (--resume-may-fail) matching PATTERN
# and sets $CKPT_DRIVER.
CKPT_DRIVER="$top_builddir/tests/ckpt_driver"
require_progs "$CKPT_DRIVER" "$DUMP_COMPARE"

# split-stderr.sh PREFIX PROG ARGS...: under mpirun, PROG with its stderr in
# PREFIX.<rank>, one file per rank (mpirun may mix the lines of several ranks)
cat >"$tmp/split-stderr.sh" <<'EOF'
p=$1
shift
exec "$@" 2>"$p.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
EOF

# drv NP NAME [SHARDFLOW_VAR=VALUE...] ARGS...: ckpt_driver on NP ranks, output in
# $tmp/NAME.{out,err}; with drv_split set, rank r's stderr in $tmp/NAME.err.r instead
drv_split=
drv() {
	_np=$1
	_name=$2
	shift 2
	_env=
	while [ $# -gt 0 ]; do
		case $1 in
		SHARDFLOW_*=*) _env="$_env $1"; shift ;;
		*) break ;;
		esac
	done
	_args="$*"
	if [ -n "$drv_split" ]; then
		set -- sh "$tmp/split-stderr.sh" "$tmp/$_name.err" "$CKPT_DRIVER" "$@"
	else
		set -- "$CKPT_DRIVER" "$@"
	fi
	# $_env is split on purpose: our values never contain blanks.
	# shellcheck disable=SC2086
	env $_env sh "$RUN_MPI" "$_np" "$@" </dev/null >"$tmp/$_name.out" 2>"$tmp/$_name.err"
	_st=$?
	if [ $_st -ne 0 ]; then
		diag "ckpt_driver $_args on $_np ranks exited with $_st; its stderr:"
		for _f in "$tmp/$_name.err" "$tmp/$_name.err".*; do
			diag_file "$_f"
		done
	fi
	return $_st
}

# refused NAME PATTERN DESC: the run NAME reported a refused load matching PATTERN
refused() {
	grep "resume_refused" "$tmp/$1.out" | grep -q -- "$2"
	if ! ok $? "$3"; then
		diag "expected a refusal matching \"$2\"; stdout and stderr:"
		diag_file "$tmp/$1.out"
		diag_file "$tmp/$1.err"
	fi
}


# ckpt_ref NP NAME ARGS...: ckpt_driver's uninterrupted run NAME (its dump in
# $tmp/NAME.dump, losses from step 2), and again rounded upward and downward (NAME.up,
# NAME.down): the rounding interval a resumed run is held to
ckpt_ref() {
	_rnp=$1
	_rname=$2
	shift 2
	for _r in "" up down; do
		# shellcheck disable=SC2086
		drv "$_rnp" "$_rname${_r:+.$_r}" ${_r:+SHARDFLOW_ROUNDING=${_r}ward} "$@" \
			--out "$tmp/$_rname${_r:+.$_r}.dump" --dump-losses-from 2 || return 1
	done
}

# tp_ckpt_chain MODEL OPT: MODEL trained with OPT across layouts, each resuming the
# last one's checkpoint: 2 steps at dp 2 x tp 2 (SHARDFLOW_TP=2 on 4 ranks), 2 at 4 x 1,
# 2 on 1 rank; the result within the uninterrupted 1-rank run's rounding interval, and
# the first manifest says tp 2. The comparison's output in $tmp/ck.cmp.
tp_ckpt_chain() {
	_cm=$1 _co=$2
	rm -rf "$tmp/ck1-$_co" "$tmp/ck2-$_co"
	for _cr in "" up down; do
		# shellcheck disable=SC2086
		drv 1 "cu-$_co${_cr:+.$_cr}" ${_cr:+SHARDFLOW_ROUNDING=${_cr}ward} --model "$_cm" \
			--optimizer "$_co" --steps 6 --out-params "$tmp/cu-$_co${_cr:+.$_cr}.p"
	done
	drv 4 "c22-$_co" SHARDFLOW_TP=2 --model "$_cm" --optimizer "$_co" --steps 2 \
		--save "$tmp/ck1-$_co" --save-every 2
	drv 4 "c41-$_co" --model "$_cm" --optimizer "$_co" --steps 4 --resume "$tmp/ck1-$_co" \
		--save "$tmp/ck2-$_co" --save-every 4
	drv 1 "c11-$_co" --model "$_cm" --optimizer "$_co" --steps 6 --resume "$tmp/ck2-$_co" \
		--out-params "$tmp/c11-$_co.p"
	"$DUMP_COMPARE" --up "$tmp/cu-$_co.up.p" --down "$tmp/cu-$_co.down.p" "$tmp/c11-$_co.p" \
		"$tmp/cu-$_co.p" >"$tmp/ck.cmp" 2>&1 &&
		grep -q '"tp": 2' "$tmp/ck1-$_co/step-000000002/manifest.json"
}
