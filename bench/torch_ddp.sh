#!/bin/bash
# torch_ddp.sh — run bench/torch_ddp.py (PyTorch DDP / DDP + ZeroRedundancyOptimizer
# on the mlp_synthetic MLP) under Open MPI's mpirun, on this machine or on the
# emulated cluster of scripts/cluster.sh.
#
#   bench/torch_ddp.sh [--np N] [--cluster] [--timeout S] -- [torch_ddp.py ARGS...]
#
# Locally:   mpirun [--allow-run-as-root] --oversubscribe -np N --bind-to core
#            -x OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_ddp.py
#            --master-addr 127.0.0.1 --ifname lo ARGS...
# --cluster: scripts/cluster.sh run -np N -x OMP_NUM_THREADS=1 -- /usr/bin/python3
#            bench/torch_ddp.py --master-addr 10.213.0.1 --ifname sf0 ARGS...
#            (one rank per node; the cluster must be up: scripts/cluster.sh up ...)
# ARGS come last, so e.g. --master-port or --ifname given there win.
# Rank 0 prints one JSON line on stdout (see bench/torch_ddp.py).
#
# Exit status: the run's; 1 if python3-torch or mpirun is missing; 2 on bad usage;
# 124 on --timeout.
set -u

prog=torch_ddp.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
PY=/usr/bin/python3
SCRIPT=$here/torch_ddp.py
CLUSTER=$top/scripts/cluster.sh
CLUSTER_MASTER=10.213.0.1

usage() {
	cat <<EOF
usage: $prog [--np N] [--cluster] [--timeout S] -- [torch_ddp.py ARGS...]

Runs bench/torch_ddp.py on N ranks (default 2) with mpirun: on this machine
(gloo over lo, ranks bound to cores), or with --cluster on the emulated cluster
of scripts/cluster.sh (one rank per node, gloo over the shaped links; the
cluster must be up). --timeout S: kill the run after S seconds (exit 124).
ARGS go to torch_ddp.py (--mode ddp|zero, --widths, --batch, --steps,
--warmup, --optimizer, ...; '-- --help' lists them).
EOF
}

bad_usage() {
	echo "$prog: error: $*" >&2
	usage >&2
	exit 2
}

np=2
cluster=0
limit=
while [ $# -gt 0 ]; do
	case $1 in
	--np | -np | -n | --timeout)
		[ $# -ge 2 ] || bad_usage "$1 needs a value"
		case $2 in
		'' | *[!0-9]* | 0*) bad_usage "$1 \"$2\" is invalid: expected a positive integer" ;;
		esac
		if [ "$1" = --timeout ]; then limit=$2; else np=$2; fi
		shift 2
		;;
	--cluster) cluster=1; shift ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	*) bad_usage "unknown option \"$1\" (torch_ddp.py's options go after '--')" ;;
	esac
done

if [ ! -x "$PY" ]; then
	echo "$prog: error: $PY not found; install Debian's python3 and python3-torch (apt-get install -y python3-torch)" >&2
	exit 1
fi
if ! "$PY" -c 'import torch, torch.distributed as d; assert d.is_available() and d.is_gloo_available()' 2>/dev/null; then
	echo "$prog: error: $PY cannot import torch with gloo; install Debian's python3-torch (apt-get install -y python3-torch)" >&2
	exit 1
fi
command -v mpirun >/dev/null 2>&1 || {
	echo "$prog: error: mpirun not found; install Debian's openmpi-bin (apt-get install -y openmpi-bin)" >&2
	exit 1
}

if [ "$cluster" -eq 1 ]; then
	tmo=()
	[ -n "$limit" ] && tmo=(--timeout "$limit")
	cmd=("$CLUSTER" run -np "$np" "${tmo[@]}" -x OMP_NUM_THREADS=1 --
		"$PY" "$SCRIPT" --master-addr "$CLUSTER_MASTER" --ifname sf0 "$@")
	echo "+ ${cmd[*]}" >&2
	"${cmd[@]}"
	exit $?
fi

root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
# More ranks than cores: let them share cores rather than fail to bind.
bind=core
cores=$(nproc 2>/dev/null || echo 1)
[ "$np" -gt "$cores" ] && bind=core:overload-allowed
tmo=()
[ -n "$limit" ] && tmo=(timeout -k 10 "$limit")
cmd=(mpirun "${root[@]}" --oversubscribe -np "$np" --bind-to "$bind" -x OMP_NUM_THREADS=1
	"$PY" "$SCRIPT" --master-addr 127.0.0.1 --ifname lo "$@")
echo "+ ${tmo[*]} ${cmd[*]}" >&2
"${tmo[@]}" "${cmd[@]}" </dev/null
rc=$?
if [ -n "$limit" ] && { [ $rc -eq 124 ] || [ $rc -eq 137 ]; }; then
	echo "$prog: error: TIMEOUT: the run did not finish within $limit s" >&2
	exit 124
fi
exit $rc
