# lib.sh — TAP helpers for shardflow's shell tests; sourced, not run.
#
# Provides:
#   plan N                  print the plan "1..N" (once, before the first result)
#   ok STATUS DESC          "ok"/"not ok" from an exit status (0 passes):
#                               cmp -s a b; ok $? "a equals b"
#   check DESC CMD ARGS...  run CMD, pass if it exits 0; on failure its output goes
#                           into the log as diagnostics (fail_unless is the same)
#   skip DESC REASON        an "ok N # SKIP REASON" result
#   skip_all REASON         the whole script is skipped ("1..0 # SKIP", exit 0)
#   bail_out MSG            "Bail out!" and exit 99 (a broken setup, not a failed test)
#   diag MSG... / diag_file FILE   "# " diagnostics
#   require_progs PROG...   bail out unless each built program exists
#   run_mpi NP PROG ARGS... tests/run-mpi.sh (every multi-rank run goes through it)
#   train NP NAME [VAR=VALUE...] ARGS...
#                           train_dump on NP ranks with those SHARDFLOW_*/STARPU_*/CUDA_*
#                           variables, writing $tmp/NAME.dump, NAME.out, NAME.err
#   compare DESC A B OPTS...  one result: dump_compare OPTS $tmp/A.dump $tmp/B.dump,
#                           its summary (the max relative difference) as diagnostics
#   crc32 FILE              a file's CRC-32 as 8 hex digits (from gzip's trailer)
#   ckpt_reseal STEPDIR     rewrites STEPDIR/manifest.crc32 for its (edited) manifest
#   sf_corpus FILE          a fixed English-like corpus (below)
#   twin_setup              $GPT, $LOGITS and the PyTorch twin ($PY $TWIN), or skip all
#   finish                  check the plan was honoured; exit 0 if all passed, else 1
# and sets $top_builddir, $top_srcdir (absolute; make's AM_TESTS_ENVIRONMENT sets
# them, a manual run defaults both to this script's directory/..), $tmp (a fresh
# directory removed on exit), $RUN_MPI, $MLP (examples/mlp_synthetic),
# $TRAIN_DUMP, $DUMP_COMPARE, and from configure $MPICC and $PKG_CONFIG.
#
# Written for POSIX sh (make runs tests with $(SHELL), dash on Debian).

_sf_here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$_sf_here/..}"
: "${top_builddir:=$_sf_here/..}"
top_srcdir=$(cd "$top_srcdir" && pwd) || exit 99
top_builddir=$(cd "$top_builddir" && pwd) || exit 99
export top_srcdir top_builddir
# Every test states the SHARDFLOW_* settings it runs with; none leaks in from the
# caller's environment (a test of the defaults would otherwise test something else).
for _v in $(env | sed -n 's/^\(SHARDFLOW_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$_v"
done
# StarPU's calibration files, per kind of binding (see tests/run-mpi.sh); programs run
# directly, without mpirun, see every core like unbound ranks. Kept between runs,
# outside the build tree, so that they are written once rather than by every test.
if [ -z "${STARPU_HOME:-}" ]; then
	SF_TEST_STARPU_HOME="${TMPDIR:-/tmp}/shardflow-starpu-$(id -u)"
	STARPU_HOME="$SF_TEST_STARPU_HOME/bind-none"
	mkdir -p "$STARPU_HOME" || exit 99
	export SF_TEST_STARPU_HOME STARPU_HOME
fi
# StarPU prints its banner and warnings unless told not to (make check sets it too).
: "${STARPU_SILENT:=1}"
export STARPU_SILENT
# A StarPU built with FxT records a trace of every run unless told not to; the tests
# that want one ask for it.
STARPU_FXT_TRACE=0
export STARPU_FXT_TRACE
# What configure found (FxT, StarPU's tools, the compiler wrapper, pkg-config).
SF_HAVE_FXT=no
SF_HAVE_CUDA=no
SF_HAVE_NCCL=no
STARPU_BINDIR=
MPICC=mpicc
PKG_CONFIG=pkg-config
[ -f "$top_builddir/tests/config.sh" ] && . "$top_builddir/tests/config.sh"

RUN_MPI="$top_srcdir/tests/run-mpi.sh"
MLP="$top_builddir/examples/mlp_synthetic"
TRAIN_DUMP="$top_builddir/tests/train_dump"
DUMP_COMPARE="$top_builddir/tests/dump_compare"

_sf_planned=
_sf_count=0
_sf_failed=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardflow-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
# Programs run without mpirun start Open MPI as a singleton, which also makes a session
# directory: keep it in $tmp, away from concurrent tests (see tests/run-mpi.sh).
OMPI_MCA_orte_tmpdir_base=$tmp
export OMPI_MCA_orte_tmpdir_base
trap 'exit 130' INT
trap 'exit 143' TERM

plan() {
	_sf_planned=$1
	echo "1..$1"
}

diag() {
	echo "# $*"
}

diag_file() {
	[ -f "$1" ] && sed 's/^/#   /' "$1"
	return 0
}

ok() {
	_sf_count=$((_sf_count + 1))
	_st=$1
	shift
	if [ "$_st" -eq 0 ] 2>/dev/null; then
		echo "ok $_sf_count - $*"
		return 0
	fi
	_sf_failed=$((_sf_failed + 1))
	echo "not ok $_sf_count - $*"
	return 1
}

check() {
	_desc=$1
	shift
	"$@" >"$tmp/check.out" 2>&1
	_st=$?
	if ok $_st "$_desc"; then
		return 0
	fi
	diag "command: $* (exit $_st)"
	diag_file "$tmp/check.out"
	return 1
}

fail_unless() {
	check "$@"
}

skip() {
	_sf_count=$((_sf_count + 1))
	echo "ok $_sf_count - $1 # SKIP ${2:-}"
}

# automake's TAP driver reads a skipped script from its "1..0 # SKIP" plan; a non-zero
# exit status (even 77) would make it an ERROR.
skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

bail_out() {
	echo "Bail out! $*"
	exit 99
}

require_progs() {
	for _p in "$@"; do
		[ -x "$_p" ] || bail_out "$_p is not built (run make check, or make $(basename "$_p"))"
	done
}

# stdin is /dev/null: mpirun forwards its stdin to rank 0, and would otherwise eat
# the input of a `while read` loop around it.
run_mpi() {
	sh "$RUN_MPI" "$@" </dev/null
}

train() {
	_np=$1
	_name=$2
	shift 2
	_env=
	while [ $# -gt 0 ]; do
		case $1 in
		SHARDFLOW_*=* | STARPU_*=* | CUDA_*=*) _env="$_env $1"; shift ;;
		*) break ;;
		esac
	done
	rm -f "$tmp/$_name.dump"
	# $_env is split on purpose: our values never contain blanks.
	# shellcheck disable=SC2086
	env $_env sh "$RUN_MPI" "$_np" "$TRAIN_DUMP" --out "$tmp/$_name.dump" "$@" \
		</dev/null >"$tmp/$_name.out" 2>"$tmp/$_name.err"
	_st=$?
	if [ $_st -ne 0 ]; then
		diag "FAILED (exit $_st): ${_env# } train_dump $* on $_np ranks; its stderr:"
		diag_file "$tmp/$_name.err"
	fi
	return "$_st"
}

# train_interval NP NAME [VAR=VALUE...] ARGS...: train's run NAME, and the same run
# with every CPU worker rounding upward (NAME.up) and downward (NAME.down): NAME's
# rounding interval, what compare_within holds another run to (docs/testing.md, "The
# rounding interval").
train_interval() {
	train "$@" && interval_of "$@"
}

# interval_of NP NAME [VAR=VALUE...] ARGS...: only the upward and downward runs of
# train_interval (for a run NAME made otherwise: ARGS without what must not be done
# twice, an export's file, say). The two run at once: a small run mostly waits for
# mpirun's start, so two take little more time than one.
interval_of() {
	_inp=$1
	_iname=$2
	shift 2
	(train "$_inp" "$_iname.up" SHARDFLOW_ROUNDING=upward "$@") &
	_ipid=$!
	train "$_inp" "$_iname.down" SHARDFLOW_ROUNDING=downward "$@"
	_ist=$?
	wait "$_ipid" && return "$_ist"
}

# train_refused DESC REGEX NP NAME [VAR=VALUE...] ARGS...: one result: train NP NAME
# ... fails and its stderr or stdout matches REGEX (the refusal's reason)
train_refused() {
	_rd=$1 _rre=$2
	shift 2
	if train "$@" 2>/dev/null; then
		ok 1 "$_rd: accepted"
		return
	fi
	grep -q "$_rre" "$tmp/$2.err" "$tmp/$2.out"
	ok $? "$_rd"
}

# compare_within DESC A B [--ignore FROM:TO]...: A's losses and parameters within B's
# rounding interval (B trained by train_interval)
compare_within() {
	_wd=$1
	_wa=$2
	_wb=$3
	shift 3
	compare "$_wd (within $_wb's rounding interval)" "$_wa" "$_wb" \
		--up "$tmp/$_wb.up.dump" --down "$tmp/$_wb.down.dump" "$@"
}

# values_within A B UP DOWN REGEX [N]: the last field of every line of file A matching
# REGEX lies within B's rounding interval: |a - b| <= w + eps32 max(|a|, |b|), w the
# span of b, up and down (as dump_compare's), line by line (as many in each file, at
# least one); with N, in blocks of N consecutive values by 2-norm, as dump_compare
# compares parameters (one value's interval can close by chance: a logit that is a
# sum cancelling to near 0); prints the worst ratio.
values_within() {
	awk -v re="$5" -v nb="${6:-1}" 'FNR == 1 { f++ }
		$0 ~ re { v[f, ++n[f]] = $NF }
		function finite(x) { x += 0; return x == x && x - x == 0 }
		END {
			eps = 5.9604644775390625e-08
			if (n[1] < 1 || n[1] != n[2] || n[1] != n[3] || n[1] != n[4]) {
				printf "# %d, %d, %d, %d values: not comparable\n", n[1], n[2], n[3], n[4]
				exit 1
			}
			for (i0 = 1; i0 <= n[1]; i0 += nb) {
				dd = ww = aa = bb = 0
				for (i = i0; i < i0 + nb && i <= n[1]; i++) {
					a = v[1, i]; b = v[2, i]; u = v[3, i]; l = v[4, i]; d = a - b
					# a value that is not a finite number (nan, inf) is never within
					if (!finite(a) || !finite(b)) { bad++; worst = 1e300; at = i }
					hi = b; if (u > hi) hi = u; if (l > hi) hi = l
					lo = b; if (u < lo) lo = u; if (l < lo) lo = l
					dd += d * d; ww += (hi - lo) * (hi - lo); aa += a * a; bb += b * b
				}
				d = sqrt(dd); m = sqrt(aa > bb ? aa : bb)
				t = sqrt(ww) + eps * m
				if (d > 0 && !(d <= t)) bad++
				r = d == 0 ? 0 : t > 0 ? d / t : 1e300
				if (r > worst) { worst = r; at = i0 }
			}
			how = nb == 1 ? "" : " in blocks of " nb
			printf "# %d values%s: the largest difference is %.3g of its interval (value %d)\n", n[1], how, worst, at
			exit bad > 0
		}' "$1" "$2" "$3" "$4"
}

# gpt_run NP NAME [SHARDFLOW_*=VALUE...] ARGS...: examples/gpt ($GPT) on NP ranks with
# the test's $common options and ARGS, its output in NAME.out and NAME.err; returns
# its status
gpt_run() {
	_gn=$1 _gname=$2
	shift 2
	_genv=
	while [ $# -gt 0 ]; do
		case $1 in
		SHARDFLOW_*=*) _genv="$_genv $1"; shift ;;
		*) break ;;
		esac
	done
	# shellcheck disable=SC2086
	env $_genv sh "$RUN_MPI" "$_gn" "$GPT" $common "$@" </dev/null \
		>"$tmp/$_gname.out" 2>"$tmp/$_gname.err"
}

# gpt_filtered NAME: examples/gpt's stdout in NAME.out (the loss lines, the validation
# loss, the samples) less its timings, what two layouts must print alike
gpt_filtered() {
	sed -e 's/ tokens\/s.*//' -e 's/ time [0-9.]*$//' "$tmp/$1.out"
}

# loss_logs_within A B STEPS: two --loss-log files ("step loss" lines) hold the same
# STEPS steps, each loss of B within 1e-5 (relative) of A's
loss_logs_within() {
	awk -v steps="$3" 'NR == FNR { a[$1] = $2; n++; next }
	{ m++; d = $2 - a[$1]; if (d < 0) d = -d; if (!($1 in a) || d > 1e-5 * $2) bad++ }
	END { exit !(n == m && m == steps && bad == 0) }' "$1" "$2"
}

# within_interval A B REGEX [N]: values_within on rank 0's stdout of train runs A and B
# (B trained by train_interval)
within_interval() {
	values_within "$tmp/$1.out" "$tmp/$2.out" "$tmp/$2.up.out" "$tmp/$2.down.out" "$3" "$4"
}

# clipped_within A B: run A's clip norm at step 4 (train_dump's "norm 4" line) and its
# losses and parameters within run B's rounding interval (B trained by
# train_interval); the comparisons' output in $tmp/clip.cmp
clipped_within() {
	within_interval "$1" "$2" '^norm 4 ' >"$tmp/clip.cmp" &&
		"$DUMP_COMPARE" --up "$tmp/$2.up.dump" --down "$tmp/$2.down.dump" "$tmp/$1.dump" \
			"$tmp/$2.dump" >>"$tmp/clip.cmp" 2>&1
}

compare() {
	_desc=$1
	_a=$2
	_b=$3
	shift 3
	"$DUMP_COMPARE" "$@" "$tmp/$_a.dump" "$tmp/$_b.dump" >"$tmp/compare.out" 2>&1
	_st=$?
	ok $_st "$_desc"
	sed 's/^/#   /' "$tmp/compare.out"
	return "$_st"
}

# gzip ends with the CRC-32 of its input, little-endian: print it big-endian, in hex.
crc32() {
	gzip -c <"$1" | tail -c 8 | head -c 4 | od -An -tx1 | awk '{print $4 $3 $2 $1}'
}

ckpt_reseal() {
	crc32 "$1/manifest.json" >"$1/manifest.crc32"
}

finish() {
	if [ -n "$_sf_planned" ] && [ "$_sf_count" -ne "$_sf_planned" ]; then
		diag "planned $_sf_planned tests but ran $_sf_count"
		exit 1
	fi
	if [ "$_sf_failed" -ne 0 ]; then
		diag "$_sf_failed of $_sf_count tests failed"
		exit 1
	fi
	exit 0
}

# sf_corpus FILE: the tests' text corpus, the same bytes on every machine and in every
# awk, whatever the docs say: 700 sentences "det adj noun verb det noun prep det
# place." (32 612 bytes), each word drawn from a list of 6 to 8 by a Park-Miller
# generator of fixed seed (integer products below 2^53; md5sum
# e8b58654a8124d8ad6d8990f024527eb). Bails out when it cannot be made.
sf_corpus() {
	awk 'function r(k) { x = (x * 16807) % 2147483647; return x % k + 1 }
BEGIN {
	nd = split("the a one every some that", det)
	na = split("small big quick lazy red old young quiet", adj)
	nn = split("cat dog bird fox horse mouse owl fish", noun)
	nv = split("sees chases finds follows hears likes meets watches", verb)
	np = split("near under over behind beside past", prep)
	nl = split("river tree house hill road field garden", place)
	x = 20261126
	for (i = 0; i < 700; i++)
		printf "%s %s %s %s %s %s %s %s %s.\n", det[r(nd)], adj[r(na)], noun[r(nn)], verb[r(nv)],
			det[r(nd)], noun[r(nn)], prep[r(np)], det[r(nd)], place[r(nl)]
}' >"$1" || bail_out "cannot make the corpus"
	[ "$(wc -c <"$1")" -eq 32612 ] || bail_out "the corpus is $(wc -c <"$1") bytes, not 32612"
}

# twin_setup: examples/gpt, tests/gpt_logits and the PyTorch twin (bench/torch_gpt.py,
# run by /usr/bin/python3, Debian's torch) for the tests that compare with it: sets
# $GPT, $LOGITS, $PY and $TWIN, bails out without the programs and skips the whole
# script when torch cannot be imported.
twin_setup() {
	GPT="$top_builddir/examples/gpt"
	LOGITS="$top_builddir/tests/gpt_logits"
	require_progs "$GPT" "$LOGITS"
	PY=/usr/bin/python3
	TWIN="$top_srcdir/bench/torch_gpt.py"
	"$PY" -c 'import torch' >/dev/null 2>&1 ||
		skip_all "$PY cannot import torch (apt-get install -y python3-torch)"
}

# stats_of run rank key: sf_model_stats' figure (train_dump's "bytes <rank> <key> <v> ...")
stats_of() {
	awk -v r="$2" -v k="$3" '$1 == "bytes" && $2 == r {
		for (i = 3; i < NF; i += 2) if ($i == k) print $(i + 1) }' "$tmp/$1.out"
}

# plan_ok run rank: a pipeline run's memory plan, its parts (the log at SHARDFLOW_LOG=info)
# = sf_model_stats' parts
plan_ok() {
	_l=$(grep "memory: rank $2 (pipeline" "$tmp/$1.err")
	# sf_model_stats' name in train_dump's line : the plan's in the log
	for _kk in params:param grads:grad optimizer:optimizer activations:activation \
		buffers:buffer; do
		_k=${_kk#*:}
		_want=$(stats_of "$1" "$2" "${_kk%%:*}")
		# this rank's figure: its line may have another rank's written into it (the
		# ranks share the stderr file), so only up to the plan's ';'
		_got=$(echo "$_l" |
			sed -n "s/.*memory: rank $2 (pipeline[^;]* ${_k}_bytes \([0-9]*\).*/\1/p")
		[ -n "$_got" ] && [ "$_got" = "$_want" ] || {
			diag "  $1 rank $2: the plan's ${_k}_bytes ${_got:-(none)}, sf_model_stats' $_want"
			return 1
		}
	done
}

# sent_bytes run rank: the bytes train_dump's rank sent (its "rank <r> comm_bytes <n>" line)
sent_bytes() {
	awk -v r="$2" '$1 == "rank" && $2 == r {print $4}' "$tmp/$1.out"
}

# gpt_same A B STEPS: examples/gpt's runs A and B (gpt_run, each with --loss-log
# $tmp/NAME.loss) agree: STEPS losses within 1e-5 (loss_logs_within), and the same
# stdout less timings (gpt_filtered: the printed losses, val_loss, the samples), kept
# in $tmp/A.f and $tmp/B.f
gpt_same() {
	loss_logs_within "$tmp/$1.loss" "$tmp/$2.loss" "$3" &&
		gpt_filtered "$1" >"$tmp/$1.f" && gpt_filtered "$2" >"$tmp/$2.f" &&
		cmp "$tmp/$1.f" "$tmp/$2.f" >/dev/null
}
