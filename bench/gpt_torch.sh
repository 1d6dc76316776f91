#!/bin/bash
# gpt_torch.sh — shardflow's GPT against the same GPT in PyTorch (bench/torch_gpt.py,
# Debian's python3-torch 1.13), side by side in one run, as markdown tables.
#
#   bench/gpt_torch.sh [--cluster] [--rate R] [--runs N] [--steps N]
#                      [--curve-steps N] [--no-curve] [--out DIR] [--build DIR]
#                      [--model default|gpt2] [--context T] [--batch B] [--depths LIST]
#                      [--no-torch-2t] [--knobs | --knob K...]
#
# (a) Loss curves: examples/gpt (2 ranks, this machine) trains the default GPT
#     (842 496 parameters, 4 blocks, embd 128, context 128, batch 16, Jane Austen)
#     for --curve-steps steps from its initial weights, which it exports
#     (--export-init); PyTorch (one process) starts from that file and trains on the
#     same batches (torch_gpt.py draws them as sf_text_batch does) with the same AdamW
#     and schedule. Both per-step losses are printed at a few steps, with the largest
#     relative difference over the first 10 steps, at the last step and of the mean of
#     the last 50 steps. --curve-steps defaults to 300 (the full job is 4000).
# (b) Throughput, tokens per second of training (forward, backward, optimizer; the
#     steps after a warm-up of 3): shardflow on 2 ranks at SHARDFLOW_PREFETCH_DEPTH 0,
#     1, 2 (the default) and 3, and compute only (SHARDFLOW_SKIP=comm, depth 2);
#     PyTorch in one process with 1 thread and with 2 threads, and PyTorch DDP (gloo)
#     on 2 processes of 1 thread. Runs are interleaved (round r runs each
#     configuration once) and each figure is the median of --runs rounds (default 5)
#     with min and max, --steps steps per run (default 23).
# (c) Compute efficiency: the compute-only run's FLOP rate per rank, with nanoGPT's
#     FLOPs per token 6 N + 12 L H Q T (N the parameters less wpe, L layers, H heads,
#     Q head size, T context), against single-thread OpenBLAS sgemm on the shapes of a
#     block's MLP (bench/sgemm_rate --widths C,4C,C on a rank's B T rows), measured in
#     the same rounds.
#
#   --cluster   shardflow and DDP run on the emulated 2-node cluster (scripts/cluster.sh,
#               root; one rank per node, links of --rate, default 1gbit), brought up and
#               taken down here; the single-process PyTorch rows and the curves stay
#               local
#   --out DIR   tables.md, raw.tsv, the curves (curve.tsv) and the logs
#               (default gpt-bench-local or gpt-bench-cluster)
#   --build DIR a configured and built shardflow tree (default: this checkout)
#   --model gpt2  GPT-2 124M's shapes instead (examples/gpt --preset gpt2: 12 layers,
#               12 heads, embd 768, vocab 50 257, tied; lr 6e-4, weight decay 0.1,
#               --grad-clip 1) on Austen's GPT-2 tokens (install-deps.sh's
#               austen-gpt2-train.bin), at --context T (default 128) and --batch B
#               (default 8): the context only changes the position table and the
#               attention's share, the GEMMs are 124M's. The sgemm row of (c) is then
#               the whole step's GEMM shapes (a block's four and the head's)
#   --context T, --batch B  the model's context and global batch (default: the model's)
#   --depths LIST  the prefetch depths of (b), comma-separated (default 0,1,2,3)
#   --no-torch-2t  leave out PyTorch in one process with 2 threads (slower than 1 thread
#               at every size measured here; a round of the 124M shapes is minutes)
#   --knobs     two more shardflow rows at depth 2: bf16 on the wire
#               (SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_REDUCE_DTYPE=bf16: half the bytes)
#               and SHARDFLOW_SHARDING=grad_op (ZeRO-2: one gather a step)
#   --knob K    one of them: bf16 or grad_op (repeatable); or grad_op_split, ZeRO-2
#               with SHARDFLOW_SPLIT_BACKWARD=on (the tied head's weight gradient as
#               a second task), beside grad_op for the split's effect
set -u

prog=gpt_torch.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
PY=/usr/bin/python3
TWIN=$here/torch_gpt.py
TEXT=${SF_GPT_TEXT:-/opt/shardflow-data/austen.txt}
CLUSTER_MASTER=10.213.0.1
WARMUP=3

cluster=0
rate=1gbit
runs=5
steps=23
curve_steps=300
curve=1
out=
build=$top
model=default
ctx=
gbatch=
depths=0,1,2,3
torch2t=1
knob_bf16=0
knob_grad_op=0
knob_split=0

usage_end=52
. "$(dirname "$0")/cli.sh"
while [ $# -gt 0 ]; do
	case $1 in
	--cluster) cluster=1; shift ;;
	--rate) [ $# -ge 2 ] || usage; rate=$2; shift 2 ;;
	--runs) [ $# -ge 2 ] || usage; posint "$1" "$2"; runs=$2; shift 2 ;;
	--steps) [ $# -ge 2 ] || usage; posint "$1" "$2"; steps=$2; shift 2 ;;
	--curve-steps) [ $# -ge 2 ] || usage; posint "$1" "$2"; curve_steps=$2; shift 2 ;;
	--no-curve) curve=0; shift ;;
	--out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	--build) [ $# -ge 2 ] || usage; build=$(cd "$2" && pwd) || die "--build $2: no such directory"; shift 2 ;;
	--model) [ $# -ge 2 ] || usage; case $2 in default | gpt2) model=$2 ;; *) die "--model \"$2\" is invalid: accepted values are default, gpt2" ;; esac; shift 2 ;;
	--context) [ $# -ge 2 ] || usage; posint "$1" "$2"; ctx=$2; shift 2 ;;
	--batch) [ $# -ge 2 ] || usage; posint "$1" "$2"; gbatch=$2; shift 2 ;;
	--depths) [ $# -ge 2 ] || usage; depths=$2; shift 2 ;;
	--no-torch-2t) torch2t=0; shift ;;
	--knobs) knob_bf16=1 knob_grad_op=1; shift ;;
	--knob) [ $# -ge 2 ] || usage
		case $2 in bf16) knob_bf16=1 ;; grad_op) knob_grad_op=1 ;; grad_op_split) knob_split=1 ;;
		*) die "--knob \"$2\" is invalid: accepted values are bf16, grad_op, grad_op_split" ;; esac
		shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "$prog: unknown option \"$1\"" >&2; usage 2 ;;
	esac
done
[ "$steps" -gt "$WARMUP" ] || die "--steps must be more than the $WARMUP warm-up steps"
[ "$runs" -ge 5 ] || echo "$prog: warning: --runs $runs < 5: medians of few runs are noisy" >&2
[ -n "$out" ] || { if [ $cluster -eq 1 ]; then out=gpt-bench-cluster; else out=gpt-bench-local; fi; }
mkdir -p "$out/logs" || die "cannot create $out"
out=$(cd "$out" && pwd)
logs=$out/logs

GPT=$build/examples/gpt
[ -x "$GPT" ] || die "$GPT not found: build shardflow first (./autogen.sh && ./configure && make)"
[ -f "$build/Makefile" ] || die "$build/Makefile not found: --build must be a configured tree"
[ -f "$TEXT" ] || die "$TEXT not found: scripts/install-deps.sh makes it (or set SF_GPT_TEXT)"
"$PY" -c 'import torch, torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
	die "$PY cannot import torch with gloo (apt-get install -y python3-torch)"
mkvar() { sed -n "s/^$1 = //p" "$build/Makefile" | head -1; }
CC=$(mkvar CC)
BLAS_CFLAGS=$(mkvar BLAS_CFLAGS)
BLAS_LIBS=$(mkvar BLAS_LIBS)
RUNMPI=$top/tests/run-mpi.sh
CLUSTER=$top/scripts/cluster.sh
mkdir -p "$out/bin"
# shellcheck disable=SC2086
"${CC:-cc}" -O2 -I"$top" -o "$out/bin/sgemm_rate" "$here/sgemm_rate.c" $BLAS_CFLAGS $BLAS_LIBS ||
	die "cannot build bench/sgemm_rate.c"

# the model: examples/gpt's default (its --help is the reference), or GPT-2 124M's
# shapes on GPT-2 tokens; SF_ARGS and PT_ARGS give both programs the same model, data
# and optimizer
if [ "$model" = gpt2 ]; then
	L=12 H=12 C=768 T=${ctx:-128} B=${gbatch:-8} V=50257
	TOKENS=${SF_GPT_TOKENS:-/opt/shardflow-data/austen-gpt2-train.bin}
	[ -f "$TOKENS" ] || die "$TOKENS not found: scripts/install-deps.sh makes it (or set SF_GPT_TOKENS)"
	SF_ARGS=(--preset gpt2 --context "$T" --batch "$B" --train-tokens "$TOKENS"
		--val-tokens "${TOKENS%-train.bin}-val.bin" --sample 0)
	PT_ARGS=(--tokens "$TOKENS" --layers $L --heads $H --embd $C --context "$T" --vocab $V
		--batch "$B" --lr 6e-4 --weight-decay 0.1 --grad-clip 1)
	DATA="Austen's GPT-2 tokens ($TOKENS)"
else
	L=4 H=4 C=128 T=${ctx:-128} B=${gbatch:-16} V=256
	SF_ARGS=(--text "$TEXT" --context "$T" --batch "$B" --sample 0)
	PT_ARGS=(--text "$TEXT" --context "$T" --batch "$B")
	DATA="Jane Austen's bytes"
fi
export SF_TEST_TIMEOUT=600
export SF_TEST_STARPU_HOME=$out/starpu-home

if [ $cluster -eq 1 ]; then
	bench_cluster_up "$CLUSTER" "$rate" "$out/cluster-up.log"
	where="shardflow and DDP on the emulated cluster: 2 nodes, $rate links (tbf: rate only), one rank per node"
else
	where="this machine (2 cores, shared memory)"
fi

RAW=$out/raw.tsv
printf 'what\tconfig\trun\ttokens_per_s\textra\n' >"$RAW"

# sf_run NAME LOG ENV...: examples/gpt on 2 ranks for --steps steps
sf_run() {
	local name=$1 log=$2
	shift 2
	(
		for a in "$@"; do export "${a?}"; done
		args=("${SF_ARGS[@]}" --steps "$steps" --progress-every "$WARMUP" --eval-every 100000)
		if [ $cluster -eq 1 ]; then
			"$CLUSTER" run -np 2 --timeout 600 "$GPT" "${args[@]}"
		else
			"$RUNMPI" 2 "$GPT" "${args[@]}"
		fi
	) >"$log" 2>&1
	# rank 0's progress lines give the mean rate since the start at steps WARMUP and
	# steps: the tokens of the steps in between over their time
	progress_rates "$log" | awk -v w=$WARMUP -v n="$steps" -v tok=$((B * T)) -v name="$name" -v r="$r" '
		$1 == w && $2 == n { rw = $3 }
		$1 == n && $2 == n { rn = $3 }
		END { if (rw > 0 && rn > 0) { t = n * tok / rn - w * tok / rw
		                              printf "sf\t%s\t%s\t%.1f\t\n", name, r, (n - w) * tok / t }
		      else printf "sf\t%s\t%s\tNA\t\n", name, r }' >>"$RAW"
	grep -q "NA" <(tail -1 "$RAW") && echo "$prog: warning: shardflow $name failed, see $log" >&2
	return 0
}

# torch_run NAME LOG MODE THREADS: bench/torch_gpt.py train from $W0
torch_run() {
	local name=$1 log=$2 mode=$3 threads=$4 targs
	targs=(train "${PT_ARGS[@]}" --weights "$W0" --steps "$steps" --time-from "$WARMUP" --threads "$threads")
	if [ "$mode" = ddp ]; then
		if [ $cluster -eq 1 ]; then
			"$CLUSTER" run -np 2 --timeout 600 -x OMP_NUM_THREADS=1 -- "$PY" "$TWIN" "${targs[@]}" \
				--ddp --master-addr "$CLUSTER_MASTER" --ifname sf0 >"$log" 2>&1
		else
			local root=()
			[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
			timeout -k 10 600 mpirun "${root[@]}" -np 2 --bind-to core -x OMP_NUM_THREADS=1 \
				"$PY" "$TWIN" "${targs[@]}" --ddp --master-addr 127.0.0.1 --ifname lo \
				</dev/null >"$log" 2>&1
		fi
	else
		OMP_NUM_THREADS=$threads timeout -k 10 600 "$PY" "$TWIN" "${targs[@]}" </dev/null >"$log" 2>&1
	fi
	local v
	v=$(grep '^{' "$log" | tail -1 | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read())["tokens_per_s"])' 2>/dev/null)
	[ -n "$v" ] || { v=NA; echo "$prog: warning: PyTorch $name failed, see $log" >&2; }
	printf 'torch\t%s\t%s\t%s\t\n' "$name" "$r" "$v" >>"$RAW"
}

echo "$prog: $where; $runs rounds of $steps steps (warm-up $WARMUP); curves: $curve_steps steps" >&2
t_start=$(date +%s)

# ---- initial weights, and StarPU's calibration (not measured) ------------------------
W0=$out/w0.safetensors
r=0
"$RUNMPI" 2 "$GPT" "${SF_ARGS[@]}" --steps 2 --eval-every 100000 --export-layout nanogpt \
	--export-init "$W0" \
	>"$logs/init.log" 2>&1 || die "examples/gpt failed, see $logs/init.log"
params=$(sed -n 's/^gpt: 2 rank(s), \([0-9]*\) parameters.*/\1/p' "$logs/init.log")
[ -n "$params" ] || die "cannot read the parameter count from $logs/init.log"
[ $cluster -eq 1 ] && sf_run warmup "$logs/warmup-cluster.log"

# ---- (a) the loss curves ---------------------------------------------------------------
if [ $curve -eq 1 ]; then
	echo "$prog: (a) loss curves, $curve_steps steps ($(($(date +%s) - t_start)) s)" >&2
	"$RUNMPI" 2 "$GPT" "${SF_ARGS[@]}" --steps "$curve_steps" --eval-every 100000 \
		--progress-every 100 --init "$W0" --loss-log "$out/sf.loss" >"$logs/curve-sf.log" 2>&1 ||
		die "examples/gpt (curve) failed, see $logs/curve-sf.log"
	OMP_NUM_THREADS=1 "$PY" "$TWIN" train "${PT_ARGS[@]}" --weights "$W0" --steps "$curve_steps" \
		--out-losses "$out/pt.loss" >"$logs/curve-torch.log" 2>&1 ||
		die "PyTorch (curve) failed, see $logs/curve-torch.log"
	paste "$out/sf.loss" "$out/pt.loss" | awk '{ print $1 "\t" $2 "\t" $4 }' >"$out/curve.tsv"
fi

# ---- (b), (c): the measured rounds -----------------------------------------------------
for r in $(seq 1 "$runs"); do
	echo "$prog: round $r/$runs ($(($(date +%s) - t_start)) s)" >&2
	for d in ${depths//,/ }; do
		sf_run "depth $d" "$logs/sf-d$d.run$r.log" SHARDFLOW_PREFETCH_DEPTH=$d
	done
	[ $knob_bf16 -eq 1 ] && sf_run "depth 2, bf16 on the wire" "$logs/sf-bf16.run$r.log" \
		SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_REDUCE_DTYPE=bf16
	[ $knob_grad_op -eq 1 ] && sf_run "depth 2, grad_op (ZeRO-2)" "$logs/sf-grad-op.run$r.log" \
		SHARDFLOW_SHARDING=grad_op
	[ $knob_split -eq 1 ] && sf_run "depth 2, grad_op, split backward" \
		"$logs/sf-grad-op-split.run$r.log" SHARDFLOW_SHARDING=grad_op SHARDFLOW_SPLIT_BACKWARD=on
	sf_run "compute only" "$logs/sf-compute.run$r.log" SHARDFLOW_SKIP=comm
	torch_run "single process, 1 thread" "$logs/torch-1t.run$r.log" single 1
	[ $torch2t -eq 1 ] && torch_run "single process, 2 threads" "$logs/torch-2t.run$r.log" single 2
	torch_run "DDP (gloo), 2 processes" "$logs/torch-ddp.run$r.log" ddp 1
	OPENBLAS_NUM_THREADS=1 "$out/bin/sgemm_rate" --widths "$C,$((4 * C)),$C" --rows $((B / 2 * T)) --reps 20 |
		awk -v r="$r" '{ printf "sgemm\tmlp\t%s\t%s\t\n", r, $2 }' >>"$RAW"
	if [ "$model" = gpt2 ]; then # the attention's projections and the head, too
		OPENBLAS_NUM_THREADS=1 "$out/bin/sgemm_rate" --widths "$C,$((3 * C))" --rows $((B / 2 * T)) --reps 10 |
			awk -v r="$r" '{ printf "sgemm\tqkv\t%s\t%s\t\n", r, $2 }' >>"$RAW"
		OPENBLAS_NUM_THREADS=1 "$out/bin/sgemm_rate" --widths "$C,$V" --rows $((B / 2 * T)) --reps 3 |
			awk -v r="$r" '{ printf "sgemm\thead\t%s\t%s\t\n", r, $2 }' >>"$RAW"
	fi
done
secs=$(($(date +%s) - t_start))

# ---- tables ------------------------------------------------------------------------------
"$PY" - "$RAW" "$out" "$where" "$runs" "$steps" "$WARMUP" "$secs" "$params" "$L" "$H" "$C" "$T" "$B" \
	"$curve" "$curve_steps" "$model" "$V" "$DATA" "$depths" <<'PY' | tee "$out/tables.md"
import statistics, sys
(raw, out, where, runs, steps, warm, secs, params, L, H, C, T, B, curve, csteps, model, V,
 data, depths) = sys.argv[1:]
params, L, H, C, T, B, V = int(params), int(L), int(H), int(C), int(T), int(B), int(V)
vals = {}
for line in open(raw).read().splitlines()[1:]:
    what, cfg, r, v, _ = (line.split("\t") + [""] * 5)[:5]
    if v != "NA":
        vals.setdefault((what, cfg), []).append(float(v))
def med(k):
    v = vals.get(k)
    return statistics.median(v) if v else None
def cell(k, fmt="%.0f"):
    v = vals.get(k)
    if not v:
        return "failed"
    return (fmt + " (" + fmt + "–" + fmt + ")") % (statistics.median(v), min(v), max(v))

print("## GPT%s: shardflow vs PyTorch\n" % (" at GPT-2 124M's shapes" if model == "gpt2" else ""))
print("%s; StarPU and PyTorch 1.13 (Debian); %s rounds of %s steps (warm-up %s), "
      "medians (min–max); %s s in all.\n" % (where, runs, steps, warm, secs))
print("Model: %s, %d parameters, %d layers, %d heads, embd %d, vocab %d, "
      "context %d, batch %d sequences (%d tokens a step), %s.\n"
      % ("examples/gpt --preset gpt2" if model == "gpt2" else "examples/gpt's default",
         params, L, H, C, V, T, B, B * T, data))
if curve == "1":
    rows = [l.split("\t") for l in open(out + "/curve.tsv").read().splitlines()]
    rows = [(int(a), float(b), float(c)) for a, b, c in rows]
    rel = lambda a, b: abs(a - b) / abs(b)
    first = max(rel(s, p) for _, s, p in rows[:10])
    last = rel(rows[-1][1], rows[-1][2])
    tail = rows[-50:]
    ms, mp = sum(s for _, s, _ in tail) / len(tail), sum(p for _, _, p in tail) / len(tail)
    print("### (a) Loss curves, %s steps from the same initial weights and batches\n" % csteps)
    print("| step | shardflow (2 ranks) | PyTorch (1 process) | relative difference |")
    print("| --- | --- | --- | --- |")
    marks = [1, 2, 3, 5, 10, 25, 50, 100, 250, 500, 1000, 1500, 2000, 2500]
    for st, s, p in rows:
        if st in marks or st == rows[-1][0]:
            print("| %d | %.6f | %.6f | %.2e |" % (st, s, p, rel(s, p)))
    print("\nLargest relative difference over the first 10 steps %.2e; at step %d %.2e; "
          "mean of the last %d steps %.6f vs %.6f, %.2e.\n"
          % (first, rows[-1][0], last, len(tail), ms, mp, rel(ms, mp)))
print("### (b) Training throughput, tokens/s\n")
print("| configuration | tokens/s | vs PyTorch 1 process | vs PyTorch DDP |")
print("| --- | --- | --- | --- |")
t1 = med(("torch", "single process, 1 thread"))
tddp = med(("torch", "DDP (gloo), 2 processes"))
def ratio(a, b):
    return "%.2fx" % (a / b) if a and b else "–"
knob_rows = ["depth 2, bf16 on the wire", "depth 2, grad_op (ZeRO-2)",
             "depth 2, grad_op, split backward"]
for name in (["depth " + d for d in depths.split(",")] +
             [k for k in knob_rows if ("sf", k) in vals] + ["compute only"]):
    k = ("sf", name)
    label = "shardflow, 2 ranks, " + (name if name != "compute only" else
                                     "compute only (SHARDFLOW_SKIP=comm)")
    print("| %s | %s | %s | %s |" % (label, cell(k), ratio(med(k), t1), ratio(med(k), tddp)))
for name in ["single process, 1 thread", "single process, 2 threads", "DDP (gloo), 2 processes"]:
    k = ("torch", name)
    if k not in vals and name.endswith("2 threads"):
        continue
    print("| PyTorch, %s | %s | %s | %s |" % (name, cell(k), ratio(med(k), t1), ratio(med(k), tddp)))
npar = params - T * C  # nanoGPT's count leaves the position embedding out
fpt = 6 * npar + 12 * L * H * (C // H) * T
comp = med(("sf", "compute only"))
sg = med(("sgemm", "mlp"))
print("\n### (c) Compute efficiency\n")
print("FLOPs per token (nanoGPT's 6 N + 12 L H Q T, N = %d): %.2f M." % (npar, fpt / 1e6))
if model == "gpt2" and sg and med(("sgemm", "qkv")) and med(("sgemm", "head")):
    # the step's GEMM FLOPs by shape, each at its measured rate: a block's qkv (C x 3C),
    # its output projection and MLP (the "mlp" shapes), and the head (C x V)
    parts = [(3 * C * C * L, med(("sgemm", "qkv"))), (9 * C * C * L, sg),
             (C * V, med(("sgemm", "head")))]
    sg = sum(f for f, _ in parts) / sum(f / r for f, r in parts)
    print("Single-thread sgemm on the model's own GEMM shapes (%d rows: a block's qkv "
          "%s, its MLP and projections %s, the head %s GFLOP/s), weighted by their "
          "FLOPs: %.1f GFLOP/s." % (B // 2 * T, cell(("sgemm", "qkv"), "%.1f"),
                                   cell(("sgemm", "mlp"), "%.1f"),
                                   cell(("sgemm", "head"), "%.1f"), sg))
if comp and sg:
    rate = comp / 2 * fpt / 1e9
    print("shardflow compute only: %.1f GFLOP/s per rank; single-thread sgemm on %s: "
          "%.1f GFLOP/s; ratio %.2f."
          % (rate, "those shapes" if model == "gpt2" else
             "a block's MLP shapes (%dx%d, %d rows)" % (C, 4 * C, B // 2 * T), sg, rate / sg))
    if t1:
        print("PyTorch 1 process, 1 thread: %.1f GFLOP/s (the whole step: forward, backward, "
              "AdamW), ratio to sgemm %.2f." % (t1 * fpt / 1e9, t1 * fpt / 1e9 / sg))
PY
