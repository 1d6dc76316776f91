#!/bin/sh
# mutants_apply.sh — every planted bug of tests/mutants/ (and of tests/mutants/gpu/,
# which gpu-bundle.sh builds for gpu-check's flash stage, and tests/mutants/sim/, the
# simulation build's, planted by hand there) still applies to this tree,
# so that CI's daily share (scripts/mutants.sh --rotate) never meets a stale patch:
# per patch, its preamble names the bug ("Mutant: ...") and tests that exist
# ("Killed-by: ...", programs or scripts of tests/), and `git apply --check` accepts
# its diff against the working tree. Whether each mutant is killed is
# scripts/mutants.sh's job (it builds; this only reads). Skipped outside a git
# checkout (a release tarball).
. "$(dirname "$0")/lib.sh"
command -v git >/dev/null 2>&1 || skip_all "git is not installed"
(cd "$top_srcdir" && git rev-parse --show-toplevel >/dev/null 2>&1) ||
	skip_all "$top_srcdir is not a git checkout"
set --
for p in "$top_srcdir"/tests/mutants/*.patch "$top_srcdir"/tests/mutants/gpu/*.patch \
	"$top_srcdir"/tests/mutants/sim/*.patch; do
	[ -e "$p" ] && set -- "$@" "$p" # a glob that matched nothing stays as written
done
[ $# -gt 0 ] || skip_all "no patch in tests/mutants/"
plan $#
for p in "$@"; do
	name=$(basename "$p" .patch)
	case $p in */gpu/*) name=gpu/$name ;; */sim/*) name=sim/$name ;; esac
	what=$(sed -n '1s/^Mutant: //p' "$p")
	tests=$(sed -n '2s/^Killed-by: //p' "$p")
	missing=
	for t in $tests; do
		[ -e "$top_srcdir/$t" ] || [ -e "$top_srcdir/$t.c" ] || [ -e "$top_srcdir/$t.cu" ] ||
			missing="$missing $t"
	done
	(cd "$top_srcdir" && git apply --check "$p") >"$tmp/apply.err" 2>&1
	st=$?
	[ -n "$what" ] && [ -n "$tests" ] && [ -z "$missing" ] && [ $st -eq 0 ]
	ok $? "$name applies (${what:-no Mutant: line}; killed by ${tests:-no Killed-by: line})" || {
		[ -n "$missing" ] && diag "no such test:$missing"
		diag_file "$tmp/apply.err"
	}
done
finish
