#!/bin/bash
# copy-tree.sh — copies a checkout's files into a directory: the tracked files and the
# untracked ones git does not ignore, as they are in the working tree (a tracked file
# deleted there is left out), with their modes and times; no build products, no .git.
# What scripts/mutants.sh, scripts/sanitize.sh, scripts/gpu-bundle.sh and
# tests/gpu_bundle_env.sh build or test from.
#
#   scripts/copy-tree.sh SRC DEST
#
# SRC   a git checkout (its top or any folder in it: the whole checkout is copied)
# DEST  created if missing; files already there are overwritten, others left alone
# Exit 0, or 1 with a message naming what failed, 2 on bad usage.
prog=copy-tree.sh
[ $# -eq 2 ] || { echo "usage: $prog SRC DEST" >&2; exit 2; }
top=$(cd "$1" 2>/dev/null && git rev-parse --show-toplevel 2>/dev/null) ||
	{ echo "$prog: \"$1\" is not in a git checkout" >&2; exit 1; }
mkdir -p "$2" || { echo "$prog: cannot create \"$2\"" >&2; exit 1; }
list=$(mktemp) || exit 1
trap 'rm -f "$list"' EXIT
# NUL-separated names; those missing from the working tree dropped (tar would fail)
(cd "$top" && git ls-files -z -c -o --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done) >"$list" ||
	{ echo "$prog: git ls-files in $top failed" >&2; exit 1; }
(cd "$top" && tar --null -T "$list" -cf -) | tar -xf - -C "$2" ||
	{ echo "$prog: copying $top into $2 failed" >&2; exit 1; }
