#!/bin/sh
# install-deps.sh — installs every Debian 12 package shardflow's build, tests and
# examples need. Run as root (or through sudo, which it uses when it is not root).
# Idempotent: packages already present are left as they are.
set -eu

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
	exit 0
fi

echo "install-deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
# shellcheck disable=SC2086
$SUDO apt-get install -y $missing
echo "install-deps.sh: done"
