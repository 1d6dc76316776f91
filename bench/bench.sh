#!/bin/bash
# bench.sh — shardflow's step time, compute efficiency, memory and scaling, side by
# side in one run, as markdown tables (every figure: the median of --runs runs, with
# min and max, because the machine is shared and noisy).
#
#   bench/bench.sh [--cluster] [--rate R] [--runs N] [--steps N] [--out DIR]
#                  [--widths W] [--batch B] [--build DIR] [--no-torch]
#
# Each run is examples/mlp_synthetic; its figure is the median "ms" of the steps
# after a warm-up of 3. Runs of all configurations are interleaved (round r runs
# every configuration once), so a slow spell of the machine hits them all alike.
#
#   --cluster     run on the emulated cluster (scripts/cluster.sh, needs root): it is
#                 brought up with 4 nodes (4 for the weak-scaling row) at --rate and
#                 taken down at the end, even on failure or Ctrl-C
#   --rate R      link rate for --cluster (default 1gbit)
#   --runs N      runs per configuration (default 5)
#   --steps N     steps per run, 3 of them warm-up (default 13)
#   --out DIR     tables (tables.md), raw data (raw.tsv), plot (step_vs_depth.png)
#                 (default bench-out-local or bench-out-cluster)
#   --widths W    MLP widths (default 784,1024,1024,1024,10)
#   --batch B     global batch on 2 ranks (default 64 local, 256 --cluster: see below)
#   --build DIR   a configured and built shardflow tree (default: this checkout), e.g.
#                 one configured --with-starpu=/opt/starpu-blk
#   --no-torch    skip the PyTorch rows
#
# Why these defaults: the point is a model whose compute and communication per step
# are of the same order, so that overlap matters and the step can approach
# max(compute, comm). 784-1024-1024-1024-10 has 2.9 M parameters (11.7 MB); a step
# moves 2 all-gathers + 1 reduce-scatter of it. Locally (shared memory) that costs
# about as much as the compute of 32 rows per rank (batch 64). At 1 Gbit/s the wire
# time is ~150 ms, so the cluster default is batch 256 (128 rows per rank), whose
# compute is of that order on one core.
#
# Tables: (a) step vs SHARDFLOW_PREFETCH_DEPTH 0..4 next to the compute-only
# (SHARDFLOW_SKIP=comm) and comm-only (SHARDFLOW_SKIP=compute) steps; (b) one rank's
# FLOP rate against single-thread OpenBLAS sgemm (bench/sgemm_rate.c); (c) per-rank
# parameter memory from sf_model_stats (bench/mem_report.c) against P/N + (depth+1)
# x largest unit; (d) weak scaling 1 -> 2 -> 4 ranks; (e) PyTorch DDP and
# DDP+ZeroRedundancyOptimizer (bench/torch_ddp.sh) when python3-torch is there;
# (f) the CPU time of the comm path (mlp_synthetic's comm_stats line, from
# sf_model_stats); (g) the wire: bench/ring_bw.c, the step's collectives as plain MPI
# without StarPU, each block whole or in SHARDFLOW_COMM_CHUNK pieces; (h) gradient
# accumulation: the same samples a step as one batch or 4 micro-batches, both
# SHARDFLOW_ACCUM_MODEs (step and comm ms per sample); (i) bf16 mixed precision:
# the comm-only and the full step against fp32's.
set -u

prog=bench.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

cluster=0
rate=1gbit
runs=5
steps=13
out=
widths=784,1024,1024,1024,10
batch=
build=$top
torch=1
WARMUP=3

usage_end=33
. "$(dirname "$0")/cli.sh"

while [ $# -gt 0 ]; do
	case $1 in
	--cluster) cluster=1; shift ;;
	--rate) [ $# -ge 2 ] || usage; rate=$2; shift 2 ;;
	--runs) [ $# -ge 2 ] || usage; posint "$1" "$2"; runs=$2; shift 2 ;;
	--steps) [ $# -ge 2 ] || usage; posint "$1" "$2"; steps=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	--widths) [ $# -ge 2 ] || usage; widths=$2; shift 2 ;;
	--batch) [ $# -ge 2 ] || usage; posint "$1" "$2"; batch=$2; shift 2 ;;
	--build) [ $# -ge 2 ] || usage; build=$(cd "$2" && pwd) || die "--build $2: no such directory"; shift 2 ;;
	--no-torch) torch=0; shift ;;
	-h | --help) usage 0 ;;
	*) echo "$prog: unknown option \"$1\"" >&2; usage 2 ;;
	esac
done
[ "$steps" -gt "$WARMUP" ] || die "--steps must be more than the $WARMUP warm-up steps"
[ "$runs" -ge 5 ] || echo "$prog: warning: --runs $runs < 5: medians of few runs are noisy" >&2
if [ -z "$batch" ]; then
	if [ $cluster -eq 1 ]; then batch=256; else batch=64; fi
fi
[ $((batch % 2)) -eq 0 ] || die "--batch must be even (rows per rank = batch / 2)"
rows=$((batch / 2)) # rows per rank on 2 ranks; the weak-scaling runs keep it
[ -n "$out" ] || { if [ $cluster -eq 1 ]; then out=bench-out-cluster; else out=bench-out-local; fi; }
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)

SF=$build/examples/mlp_synthetic
[ -x "$SF" ] || die "$SF not found: build shardflow first (./autogen.sh && ./configure && make)"
[ -f "$build/Makefile" ] || die "$build/Makefile not found: --build must be a configured tree"
mkvar() { sed -n "s/^$1 = //p" "$build/Makefile" | head -1; }
srcdir=$(mkvar abs_top_srcdir)
CC=$(mkvar CC)
BLAS_CFLAGS=$(mkvar BLAS_CFLAGS)
BLAS_LIBS=$(mkvar BLAS_LIBS)
RUNMPI=$top/tests/run-mpi.sh
CLUSTER=$top/scripts/cluster.sh

# ---- helpers built next to the results -------------------------------------------
mkdir -p "$out/bin"
# shellcheck disable=SC2086
"${CC:-cc}" -O2 -I"$srcdir" -o "$out/bin/sgemm_rate" "$here/sgemm_rate.c" $BLAS_CFLAGS $BLAS_LIBS ||
	die "cannot build bench/sgemm_rate.c"
"${CC:-mpicc}" -O2 -I"$srcdir" -I"$srcdir/include" -o "$out/bin/mem_report" "$here/mem_report.c" \
	-L"$build/.libs" -lshardflow -Wl,-rpath,"$build/.libs" || die "cannot build bench/mem_report.c"
"${CC:-mpicc}" -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$srcdir" -o "$out/bin/ring_bw" "$here/ring_bw.c" ||
	die "cannot build bench/ring_bw.c"

# which StarPU the build uses, and whether its idle workers spin
starpu_inc=$(mkvar STARPU_CFLAGS | tr ' ' '\n' | sed -n 's/^-I//p' | head -1)
starpu_desc="StarPU from ${starpu_inc:-?}"
starpu_short="StarPU ${starpu_inc:-?}"
if [ -f "$starpu_inc/starpu_config.h" ]; then
	if grep -q '^#define STARPU_NON_BLOCKING_DRIVERS' "$starpu_inc/starpu_config.h"; then
		starpu_desc="$starpu_desc (non-blocking drivers: idle workers spin)"
		starpu_short="non-blocking drivers"
	else
		starpu_desc="$starpu_desc (blocking drivers: idle workers sleep)"
		starpu_short="blocking drivers"
	fi
fi

# ---- the cluster -----------------------------------------------------------------
cleanup() {
	if [ $cluster -eq 1 ]; then
		"$CLUSTER" down >/dev/null 2>&1 || echo "$prog: warning: scripts/cluster.sh down failed" >&2
	fi
}
if [ $cluster -eq 1 ]; then
	[ "$(id -u)" -eq 0 ] || die "--cluster needs root (network namespaces)"
	"$CLUSTER" down >/dev/null 2>&1
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	"$CLUSTER" up --nodes 4 --rate "$rate" >"$out/cluster-up.log" 2>&1 ||
		die "scripts/cluster.sh up failed: $(tail -3 "$out/cluster-up.log")"
	export STARPU_HOME=$out/starpu-home/cluster
	mkdir -p "$STARPU_HOME"
	where="emulated cluster, $rate links (tbf: rate only), one rank per node; $starpu_desc"
	plot_where="cluster $rate, batch $batch, $starpu_short"
	rate_mbit=$(awk -v r="$rate" 'BEGIN { n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u);
		f = (u == "gbit") ? 1000 : (u == "mbit") ? 1 : (u == "kbit") ? 0.001 : 0; print n * f }')
else
	export SF_TEST_STARPU_HOME=$out/starpu-home
	where="this machine, shared memory; $starpu_desc"
	plot_where="local, batch $batch, $starpu_short"
	rate_mbit=0
fi
export SF_TEST_TIMEOUT=300

# run NP ENV... -- ARGS: mlp_synthetic under the launcher; stdout+stderr to a log
launch() { # launch NP LOG PROG ARGS...
	local np=$1 log=$2
	shift 2
	if [ $cluster -eq 1 ]; then
		"$CLUSTER" run -np "$np" --timeout 300 /usr/bin/time -f "maxrss_kb %M" "$@" >"$log" 2>&1
	else
		"$RUNMPI" "$np" /usr/bin/time -f "maxrss_kb %M" "$@" >"$log" 2>&1
	fi
}

# median of the step ms of steps > WARMUP in a log; "NA" if the run failed
step_median() {
	awk -v w=$WARMUP '$1 == "step" && $2 > w && $5 == "ms" { print $6 }' "$1" | sort -g |
		awk '{ v[NR] = $1 } END { if (!NR) print "NA"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
maxrss_mb() {
	awk '$1 == "maxrss_kb" && $2 > m { m = $2 } END { if (m) printf "%.1f", m / 1024; else print "NA" }' "$1"
}

RAW=$out/raw.tsv
printf 'table\tconfig\tranks\trun\tvalue\textra\n' >"$RAW"
logs=$out/logs
mkdir -p "$logs"

# sf NAME NP BATCH ENV...: one shardflow run, appended to raw.tsv
sf() {
	local name=$1 np=$2 b=$3 log
	shift 3
	log=$logs/$name.np$np.run$r.log
	(
		for a in "$@"; do export "${a?}"; done
		launch "$np" "$log" "$SF" --steps "$steps" --warmup $WARMUP --batch "$b" --widths "$widths"
	)
	local ms rss
	ms=$(step_median "$log")
	rss=$(maxrss_mb "$log")
	[ "$ms" = NA ] && echo "$prog: warning: run $name np $np failed, see $log" >&2
	printf 'sf\t%s\t%s\t%s\t%s\t%s\n' "$name" "$np" "$r" "$ms" "$rss" >>"$RAW"
	# comm_stats: wall, comm, comm CPU, comm worker CPU, process CPU (ms per step)
	awk -v n="$name" -v np="$np" -v r="$r" '$1 == "comm_stats" {
		printf "cpu\t%s\t%s\t%s\t%s\t%s %s %s %s\n", n, np, r, $5, $7, $9, $11, $13 }' \
		"$log" >>"$RAW"
}

# wire: the step's collectives as plain MPI (bench/ring_bw.c), one run of 5 reps
wire() {
	local log=$logs/ring_bw.run$r.log
	if [ $cluster -eq 1 ]; then
		"$CLUSTER" run -np 2 --timeout 300 "$out/bin/ring_bw" --widths "$widths" \
			--reps 5 --rate-mbit "$rate_mbit" >"$log" 2>&1
	else
		"$RUNMPI" 2 "$out/bin/ring_bw" --widths "$widths" --reps 5 >"$log" 2>&1
	fi
	awk -F'|' -v r="$r" 'NF >= 6 && $3 ~ /[0-9]/ { gsub(/^ +| +$/, "", $2);
		split($3, a, " "); gsub(/^ +| +$/, "", $6);
		printf "wire\t%s\t2\t%s\t%s\t%s\n", $2, r, a[1], $6 }' "$log" >>"$RAW"
	awk -v r="$r" '/MB sent per rank and step/ { printf "wirebytes\tmb\t2\t%s\t%s\t\n", r, $5 }' \
		"$log" >>"$RAW"
}

# torch MODE NP BATCH: one PyTorch run
torch_ok=0
torch_why=
if [ $torch -eq 0 ]; then
	torch_why="--no-torch was given"
elif [ ! -x "$here/torch_ddp.sh" ]; then
	torch_why="bench/torch_ddp.sh is not there"
elif ! /usr/bin/python3 -c 'import torch, torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
	torch_why="/usr/bin/python3 cannot import torch with gloo (apt-get install -y python3-torch)"
else
	torch_ok=1
fi
tr_run() {
	local mode=$1 np=$2 b=$3 log=$logs/torch-$1.np$2.run$r.log copt=()
	[ $cluster -eq 1 ] && copt=(--cluster)
	"$here/torch_ddp.sh" --np "$np" "${copt[@]}" --timeout 120 -- --mode "$mode" --widths "$widths" \
		--batch "$b" --steps $((steps - WARMUP)) --warmup $WARMUP >"$log" 2>"$log.err"
	local line
	line=$(grep '^{' "$log" | tail -1)
	if [ -z "$line" ]; then
		echo "$prog: warning: torch $mode np $np failed, see $log.err" >&2
		printf 'torch\t%s\t%s\t%s\tNA\tNA\n' "$mode" "$np" "$r" >>"$RAW"
		return
	fi
	/usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%s\t%s" % (d["median_ms"], d["peak_rss_mb"]))' "$line" |
		while IFS=$'\t' read -r ms rss; do
			printf 'torch\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$np" "$r" "$ms" "$rss" >>"$RAW"
		done
}

# ---- warm-up: StarPU calibration for every rank count (not measured) ---------------
echo "$prog: $where; widths $widths, batch $batch ($rows rows per rank), $runs runs x $steps steps (warm-up $WARMUP)" >&2
r=0
for np in 1 2 4; do
	launch "$np" "$logs/warmup.np$np.log" "$SF" --steps 2 --batch $((rows * np)) --widths "$widths" ||
		echo "$prog: warning: warm-up on $np ranks failed, see $logs/warmup.np$np.log" >&2
done

# ---- the measured rounds -------------------------------------------------------------
t_start=$(date +%s)
for r in $(seq 1 "$runs"); do
	echo "$prog: round $r/$runs ($(($(date +%s) - t_start)) s)" >&2
	for d in 0 1 2 3 4; do
		sf depth$d 2 "$batch" SHARDFLOW_PREFETCH_DEPTH=$d
	done
	sf compute_only 2 "$batch" SHARDFLOW_SKIP=comm
	sf comm_only 2 "$batch" SHARDFLOW_SKIP=compute
	sf weak 1 "$rows"
	sf weak 4 $((rows * 4))
	# (i) bf16 on the wire (and in the products, with oneDNN): comm only, full step
	sf bf16_comm_only 2 "$batch" SHARDFLOW_SKIP=compute SHARDFLOW_PARAM_DTYPE=bf16 \
		SHARDFLOW_REDUCE_DTYPE=bf16
	sf bf16 2 "$batch" SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_REDUCE_DTYPE=bf16
	# (h) the same samples a step as 1 batch or 4 micro-batches, in both modes
	if [ $((batch % 8)) -eq 0 ]; then
		sf accum4_sharded 2 $((batch / 4)) SHARDFLOW_GRAD_ACCUM=4 SHARDFLOW_ACCUM_MODE=sharded
		sf accum4_local 2 $((batch / 4)) SHARDFLOW_GRAD_ACCUM=4 SHARDFLOW_ACCUM_MODE=local
	fi
	if [ $torch_ok -eq 1 ]; then
		tr_run ddp 2 "$batch"
		tr_run zero 2 "$batch"
	fi
	wire
	OPENBLAS_NUM_THREADS=1 "$out/bin/sgemm_rate" --widths "$widths" --rows "$rows" --reps 20 |
		awk -v r="$r" '{ printf "sgemm\trows\t1\t%s\t%s\t%s\n", r, $2, $4 }' >>"$RAW"
done

# ---- memory: deterministic, one run each, always on this machine ----------------------
for np in 1 2; do
	for d in 0 1 2 3 4; do
		SHARDFLOW_PREFETCH_DEPTH=$d "$RUNMPI" "$np" "$out/bin/mem_report" \
			--widths "$widths" --batch "$batch" 2>"$logs/mem.np$np.d$d.err" |
			awk '/^ranks/ { printf "mem\t%s\t%s\t1\t%s\t%s %s %s %s\n", $4, $2, $12, $8, $10, $14, $16 }' >>"$RAW"
	done
done
bench_seconds=$(($(date +%s) - t_start))

# ---- tables and plot ----------------------------------------------------------------
/usr/bin/env python3 - "$RAW" "$out" "$where" "$widths" "$batch" "$rows" "$runs" "$steps" "$WARMUP" \
	"$torch_ok" "$torch_why" "$bench_seconds" "$cluster" "$rate_mbit" <<'PY' | tee "$out/tables.md"
import statistics, sys
raw, out, where, widths, batch, rows, runs, steps, warm, torch_ok, torch_why, secs, cluster, rate_mbit = sys.argv[1:]
rate_mbit = float(rate_mbit)
rows = int(rows); batch = int(batch)
W = [int(x) for x in widths.split(",")]
data = {}
extra = {}
for line in open(raw).read().splitlines()[1:]:
    t, c, n, r, v, e = line.split("\t")
    key = (t, c, int(n))
    if v != "NA":
        data.setdefault(key, []).append(float(v))
    extra.setdefault(key, []).append(e)

def med(key):
    v = data.get(key)
    return statistics.median(v) if v else None

def cell(key, fmt="%.1f"):
    v = data.get(key)
    if not v:
        return "failed"
    return (fmt + " (" + fmt + "–" + fmt + ")") % (statistics.median(v), min(v), max(v))

def num(x, fmt="%.2f"):
    return "n/a" if x is None else fmt % x

print("## shardflow benchmark: %s" % where)
print()
print("widths %s (%d parameters), global batch %d on 2 ranks (%d rows per rank); "
      "each figure: median (min–max) over %s runs of the median step of steps %d..%s "
      "of a run; %s s of measurement." % (widths, sum(W[i-1]*W[i] + W[i] for i in range(1, len(W))),
      batch, rows, runs, int(warm) + 1, steps, secs))
print()

# (a)
comp = med(("sf", "compute_only", 2)); comm = med(("sf", "comm_only", 2))
limit = max(comp, comm) if comp is not None and comm is not None else None
print("### a. Step time against prefetch depth (2 ranks)")
print()
print("| configuration | step ms | step / max(compute, comm) |")
print("| --- | --- | --- |")
for d in range(5):
    m = med(("sf", "depth%d" % d, 2))
    ratio = m / limit if m is not None and limit else None
    print("| SHARDFLOW_PREFETCH_DEPTH=%d%s | %s | %s |" % (d, " (default)" if d == 2 else "",
          cell(("sf", "depth%d" % d, 2)), num(ratio)))
print("| compute only (SHARDFLOW_SKIP=comm, depth 2) | %s | |" % cell(("sf", "compute_only", 2)))
print("| comm only (SHARDFLOW_SKIP=compute, depth 2) | %s | |" % cell(("sf", "comm_only", 2)))
print("| max(compute only, comm only) | %s | 1.00 |" % num(limit, "%.1f"))
print()
d0 = med(("sf", "depth0", 2)); d2 = med(("sf", "depth2", 2))
print("Speed-up of depth 2 over depth 0: **%s x** (ratio of the medians)." %
      num(d0 / d2 if d0 and d2 else None))
print()

# (b)
flop = sum(2.0 * rows * W[i-1] * W[i] * (2 if i == 1 else 3) for i in range(1, len(W)))
sg = med(("sgemm", "rows", 1))
print("### b. Compute efficiency (one rank, %d rows)" % rows)
print()
print("FLOP per rank and step = sum over linear layers of 2·B·I·O × 3 (forward, "
      "dW, dX), × 2 for the first layer (no input gradient) = %.3g "
      "(≈ 6 × params × rows per rank). Single-thread OpenBLAS sgemm on exactly these "
      "GEMMs (bench/sgemm_rate, OPENBLAS_NUM_THREADS=1): %s GFLOP/s, i.e. %s ms of "
      "GEMM per step." % (flop, cell(("sgemm", "rows", 1), "%.2f"),
                          num(flop / (sg * 1e6) if sg else None, "%.1f")))
print()
print("| step | step ms (median) | GFLOP/s per rank | fraction of sgemm rate |")
print("| --- | --- | --- | --- |")
for name, key in (("training step, depth 2", ("sf", "depth2", 2)),
                  ("compute only (SKIP=comm)", ("sf", "compute_only", 2)),
                  ("1 rank alone (weak-scaling row)", ("sf", "weak", 1))):
    m = med(key)
    rate = flop / (m * 1e6) if m else None
    print("| %s | %s | %s | %s |" % (name, num(m, "%.1f"), num(rate),
          num(rate / sg if rate and sg else None)))
print()

# (c)
print("### c. Parameter memory per rank (sf_model_stats)")
print()
print("Formula: P/N + (depth+1) × largest unit, in float32 (P = parameters, N = ranks; "
      "shards and ring slots are padded to a multiple of N).")
print()
print("| ranks | depth | param_bytes MB | formula MB | grad_bytes MB | optimizer_bytes MB |")
print("| --- | --- | --- | --- | --- | --- |")
for n in (1, 2):
    for d in range(5):
        key = ("mem", str(d), n)
        if key not in data:
            print("| %d | %d | failed | | | |" % (n, d)); continue
        pb = data[key][0]
        largest, params, gb, ob = [float(x) for x in extra[key][0].split()[:4]]
        formula = (params / n + (d + 1) * largest) * 4
        print("| %d | %d | %.2f | %.2f | %.2f | %.2f |" % (n, d, pb / 1e6, formula / 1e6, gb / 1e6, ob / 1e6))
print()

# (d)
print("### d. Weak scaling (%d rows per rank, depth 2)" % rows)
print()
print("| ranks | global batch | step ms | samples/s | efficiency t(1)/t(N) |")
print("| --- | --- | --- | --- | --- |")
t1 = med(("sf", "weak", 1))
for n, key in ((1, ("sf", "weak", 1)), (2, ("sf", "depth2", 2)), (4, ("sf", "weak", 4))):
    m = med(key)
    print("| %d | %d | %s | %s | %s |" % (n, rows * n, cell(key), num(rows * n / (m / 1e3) if m else None, "%.0f"),
          num(t1 / m if t1 and m else None)))
print()
if cluster == "1":
    print("4 ranks run on 4 emulated nodes that share this machine's 2 cores: they "
          "oversubscribe it (2 ranks per core).")
else:
    print("4 ranks oversubscribe this machine's 2 cores (2 ranks per core): that row "
          "measures contention, not scaling.")
print()

# (e)
print("### e. PyTorch on the same model (2 ranks, %d rows per rank)" % rows)
print()
if torch_ok != "1":
    print("Skipped: %s." % torch_why)
else:
    print("| implementation | step ms | peak RSS per rank MB (median) |")
    print("| --- | --- | --- |")
    def rss(key):
        v = [float(x) for x in extra.get(key, []) if x not in ("NA", "")]
        return num(statistics.median(v) if v else None, "%.0f")
    print("| shardflow, depth 2 (ZeRO-3) | %s | %s |" % (cell(("sf", "depth2", 2)), rss(("sf", "depth2", 2))))
    print("| PyTorch DDP | %s | %s |" % (cell(("torch", "ddp", 2)), rss(("torch", "ddp", 2))))
    print("| PyTorch DDP + ZeroRedundancyOptimizer | %s | %s |" % (cell(("torch", "zero", 2)), rss(("torch", "zero", 2))))
    print()
    print("Peak RSS is the process's ru_maxrss (GNU time for shardflow, max over ranks); "
          "it includes the runtimes (StarPU, Python + torch), not only the model.")
print()

# (f)
print("### f. What the comm path costs (rank 0, ms per step, medians)")
print()
print("From mlp_synthetic's comm_stats line (sf_model_stats), over the steps after the "
      "warm-up: time the comm worker spent in collectives, the CPU its thread used in "
      "them (MPI calls and polling, copies, the reduce-scatter's sums; the kernel's TCP "
      "work done in softirq is not counted), the CPU of that thread in all (with "
      "non-blocking drivers it spins between tasks) and the CPU of the whole process.")
print()
print("| configuration | step | in collectives | comm CPU in them | comm worker CPU in all | process CPU | process CPU / step |")
print("| --- | --- | --- | --- | --- | --- | --- |")
cpu = {}
for line in open(raw).read().splitlines()[1:]:
    t, c, n, r, v, e = line.split("\t")
    if t == "cpu" and v != "NA":
        cpu.setdefault((c, int(n)), []).append([float(v)] + [float(x) for x in e.split()])
for name, label in (("depth0", "depth 0"), ("depth2", "depth 2 (default)"),
                    ("compute_only", "compute only"), ("comm_only", "comm only")):
    v = cpu.get((name, 2))
    if not v:
        print("| %s | failed | | | | | |" % label); continue
    m = [statistics.median(x[i] for x in v) for i in range(5)]
    print("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f |" % (label, m[0], m[1], m[2], m[3], m[4], m[4] / m[0]))
print()

# (h)
print("### h. Gradient accumulation (2 ranks, %d samples a step, full sharding)" % batch)
print()
print("The same samples a step as one batch (depth 2 above) or as 4 micro-batches of %d "
      "(SHARDFLOW_GRAD_ACCUM=4): sharded mode reduce-scatters each micro-batch, local "
      "mode once a step; with full sharding every micro-batch gathers every unit again. "
      "Comm: the comm worker's time in collectives (comm_stats)." % (batch // 4))
print()
print("| configuration | step ms | ms per sample | comm ms per step | comm ms per sample | step / 1 batch |")
print("| --- | --- | --- | --- | --- | --- |")
base = med(("sf", "depth2", 2))
for name, label in (("depth2", "1 batch of %d" % batch),
                    ("accum4_sharded", "4 x %d, sharded" % (batch // 4)),
                    ("accum4_local", "4 x %d, local" % (batch // 4))):
    m = med(("sf", name, 2)); v = cpu.get((name, 2))
    if m is None or not v:
        print("| %s | %s | | | | |" % (label, "failed" if batch % 8 == 0 else "batch not a multiple of 8"))
        continue
    c = statistics.median(x[1] for x in v)
    print("| %s | %s | %.3f | %.1f | %.3f | %s |" % (label, cell(("sf", name, 2)), m / batch, c,
          c / batch, num(m / base if base else None)))
print()

# (i)
print("### i. bf16 mixed precision (2 ranks): SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_REDUCE_DTYPE=bf16")
print()
print("Gathers and reduce-scatters move bf16 (half the bytes); with oneDNN the linear "
      "layers' products run in bf16. final loss: of the run (mlp_synthetic, %s steps)." % steps)
print()
print("| configuration | fp32 step ms | bf16 step ms | bf16 / fp32 |")
print("| --- | --- | --- | --- |")
for a, b, label in (("comm_only", "bf16_comm_only", "comm only (SHARDFLOW_SKIP=compute)"),
                    ("depth2", "bf16", "full step (depth 2)")):
    x = med(("sf", a, 2)); y = med(("sf", b, 2))
    print("| %s | %s | %s | %s |" % (label, cell(("sf", a, 2)), cell(("sf", b, 2)),
          num(y / x if x and y else None)))
print()

# (g)
print("### g. The wire: the step's collectives as plain MPI (bench/ring_bw, 2 ranks)")
print()
wmb = med(("wirebytes", "mb", 2))
print("The same messages as a step (an all-gather and a reduce-scatter of every unit; "
      "a linear first layer is not gathered again for backward: %s MB sent per rank), "
      "without StarPU; each run is "
      "the median of 5 repetitions, each cell the median (min–max) over the runs. "
      "CPU: user + system of the busier rank." % num(wmb, "%.2f"))
print()
print("| ring step sent as | ms per step | Mbit/s per direction | of the line rate | CPU ms per step |")
print("| --- | --- | --- | --- | --- |")
for mode in ("whole, polled", "whole, MPI_Waitall", "pieces, polled"):
    v = data.get(("wire", mode, 2))
    m = med(("wire", mode, 2))
    mbit = wmb * 8 / m * 1e3 if m and wmb else None
    c = [float(x) for x in extra.get(("wire", mode, 2), []) if x not in ("NA", "")]
    print("| %s | %s | %s | %s | %s |" % (mode, cell(("wire", mode, 2)), num(mbit, "%.0f"),
          num(mbit / rate_mbit if mbit and rate_mbit else None),
          num(statistics.median(c) if c else None, "%.1f")))
print()

# plot data
with open(out + "/step_vs_depth.dat", "w") as f:
    for d in range(5):
        v = data.get(("sf", "depth%d" % d, 2))
        if v:
            f.write("%d %g %g %g\n" % (d, statistics.median(v), min(v), max(v)))
with open(out + "/limits.gp", "w") as f:
    f.write("comp = %g\ncomm = %g\n" % (comp or 0, comm or 0))
PY

if command -v gnuplot >/dev/null 2>&1; then
	gnuplot <<EOF || echo "$prog: warning: gnuplot failed" >&2
load "$out/limits.gp"
set terminal pngcairo size 800,500 noenhanced
set output "$out/step_vs_depth.png"
set title "shardflow step vs SHARDFLOW_PREFETCH_DEPTH ($plot_where)"
set xlabel "prefetch depth"
set ylabel "step ms (median, min-max of $runs runs)"
set xrange [-0.5:4.5]
set yrange [0:*]
set key outside bottom center horizontal
set grid ytics
plot "$out/step_vs_depth.dat" using 1:2:3:4 with yerrorlines lw 2 pt 7 title "step", \
     comp with lines dt 2 lw 2 title "compute only", \
     comm with lines dt 3 lw 2 title "comm only", \
     (comp > comm ? comp : comm) with lines lw 1 lc rgb "black" title "max(compute, comm)"
EOF
else
	echo "$prog: gnuplot not found (apt-get install -y gnuplot-nox): no plot" >&2
fi
echo "$prog: tables in $out/tables.md, data in $out/raw.tsv, plot $out/step_vs_depth.png" >&2
