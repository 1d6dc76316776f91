#!/bin/sh
# custom_layer.sh — proves that a user-registered layer type works end to end.
#
# examples/custom_layer registers an "rms_norm" layer (y = x / rms(x) * g, with a
# saved buffer: 1/rms per row, written by forward, read by backward) through
# sf_layer_type_register. This test checks, in TAP:
#  - its kernels pass their own finite-difference check (custom_layer --check; its
#    TAP lines are repeated here as diagnostics), and that check covers what the
#    layer API asks of a kernel: the saved buffer in both buffer layouts, dx added
#    to (accumulate[0]), dparams added to (accumulate_dparams), no dx buffer;
#  - it trains on 1 rank (run directly) and on 2 ranks (through tests/run-mpi.sh),
#    and on each the final loss is below the first step's loss;
#  - the 1-rank and 2-rank final losses agree within 1e-4 relative: the data are
#    the same global batches for any world size, so sharding must not change the
#    result beyond the order of floating-point sums;
#  - a bad option exits with status 2;
#  - the type's optional config (--eps) reaches its kernels, and a refusal by its
#    infer() (sf_error_set) is printed once, with the context the library adds (it
#    was printed twice: by sf_error_set, then again by sf_graph_layer); under
#    SHARDFLOW_LOG=off the library prints nothing, and the program's own line remains.
# Needs top_builddir and top_srcdir (absolute), as `make check` sets them.

: "${top_builddir:?top_builddir is not set (run through make check)}"
: "${top_srcdir:?top_srcdir is not set (run through make check)}"
STARPU_SILENT=1
export STARPU_SILENT

prog=$top_builddir/examples/custom_layer
steps=30
tmp=$(mktemp -d "${TMPDIR:-/tmp}/custom_layer.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

n=0
failed=0
echo "1..14"

# result COND_STATUS DESCRIPTION: one TAP line from a shell status (0 = pass).
result() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

# Prints a file's lines as TAP diagnostics.
diag_file() {
	sed 's/^/# /' "$1"
}

# The number after "final_loss", and after "loss" on the first "step" line.
final_loss() { sed -n 's/^final_loss \([^ ]*\).*/\1/p' "$1" | tail -n 1; }
first_loss() { sed -n 's/^step [0-9]* loss \([^ ]*\).*/\1/p' "$1" | head -n 1; }

# falls FILE: final_loss < first step's loss (both present and numbers).
falls() {
	f=$(final_loss "$1")
	s=$(first_loss "$1")
	echo "# first step loss ${s:-missing}, final_loss ${f:-missing}"
	[ -n "$f" ] && [ -n "$s" ] && awk -v f="$f" -v s="$s" \
		'BEGIN { exit !(f == f + 0 && s == s + 0 && f < s) }'
}

if [ ! -x "$prog" ]; then
	echo "Bail out! $prog is missing: build it first (make check builds it)"
	exit 1
fi

limit() {
	if command -v timeout >/dev/null 2>&1; then
		timeout -k 10 "${SF_TEST_TIMEOUT:-180}" "$@"
	else
		"$@"
	fi
}

# 1-2. the kernels against finite differences, and what the check covers
limit "$prog" --check >"$tmp/check.out" 2>"$tmp/check.err"
rc=$?
diag_file "$tmp/check.out"
diag_file "$tmp/check.err"
planned=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tmp/check.out")
passed=$(grep -c '^ok ' "$tmp/check.out")
[ $rc -eq 0 ] && [ -n "$planned" ] && [ "$planned" -gt 0 ] && [ "$passed" -eq "$planned" ] &&
	! grep -q '^not ok' "$tmp/check.out"
result $? "custom_layer --check: ${passed}/${planned:-?} finite-difference checks pass (exit $rc)"
missing=
for what in "dx vs finite differences" "dg vs finite differences" \
	"forward saves 1/rms(x) per row" "accumulate adds to dx" \
	"accumulate_dparams adds to dg" "no dx buffer when need_dinput is 0"; do
	grep -qF "$what" "$tmp/check.out" || missing="$missing; $what"
done
[ -z "$missing" ]
result $? "custom_layer --check covers the saved buffer, both accumulate flags and a missing dx${missing:+ (missing${missing#;})}"

# 3-4. one rank, run directly
limit "$prog" --steps $steps >"$tmp/np1.out" 2>"$tmp/np1.err"
rc=$?
[ $rc -ne 0 ] && diag_file "$tmp/np1.out" && diag_file "$tmp/np1.err"
[ $rc -eq 0 ] && [ -n "$(final_loss "$tmp/np1.out")" ] &&
	[ "$(grep -c '^step ' "$tmp/np1.out")" -eq $steps ]
result $? "1 rank: $steps steps and a final_loss (exit $rc)"
falls "$tmp/np1.out"
result $? "1 rank: the loss falls"

# 5-6. two ranks, through the test wrapper (time limit, --oversubscribe, root)
np2=
if [ -f "$top_srcdir/tests/run-mpi.sh" ]; then
	np2="sh $top_srcdir/tests/run-mpi.sh 2"
elif command -v mpirun >/dev/null 2>&1; then
	root=
	[ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
	np2="limit mpirun $root --oversubscribe -np 2"
fi
if [ -n "$np2" ]; then
	$np2 "$prog" --steps $steps >"$tmp/np2.out" 2>"$tmp/np2.err"
	rc=$?
	[ $rc -ne 0 ] && diag_file "$tmp/np2.out" && diag_file "$tmp/np2.err"
	[ $rc -eq 0 ] && [ -n "$(final_loss "$tmp/np2.out")" ] &&
		[ "$(grep -c '^step ' "$tmp/np2.out")" -eq $steps ]
	result $? "2 ranks: $steps steps and a final_loss, printed once (exit $rc)"
	falls "$tmp/np2.out"
	result $? "2 ranks: the loss falls"

	# 7. the same problem on 1 and 2 ranks gives the same loss
	l1=$(final_loss "$tmp/np1.out")
	l2=$(final_loss "$tmp/np2.out")
	echo "# final_loss: 1 rank ${l1:-missing}, 2 ranks ${l2:-missing}"
	[ -n "$l1" ] && [ -n "$l2" ] && awk -v a="$l1" -v b="$l2" 'BEGIN {
		d = a - b; if (d < 0) d = -d
		m = a < 0 ? -a : a; if (m < 1e-30) m = 1e-30
		printf "# relative difference %.3g (tol 1e-4)\n", d / m
		exit !(a == a + 0 && b == b + 0 && d / m <= 1e-4)
	}'
	result $? "1-rank and 2-rank final_loss agree within 1e-4 relative"
else
	skip "2 ranks: $steps steps and a final_loss" "no tests/run-mpi.sh and no mpirun"
	skip "2 ranks: the loss falls" "no mpirun"
	skip "1-rank and 2-rank final_loss agree" "no mpirun"
fi

# 8-9. a bad option: status 2, usage on stderr, nothing on stdout
limit "$prog" --no-such-option >"$tmp/bad.out" 2>"$tmp/bad.err"
rc=$?
[ $rc -eq 2 ]
result $? "an unknown option exits with status 2 (got $rc)"
grep -q '^usage:' "$tmp/bad.err" && [ ! -s "$tmp/bad.out" ]
result $? "an unknown option prints the usage on stderr only"

# 10. --help: usage on stdout, status 0
limit "$prog" --help >"$tmp/help.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q '^usage:' "$tmp/help.out"
result $? "--help prints the usage and exits 0 (got $rc)"

# 11. a config the type takes: it trains
limit "$prog" --steps 2 --eps 1e-6 >"$tmp/eps.out" 2>"$tmp/eps.err"
rc=$?
[ $rc -ne 0 ] && diag_file "$tmp/eps.err"
[ $rc -eq 0 ] && [ -n "$(final_loss "$tmp/eps.out")" ]
result $? "--eps 1e-6, the node's config: 2 steps and a final_loss (exit $rc)"

# 12-13. a config its infer() refuses: exit 1, the message once, with the context
why='rms_norm: eps must be finite and > 0, got 0'
limit "$prog" --steps 2 --eps 0 >"$tmp/eps0.out" 2>"$tmp/eps0.err"
rc=$?
[ $rc -eq 1 ]
result $? "--eps 0: infer() refuses, exit 1 (got $rc)"
times=$(grep -cF "$why" "$tmp/eps0.err")
[ "$times" -eq 1 ] &&
	grep -F "$why" "$tmp/eps0.err" | grep -qF 'sf_graph_layer: layer type "rms_norm" rejected'
st=$?
result $st "--eps 0: the type's message is printed once (${times}x), after the library's context"
[ $st -ne 0 ] && diag_file "$tmp/eps0.err"

# 14. SHARDFLOW_LOG=off: nothing from the library, the program still says what failed
SHARDFLOW_LOG=off limit "$prog" --steps 2 --eps 0 >"$tmp/off.out" 2>"$tmp/off.err"
rc=$?
[ $rc -eq 1 ] && ! grep -q '^shardflow' "$tmp/off.err" &&
	grep -q '^custom_layer: sf_graph_layer failed: ' "$tmp/off.err"
st=$?
result $st "SHARDFLOW_LOG=off: exit 1 ($rc), no line from the library, the program's own remains"
[ $st -ne 0 ] && diag_file "$tmp/off.err"

[ $failed -eq 0 ]
