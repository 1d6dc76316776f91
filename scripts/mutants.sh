#!/bin/bash
# mutants.sh — mutation testing: each patch in tests/mutants/ plants one plausible bug;
# this applies it to a scratch copy of the tree, rebuilds, runs the tests the patch
# names, and fails if any mutant survives (its tests all pass with the bug in).
#
#   scripts/mutants.sh [--all | --rotate K | NAME...] [--build DIR] [--jobs N]
#                      [--baseline] [--list]
#
# NAME        a mutant by its file name without .patch (tests/mutants/NAME.patch)
# --all       every mutant (the default when no NAME is given)
# --rotate K  K mutants, a different set each day (day of the year, or SF_MUTANT_DAY),
#             cycling through all of them in name order: what CI runs
# --build DIR the scratch copy and its build (default $TMPDIR/shardflow-mutants; kept
#             between runs, so a second run only recompiles what a mutant touches)
# --baseline  first run the selected mutants' tests on the unmutated copy (they must
#             pass, or a kill means nothing); CI's make check already does this
# --list      print the mutants, their bug and their tests, and exit
# SF_MUTANT_CONFIGURE  configure's arguments for the scratch build (default none)
#
# A mutant is a file tests/mutants/NAME.patch: a preamble, then a unified diff from
# the repository root (git diff's a/ b/ paths):
#
#   Mutant: the tied head's gradient overwrites instead of adding
#   Killed-by: tests/tied.sh tests/equivalence.sh
#   (free text: why this bug is plausible, what catches it)
#
#   diff --git a/scheduler/... b/scheduler/...
#
# Killed-by names the programs of `make check TESTS=...` that must catch it. An optional
# "Rotate: no" line keeps a mutant out of --rotate's share (one whose tests only end by
# run-mpi.sh's timeout, several minutes: a hang). A patch
# that no longer applies, or a mutant that does not compile, is an error (keep the
# mutant up to date with the code it mutates). Output: one TAP line per mutant ("ok" =
# killed, naming the tests that failed), then a table; logs in DIR/logs/NAME/.
# Exit 0 when every selected mutant was killed, 1 otherwise, 2 on bad usage.
set -u
prog=mutants.sh
top=$(cd "$(dirname "$0")/.." && pwd)
mdir=$top/tests/mutants
build=${TMPDIR:-/tmp}/shardflow-mutants
jobs=$(nproc 2>/dev/null || echo 2)
mode=all
rotate=0
baseline=no
list=no
names=

usage() {
	sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}
posint() { case $1 in '' | *[!0-9]* | 0*) return 1 ;; esac; return 0; }
while [ $# -gt 0 ]; do
	case $1 in
	--all) mode=all; shift ;;
	--rotate)
		[ $# -ge 2 ] && posint "$2" || { echo "$prog: --rotate needs a positive integer" >&2; exit 2; }
		mode=rotate; rotate=$2; shift 2 ;;
	--build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
	--jobs)
		[ $# -ge 2 ] && posint "$2" || { echo "$prog: --jobs needs a positive integer" >&2; exit 2; }
		jobs=$2; shift 2 ;;
	--baseline) baseline=yes; shift ;;
	--list) list=yes; shift ;;
	-h | --help) usage 0 ;;
	-*) echo "$prog: unknown option \"$1\" (accepted: --all, --rotate K, --build DIR, --jobs N, --baseline, --list, NAME...)" >&2; exit 2 ;;
	*)
		[ -f "$mdir/$1.patch" ] || { echo "$prog: no mutant \"$1\" (no $mdir/$1.patch; --list shows them)" >&2; exit 2; }
		mode=names; names="$names $1"; shift ;;
	esac
done
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
field() { sed -n "s/^$1: *//p" "$2" | head -1; }

all=$(cd "$mdir" 2>/dev/null && ls ./*.patch 2>/dev/null | sed 's|^\./||; s|\.patch$||' | sort)
[ -n "$all" ] || { echo "$prog: no mutants in $mdir" >&2; exit 2; }
for n in $all; do
	if [ -z "$(field Mutant "$mdir/$n.patch")" ] || [ -z "$(field Killed-by "$mdir/$n.patch")" ]; then
		echo "$prog: $mdir/$n.patch lacks its \"Mutant:\" or \"Killed-by:\" line" >&2
		exit 2
	fi
done
if [ "$list" = yes ]; then
	for n in $all; do
		printf '%-32s %s\n%-32s   killed by: %s\n' "$n" "$(field Mutant "$mdir/$n.patch")" "" \
			"$(field Killed-by "$mdir/$n.patch")"
	done
	exit 0
fi
case $mode in
all) sel=$all ;;
names) sel=$names ;;
rotate)
	# a mutant marked "Rotate: no" (its tests end by run-mpi.sh's timeout: a hang, run by
	# name or --all) stays out of the daily share, which CI's time budget holds
	rot=
	for n in $all; do
		[ "$(field Rotate "$mdir/$n.patch")" = "no" ] || rot="$rot $n"
	done
	set -- $rot
	count=$#
	day=${SF_MUTANT_DAY:-$(date +%j | sed 's/^0*//')}
	posint "${day:-0}" || day=0
	[ "$rotate" -gt "$count" ] && rotate=$count
	first=$(((day * rotate) % count))
	sel=
	for i in $(seq 0 $((rotate - 1))); do
		k=$(((first + i) % count + 1))
		sel="$sel ${!k}"
	done
	;;
esac

say() { echo "$prog: $*"; }
t0=$(date +%s)

# --- the scratch copy -----------------------------------------------------------------
src=$build/src
mkdir -p "$src" "$build/logs" || { echo "$prog: cannot create $build" >&2; exit 2; }
# a mutant left applied by an interrupted run is taken out first
if [ -f "$build/applied" ]; then
	a=$(cat "$build/applied")
	(cd "$src" && patch -p1 -R -s -f <"$mdir/$a.patch") >/dev/null 2>&1
	rm -f "$build/applied"
fi
# The tree is copied file by file, and only the files whose content changed are
# replaced (with a new time): tar would give a file back its old time, older than the
# objects a mutant of it left, and make would keep those.
rm -rf "$build/incoming" && mkdir -p "$build/incoming" || exit 2
bash "$top/scripts/copy-tree.sh" "$top" "$build/incoming" ||
	{ echo "$prog: copying the tree failed" >&2; exit 2; }
(cd "$build/incoming" && find . -type f) | while IFS= read -r f; do
	if ! cmp -s "$build/incoming/$f" "$src/$f"; then
		mkdir -p "$(dirname "$src/$f")" && cp "$build/incoming/$f" "$src/$f" || exit 2
	fi
done || { echo "$prog: copying the tree into $src failed" >&2; exit 2; }
rm -rf "$build/incoming"
if [ ! -f "$src/Makefile" ] || [ "$(cat "$build/configured" 2>/dev/null)" != "${SF_MUTANT_CONFIGURE:-}" ]; then
	say "configuring the scratch copy in $src"
	# shellcheck disable=SC2086
	(cd "$src" && ./autogen.sh && ./configure ${SF_MUTANT_CONFIGURE:-}) >"$build/configure.log" 2>&1 ||
		{ tail -20 "$build/configure.log"; echo "$prog: configure failed ($build/configure.log)" >&2; exit 2; }
	echo "${SF_MUTANT_CONFIGURE:-}" >"$build/configured"
fi
say "building the scratch copy"
# the families' lists first: a tree configured before they existed has no rule for them
(cd "$src" && sh scripts/families.sh . && make -j"$jobs") >"$build/build.log" 2>&1 ||
	{ tail -20 "$build/build.log"; echo "$prog: the unmutated copy does not build ($build/build.log)" >&2; exit 2; }

# run_tests LOGDIR TESTS...: make check on those tests; prints the failed ones
run_tests() {
	local logdir=$1
	shift
	local t0
	for t0 in "$@"; do rm -f "$src/${t0%.sh}.trs" "$src/${t0%.sh}.log"; done
	(cd "$src" && make -j1 check TESTS="$*") >"$logdir/check.log" 2>&1
	local st=$?
	local failed= t base
	for t in "$@"; do
		base=${t%.sh} # automake's names: tests/x.sh -> tests/x.log, tests/x.trs
		if [ ! -f "$src/$base.trs" ]; then
			failed="$failed $(basename "$t")(no-result)"
		elif grep -q -E '^:test-result: (FAIL|ERROR|XPASS)' "$src/$base.trs"; then
			failed="$failed $(basename "$t")"
		fi
		cp "$src/$base.log" "$logdir/" 2>/dev/null
	done
	[ $st -ne 0 ] && [ -z "$failed" ] && failed=" (make check failed: see check.log)"
	echo "${failed# }"
}

if [ "$baseline" = yes ]; then
	tests=$(for n in $sel; do field Killed-by "$mdir/$n.patch"; done | tr ' ' '\n' | sort -u | tr '\n' ' ')
	say "baseline: $tests on the unmutated copy"
	mkdir -p "$build/logs/baseline"
	# shellcheck disable=SC2086
	f=$(run_tests "$build/logs/baseline" $tests)
	[ -z "$f" ] || { echo "$prog: the baseline fails ($f): kills would mean nothing (logs: $build/logs/baseline)" >&2; exit 1; }
fi

# --- each mutant ------------------------------------------------------------------------
n_sel=$(echo $sel | wc -w)
echo "1..$n_sel"
i=0
survived=0
table=
for n in $sel; do
	i=$((i + 1))
	p=$mdir/$n.patch
	tests=$(field Killed-by "$p")
	logdir=$build/logs/$n
	rm -rf "$logdir" && mkdir -p "$logdir"
	ts=$(date +%s)
	if ! (cd "$src" && patch -p1 --dry-run -s -f <"$p") >"$logdir/patch.log" 2>&1; then
		res="ERROR: the patch no longer applies (update it)"
		echo "not ok $i - $n: $res"
		survived=$((survived + 1))
		table="$table$n|ERROR|patch does not apply|0\n"
		continue
	fi
	(cd "$src" && patch -p1 -s -f <"$p") >>"$logdir/patch.log" 2>&1
	echo "$n" >"$build/applied"
	if ! (cd "$src" && make -j"$jobs") >"$logdir/build.log" 2>&1; then
		res="ERROR: the mutant does not compile ($logdir/build.log)"
		ok=no
	else
		# shellcheck disable=SC2086
		failed=$(run_tests "$logdir" $tests)
		real=$(echo "$failed" | tr ' ' '\n' | grep -v -e '(no-result)' -e '^(make' | tr '\n' ' ')
		if [ -n "${real// /}" ]; then
			res="killed by $failed"; ok=yes
		elif [ -n "$failed" ]; then
			res="ERROR: no test result ($failed; see $logdir/check.log)"; ok=no
		else
			res="SURVIVED $tests"; ok=no
		fi
	fi
	(cd "$src" && patch -p1 -R -s -f <"$p") >>"$logdir/patch.log" 2>&1
	rm -f "$build/applied"
	secs=$(($(date +%s) - ts))
	if [ "$ok" = yes ]; then
		echo "ok $i - $n: $(field Mutant "$p"): $res (${secs} s)"
		table="$table$n|killed|$failed|$secs\n"
	else
		echo "not ok $i - $n: $(field Mutant "$p"): $res (${secs} s)"
		survived=$((survived + 1))
		table="$table$n|${res%% *}|${res#* }|$secs\n"
	fi
done
# the copy left as it was, built (the next run starts from it)
(cd "$src" && make -j"$jobs") >"$build/build.log" 2>&1

echo
printf '| mutant | result | tests that failed | s |\n| --- | --- | --- | --- |\n'
printf "$table" | awk -F'|' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
echo
say "$((n_sel - survived)) of $n_sel mutants killed ($(($(date +%s) - t0)) s; logs in $build/logs)"
[ "$survived" -eq 0 ]
