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
# printed by bible-kjv's `bible`. austen-gpt2-train.bin and austen-gpt2-val.bin are
# Austen's text (split as the byte runs split it: the last tenth held out) in GPT-2
# tokens, llm.c shards, with gpt2-vocab.bin, the decode table (llm.c's tokenizer
# format): the real BPE of the npm registry's tiktoken (pinned, installed with npm
# into DIR/tiktoken; its gpt2 ranks are bundled, and the encoding runs without the
# network, under `unshare -n` where that works), made by tools/gpt2-tokens.cjs, which
# checks decode(encode(text)) == text first. Node.js and npm come from Debian's nodejs
# and npm when no node is on the PATH. A file already there with its known size and
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

# GPT-2's tokenizer (tiktoken from the npm registry) runs on Node.js: Debian's unless
# the machine has its own
if [ "${make_data}" = yes ] && ! { command -v node && command -v npm; } >/dev/null 2>&1; then
	PACKAGES="$PACKAGES nodejs npm"
fi

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

TIKTOKEN_VERSION=1.0.22
GPT2_TRAIN_BYTES=1788620
GPT2_TRAIN_SHA256=0190375c5a32ed0a53cbb68ebd7f7095331ae386814e182da4ec5972ddad20ae
GPT2_VAL_BYTES=200086
GPT2_VAL_SHA256=8539f9ec2977e59056060df96868e573f50be8d3cc3febcd370ed73ddbd382b1
GPT2_VOCAB_BYTES=372108
GPT2_VOCAB_SHA256=6f3abc21e444e4e8300e225f4e03da48ea121cf17e30f67009b8dad7a66c2f13

# austen-gpt2-{train,val}.bin and gpt2-vocab.bin; a failure is a note (the byte-level
# examples do not need them; the tests that do skip, saying why)
make_gpt2_tokens() {
	prefix=$data_prefix/austen-gpt2
	if has "$prefix-train.bin" $GPT2_TRAIN_BYTES $GPT2_TRAIN_SHA256 &&
		has "$prefix-val.bin" $GPT2_VAL_BYTES $GPT2_VAL_SHA256 &&
		has "$data_prefix/gpt2-vocab.bin" $GPT2_VOCAB_BYTES $GPT2_VOCAB_SHA256 &&
		[ -f "$data_prefix/tiktoken/node_modules/tiktoken/package.json" ]; then
		echo "install-deps.sh: $prefix-{train,val}.bin and gpt2-vocab.bin are there (GPT-2 tokens)"
		return 0
	fi
	t0=$(now_ms)
	if ! grep -q "\"version\": \"$TIKTOKEN_VERSION\"" \
		"$data_prefix/tiktoken/node_modules/tiktoken/package.json" 2>/dev/null; then
		$SUDO mkdir -p "$data_prefix/tiktoken"
		if ! $SUDO npm install --prefix "$data_prefix/tiktoken" --no-audit --no-fund \
			--loglevel=error "tiktoken@$TIKTOKEN_VERSION" >/dev/null; then
			echo "install-deps.sh: note: npm could not install tiktoken@$TIKTOKEN_VERSION:" \
				"no GPT-2 token files (the examples on bytes do not need them)" >&2
			return 0
		fi
	fi
	work=$(mktemp -d "${TMPDIR:-/tmp}/shardflow-data.XXXXXX")
	# the encoding needs no network: run it without one where a namespace can be made
	offline=
	if unshare -n true 2>/dev/null; then offline="unshare -n"; fi
	$offline node "$top/tools/gpt2-tokens.cjs" --tiktoken "$data_prefix/tiktoken" \
		--text "$data_prefix/austen.txt" --out "$work/austen-gpt2" \
		--vocab-out "$work/gpt2-vocab.bin" || {
		echo "install-deps.sh: tools/gpt2-tokens.cjs failed: no GPT-2 token files" >&2
		rm -rf "$work"
		return 1
	}
	install_file "$work/austen-gpt2-train.bin" "$prefix-train.bin"
	install_file "$work/austen-gpt2-val.bin" "$prefix-val.bin"
	install_file "$work/gpt2-vocab.bin" "$data_prefix/gpt2-vocab.bin"
	for f in train val; do
		[ "$f" = train ] && want=$GPT2_TRAIN_SHA256 || want=$GPT2_VAL_SHA256
		[ "$(sha256sum <"$prefix-$f.bin" | cut -d' ' -f1)" = "$want" ] ||
			echo "install-deps.sh: note: $prefix-$f.bin differs from the one tiktoken" \
				"$TIKTOKEN_VERSION made of r-cran-janeaustenr 1.0.0-1's text"
	done
	rm -rf "$work"
	echo "install-deps.sh: made $prefix-{train,val}.bin and gpt2-vocab.bin with tiktoken" \
		"$TIKTOKEN_VERSION${offline:+ (offline)} ($(elapsed "$t0"))"
}

if [ "$make_data" = yes ]; then
	make_austen
	make_kjv
	make_gpt2_tokens
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
