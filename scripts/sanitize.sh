#!/bin/sh
# sanitize.sh — shardflow built with AddressSanitizer and UndefinedBehaviorSanitizer,
# and a bounded part of the test suite run on that build.
#
#   scripts/sanitize.sh [--jobs N] [TEST...]
#
# Copies the working tree's sources (tracked and untracked, not ignored) into
# sanitize-build/src (or $SF_SANITIZE_BUILD/src), configures it with
# CFLAGS=LDFLAGS=-fsanitize=address,undefined -fno-sanitize-recover=undefined (through
# configure's mpicc, so gcc), builds with make -jN (default 2), and runs `make -jN check`
# with TESTS set to the 1-rank C tests and the shell tests below (or the TESTs given),
# printing automake's summary. Every sanitizer report goes to a file of its own
# (log_path), so a test that swallows its programs' stderr cannot hide one: the script
# fails when any report exists, printing it, or when a test fails.
#
# Leaks: ASAN_OPTIONS has detect_leaks=0, because Open MPI (MPI_Init_thread,
# MPI_Finalize) and StarPU leak on their own and every program would fail; leaks are
# make check-valgrind's business (with tests/valgrind.supp). Multi-rank runs work under
# ASan but are slow: the default list keeps to 1-rank programs and shell tests whose
# runs are mostly 1 rank.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
jobs=2
while [ $# -gt 0 ]; do
	case $1 in
	--jobs) jobs=$2; shift 2 ;;
	--jobs=*) jobs=${1#--jobs=}; shift ;;
	-h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "sanitize.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ $# -gt 0 ]; then
	tests=$*
else
	tests="tests/test_kernels_fd tests/test_idx tests/test_text tests/test_api tests/grad_check.sh \
tests/test_trace_write tests/test_pp_order tests/rdb2txt.sh tests/layout.sh tests/bad_config.sh tests/nonfinite.sh \
tests/trace_names.sh tests/example_cli.sh"
fi

build=${SF_SANITIZE_BUILD:-$top/sanitize-build}
src=$build/src
reports=$build/reports
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
mkdir -p "$src" || exit 2
rm -rf "$reports"
mkdir -p "$reports" || exit 2

echo "== copy the sources to $src"
# only what git knows (the working tree's version): no build products of the source tree
bash "$top/scripts/copy-tree.sh" "$top" "$src" || exit 2
# a built program tracked by mistake must not pass for a sanitized one
rm -f "$src/tests/grad_check"

echo "== configure and build (CFLAGS: -g -O1 $san)"
(
	cd "$src" &&
		{ [ -x configure ] && [ configure -nt configure.ac ] || ./autogen.sh; } &&
		{ [ -f Makefile ] || ./configure CFLAGS="-g -O1 -fno-omit-frame-pointer $san" \
			LDFLAGS="$san"; } &&
		sh scripts/families.sh . &&
		make -j"$jobs" &&
		# shellcheck disable=SC2086
		make -j"$jobs" $(echo "$tests" | tr ' ' '\n' | grep -v '\.sh$') tests/grad_check tests/train_dump \
			tests/dump_compare
) >"$build/build.log" 2>&1 || {
	tail -40 "$build/build.log"
	echo "sanitize.sh: the sanitized build failed (log: $build/build.log)"
	exit 2
}

echo "== make check TESTS=\"$(echo $tests)\""
# log_path: one file per process that reports; abort_on_error off so the program's own
# exit status is the sanitizer's (exitcode 86, unlike any test's expected failure).
ASAN_OPTIONS="detect_leaks=0:exitcode=86:log_path=$reports/asan:${ASAN_OPTIONS:-}"
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=86:log_path=$reports/ubsan:${UBSAN_OPTIONS:-}"
export ASAN_OPTIONS UBSAN_OPTIONS
# tests/run-mpi.sh exports only SHARDFLOW_* and STARPU_* to the ranks: mpirun passes the
# rest of the environment to local ranks anyway, which is all the tests use.
(cd "$src" && make check -j"$jobs" TESTS="$(echo $tests)") >"$build/check.log" 2>&1
check_rc=$?
sed -n '/^=*$/,$p' "$build/check.log" | grep -E "^(# |PASS|FAIL|ERROR|SKIP|XPASS)" | head -40
grep -E "^(FAIL|ERROR|XPASS):" "$build/check.log" | sed 's/^/   /'

status=0
if [ -n "$(ls -A "$reports")" ]; then
	echo "sanitize.sh: sanitizer reports:"
	for f in "$reports"/*; do
		echo "---- $f"
		head -60 "$f"
	done
	status=1
fi
if [ $check_rc -ne 0 ]; then
	echo "sanitize.sh: make check failed (logs: $src/tests/*.log)"
	for f in "$src"/tests/*.log; do
		case $f in */test-suite.log) continue ;; esac
		grep -q "^not ok" "$f" 2>/dev/null && { echo "---- $f"; grep -E "^not ok|^#" "$f" | head -30; }
	done
	status=1
fi
[ $status -eq 0 ] && echo "sanitize.sh: no sanitizer report, every test passed"
exit $status
