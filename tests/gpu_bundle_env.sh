#!/bin/bash
# gpu_bundle_env.sh — the GPU bundle is self-contained: scripts/gpu-bundle.sh's
# gpu-bundle/ and the working tree, copied to a new directory, run
# scripts/gpu-check.sh in a mount namespace where everything the bundle claims to
# carry is hidden from the system: the project's StarPU prefixes (/opt/shardflow-
# starpu*), the bundle's build tree (MANIFEST's build line), the checkout itself, Debian's Open MPI (its
# programs, plugins, help files and PMIx), and every library the bundle holds, at the
# path it was copied from (an empty file bind-mounted over each: OpenBLAS, hwloc,
# FxT, jansson, libgfortran, libevent, ...). Only what the bundle says it needs from
# the machine stays: glibc and the CUDA toolkit's libraries.
#
# Passes when, there, the probe finds every library, test_hd_nvcc and the 2-rank CPU
# step from the bundle's binaries and MPI pass, and every GPU stage is reported as
# skipped with the reason (this machine has no GPU). On a GPU machine the GPU stages
# would run instead: this test is for machines without one.
#
#   tests/gpu_bundle_env.sh [BUNDLE_DIR]    (default gpu-bundle/; needs root and unshare)
#
# Not in make check (it needs the bundle, which needs the CUDA StarPU): .ci/run runs
# it after scripts/gpu-bundle.sh, with SF_REQUIRE_BUNDLE_TEST=1 so that a skip fails.
set -u
. "$(dirname "$0")/lib.sh"
bundle=${1:-$top_srcdir/gpu-bundle}
need_skip() {
	if [ "${SF_REQUIRE_BUNDLE_TEST:-0}" = 1 ]; then bail_out "cannot run: $*"; fi
	skip_all "$*"
}
[ "$(id -u)" -eq 0 ] || need_skip "needs root (mount namespaces)"
command -v unshare >/dev/null 2>&1 || need_skip "needs unshare (util-linux)"
[ -f "$bundle/shardflow-gpu.tar.xz" ] && [ -f "$bundle/MANIFEST" ] ||
	need_skip "no bundle in $bundle: run scripts/gpu-bundle.sh"
unshare -m true 2>/dev/null || need_skip "unshare -m fails here (no CAP_SYS_ADMIN)"

plan 9

# the "GPU machine": the tree and the bundle, nothing else of this checkout
machine=$tmp/machine
mkdir -p "$machine" "$tmp/empty" "$tmp/out" "$tmp/unpack" || bail_out "cannot create $tmp/machine"
: >"$tmp/empty-file"
bash "$top_srcdir/scripts/copy-tree.sh" "$top_srcdir" "$machine" || bail_out "copying the tree failed"
cp -r "$bundle" "$machine/gpu-bundle" || bail_out "copying the bundle failed"

# what to hide: directories (an empty one over each) and files (an empty file)
hide_dirs=
for d in /opt/shardflow-starpu* "$(sed -n 's/^build: //p' "$bundle/MANIFEST")" "$top_srcdir/build-gpu" \
	"$top_srcdir" "$top_builddir" \
	/usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi /etc/openmpi; do
	[ -d "$d" ] && hide_dirs="$hide_dirs $d"
done
# each library the bundle holds: the file it was copied from, and whatever the
# system's loader would find under its name
names=$(sed -n 's/^  \(lib[^ ]*\) \/.*$/\1/p' "$bundle/MANIFEST")
files=$(sed -n 's/^  lib[^ ]* \(\/[^ ]*\).*$/\1/p' "$bundle/MANIFEST")
for n in $names; do
	files="$files $(/sbin/ldconfig -p | awk -v n="$n" '$1 == n { print $NF }')"
done
hide_files=
for f in $files /usr/bin/mpirun /usr/bin/mpiexec /usr/bin/orterun /usr/bin/orted; do
	r=$(readlink -f "$f" 2>/dev/null) && [ -f "$r" ] || continue
	case " $hide_files " in *" $r "*) ;; *) hide_files="$hide_files $r" ;; esac
done
nlib=$(echo $names | wc -w)
diag "hiding $(echo $hide_dirs | wc -w) directories and $(echo $hide_files | wc -w) files ($nlib libraries of the bundle's MANIFEST)"

cat >"$tmp/inside.sh" <<'EOF'
set -u
# files first: some lie in the directories hidden next
for f in $HIDE_FILES; do mount --bind "$EMPTY_FILE" "$f" || exit 3; done
for d in $HIDE_DIRS; do mount --bind "$EMPTY" "$d" || exit 3; done
# proof that the system's copies are gone
hidden=yes
for f in $HIDE_FILES; do [ -s "$f" ] && { echo "still visible: $f"; hidden=no; }; done
ls /opt/shardflow-starpu*/lib/libstarpu* >/dev/null 2>&1 && { echo "still visible: a StarPU prefix"; hidden=no; }
/usr/bin/mpirun --version >/dev/null 2>&1 && { echo "still runs: /usr/bin/mpirun"; hidden=no; }
echo "hidden: $hidden"
cd "$MACHINE" || exit 3
SF_GPU_UNPACK=$UNPACK scripts/gpu-check.sh --out "$OUT_DIR"
EOF
HIDE_DIRS=$hide_dirs HIDE_FILES=$hide_files EMPTY=$tmp/empty EMPTY_FILE=$tmp/empty-file MACHINE=$machine \
	UNPACK=$tmp/unpack OUT_DIR=$tmp/out timeout -k 10 600 unshare -m bash "$tmp/inside.sh" >"$tmp/inside.out" 2>&1
st=$?
ok $([ $st -eq 0 ] && echo 0 || echo 1) "gpu-check.sh from a copy, the bundle's originals hidden: exit 0 (got $st)"
[ $st -ne 0 ] && diag_file "$tmp/inside.out"
grep -q "^hidden: yes" "$tmp/inside.out"
ok $? "the StarPU prefixes, Debian's Open MPI and the bundle's $nlib libraries were hidden"
grep "still" "$tmp/inside.out" | sed 's/^/#   /'

table=$tmp/out/table.md
rows=$tmp/out/results.tsv
[ -f "$table" ] && [ -f "$rows" ] && [ -f "$tmp/out/logs.tar.gz" ]
ok $? "table.md, results.tsv and logs.tar.gz written under --out"
diag_file "$table"
awk -F'\t' '$1 == "probe" && $2 ~ /libraries resolve/ && $3 == "PASS"' "$rows" | grep -q . &&
	awk -F'\t' '$1 == "probe" && $2 ~ /libraries resolve/' "$rows" | grep -q "$tmp/unpack"
ok $? "probe: every program's libraries resolve, StarPU and MPI from the unpacked bundle"
[ -f "$rows" ] && ! awk -F'\t' '$1 == "probe" && $3 == "FAIL"' "$rows" | grep -q .
ok $? "probe: no failure (glibc, the toolkit's libraries, the launcher)"
awk -F'\t' '$1 == "hd" && $3 == "PASS"' "$rows" | grep -q .
ok $? "hd: test_hd_nvcc from the bundle passes"
awk -F'\t' '$1 == "cpu" && $3 == "PASS"' "$rows" | grep -q .
ok $? "cpu: a 2-rank CPU step of the bundle's binaries over the bundle's Open MPI = 1 rank"
nskip=$(awk -F'\t' '($1 == "gpu" || $1 == "gpt" || $1 == "trace" || $1 == "speed") && $3 == "SKIP" && $4 ~ /no GPU/' "$rows" | wc -l)
[ "$nskip" -eq 4 ]
ok $? "every GPU stage (gpu, gpt, trace, speed) skipped with the reason ($nskip of 4)"
tail -1 "$table" | grep -q -E "^[0-9]+ passed, 0 failed, [0-9]+ skipped"
ok $? "the table ends with its count: $(tail -1 "$table")"
finish
