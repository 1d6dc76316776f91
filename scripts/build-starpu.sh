#!/bin/sh
# build-starpu.sh — builds StarPU 1.3.10 from Debian's own source package into a
# prefix of your choice, with what Debian's binary package lacks: FxT traces (on by
# default), more than 4 CPU workers, optionally blocking drivers (idle workers
# sleep instead of spinning) and optionally CUDA, or SimGrid's simulated time.
#
#   scripts/build-starpu.sh [--prefix DIR] [--no-fxt] [--enable-blocking-drivers]
#                           [--with-cuda[=DIR] | --with-simgrid] [--maxcpus N]
#                           [--jobs N] [--workdir DIR]
#
# --with-simgrid builds StarPU for simulation (Debian's libsimgrid-dev 3.32): tasks
# take their performance model's time instead of running, and with SMPI (smpicc,
# smpirun) many MPI ranks run inside one process. SMPI's per-rank copies of global
# variables need static libraries: this StarPU is built --disable-shared. It is sized
# for a simulated rank (2 memory nodes, --maxcpus 4 unless given, one slot per kind of
# accelerator), which keeps many simulated ranks' memory small. Its default prefix is
# /opt/starpu-1.3.10-simgrid; tools/shardflow-sim (docs/scale.md) uses it.
#
# --with-cuda builds the CUDA driver against the toolkit in DIR (default
# /usr/local/cuda), up to 16 devices, with scripts/patches/starpu-1.3.10-cuda13.patch
# applied (StarPU 1.3.10 predates CUDA 13). Its default prefix is
# /opt/starpu-1.3.10-cuda. Without a GPU that StarPU starts with CPU workers only.
#
# --with-simgrid applies scripts/patches/starpu-1.3.10-simgrid-coop-mutex.patch
# (StarPU's mutexes and conditions become cooperative ones that cost no SimGrid call
# when free) and starpu-1.3.10-simgrid-fetch-cost.patch (a task's 1 us a buffer of
# simulated fetching cost in one sleep): the same simulated times, a fraction of the
# simulation's own time.
#
# --enable-blocking-drivers (without SimGrid) applies
# scripts/patches/starpu-1.3.10-last-worker-sleeps.patch: the last awake worker sleeps
# like the others instead of spinning (STARPU_LAST_WORKER_AWAKE=1 restores StarPU's
# spin).
#
# Then build shardflow against it:  ./configure --with-starpu=DIR
# (the library and programs get an rpath to DIR/lib; no LD_LIBRARY_PATH needed).
#
# Idempotent: the prefix records the options (and the patches' hash) it was built
# with (DIR/share/shardflow-starpu.stamp); a second run with the same ones does
# nothing. Needs root (or sudo) once, to add a deb-src entry and the build
# dependencies.
set -eu

prefix=
fxt=yes
cuda=
simgrid=no
blocking=no
maxcpus=default
jobs=$(nproc 2>/dev/null || echo 2)
workdir=${TMPDIR:-/tmp}/shardflow-starpu-build

usage() {
	sed -n '2,/^set -eu/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}

while [ $# -gt 0 ]; do
	case $1 in
	--prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
	--prefix=*) prefix=${1#*=}; shift ;;
	--no-fxt) fxt=no; shift ;;
	--with-fxt) fxt=yes; shift ;;
	--enable-blocking-drivers) blocking=yes; shift ;;
	--maxcpus) [ $# -ge 2 ] || usage; maxcpus=$2; shift 2 ;;
	--jobs) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
	--workdir) [ $# -ge 2 ] || usage; workdir=$2; shift 2 ;;
	--with-cuda) cuda=/usr/local/cuda; shift ;;
	--with-cuda=*) cuda=${1#*=}; shift ;;
	--with-simgrid) simgrid=yes; shift ;;
	-h | --help) usage 0 ;;
	*) echo "build-starpu.sh: unknown option \"$1\"" >&2; usage ;;
	esac
done
# FxT's static library is not position-independent, and SMPI's programs are shared
# objects: a simulation StarPU has no FxT (shardflow-sim reports from StarPU's clock)
[ "$simgrid" = yes ] && fxt=no
# a simulated rank runs 2 CPU workers (shardflow-sim's STARPU_NCPU)
[ "$maxcpus" != default ] || { [ "$simgrid" = yes ] && maxcpus=4 || maxcpus=64; }
case $maxcpus in '' | *[!0-9]*) echo "build-starpu.sh: --maxcpus \"$maxcpus\" is not a number" >&2; exit 2 ;; esac
case $jobs in '' | *[!0-9]* | 0) echo "build-starpu.sh: --jobs \"$jobs\" is not a positive number" >&2; exit 2 ;; esac
if [ -n "$cuda" ] && [ "$simgrid" = yes ]; then
	echo "build-starpu.sh: --with-cuda and --with-simgrid are separate builds (a simulated GPU needs no toolkit): pick one" >&2
	exit 2
fi
if [ -n "$cuda" ]; then
	case $cuda in /*) ;; *) cuda=$(pwd)/$cuda ;; esac
	for f in bin/nvcc include/cuda_runtime_api.h include/cublas_v2.h; do
		[ -e "$cuda/$f" ] || { echo "build-starpu.sh: --with-cuda=$cuda: no $cuda/$f (a CUDA toolkit is needed)" >&2; exit 2; }
	done
fi
if [ -z "$prefix" ]; then
	if [ -n "$cuda" ]; then
		prefix=/opt/starpu-1.3.10-cuda
	elif [ "$simgrid" = yes ]; then
		prefix=/opt/starpu-1.3.10-simgrid
	else
		prefix=/opt/starpu-1.3.10
	fi
fi
case $prefix in /*) ;; *) prefix=$(pwd)/$prefix ;; esac
patchdir=$(cd "$(dirname "$0")" && pwd)/patches
# the patches this build applies, in order
patches=
[ -n "$cuda" ] && patches="$patches $patchdir/starpu-1.3.10-cuda13.patch"
[ "$blocking" = yes ] && [ "$simgrid" = no ] && patches="$patches $patchdir/starpu-1.3.10-last-worker-sleeps.patch"
[ "$simgrid" = yes ] && patches="$patches $patchdir/starpu-1.3.10-simgrid-coop-mutex.patch $patchdir/starpu-1.3.10-simgrid-fetch-cost.patch"

configure_options() {
	echo "--prefix=$prefix --enable-maxcpus=$maxcpus --disable-starpufft --disable-build-doc"
	echo "--disable-build-examples --disable-build-tests --disable-opencl"
	if [ -n "$cuda" ]; then
		echo "--enable-cuda --with-cuda-dir=$cuda --enable-maxcudadev=16"
	else
		echo "--disable-cuda"
	fi
	echo "--disable-mpi-master-slave --disable-socl --disable-starpupy"
	[ "$simgrid" = yes ] && echo "--enable-simgrid --disable-shared --with-pic --enable-mpi"
	# a simulated rank is one memory node and a few CPU workers: StarPU's tables sized
	# for 32 nodes and 144 workers (its SimGrid defaults, room for virtual GPUs) were
	# most of a simulated rank's memory and a third of its time (docs/scale.md)
	[ "$simgrid" = yes ] && echo "--enable-maxnodes=2 --enable-maxcudadev=1 --enable-maxopencldev=1 --enable-maxmicthreads=1"
	[ "$fxt" = yes ] && echo "--with-fxt"
	[ "$blocking" = yes ] && echo "--enable-blocking-drivers"
	true
}
opts=$(configure_options | tr '\n' ' ' | sed 's/ *$//')
stamp=$prefix/share/shardflow-starpu.stamp
# the stamp holds the options and the patches' hash: a changed patch rebuilds the
# prefix (and re-patches the source copy)
stamped=$opts
patchsum=
if [ -n "$patches" ]; then
	# shellcheck disable=SC2086
	patchsum=$(cat $patches | sha256sum | cut -d' ' -f1)
	stamped="$opts patch-sha256=$patchsum"
fi

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamped" ] && [ -f "$prefix/lib/pkgconfig/starpu-1.3.pc" ]; then
	echo "build-starpu.sh: $prefix already holds StarPU built with: $stamped"
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi

say() { echo "build-starpu.sh: $*"; }

# 1. a deb-src entry for bookworm, so that apt-get source finds starpu
if ! grep -rqs "^Types:.*deb-src" /etc/apt/sources.list.d/ && ! grep -qs "^deb-src" /etc/apt/sources.list; then
	say "adding a deb-src entry for bookworm (/etc/apt/sources.list.d/shardflow-src.sources)"
	$SUDO sh -c 'cat > /etc/apt/sources.list.d/shardflow-src.sources' <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

# 2. build dependencies (the subset our configure options need)
deps="dpkg-dev build-essential pkg-config libhwloc-dev libopenmpi-dev openmpi-bin"
[ "$fxt" = yes ] && deps="$deps libfxt-dev"
[ "$simgrid" = yes ] && deps="$deps libsimgrid-dev libboost-dev xsltproc"
say "installing build dependencies: $deps"
$SUDO apt-get update >/dev/null
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y $deps >/dev/null

# 3. Debian's source
mkdir -p "$workdir"
cd "$workdir"
if [ ! -d starpu-src ]; then
	say "fetching Debian's source package into $workdir"
	rm -rf dl && mkdir dl && (cd dl && apt-get source --download-only starpu >/dev/null)
	dsc=$(ls dl/starpu_*.dsc | head -1)
	dpkg-source -x "$dsc" starpu-src >/dev/null
fi
version=$(sed -n 's/^Version: //p' dl/starpu_*.dsc 2>/dev/null | head -1)
say "Debian source package starpu ${version:-?} in $workdir/starpu-src"
src=starpu-src build=build
[ "$simgrid" = yes ] && build=build-simgrid
if [ -n "$patches" ]; then
	# a patched build patches a copy, so that the builds can share the work directory
	src=starpu-src-blocking
	[ -n "$cuda" ] && src=starpu-src-cuda build=build-cuda
	[ "$simgrid" = yes ] && src=starpu-src-simgrid
	if [ "$(cat "$src/.shardflow-patched" 2>/dev/null)" != "$patchsum" ]; then
		rm -rf "$src" && cp -a starpu-src "$src"
		for p in $patches; do
			say "applying $p"
			(cd "$src" && patch -p1 --quiet <"$p") || { say "$(basename "$p") does not apply to $workdir/$src"; exit 1; }
		done
		echo "$patchsum" >"$src/.shardflow-patched"
	fi
fi

# 4. configure, build, install
start=$(date +%s)
rm -rf "$build" && mkdir "$build" && cd "$build"
say "configure $opts"
# shellcheck disable=SC2086
PATH=${cuda:+$cuda/bin:}$PATH ../$src/configure $opts >configure.log 2>&1 || { tail -30 configure.log; say "configure failed (log: $workdir/$build/configure.log)"; exit 1; }
if [ "$fxt" = yes ] && ! grep -q "define STARPU_USE_FXT 1" src/common/config.h 2>/dev/null && ! grep -q "define STARPU_USE_FXT 1" include/starpu_config.h 2>/dev/null; then
	say "configure did not enable FxT (is libfxt-dev installed?)"
	exit 1
fi
if [ "$simgrid" = yes ] && ! grep -q "define STARPU_SIMGRID 1" include/starpu_config.h 2>/dev/null; then
	say "configure did not enable SimGrid (is libsimgrid-dev installed? log: $workdir/$build/configure.log)"
	exit 1
fi
if [ "$simgrid" = yes ] && ! grep -q "^STARPU_SMPIRUN\|smpirun" mpi/tools/Makefile 2>/dev/null && [ ! -e tools/starpu_smpirun ]; then
	say "configure did not set up StarPU-MPI with SMPI (log: $workdir/$build/configure.log)"
	exit 1
fi
if [ -n "$cuda" ] && ! grep -q "define STARPU_USE_CUDA 1" include/starpu_config.h 2>/dev/null; then
	say "configure did not enable CUDA with $cuda (log: $workdir/$build/configure.log)"
	exit 1
fi
say "make -j$jobs (a few minutes${cuda:+; about 4-5 with CUDA on 2 cores})"
PATH=${cuda:+$cuda/bin:}$PATH make -j"$jobs" >make.log 2>&1 || { tail -30 make.log; say "make failed (log: $workdir/$build/make.log)"; exit 1; }
say "installing into $prefix"
$SUDO mkdir -p "$prefix"
$SUDO make install >install.log 2>&1 || { tail -30 install.log; say "make install failed"; exit 1; }
$SUDO mkdir -p "$prefix/share"
echo "$stamped" | $SUDO tee "$stamp" >/dev/null
took=$(($(date +%s) - start))
say "built and installed in $((took / 60)) min $((took % 60)) s"
if [ "$simgrid" = yes ]; then
	say "done: scripts/build-sim.sh --prefix $prefix builds shardflow's simulation against it (docs/scale.md)"
elif [ -n "$cuda" ]; then
	say "done: ./configure --with-starpu=$prefix --with-cuda=$cuda --with-nccl (or scripts/gpu-bundle.sh --starpu-prefix $prefix)"
else
	say "done: ./configure --with-starpu=$prefix"
fi
[ "$fxt" = yes ] && say "FxT tools: $prefix/bin/starpu_fxt_tool"
exit 0
