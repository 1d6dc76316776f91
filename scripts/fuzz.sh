#!/bin/sh
# fuzz.sh — builds shardflow's libFuzzer targets (fuzz/) and runs each for a while.
#
#   scripts/fuzz.sh [--seconds N] [--runs N] [--jobs N] [--build-only] [TARGET...]
#
# TARGETs: idx, taskrec, safetensors, manifest, rdb, tokens (default: all). Each is
# fuzz/fuzz_<target>.c compiled with the parser's own sources (no StarPU, no MPI) by
# clang with -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined, into
# fuzz-build/ (or $SF_FUZZ_BUILD); `make` never builds them, so the normal build needs
# no clang. Each runs N seconds (default 60), or N executions with --runs N (given
# both, whichever ends first), from its seeds (fuzz/corpus/<target>/, left untouched:
# what the fuzzer finds goes to fuzz-build/corpus/<target>/, kept between runs). A
# crash, a sanitizer report, a leak or a timeout (20 s on one input) stops that
# target; the script then prints the reproducer's path and how to replay it, runs the
# other targets, and exits 1. Exit 2: a bad command line or a build failure. The
# targets build and run --jobs N at a time (default: the machine's cores; a fuzzer is
# one process on one core), their reports printed in the targets' order.
#
# Environment: CLANG (default clang-14, else clang), SF_FUZZ_BUILD, SF_FUZZ_FLAGS (more
# libFuzzer flags; of a flag given twice the last counts: -timeout=300 for a long run
# at nice 19 on a busy machine, where a starved process can pass 20 s on one input).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
seconds=60
seconds_set=0
runs=
jobs=$(nproc 2>/dev/null || echo 1)
build_only=0
targets=
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) [ $# -ge 2 ] || { echo "fuzz.sh: --seconds needs a value" >&2; exit 2; }
		seconds=$2; seconds_set=1; shift 2 ;;
	--seconds=*) seconds=${1#--seconds=}; seconds_set=1; shift ;;
	--runs) [ $# -ge 2 ] || { echo "fuzz.sh: --runs needs a value" >&2; exit 2; }
		runs=$2; shift 2 ;;
	--runs=*) runs=${1#--runs=}; shift ;;
	--jobs) [ $# -ge 2 ] || { echo "fuzz.sh: --jobs needs a value" >&2; exit 2; }
		jobs=$2; shift 2 ;;
	--jobs=*) jobs=${1#--jobs=}; shift ;;
	--build-only) build_only=1; shift ;;
	-h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
	*) targets="$targets $1"; shift ;;
	esac
done
case $seconds in '' | *[!0-9]*) echo "fuzz.sh: --seconds $seconds: expected a whole number" >&2; exit 2 ;; esac
case ${runs:-1} in '' | *[!0-9]*) echo "fuzz.sh: --runs $runs: expected a whole number" >&2; exit 2 ;; esac
case $jobs in '' | *[!0-9]* | 0*) echo "fuzz.sh: --jobs $jobs: expected a positive integer" >&2; exit 2 ;; esac
# --runs N alone: N executions, however long they take; with --seconds too, whichever
# comes first
limit="-max_total_time=$seconds"
if [ -n "$runs" ]; then
	[ "$seconds_set" -eq 1 ] || limit="-max_total_time=0"
	limit="$limit -runs=$runs"
fi
: "${targets:=idx taskrec safetensors manifest rdb tokens}"

if [ -z "${CLANG:-}" ]; then
	if command -v clang-14 >/dev/null 2>&1; then CLANG=clang-14; else CLANG=clang; fi
fi
command -v "$CLANG" >/dev/null 2>&1 || {
	echo "fuzz.sh: $CLANG not found (Debian: apt-get install clang-14 libclang-rt-14-dev)" >&2
	exit 2
}
build=${SF_FUZZ_BUILD:-$top/fuzz-build}
mkdir -p "$build" || exit 2

CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 -I$top -I$top/include"

# target -> its sources (besides fuzz/fuzz_<target>.c), libraries, -max_len
sources() {
	case $1 in
	idx) echo "data/idx.c common/error.c" ;;
	taskrec) echo "trace/taskrec.c trace/event.c trace/report.c trace/replay.c trace/svg.c trace/plot.c trace/files.c trace/write.c common/error.c" ;;
	safetensors) echo "io/st_header.c io/fileio.c common/error.c" ;;
	manifest) echo "io/manifest.c common/error.c" ;;
	rdb) echo "tools/rdb.c" ;;
	tokens) echo "data/tokens.c data/vocab.c data/read.c common/error.c" ;;
	*) return 1 ;;
	esac
}
libs() {
	case $1 in
	idx) echo "-lz -lpthread" ;;
	taskrec) echo "-lm" ;;
	safetensors) echo "-ljansson -lz" ;;
	manifest) echo "-ljansson" ;;
	rdb) echo "-lz" ;;
	esac
}
max_len() {
	case $1 in
	idx) echo 8192 ;;     # two headers (16 + 8 bytes) and small images, or gzip of them
	taskrec) echo 16384 ;; # a few dozen records
	safetensors) echo 4096 ;; # a header of a few tensors and their data
	manifest) echo 4096 ;;    # a manifest of a few units and files
	rdb) echo 8192 ;;      # an index and a few small objects
	tokens) echo 4096 ;;   # an llm.c header (1024 bytes) and some ids or table entries
	esac
}

for t in $targets; do
	sources "$t" >/dev/null || { echo "fuzz.sh: unknown target $t (idx, taskrec, safetensors, manifest, rdb, tokens)" >&2; exit 2; }
done

# the targets' builds and runs, $jobs at a time
. "$top/scripts/lanes.sh"

# build_one TARGET: its binary, the compiler's output in fuzz_TARGET.build.log, the
# status in fuzz_TARGET.build.rc
build_one() {
	files="$top/fuzz/fuzz_$1.c"
	for s in $(sources "$1"); do files="$files $top/$s"; done
	# shellcheck disable=SC2086
	$CLANG $CFLAGS -o "$build/fuzz_$1" $files $(libs "$1") >"$build/fuzz_$1.build.log" 2>&1
	echo $? >"$build/fuzz_$1.build.rc"
}
lanes "$jobs" build_one $targets || exit 2
for t in $targets; do
	echo "== build fuzz_$t"
	[ "$(cat "$build/fuzz_$t.build.rc" 2>/dev/null)" = 0 ] || {
		cat "$build/fuzz_$t.build.log"
		echo "fuzz.sh: cannot build fuzz_$t" >&2
		exit 2
	}
done
[ "$build_only" -eq 1 ] && exit 0

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# run_one TARGET: fuzzes it; what to print in fuzz_TARGET.report, "ok" or "FAIL" in
# fuzz_TARGET.rc
run_one() {
	t=$1
	corpus="$build/corpus/$t"
	art="$build/artifacts/$t"
	mkdir -p "$corpus" "$art"
	{
		echo "== fuzz_$t: $limit (max_len $(max_len "$t"))"
		# shellcheck disable=SC2086
		"$build/fuzz_$t" $limit -max_len="$(max_len "$t")" -timeout=20 \
			-rss_limit_mb=2048 -malloc_limit_mb=1024 -use_value_profile=1 -print_final_stats=1 \
			-artifact_prefix="$art/" ${SF_FUZZ_FLAGS:-} \
			"$corpus" "$top/fuzz/corpus/$t" >"$build/fuzz_$t.log" 2>&1
		rc=$?
		grep -a -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE" "$build/fuzz_$t.log" | sed 's/^/   /'
		if [ $rc -ne 0 ]; then
			repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$build/fuzz_$t.log" | tail -1)
			echo "FAIL fuzz_$t (exit $rc); the end of its log ($build/fuzz_$t.log):"
			grep -a -v "^#[0-9]" "$build/fuzz_$t.log" | tail -40 | sed 's/^/   /'
			echo "reproducer: ${repro:-none written}"
			[ -n "$repro" ] && echo "replay: $build/fuzz_$t $repro"
			echo FAIL >"$build/fuzz_$t.rc"
		else
			echo "ok fuzz_$t: no crash ($limit)"
			echo ok >"$build/fuzz_$t.rc"
		fi
	} >"$build/fuzz_$t.report"
}
rm -f "$build"/fuzz_*.rc
lanes "$jobs" run_one $targets || exit 2
failed=
for t in $targets; do
	cat "$build/fuzz_$t.report" 2>/dev/null
	[ "$(cat "$build/fuzz_$t.rc" 2>/dev/null)" = ok ] || failed="$failed $t"
done
if [ -n "$failed" ]; then
	echo "fuzz.sh: crashes in:$failed"
	exit 1
fi
echo "fuzz.sh: every target ran clean"
