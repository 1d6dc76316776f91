#!/bin/sh
# idle_spin.sh — an idle rank burns no CPU with the project's StarPU.
#
# StarPU's blocking drivers let idle workers sleep, but keep the last awake worker of a
# context spinning; scripts/build-starpu.sh --enable-blocking-drivers patches that out
# (scripts/patches/starpu-1.3.10-last-worker-sleeps.patch), and
# STARPU_LAST_WORKER_AWAKE=1 brings the spin back. tests/idle_probe sleeps 1 s after
# sf_init with nothing submitted and reports the process's CPU over that second:
#  - by default, under 150 ms (measured here: 0-2 ms);
#  - with STARPU_LAST_WORKER_AWAKE=1, over 250 ms (a spinning worker: ~1000 ms alone,
#    at least a third of a core beside two other busy tests on 2 cores): the probe
#    sees a spin when there is one, so the first point can fail.
# Skipped with a StarPU that is not the patched one (Debian's spins in every idle
# worker; a prefix without the patch's stamp).
. "$(dirname "$0")/lib.sh"
. "$top_builddir/tests/config.sh"
PROBE="$top_builddir/tests/idle_probe"
require_progs "$PROBE"
stamp=$(dirname "$STARPU_BINDIR")/share/shardflow-starpu.stamp
grep -q -- "--enable-blocking-drivers" "$stamp" 2>/dev/null && grep -q "patch-sha256=" "$stamp" ||
	skip_all "not the StarPU of scripts/build-starpu.sh --enable-blocking-drivers ($stamp)"

plan 2

cpu_of() { sed -n 's/^idle_ms [0-9]* cpu_ms \([0-9.]*\)$/\1/p' "$1"; }

env -u STARPU_LAST_WORKER_AWAKE STARPU_NCPU=2 "$PROBE" 1000 >"$tmp/sleep.out" 2>&1
a=$(cpu_of "$tmp/sleep.out")
[ -n "$a" ] && awk -v c="$a" 'BEGIN { exit !(c < 150) }'
ok $? "an idle process with 2 workers: ${a:-no} ms of CPU in 1 s (< 150: every worker sleeps)" ||
	diag_file "$tmp/sleep.out"

STARPU_LAST_WORKER_AWAKE=1 STARPU_NCPU=2 "$PROBE" 1000 >"$tmp/spin.out" 2>&1
b=$(cpu_of "$tmp/spin.out")
[ -n "$b" ] && awk -v c="$b" 'BEGIN { exit !(c > 250) }'
ok $? "with STARPU_LAST_WORKER_AWAKE=1: ${b:-no} ms of CPU in 1 s (> 250: the last awake worker spins)" ||
	diag_file "$tmp/spin.out"
finish
