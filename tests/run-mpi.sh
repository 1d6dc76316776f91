#!/bin/sh
# run-mpi.sh — run an MPI program the way every test does, with a time limit.
#
#   run-mpi.sh NP program [args...]
#
# A hang is the typical failure of collective code (ranks disagreeing on the order of
# collectives), so every multi-rank run goes through here: mpirun under `timeout`
# (SF_TEST_TIMEOUT seconds, default 180), and a timeout is reported as such instead
# of blocking `make check`. Options: --oversubscribe (tests run more ranks than this
# machine has cores), --allow-run-as-root when uid 0 (containers), --bind-to core
# only if every rank gets its own core, else --bind-to none (binding oversubscribed
# ranks to cores would stack them); SF_TEST_BIND=none|core overrides (a GPU rank
# runs a CUDA driver thread, a comm worker and NCCL's proxy beside its CPU workers:
# scripts/gpu-check.sh runs unbound). SHARDFLOW_* and STARPU_* variables are exported
# to the ranks explicitly (-x), so they also reach ranks on other hosts.
#
# Exit status: the program's (as mpirun reports it), 124 on timeout, 2 on bad usage.

usage() {
	echo "usage: run-mpi.sh NP program [args...]" >&2
	exit 2
}

[ $# -ge 2 ] || usage
np=$1
shift
case $np in
'' | *[!0-9]* | 0*) echo "run-mpi.sh: NP \"$np\" is invalid: expected a positive integer" >&2; usage ;;
esac

limit=${SF_TEST_TIMEOUT:-180}
case $limit in
'' | *[!0-9]* | 0*) echo "run-mpi.sh: SF_TEST_TIMEOUT=\"$limit\" is invalid: expected a positive number of seconds" >&2; exit 2 ;;
esac

MPIRUN=${MPIRUN:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "run-mpi.sh: $MPIRUN not found (install openmpi-bin)" >&2; exit 2; }
command -v timeout >/dev/null 2>&1 || { echo "run-mpi.sh: timeout not found (coreutils)" >&2; exit 2; }

cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
case ${SF_TEST_BIND:-auto} in
auto) [ "$np" -le "$cores" ] && bindkind=bind-core || bindkind=bind-none ;;
core) bindkind=bind-core ;;
none) bindkind=bind-none ;;
*) echo "run-mpi.sh: SF_TEST_BIND=\"$SF_TEST_BIND\" is invalid: expected auto, core or none" >&2; exit 2 ;;
esac
bind="--bind-to ${bindkind#bind-}"

# StarPU keeps a bus calibration in $STARPU_HOME/.starpu/sampling/bus and redoes it,
# rewriting the files in place, whenever the number of CPUs it sees changes: a rank
# bound to a core sees 1, an unbound one sees them all. Runs of both kinds alternate
# in the test suite (and overlap under make -j, or with other jobs on the machine),
# and a rank that reads the files while another rewrites them aborts in
# check_bus_affinity_file. So when SF_TEST_STARPU_HOME is set (tests/lib.sh sets it
# unless STARPU_HOME was given), each kind of binding gets a StarPU home of its own.
# Likewise the number of CUDA devices: a run with CUDA_VISIBLE_DEVICES="" (a CPU
# reference on a GPU machine) would make the next GPU run recalibrate, so it gets a
# home of its own.
home=$bindkind
[ -n "${CUDA_VISIBLE_DEVICES+set}" ] && [ -z "$CUDA_VISIBLE_DEVICES" ] && home=$home-nocuda
if [ -n "${SF_TEST_STARPU_HOME:-}" ]; then
	STARPU_HOME="$SF_TEST_STARPU_HOME/$home"
	mkdir -p "$STARPU_HOME" || exit 2
	export STARPU_HOME
fi

root=
[ "$(id -u)" -eq 0 ] && root=--allow-run-as-root

# -x VAR for each SHARDFLOW_*/STARPU_* variable set (names are [A-Z0-9_] only, so
# word splitting below is safe).
exports=
for v in $(env | sed -n -e 's/^\(SHARDFLOW_[A-Za-z0-9_]*\)=.*/\1/p' \
	-e 's/^\(STARPU_[A-Za-z0-9_]*\)=.*/\1/p'); do
	exports="$exports -x $v"
done

# Open MPI 4 creates its session directory /tmp/ompi.<host>.<uid> racily: two mpirun
# starting at once (make -j check) can fail with "A call to mkdir was unable to create
# the desired directory ... File exists" (open-mpi/ompi#8510). Each run gets a base
# directory of its own.
session=$(mktemp -d "${TMPDIR:-/tmp}/sf-mpirun.XXXXXX") || exit 2
trap 'rm -rf "$session"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# -k: if mpirun ignores SIGTERM (ranks stuck in a collective), SIGKILL 10 s later.
# shellcheck disable=SC2086
timeout -k 10 "$limit" "$MPIRUN" -np "$np" --oversubscribe $root $bind \
	--mca orte_tmpdir_base "$session" $exports "$@"
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	echo "run-mpi.sh: TIMEOUT: '$*' on $np ranks did not finish within $limit s (SF_TEST_TIMEOUT)" >&2
	exit 124
fi
exit $rc
