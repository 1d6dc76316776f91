#!/bin/sh
# install-deps.sh — installs every Debian 12 package shardflow's build, tests and
# examples need, makes the text corpora in /opt/shardflow-data, then builds the
# project's StarPU (StarPU 1.3.10 from Debian's source with FxT traces and blocking
# drivers, scripts/build-starpu.sh) into /opt/shardflow-starpu, the StarPU ./configure
# picks by default. Run as root (or through sudo, which it uses when it is not root).
#
#   scripts/install-deps.sh [--no-starpu-build] [--no-data]
#
# --no-starpu-build (or SF_NO_STARPU_BUILD=1): packages only; configure then uses
# Debian's StarPU. SF_STARPU_PREFIX=DIR builds into DIR instead (then
# ./configure --with-starpu=DIR). Idempotent: packages already present are left as they
# are, and a prefix already holding that StarPU is not rebuilt (about 3 minutes on 2
# cores the first time; the time is printed).
#
# The corpora (SF_DATA_PREFIX=DIR instead of /opt/shardflow-data; --no-data or
# SF_NO_DATA=1 skips them): austen.txt, Jane Austen's six novels in publication order
# (4 025 029 bytes of UTF-8), taken from Debian's r-cran-janeaustenr without installing
# R: the .deb is downloaded (apt-get download) and unpacked (dpkg-deb -x), and its
# data/Rdata.rdb converted by tools/shardflow-rdb2txt, compiled here on its own with
# `cc ... -lz` (the project need not be configured yet); the package's Rdata.rdb/.rdx
# are kept in DIR/janeaustenr/. kjv.txt, the King James Bible (4 298 239 bytes), is
# printed by bible-kjv's `bible`. A corpus already there with its known size and
# SHA-256 is left as it is; what was done and the time it took are printed.
set -eu

build_starpu=yes
[ "${SF_NO_STARPU_BUILD:-0}" = 1 ] && build_starpu=no
starpu_prefix=${SF_STARPU_PREFIX:-/opt/shardflow-starpu}
make_data=yes
[ "${SF_NO_DATA:-0}" = 1 ] && make_data=no
data_prefix=${SF_DATA_PREFIX:-/opt/shardflow-data}
top=$(cd "$(dirname "$0")/.." && pwd)
for a in "$@"; do
	case $a in
	--no-starpu-build) build_starpu=no ;;
	--no-data) make_data=no ;;
	-h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "install-deps.sh: unknown option \"$a\"" >&2; exit 2 ;;
	esac
done

PACKAGES="
build-essential autoconf automake libtool pkg-config
libstarpu-dev
libopenmpi-dev openmpi-bin
libopenblas-dev
libdnnl-dev
zlib1g-dev
libjansson-dev
dataset-fashion-mnist
python3
python3-torch
bible-kjv bible-kjv-text
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

# --- the text corpora -------------------------------------------------------------
AUSTEN_BYTES=4025029
AUSTEN_SHA256=f2516f2139e3cecf49657122fed58ac46313f1fdff32a26fc66789293e92d573
AUSTEN_NOVELS="sensesensibility prideprejudice mansfieldpark emma northangerabbey persuasion"
KJV_BYTES=4298239
KJV_SHA256=82fa5f3788c6a9a010fb128a0f0bf588984b5888a82058520620eded59b033ea

now_ms() { date +%s%3N; }
work=
trap 'rm -rf "${work:-}"' EXIT
elapsed() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN { printf "%.1f s", (b - a) / 1000 }'; }

# has FILE BYTES SHA256: the file is there with that size and checksum
has() {
	[ -f "$1" ] && [ "$(wc -c <"$1")" -eq "$2" ] &&
		[ "$(sha256sum <"$1" | cut -d' ' -f1)" = "$3" ]
}

# install_file SRC DEST: copies SRC to DEST whole (DEST.tmp, then renamed)
install_file() {
	$SUDO cp "$1" "$2.tmp" && $SUDO chmod 644 "$2.tmp" && $SUDO mv -f "$2.tmp" "$2"
}

make_austen() {
	out=$data_prefix/austen.txt
	if has "$out" $AUSTEN_BYTES $AUSTEN_SHA256; then
		echo "install-deps.sh: $out is there (Jane Austen's six novels, $AUSTEN_BYTES bytes)"
		return 0
	fi
	t0=$(now_ms)
	work=$(mktemp -d "${TMPDIR:-/tmp}/shardflow-data.XXXXXX")
	mkdir "$work/deb"
	# as root, apt downloads as its sandbox user _apt, which must be able to write there
	[ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1 && chown _apt "$work/deb"
	if ! (cd "$work/deb" && apt-get download r-cran-janeaustenr >"$work/apt.log" 2>&1); then
		# an apt list never fetched (every package was already there): fetch it once
		$SUDO apt-get update >/dev/null
		(cd "$work/deb" && apt-get download r-cran-janeaustenr >"$work/apt.log" 2>&1) || {
			cat "$work/apt.log" >&2
			echo "install-deps.sh: cannot download r-cran-janeaustenr" >&2
			rm -rf "$work"
			return 1
		}
	fi
	deb=$(ls "$work"/deb/r-cran-janeaustenr_*.deb)
	dpkg-deb -x "$deb" "$work/x"
	rdata=$work/x/usr/lib/R/site-library/janeaustenr/data/Rdata
	cc -std=c11 -D_GNU_SOURCE -O2 -I"$top" -o "$work/rdb2txt" "$top/tools/shardflow-rdb2txt.c" \
		"$top/tools/rdb.c" -lz
	# shellcheck disable=SC2086
	"$work/rdb2txt" -o "$work/austen.txt" "$rdata" $AUSTEN_NOVELS
	$SUDO mkdir -p "$data_prefix/janeaustenr"
	install_file "$rdata.rdb" "$data_prefix/janeaustenr/Rdata.rdb"
	install_file "$rdata.rdx" "$data_prefix/janeaustenr/Rdata.rdx"
	install_file "$work/austen.txt" "$out"
	if ! has "$out" $AUSTEN_BYTES $AUSTEN_SHA256; then
		echo "install-deps.sh: note: $out ($(wc -c <"$out") bytes) differs from the text of" \
			"r-cran-janeaustenr 1.0.0-1 ($AUSTEN_BYTES bytes); made from $(basename "$deb")"
	fi
	echo "install-deps.sh: made $out from $(basename "$deb") without R:" \
		"$(wc -c <"$out") bytes, Jane Austen's six novels ($(elapsed "$t0"))"
	rm -rf "$work"
}

make_kjv() {
	out=$data_prefix/kjv.txt
	if has "$out" $KJV_BYTES $KJV_SHA256; then
		echo "install-deps.sh: $out is there (the King James Bible, $KJV_BYTES bytes)"
		return 0
	fi
	t0=$(now_ms)
	work=$(mktemp -d "${TMPDIR:-/tmp}/shardflow-data.XXXXXX")
	bible "gen1:1-rev22:21" </dev/null >"$work/kjv.txt"
	$SUDO mkdir -p "$data_prefix"
	install_file "$work/kjv.txt" "$out"
	rm -rf "$work"
	echo "install-deps.sh: made $out with bible-kjv: $(wc -c <"$out") bytes ($(elapsed "$t0"))"
}

if [ "$make_data" = yes ]; then
	make_austen
	make_kjv
else
	echo "install-deps.sh: text corpora skipped"
fi

if [ "$build_starpu" = yes ]; then
	t0=$(date +%s)
	"$(dirname "$0")/build-starpu.sh" --prefix "$starpu_prefix" --enable-blocking-drivers
	echo "install-deps.sh: the project's StarPU (FxT, blocking drivers) is in $starpu_prefix ($(($(date +%s) - t0)) s)"
else
	echo "install-deps.sh: StarPU build skipped: configure will use Debian's StarPU"
fi
echo "install-deps.sh: done"
