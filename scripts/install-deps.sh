#!/bin/sh
# install-deps.sh — installs every Debian 12 package shardflow's build, tests and
# examples need, then builds the project's StarPU (StarPU 1.3.10 from Debian's source
# with FxT traces and blocking drivers, scripts/build-starpu.sh) into
# /opt/shardflow-starpu, the StarPU ./configure picks by default. Run as root (or
# through sudo, which it uses when it is not root).
#
#   scripts/install-deps.sh [--no-starpu-build]
#
# --no-starpu-build (or SF_NO_STARPU_BUILD=1): packages only; configure then uses
# Debian's StarPU. SF_STARPU_PREFIX=DIR builds into DIR instead (then
# ./configure --with-starpu=DIR). Idempotent: packages already present are left as they
# are, and a prefix already holding that StarPU is not rebuilt (about 3 minutes on 2
# cores the first time; the time is printed).
set -eu

build_starpu=yes
[ "${SF_NO_STARPU_BUILD:-0}" = 1 ] && build_starpu=no
starpu_prefix=${SF_STARPU_PREFIX:-/opt/shardflow-starpu}
for a in "$@"; do
	case $a in
	--no-starpu-build) build_starpu=no ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "install-deps.sh: unknown option \"$a\"" >&2; exit 2 ;;
	esac
done

PACKAGES="
build-essential autoconf automake libtool pkg-config
libstarpu-dev
libopenmpi-dev openmpi-bin
libopenblas-dev
zlib1g-dev
libjansson-dev
dataset-fashion-mnist
valgrind
librsvg2-bin
clang-14 libclang-rt-14-dev
"

if [ "$(id -u)" -eq 0 ]; then
	SUDO=
elif command -v sudo >/dev/null 2>&1; then
	SUDO=sudo
else
	echo "install-deps.sh: run me as root (or install sudo): apt-get needs it" >&2
	exit 1
fi

missing=
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "install-deps.sh: every package is already installed"
else
	echo "install-deps.sh: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update
	# shellcheck disable=SC2086
	$SUDO apt-get install -y $missing
	echo "install-deps.sh: packages installed"
fi

if [ "$build_starpu" = yes ]; then
	t0=$(date +%s)
	"$(dirname "$0")/build-starpu.sh" --prefix "$starpu_prefix" --enable-blocking-drivers
	echo "install-deps.sh: the project's StarPU (FxT, blocking drivers) is in $starpu_prefix ($(($(date +%s) - t0)) s)"
else
	echo "install-deps.sh: StarPU build skipped: configure will use Debian's StarPU"
fi
echo "install-deps.sh: done"
