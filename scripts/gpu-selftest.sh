#!/bin/sh
# gpu-selftest.sh — the one command to run on a machine with NVIDIA GPUs: builds the
# CUDA variant of shardflow and checks the GPU path against the CPU.
#
#   scripts/gpu-selftest.sh [--starpu-prefix DIR] [--keep]
#
# 1. builds StarPU with CUDA (scripts/build-starpu.sh --with-cuda, non-blocking drivers:
#    NCCL's comm stream needs a second worker per GPU) into DIR (default
#    /opt/shardflow-starpu-cuda-gpu; skipped when already there);
# 2. builds shardflow from this checkout in a fresh directory with
#    ./configure --with-starpu=DIR --with-cuda --with-nccl;
# 3. runs tests/test_hd_nvcc (the shared math through nvcc), tests/gpu_step.sh (each
#    model on the GPU against its CPU result, a 2-GPU NCCL FSDP step against the 1-rank
#    CPU step) and tests/equivalence.sh (the CPU suite's core, on that build);
# 4. prints a pass/fail table and exits 0 only if nothing failed.
# Needs: the CUDA toolkit and NCCL in /usr/local/cuda, a driver (nvidia-smi), and
# what scripts/install-deps.sh installs. Without a GPU, gpu_step.sh is skipped and
# the table says so.
set -u
cd "$(dirname "$0")/.." || exit 2
prefix=/opt/shardflow-starpu-cuda-gpu
keep=no
while [ $# -gt 0 ]; do
	case $1 in
	--starpu-prefix) [ $# -ge 2 ] || { echo "gpu-selftest.sh: --starpu-prefix needs a directory" >&2; exit 2; }; prefix=$2; shift 2 ;;
	--keep) keep=yes; shift ;;
	-h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "gpu-selftest.sh: unknown option \"$1\" (accepted: --starpu-prefix DIR, --keep)" >&2; exit 2 ;;
	esac
done
say() { echo "gpu-selftest.sh: $*"; }

if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi -L
else
	say "no nvidia-smi: no NVIDIA driver here; the GPU tests will be skipped"
fi

say "1. StarPU with CUDA in $prefix"
scripts/build-starpu.sh --with-cuda --prefix "$prefix" || { say "building StarPU failed"; exit 1; }

build=$(mktemp -d "${TMPDIR:-/tmp}/shardflow-gpu.XXXXXX")
say "2. shardflow's CUDA variant in $build"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$build" || exit 1
(cd "$build" && ./autogen.sh && ./configure --with-starpu="$prefix" --with-cuda --with-nccl &&
	make -j"$(nproc 2>/dev/null || echo 2)") >"$build/build.log" 2>&1 ||
	{ tail -40 "$build/build.log"; say "the build failed (log: $build/build.log)"; exit 1; }
grep "^configure: \(StarPU\|GPU\):" "$build/build.log"
say "CUDA devices: $("$build/tests/cuda_devices")"

say "3. tests"
(cd "$build" && make check TESTS="tests/test_hd_nvcc tests/gpu_step.sh tests/equivalence.sh") \
	>"$build/check.log" 2>&1
rc=$?

say "4. results"
printf '%-6s %s\n' RESULT TEST
grep -h -E "^(ok|not ok)" "$build"/tests/test_hd_nvcc.log "$build"/tests/gpu_step.log \
	"$build"/tests/equivalence.log 2>/dev/null |
	sed -E -e 's/^not ok [0-9]+ - /FAIL   /' -e 's/^ok [0-9]+ - (.*) # SKIP (.*)$/SKIP   \1 (\2)/' \
		-e 's/^ok [0-9]+ - /PASS   /'
grep -h "^1\.\.0 # SKIP" "$build"/tests/gpu_step.log 2>/dev/null | sed 's/^1\.\.0 # SKIP /SKIP   gpu_step.sh: /'
pass=$(cat "$build"/tests/test_hd_nvcc.log "$build"/tests/gpu_step.log "$build"/tests/equivalence.log 2>/dev/null | grep -c "^ok")
fail=$(cat "$build"/tests/test_hd_nvcc.log "$build"/tests/gpu_step.log "$build"/tests/equivalence.log 2>/dev/null | grep -c "^not ok")
say "$pass passed, $fail failed"
[ "$keep" = yes ] && say "kept $build" || rm -rf "$build"
[ "$rc" -eq 0 ] && [ "$fail" -eq 0 ]
