# ckpt_lib.sh — tests/ckpt_driver helpers for the checkpoint tests; sourced after
# lib.sh, not run.
#
#   drv NP NAME [SHARDFLOW_VAR=VALUE...] ARGS...
#                           ckpt_driver on NP ranks, output in $tmp/NAME.{out,err}
#                           (with drv_split set, rank r's stderr in $tmp/NAME.err.r);
#                           its stderr as diagnostics when it fails
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

