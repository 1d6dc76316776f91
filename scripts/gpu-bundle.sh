#!/bin/bash
# gpu-bundle.sh — builds everything a GPU machine needs to run scripts/gpu-check.sh,
# here, on a machine without a GPU, and packs it into one in-tree folder, gpu-bundle/
# (ignored by git), that travels to the GPU machine with the working tree.
#
#   scripts/gpu-bundle.sh [--starpu-prefix DIR] [--build DIR] [--cuda DIR] [--nccl DIR]
#                         [--no-mpi] [--jobs N]
#
# 1. StarPU 1.3.10 with CUDA and non-blocking drivers (NCCL's comm stream needs a
#    second worker on the GPU) and FxT: scripts/build-starpu.sh --with-cuda into
#    --starpu-prefix (default /opt/shardflow-starpu-cuda-nb; skipped when it is there).
# 2. shardflow's CUDA + NCCL variant from this checkout (tracked and untracked files
#    that git does not ignore), in --build (default build-gpu/, ignored; reused, so a
#    second run only recompiles what changed): ./configure --with-starpu=DIR
#    --with-cuda --with-nccl --without-dnnl, the library, the examples, the tools and
#    the test programs gpu-check.sh runs.
# 3. The bundle: those programs (stripped, in the build tree's layout: tests/,
#    examples/, tools/), and every shared library they and StarPU load that is neither
#    the C library's nor the CUDA toolkit's nor the driver's (the ldd closure: StarPU,
#    hwloc, FxT, OpenBLAS, jansson, zlib, libgfortran, Open MPI, ...); Open MPI's
#    launcher, daemon, plugins and help files under mpi/usr, moved with OPAL_PREFIX
#    (--no-mpi: not bundled, gpu-check.sh then uses the machine's mpirun); the
#    Austen corpus; tests/config.sh. Packed as gpu-bundle/shardflow-gpu.tar.xz with
#    gpu-bundle/MANIFEST (commit, date, sizes, every library and where it came from,
#    the newest glibc symbol version the binaries need). What the CUDA toolkit
#    provides (the CUDA runtime, cuBLAS, cuSPARSE for StarPU, NCCL) is not in it:
#    gpu-check.sh finds those there (the toolkit's lib64, or the Python packages'
#    nvidia/*/lib) and prints which (MANIFEST's needed-from-machine line).
# Prints the bundle's size and fails above 60 MiB (the GPU window carries 64 MiB in
# all, the working tree included).
#
# Then, on the GPU machine (device tool: carry ["gpu-bundle"]):
#   scripts/gpu-check.sh              (docs/gpu.md)
set -u
prog=gpu-bundle.sh
top=$(cd "$(dirname "$0")/.." && pwd)
prefix=/opt/shardflow-starpu-cuda-nb
build=$top/build-gpu
cuda=${CUDA_HOME:-/usr/local/cuda}
nccl=
mpi=yes
jobs=$(nproc 2>/dev/null || echo 2)
out=$top/gpu-bundle
limit_mib=60

usage() {
	sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}
need_arg() { [ $# -ge 2 ] || { echo "$prog: $1 needs a value" >&2; usage 2; }; }
while [ $# -gt 0 ]; do
	case $1 in
	--starpu-prefix) need_arg "$@"; prefix=$2; shift 2 ;;
	--build) need_arg "$@"; build=$2; shift 2 ;;
	--cuda) need_arg "$@"; cuda=$2; shift 2 ;;
	--nccl) need_arg "$@"; nccl=$2; shift 2 ;;
	--no-mpi) mpi=no; shift ;;
	--jobs)
		need_arg "$@"
		case $2 in '' | *[!0-9]* | 0*) echo "$prog: --jobs \"$2\" is invalid: expected a positive integer" >&2; exit 2 ;; esac
		jobs=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "$prog: unknown option \"$1\" (accepted: --starpu-prefix DIR, --build DIR, --cuda DIR, --nccl DIR, --no-mpi, --jobs N)" >&2; exit 2 ;;
	esac
done
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
say() { echo "$prog: $*"; }
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | tail -c 3)" = ELF ]; }
die() { echo "$prog: error: $*" >&2; exit 1; }
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }

[ -x "$cuda/bin/nvcc" ] || die "no CUDA toolkit in $cuda (no $cuda/bin/nvcc): --cuda DIR"
for p in git tar xz ldd strip objdump; do
	command -v $p >/dev/null 2>&1 || die "$p not found: it is needed to gather the bundle"
done

# --- 1. StarPU with CUDA, non-blocking drivers -------------------------------------
say "1. StarPU with CUDA (non-blocking drivers, FxT) in $prefix [$(elapsed)]"
"$top/scripts/build-starpu.sh" --with-cuda="$cuda" --prefix "$prefix" >"${TMPDIR:-/tmp}/gpu-bundle-starpu.log" 2>&1 || {
	tail -30 "${TMPDIR:-/tmp}/gpu-bundle-starpu.log"
	die "building StarPU failed (log: ${TMPDIR:-/tmp}/gpu-bundle-starpu.log)"
}
grep "^build-starpu.sh: \(built\|.*already holds\)" "${TMPDIR:-/tmp}/gpu-bundle-starpu.log"

# --- 2. shardflow's CUDA + NCCL variant ---------------------------------------------
say "2. shardflow (CUDA + NCCL) in $build [$(elapsed)]"
src=$build/src
mkdir -p "$src" || die "cannot create $src"
# tracked and untracked-but-not-ignored files; tar keeps their times, so make only
# rebuilds what changed since the last bundle
bash "$top/scripts/copy-tree.sh" "$top" "$src" || die "copying the checkout into $src failed"
commit=$(cd "$top" && git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=$(cd "$top" && git status --porcelain --untracked-files=no 2>/dev/null | wc -l)
[ "$dirty" -gt 0 ] && commit="$commit+$dirty-modified"
nccl_opt=--with-nccl
[ -n "$nccl" ] && nccl_opt=--with-nccl=$nccl
cfg="--with-starpu=$prefix --with-cuda=$cuda $nccl_opt --without-dnnl"
log=$build/build.log
if [ ! -f "$src/Makefile" ] || [ "$(cat "$build/configured" 2>/dev/null)" != "$cfg" ]; then
	(cd "$src" && ./autogen.sh && ./configure $cfg) >"$log" 2>&1 || {
		tail -30 "$log"
		die "configure failed (log: $log)"
	}
	echo "$cfg" >"$build/configured"
fi
grep -h "^configure: \(StarPU\|GPU\):" "$log" "$src/config.log" 2>/dev/null | head -2
grep -q "^#define SF_HAVE_NCCL 1" "$src/config.h" || die "configure did not enable NCCL (see $log)"
progs="tests/train_dump tests/dump_compare tests/test_hd_nvcc tests/test_flash_gpu bench/gemm_modes tests/cuda_devices tests/bf16_probe
examples/gpt examples/mlp_synthetic tools/shardflow-overlap"
# shellcheck disable=SC2086
(cd "$src" && sh scripts/families.sh . && make -j"$jobs" all && make -j"$jobs" $progs) >>"$log" 2>&1 || {
	grep -E "error|Error" "$log" | tail -20
	die "the build failed (log: $log)"
}

# --- 3. the bundle ---------------------------------------------------------------------
say "3. gathering [$(elapsed)]"
stage=$build/stage
rm -rf "$stage" && mkdir -p "$stage/lib" "$stage/tests" "$stage/bench" "$stage/examples" "$stage/tools" "$stage/data" ||
	die "cannot create $stage"
real_bin() { # libtool keeps the real executable in .libs/ when it links the .so
	local d b
	d=$(dirname "$1")
	b=$(basename "$1")
	if [ -f "$src/$d/.libs/$b" ]; then echo "$src/$d/.libs/$b"; else echo "$src/$1"; fi
}
for p in $progs; do
	cp "$(real_bin "$p")" "$stage/$p" || die "cannot copy $p"
done
# the GPU mutants (tests/mutants/gpu/*.patch, bugs only a GPU can show): the fused
# attention's test built with each bug in, for gpu-check.sh's mutants stage, where each
# must fail (sm_90 only: the windows' cards)
mkdir -p "$stage/tests/mutants" || die "cannot create $stage/tests/mutants"
nvcc=${NVCC:-"$cuda/bin/nvcc"}
for m in "$top"/tests/mutants/gpu/*.patch; do
	[ -f "$m" ] || continue
	n=$(basename "$m" .patch)
	md=$build/mutants/$n
	rm -rf "$md" && mkdir -p "$md/layers" "$md/tests" || die "cannot create $md"
	cp "$src/layers/attention_flash.cuh" "$md/layers/" && cp "$src/tests/test_flash_gpu.cu" "$md/tests/" ||
		die "cannot copy the fused attention's files for mutant $n"
	(cd "$md" && patch -p1 -s -f <"$m") >>"$log" 2>&1 || die "GPU mutant $n does not apply (log: $log)"
	# NVCC as configure takes it (CI: "ccache nvcc"), else the toolkit's; compiled, then
	# linked, in $md with paths relative to it (CCACHE_BASEDIR: ccache's key then holds no
	# build folder), so that ccache can keep the compile from one CI run to the next
	# shellcheck disable=SC2086
	(cd "$md" && CCACHE_BASEDIR=$build $nvcc -std=c++17 -O3 --fmad=false \
		-gencode arch=compute_90,code=sm_90 -I. -I"$src" -I"$src/include" -c tests/test_flash_gpu.cu \
		-o test_flash_gpu.o && $nvcc test_flash_gpu.o -o "$stage/tests/mutants/$n") \
		>>"$log" 2>&1 || die "GPU mutant $n does not compile (log: $log)"
done
cp -P "$src"/.libs/libshardflow.so* "$stage/lib/" || die "no libshardflow.so in $src/.libs"
# tests/config.sh as lib.sh reads it, without the build machine's paths
sed -e "s|^STARPU_BINDIR=.*|STARPU_BINDIR=|" -e "s|^MPICC=.*|MPICC=mpicc|" \
	"$src/tests/config.sh" >"$stage/tests/config.sh"

# the MPI launcher: Debian's Open MPI files, relocated under mpi/usr with OPAL_PREFIX
ompi_files=
if [ "$mpi" = yes ]; then
	if ! command -v dpkg >/dev/null 2>&1; then
		say "no dpkg: Open MPI is not bundled (gpu-check.sh will use the machine's mpirun)"
		mpi=no
	else
		for pkg in openmpi-bin libopenmpi3 openmpi-common; do
			dpkg -L "$pkg" >/dev/null 2>&1 || die "Debian package $pkg is not installed (scripts/install-deps.sh)"
			# the programs, the plugins and help files; Open MPI's libraries proper
			# (directly in the multiarch directory) come with the closure below
			ompi_files="$ompi_files $(dpkg -L "$pkg" | grep -E '^/usr/(bin|lib|share/openmpi)/' |
				grep -v -E '/(man|doc)/|^/usr/lib/[^/]*/[^/]*$')"
		done
		for f in $ompi_files; do
			[ -d "$f" ] && [ ! -L "$f" ] && continue
			mkdir -p "$stage/mpi$(dirname "$f")" && cp -P "$f" "$stage/mpi$f" ||
				die "cannot copy $f"
		done
		# mpirun is Debian's alternatives' link (/etc/alternatives): make our own
		[ -e "$stage/mpi/usr/bin/orterun" ] || die "no orterun among Open MPI's files"
		ln -sf orterun "$stage/mpi/usr/bin/mpirun"
	fi
fi

# the closure: every library ldd resolves for the programs, libshardflow, StarPU's
# libraries and (bundled) Open MPI's programs and plugins, less the C library's,
# the compiler runtime's and CUDA's (the machine's own: toolkit and driver)
skip_lib() {
	case $1 in
	linux-vdso* | ld-linux* | libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | \
		libutil.so* | libresolv.so* | libgcc_s.so* | libstdc++.so* | \
		libcuda.so* | libcudart.so* | libcublas.so* | libcublasLt.so* | libnccl.so* | \
		libnvidia-* | libnvrtc* | libnvJitLink*) return 0 ;;
	esac
	return 1
}
objs=
for p in $progs; do objs="$objs $stage/$p"; done
objs="$objs $(ls "$stage"/lib/libshardflow.so.* | head -1) $(ls "$prefix"/lib/libstarpu*.so 2>/dev/null)"
if [ "$mpi" = yes ]; then
	for f in $(find "$stage/mpi" -type f \( -name '*.so*' -o -path '*/bin/*' \)); do
		is_elf "$f" && objs="$objs $f"
	done
fi
: >"$build/closure.txt"
missing=
for o in $objs; do
	LD_LIBRARY_PATH="$stage/lib:$prefix/lib:$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$o" 2>/dev/null |
		while read -r name arrow path _; do
			[ "$arrow" = "=>" ] || continue
			if [ "$path" = "not" ]; then echo "MISSING $name $o"; else echo "$name $path"; fi
		done
done | sort -u >"$build/closure.txt"
if grep -q "^MISSING" "$build/closure.txt"; then
	missing=$(grep "^MISSING" "$build/closure.txt" | awk '!skip[$2]++ {print $2 " (" $3 ")"}' |
		while read -r n w; do skip_lib "$n" || echo "$n $w"; done)
fi
[ -z "$missing" ] || die "libraries not found here: $missing"
nlib=0
rm -f "$build/libs.txt.new"
cuda_real=$(readlink -f "$cuda")
from_machine="libcuda.so.1"
while read -r name path; do
	[ "$name" = MISSING ] && continue
	case $(readlink -f "$path") in
	"$cuda_real"/*) # the toolkit's (libcudart, libcublas, libcusparse, NCCL here)
		case " $from_machine " in *" $name "*) ;; *) from_machine="$from_machine $name" ;; esac
		continue ;;
	esac
	skip_lib "$name" && continue
	case $path in "$stage"/*) continue ;; esac
	[ -f "$stage/lib/$name" ] && continue
	cp -L "$path" "$stage/lib/$name" || die "cannot copy $path"
	echo "$name $(readlink -f "$path")" >>"$build/libs.txt.new"
	nlib=$((nlib + 1))
done <"$build/closure.txt"
mv -f "$build/libs.txt.new" "$build/libs.txt" 2>/dev/null || : >"$build/libs.txt"
# Debian 12's libevent (Open MPI's) is the only library that needs glibc 2.36 (it
# calls glibc's arc4random): rebuilt from Debian's source with libevent's own
# arc4random, the bundle runs on glibc 2.34 (Ubuntu 22.04 has 2.35, EL9 2.34).
portable_libevent() {
	local d=$build/libevent v
	v=$(dpkg-query -W -f='${Version}' libevent-core-2.1-7 2>/dev/null) || return 1
	if [ ! -f "$d/built-$v" ]; then
		rm -rf "$d" && mkdir -p "$d" || return 1
		(cd "$d" && apt-get source libevent >/dev/null 2>&1) || return 1
		local src
		src=$(ls -d "$d"/libevent-*/ 2>/dev/null | head -1)
		[ -n "$src" ] || return 1
		# the bundled arc4random under names of its own: glibc's stdlib.h declares it
		sed -i 's|^#include "./arc4random.c"$|#define arc4random ev_compat_arc4random\n#define arc4random_buf ev_compat_arc4random_buf\n#define arc4random_addrandom ev_compat_arc4random_addrandom\n#include "./arc4random.c"|' \
			"$src/evutil_rand.c" || return 1
		local m="make -j$jobs ACLOCAL=true AUTOMAKE=true AUTOCONF=true AUTOHEADER=true"
		(cd "$src" && ./configure --disable-openssl --disable-samples --disable-libevent-regress \
			ac_cv_func_arc4random=no ac_cv_func_arc4random_buf=no ac_cv_func_arc4random_addrandom=no &&
			$m include/event2/event-config.h && $m libevent_core.la libevent_pthreads.la) >"$d/build.log" 2>&1 ||
			return 1
		cp "$src/.libs/libevent_core-2.1.so.7" "$src/.libs/libevent_pthreads-2.1.so.7" "$d/" || return 1
		basename "$(ls "$d"/libevent_*.dsc | head -1)" .dsc >"$d/built-$v"
	fi
	cp "$d/libevent_core-2.1.so.7" "$d/libevent_pthreads-2.1.so.7" "$stage/lib/" &&
		awk -v d="$d" -v src="$(cat "$d/built-$v")" '/^libevent_(core|pthreads)-2\.1\.so\.7 / { $0 = $1 " " d "/" $1 " (built from " src ", without glibc'"'"'s arc4random)" } { print }' "$build/libs.txt" >"$build/libs.txt.tmp" && mv "$build/libs.txt.tmp" "$build/libs.txt"
}
if [ -f "$stage/lib/libevent_core-2.1.so.7" ] && objdump -T "$stage/lib/libevent_core-2.1.so.7" | grep -q "GLIBC_2.36"; then
	if portable_libevent; then
		say "libevent rebuilt without glibc's arc4random (glibc 2.34 is enough)"
	else
		say "warning: rebuilding libevent failed (log: $build/libevent/build.log): the bundle needs glibc 2.36"
	fi
fi
# StarPU's trace tool, for SHARDFLOW_TRACE's FxT merge (gpu-check.sh's traced run)
if [ -x "$prefix/bin/starpu_fxt_tool" ]; then
	mkdir -p "$stage/bin" && cp "$prefix/bin/starpu_fxt_tool" "$stage/bin/"
fi

# the corpus for the GPT runs
text=${SF_GPT_TEXT:-/opt/shardflow-data/austen.txt}
[ -f "$text" ] || die "no corpus $text (scripts/install-deps.sh makes it; SF_GPT_TEXT=FILE)"
cp "$text" "$stage/data/austen.txt"
# and GPT-2's tokens of it, for gpu-check's gpt2-124M-bpe speed rows (50 257 logits)
for f in austen-gpt2-train.bin austen-gpt2-val.bin; do
	tf=$(dirname "$text")/$f
	[ -f "$tf" ] || die "no token file $tf (scripts/install-deps.sh makes it)"
	cp "$tf" "$stage/data/$f"
done

# strip what is ours to strip (the CUDA fat binaries are kept: they are allocated
# sections); keep symbol tables out, debug info out
find "$stage" -type f | while read -r f; do
	is_elf "$f" && strip --strip-unneeded "$f" 2>/dev/null
done
chmod -R u+w "$stage"

glibc_need=$(find "$stage" -type f | while read -r f; do
	is_elf "$f" && objdump -T "$f" 2>/dev/null
done | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n -u | tail -1)
raw=$(du -sb "$stage" | cut -f1)
{
	echo "shardflow GPU bundle"
	echo "commit: $commit"
	echo "made: $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname) ($(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"))"
	echo "starpu: $prefix ($(cat "$prefix/share/shardflow-starpu.stamp" 2>/dev/null))"
	echo "configure: $cfg"
	echo "build: $build"
	echo "cuda-toolkit: $cuda ($("$cuda/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
	echo "mpi: $([ "$mpi" = yes ] && echo "Open MPI $(dpkg-query -W -f='${Version}' libopenmpi3 2>/dev/null) under mpi/usr (OPAL_PREFIX)" || echo "not bundled")"
	echo "glibc-needed: ${glibc_need:-unknown}"
	echo "unpacked-bytes: $raw"
	echo "programs: $(echo $progs)"
	echo "libraries (name, copied from):"
	sed 's/^/  /' "$build/libs.txt"
	echo "needed-from-machine: $from_machine"
	echo "needed-glibc: ${glibc_need#GLIBC_}"
} >"$stage/MANIFEST"

say "packing [$(elapsed)]"
mkdir -p "$out" || die "cannot create $out"
rm -f "$out"/shardflow-gpu.tar.xz "$out"/MANIFEST
tar -C "$stage" -cf - . | xz -T"$jobs" -6 >"$out/shardflow-gpu.tar.xz" || die "packing failed"
cp "$stage/MANIFEST" "$out/MANIFEST"
(cd "$out" && sha256sum shardflow-gpu.tar.xz >shardflow-gpu.tar.xz.sha256)
packed=$(du -sb "$out" | cut -f1)
tree=$(cd "$top" && git ls-files -z -c -o --exclude-standard | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
say "bundle: $out ($(mib "$packed") packed, $(mib "$raw") unpacked; $nlib libraries; commit $commit)"
say "the working tree it travels with: $(mib "$tree"); in all $(mib $((packed + tree))) of the 64 MiB a GPU window carries"
say "glibc needed on the GPU machine: ${glibc_need:-unknown}"
if [ $((packed + tree)) -gt $((limit_mib * 1048576)) ]; then
	die "the bundle and the tree exceed $limit_mib MiB"
fi
say "done [$(elapsed)]: run scripts/gpu-check.sh there (device tool: carry [\"gpu-bundle\"])"
