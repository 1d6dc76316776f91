#!/bin/bash
# build-sim.sh — the simulation build in one command (docs/scale.md): StarPU for
# SimGrid (scripts/build-starpu.sh --with-simgrid, skipped when its prefix holds it),
# a copy of this checkout (scripts/copy-tree.sh: the tracked files and the untracked
# ones git does not ignore; autoconf refuses an out-of-tree build of a source tree the
# quick start configured), configured with --enable-simulation and built, and with
# --install installed.
#
#   scripts/build-sim.sh [--dir DIR] [--prefix DIR] [--install DIR] [--jobs N]
#
# --dir DIR      the copy and its build (default: shardflow-sim beside this checkout);
#                a second run updates the copy and rebuilds what changed
# --prefix DIR   the simulation StarPU (default /opt/shardflow-starpu-simgrid)
# --install DIR  configure with --prefix=DIR and make install: DIR/bin/shardflow-sim,
#                its job and DIR/share/shardflow/calibrations (the build tree is then
#                not needed to run it)
# --jobs N       make's parallel jobs (default: the CPUs)
#
# Then: DIR/tools/shardflow-sim --model gpt2 --nodes 2 --gpus-per-node 8 (docs/scale.md),
# or the installed one, and `make -C DIR check` runs the simulation's tests. Exit 0; 1
# when a step fails, naming its log; 2 on bad usage.
set -u
prog=build-sim.sh
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$(dirname "$top")/shardflow-sim
prefix=/opt/shardflow-starpu-simgrid
jobs=$(nproc 2>/dev/null || echo 2)
install=
usage() {
	sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}
while [ $# -gt 0 ]; do
	case $1 in
	--dir | --prefix | --install | --jobs) [ $# -ge 2 ] || { echo "$prog: $1 needs a value" >&2; exit 2; } ;;
	esac
	case $1 in
	--dir) dir=$2; shift 2 ;;
	--prefix) prefix=$2; shift 2 ;;
	--install) install=$2; shift 2 ;;
	--jobs)
		case $2 in '' | *[!0-9]* | 0*) echo "$prog: --jobs \"$2\": a positive number" >&2; exit 2 ;; esac
		jobs=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "$prog: unknown option \"$1\" (accepted: --dir DIR, --prefix DIR, --install DIR, --jobs N)" >&2; exit 2 ;;
	esac
done
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac
case $install in '' | /*) ;; *) install=$(pwd)/$install ;; esac
case $dir/ in "$top"/*) echo "$prog: --dir $dir is inside this checkout: give one beside it" >&2; exit 2 ;; esac
say() { echo "$prog: $*"; }
fail() {
	tail -20 "$2" 2>/dev/null
	say "$1 failed (log: $2)"
	exit 1
}
mkdir -p "$dir" || { say "cannot create $dir"; exit 1; }
log=$dir.build-sim.log
: >"$log" || { say "cannot write $log"; exit 1; }

say "1. StarPU for SimGrid in $prefix"
"$top/scripts/build-starpu.sh" --with-simgrid --prefix "$prefix" >>"$log" 2>&1 ||
	fail "building StarPU" "$log"
say "2. the sources, copied to $dir"
bash "$top/scripts/copy-tree.sh" "$top" "$dir" >>"$log" 2>&1 || fail "copying the checkout" "$log"
cfg="--with-starpu=$prefix --enable-simulation --without-cuda --without-dnnl${install:+ --prefix=$install}"
if [ ! -f "$dir/Makefile" ] || [ "$(cat "$dir/.build-sim-configured" 2>/dev/null)" != "$cfg" ]; then
	say "3. configure $cfg"
	# shellcheck disable=SC2086
	(cd "$dir" && ./autogen.sh && ./configure $cfg) >>"$log" 2>&1 || fail "configure" "$log"
	echo "$cfg" >"$dir/.build-sim-configured"
else
	say "3. configured already"
fi
grep -h "^configure: StarPU:" "$log" | tail -1
say "4. make -j$jobs"
(cd "$dir" && sh scripts/families.sh . && make -j"$jobs") >>"$log" 2>&1 || fail "make" "$log"
sim=$dir/tools/shardflow-sim
if [ -n "$install" ]; then
	say "5. make install into $install"
	(cd "$dir" && make install) >>"$log" 2>&1 || fail "make install" "$log"
	sim=$install/bin/shardflow-sim
fi
say "done: $sim --model gpt2 --nodes 2 --gpus-per-node 8; make -C $dir check runs the simulation's tests (log: $log)"
