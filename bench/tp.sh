#!/bin/bash
# tp.sh — tensor and pipeline parallelism on the emulated cluster: GPT-2 124M's shapes
# on 2 nodes of 2 ranks, FSDP over 4 ranks against FSDP x TP (or pipeline) layouts and
# PyTorch DDP, side by side in one run, as a markdown table.
#
#   bench/tp.sh [--rows tp|vp|pp|all] [--runs N] [--steps N] [--rate R] [--context T]
#               [--batch B] [--out DIR] [--build DIR] [--local]
#
# Rows, each on 4 ranks (2 nodes x 2, TP groups of consecutive ranks, so a group of 2
# is inside a node and a group of 4 spans both). --rows tp (the default; GPT-2's tied
# head):
#   dp 4            SHARDFLOW_TP=1: every unit sharded over the 4 ranks (FSDP)
#   dp 4 grad_op    SHARDFLOW_SHARDING=grad_op: parameters gathered once a step (ZeRO-2)
#   dp 4 (+ grad_op), wte vocabulary-parallel  SHARDFLOW_VOCAB_PARALLEL=on: the tied
#                   matrix never gathered, each rank's rows of it computing the
#                   embedding, head and loss of the 4 ranks' rows (issue 48 item 2)
#   dp 2 x tp 2     SHARDFLOW_TP=2: the blocks split in 2 inside a node, FSDP over the nodes
#   tp 4, vocab replicated  SHARDFLOW_TP=4 SHARDFLOW_VOCAB_PARALLEL=off: the blocks split
#                   in 4, the embedding, head and loss whole on every rank, no dp
#   tp 4            SHARDFLOW_TP=4: and the vocabulary-parallel embedding, head and loss
#   tp 4 + SP       and SHARDFLOW_SEQUENCE_PARALLEL=on
#   PyTorch DDP     bench/torch_gpt.py --ddp, 4 processes over gloo (1 thread each)
# --rows pp (the head untied, --untied, which a pipeline needs; issue 49's bench): dp 4,
# tp 4, pp 2 x dp 2 (SHARDFLOW_PP=2: stage 0 on the first node, stage 1 on the second,
# FSDP inside each; SHARDFLOW_PP_MICROBATCHES=4, 1f1b), the stages cut by parameters
# (the default) and by flops (SHARDFLOW_PP_BALANCE=flops), and PyTorch DDP untied. --rows all:
# both tables, interleaved in each round. --rows vp: the dp 4 rows (full and grad_op,
# the matrix gathered or vocabulary-parallel) and PyTorch DDP only.
# For each: tokens/s (the steps after a warm-up of 3, median of --runs interleaved
# rounds, with min and max), and for shardflow what sf_model_stats counted per step on
# the whole job (examples/gpt's "gpt: comm:" lines): bytes sent in the collectives (a
# pipeline's transfers too), of them across the link between the nodes, of them in TP
# all-reduces, and rank 0's parameter and activation memory ("gpt: memory per rank":
# the shards and the gather ring's slots; the outputs, their gradients and saved
# buffers). examples/gpt --preset gpt2 (12 layers, 12 heads, embd 768, vocab
# 50 257, tied head; AdamW, --grad-clip 1) on Austen's GPT-2 tokens at --context T
# (default 64) and --batch B (default 8 sequences a step for the whole job).
#
#   --rows SET tp, vp, pp or all (above; default tp)
#   --rate R   the links of the emulated cluster (scripts/cluster.sh; default 1gbit)
#   --local    this machine's shared memory instead of the cluster (no root needed)
#   --runs N   rounds (default 5); --steps N steps a run (default 6: 3 timed)
#   --out DIR  tables.md, raw.tsv and the logs (default tp-bench-cluster or -local)
#   --build DIR a configured and built shardflow tree (default: this checkout)
set -u

prog=tp.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
PY=/usr/bin/python3
TWIN=$here/torch_gpt.py
WARMUP=3

usage_end=$(awk '!/^#/ { print NR - 1; exit }' "$0")
. "$here/cli.sh"

runs=5 steps=6 rate=1gbit ctx=64 gbatch=8 out="" build=$top cluster=1 rows=tp
while [ $# -gt 0 ]; do
	case $1 in
	--runs) [ $# -ge 2 ] || usage; posint "$1" "$2"; runs=$2; shift 2 ;;
	--steps) [ $# -ge 2 ] || usage; posint "$1" "$2"; steps=$2; shift 2 ;;
	--context) [ $# -ge 2 ] || usage; posint "$1" "$2"; ctx=$2; shift 2 ;;
	--batch) [ $# -ge 2 ] || usage; posint "$1" "$2"; gbatch=$2; shift 2 ;;
	--rate) [ -n "${2:-}" ] || die "--rate needs a value (e.g. 1gbit)"; rate=$2; shift 2 ;;
	--out) [ -n "${2:-}" ] || die "--out needs a directory"; out=$2; shift 2 ;;
	--build) [ -n "${2:-}" ] || die "--build needs a directory"; build=$2; shift 2 ;;
	--local) cluster=0; shift ;;
	--rows)
		case ${2:-} in tp | vp | pp | all) rows=$2 ;; *) echo "$prog: --rows \"${2:-}\" is invalid: expected tp, vp, pp or all" >&2; usage ;; esac
		shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "$prog: unknown option \"$1\"" >&2; usage ;;
	esac
done
[ "$steps" -gt $WARMUP ] || die "--steps $steps: at least $((WARMUP + 1)) (a warm-up of $WARMUP)"
[ $((gbatch % 4)) -eq 0 ] || die "--batch $gbatch: a multiple of 4 (the 4 ranks of dp 4)"
GPT=$build/examples/gpt
[ -x "$GPT" ] || die "$GPT is not built (make, or --build DIR)"
"$PY" -c 'import torch, torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
	die "$PY cannot import torch with gloo (apt-get install -y python3-torch)"
TOKENS=${SF_GPT_TOKENS:-/opt/shardflow-data/austen-gpt2-train.bin}
[ -f "$TOKENS" ] || die "$TOKENS not found: scripts/install-deps.sh makes it (or set SF_GPT_TOKENS)"
[ -n "$out" ] || out=tp-bench-$([ $cluster -eq 1 ] && echo cluster || echo local)
mkdir -p "$out/logs" || die "cannot create $out/logs"
logs=$out/logs
L=12 H=12 C=768 T=$ctx B=$gbatch V=50257
SF_ARGS=(--preset gpt2 --context "$T" --batch "$B" --train-tokens "$TOKENS"
	--val-tokens "${TOKENS%-train.bin}-val.bin" --sample 0)
PT_ARGS=(--tokens "$TOKENS" --layers "$L" --heads "$H" --embd "$C" --context "$T" --vocab "$V"
	--batch "$B" --lr 6e-4 --weight-decay 0.1 --grad-clip 1)
RUNMPI=$top/tests/run-mpi.sh
CLUSTER=$top/scripts/cluster.sh
export SF_TEST_TIMEOUT=900
export SF_TEST_STARPU_HOME=$out/starpu-home

if [ $cluster -eq 1 ]; then
	bench_cluster_up "$CLUSTER" "$rate" "$logs/cluster-up.log"
	where="the emulated cluster: 2 nodes of 2 ranks, $rate links (tbf: rate only)"
else
	where="this machine (2 cores, 4 ranks, shared memory)"
fi

RAW=$out/raw.tsv
printf 'what\tset\tconfig\trun\ttokens_per_s\tbytes_step\tinter_step\ttp_step\tact_mib\tparam_mib\n' >"$RAW"

# sf_run SET NAME LOG ENV...: examples/gpt on 4 ranks for --steps steps (SET pp: the
# head untied)
sf_run() {
	local set=$1 name=$2 log=$3
	shift 3
	(
		for a in "$@"; do export "${a?}"; done
		args=("${SF_ARGS[@]}" --steps "$steps" --progress-every "$WARMUP" --eval-every 100000)
		[ "$set" = pp ] && args+=(--untied)
		if [ $cluster -eq 1 ]; then
			"$CLUSTER" run -np 4 --per-node 2 --timeout 900 "$GPT" "${args[@]}"
		else
			SF_TEST_BIND=none "$RUNMPI" 4 "$GPT" "${args[@]}"
		fi
	) >"$log" 2>&1
	# the rate of the steps after the warm-up (rank 0's progress lines give the mean
	# since the start at steps WARMUP and steps); the bytes of every rank's "gpt: comm:"
	# line summed and divided by the steps; rank 0's activations
	local rw rn
	rw=$(progress_rates "$log" | awk -v k=$WARMUP -v n="$steps" '$1 == k && $2 == n { print $3 }')
	rn=$(progress_rates "$log" | awk -v n="$steps" '$1 == n && $2 == n { print $3 }')
	awk -v w=$WARMUP -v n="$steps" -v tok=$((B * T)) -v name="$name" -v r="$r" -v rw="${rw:-0}" \
		-v rn="${rn:-0}" -v set="$set" '
		$1 == "gpt:" && $2 == "comm:" { sent += $6; inter += $12; tp += $19
		                                 if ($4 == 0) act = $(NF - 1) }
		$1 == "gpt:" && $2 == "memory" && $4 == "rank:" && $5 == "parameters" && param == "" { param = $6 }
		END { if (rw > 0 && rn > 0) { t = n * tok / rn - w * tok / rw; v = (n - w) * tok / t }
		      printf "sf\t%s\t%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%s\t%s\n", set, name, r,
		             (v > 0 ? sprintf("%.2f", v) : "NA"), sent / n, inter / n, tp / n, act, param }' "$log" >>"$RAW"
	grep -q "	NA	" <(tail -1 "$RAW") && echo "$prog: warning: shardflow $name failed, see $log" >&2
	return 0
}

# ddp_run SET LOG: PyTorch DDP on 4 processes from SET's initial weights
ddp_run() {
	local set=$1 log=$2 targs v w=$W0
	[ "$set" = pp ] && w=$W0U
	targs=(train "${PT_ARGS[@]}" --weights "$w" --steps "$steps" --time-from "$WARMUP" --threads 1)
	[ "$set" = pp ] && targs+=(--untied)
	if [ $cluster -eq 1 ]; then
		"$CLUSTER" run -np 4 --per-node 2 --timeout 900 -x OMP_NUM_THREADS=1 -- "$PY" "$TWIN" \
			"${targs[@]}" --ddp --master-addr "$CLUSTER_MASTER" --ifname sf0 >"$log" 2>&1
	else
		local root=()
		[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
		timeout -k 10 900 mpirun "${root[@]}" -np 4 --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 \
			"$PY" "$TWIN" "${targs[@]}" --ddp --master-addr 127.0.0.1 --ifname lo \
			</dev/null >"$log" 2>&1
	fi
	v=$(grep '^{' "$log" | tail -1 | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read())["tokens_per_s"])' 2>/dev/null)
	[ -n "$v" ] || { v=NA; echo "$prog: warning: PyTorch DDP failed, see $log" >&2; }
	printf 'torch\t%s\tPyTorch DDP (gloo, 4 processes)\t%s\t%s\t\t\t\t\t\n' "$set" "$r" "$v" >>"$RAW"
}

echo "$prog: $where; $runs rounds of $steps steps (warm-up $WARMUP)" >&2
t_start=$(date +%s)
W0=$out/w0.safetensors W0U=$out/w0-untied.safetensors
r=0
if [ "$rows" != pp ]; then
	"$RUNMPI" 2 "$GPT" "${SF_ARGS[@]}" --steps 1 --eval-every 100000 --export-layout nanogpt --export-init "$W0" \
		>"$logs/init.log" 2>&1 || die "examples/gpt failed, see $logs/init.log"
fi
if [ "$rows" = pp ] || [ "$rows" = all ]; then
	"$RUNMPI" 2 "$GPT" "${SF_ARGS[@]}" --untied --steps 1 --eval-every 100000 --export-layout nanogpt \
		--export-init "$W0U" >"$logs/init-untied.log" 2>&1 ||
		die "examples/gpt --untied failed, see $logs/init-untied.log"
fi

for r in $(seq 1 "$runs"); do
	echo "$prog: round $r/$runs ($(($(date +%s) - t_start)) s)" >&2
	if [ "$rows" != pp ]; then
		sf_run tp "dp 4" "$logs/dp4.run$r.log" SHARDFLOW_TP=1
		sf_run tp "dp 4 grad_op" "$logs/dp4go.run$r.log" SHARDFLOW_TP=1 SHARDFLOW_SHARDING=grad_op
		sf_run tp "dp 4, wte vocabulary-parallel" "$logs/dp4vp.run$r.log" SHARDFLOW_TP=1 \
			SHARDFLOW_VOCAB_PARALLEL=on
		sf_run tp "dp 4 grad_op, wte vocabulary-parallel" "$logs/dp4govp.run$r.log" \
			SHARDFLOW_TP=1 SHARDFLOW_SHARDING=grad_op SHARDFLOW_VOCAB_PARALLEL=on
		if [ "$rows" != vp ]; then
			sf_run tp "dp 2 x tp 2" "$logs/dp2tp2.run$r.log" SHARDFLOW_TP=2
			sf_run tp "tp 4, vocab replicated" "$logs/tp4rep.run$r.log" SHARDFLOW_TP=4 \
				SHARDFLOW_VOCAB_PARALLEL=off
			sf_run tp "tp 4" "$logs/tp4.run$r.log" SHARDFLOW_TP=4
			sf_run tp "tp 4 + SP" "$logs/tp4sp.run$r.log" SHARDFLOW_TP=4 \
				SHARDFLOW_SEQUENCE_PARALLEL=on
		fi
		ddp_run tp "$logs/ddp.run$r.log"
	fi
	if [ "$rows" = pp ] || [ "$rows" = all ]; then
		sf_run pp "dp 4" "$logs/u-dp4.run$r.log" SHARDFLOW_TP=1
		sf_run pp "tp 4" "$logs/u-tp4.run$r.log" SHARDFLOW_TP=4
		sf_run pp "pp 2 x dp 2" "$logs/u-pp2dp2.run$r.log" SHARDFLOW_PP=2 \
			SHARDFLOW_PP_MICROBATCHES=4
		sf_run pp "pp 2 x dp 2, cut by flops" "$logs/u-pp2dp2f.run$r.log" SHARDFLOW_PP=2 \
			SHARDFLOW_PP_MICROBATCHES=4 SHARDFLOW_PP_BALANCE=flops
		ddp_run pp "$logs/u-ddp.run$r.log"
	fi
done

"$PY" - "$RAW" "$where" "$runs" "$steps" "$T" "$B" >"$out/tables.md" <<'EOF'
import csv, statistics, sys
raw, where, runs, steps, T, B = sys.argv[1:]
rows = list(csv.DictReader(open(raw), delimiter="\t"))
DDP = "PyTorch DDP (gloo, 4 processes)"
heads = {"tp": "the tied head (GPT-2's)", "pp": "the head untied (--untied; PyTorch's too)"}
for set_ in ("tp", "pp"):
    mine = [x for x in rows if x["set"] == set_]
    if not mine:
        continue
    order = []
    for x in mine:
        if x["config"] not in order:
            order.append(x["config"])
    def med(c, k):
        v = [float(x[k]) for x in mine if x["config"] == c and x[k] not in ("", "NA")]
        return (statistics.median(v), min(v), max(v)) if v else None
    ddp = med(DDP, "tokens_per_s")
    print(f"GPT-2 124M's shapes, {heads[set_]} (context {T}, {B} sequences a step), 4 ranks "
          f"on {where}; median of {runs} interleaved rounds of {steps} steps (min-max)\n")
    print("| layout | tokens/s | vs DDP | MiB sent a step (all ranks) | of it across the link | of it in TP all-reduces | parameters MiB a rank | activations MiB a rank |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in order:
        t = med(c, "tokens_per_s")
        ts = f"{t[0]:.1f} ({t[1]:.1f}-{t[2]:.1f})" if t else "failed"
        vs = f"{t[0] / ddp[0]:.2f}x" if t and ddp else ""
        def m(k):
            v = med(c, k)
            return f"{v[0]:.1f}" if v else "not counted"
        print(f"| {c} | {ts} | {vs} | {m('bytes_step')} | {m('inter_step')} | {m('tp_step')} | {m('param_mib')} | {m('act_mib')} |")
    print()
EOF
cat "$out/tables.md"
echo "$prog: done in $(($(date +%s) - t_start)) s; $out/tables.md, $RAW" >&2
