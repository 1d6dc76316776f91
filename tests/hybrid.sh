#!/bin/sh
# hybrid.sh — hybrid sharding (SHARDFLOW_SHARDING=hybrid): shard within a node,
# replicate across nodes.
#
# Nodes are SHARDFLOW_NODE_SIZE consecutive ranks (one machine here: 4 ranks as 2
# nodes of 2, oversubscribed on 2 cores). Checked:
#  - 2 x 2 = full sharding on 4 ranks = 1 rank, within the reference's rounding
#    interval (as equivalence.sh; docs/testing.md): the MLP, a padded MLP (uneven) and the test GPT, SGD and AdamW;
#    4 x 1 (one node: no replica) = 1 rank, and bitwise full sharding (the same ring);
#    1 x 2 and 3 x 2 (6 ranks);
#  - bitwise across prefetch depths and backward policies;
#  - with micro-batches (both accumulation modes), clipping (the norm over the world
#    counts each shard once) and bf16 on the wire (losses and parameters against 1
#    rank in fp32);
#  - the bytes leaving a node (sf_model_stats::comm_bytes_inter, summed over ranks),
#    exactly: full sharding's ring crosses a node at each node's last rank, hybrid's
#    only in the replicas' all-reduce of the gradient shards (gathers carry none);
#  - checkpoints: the first node's ranks write them (every shard once), a resumed run
#    is bitwise the uninterrupted one, and they load across shardings and sizes;
#  - refused with the reason: a node size that does not divide the world.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 19

hy="SHARDFLOW_SHARDING=hybrid SHARDFLOW_NODE_SIZE=2"

for c in mlp:sgd mlp:adamw uneven:adamw gpt:sgd; do
	model=${c%:*} opt=${c#*:}
	args="--model $model --optimizer $opt --steps 5"
	# shellcheck disable=SC2086
	train_interval 1 "r1-$model-$opt" $args
	# shellcheck disable=SC2086
	train 4 "h-$model-$opt" $hy $args
	compare_within "$model, $opt: hybrid 2 x 2 = 1 rank" "h-$model-$opt" "r1-$model-$opt"
done
# shellcheck disable=SC2086
train_interval 4 full-gpt SHARDFLOW_NODE_SIZE=2 --model gpt --optimizer sgd --steps 5
compare_within "gpt, sgd: hybrid 2 x 2 = full sharding on 4 ranks" h-gpt-sgd full-gpt
# One node of 4 has no replica: its ring is full sharding's (hence bitwise), so the
# claim that it trains right is checked against 1 rank, which has no ring at all.
train 4 h41 SHARDFLOW_SHARDING=hybrid SHARDFLOW_NODE_SIZE=4 --model gpt --optimizer sgd --steps 5
"$DUMP_COMPARE" --up "$tmp/r1-gpt-sgd.up.dump" --down "$tmp/r1-gpt-sgd.down.dump" \
	"$tmp/h41.dump" "$tmp/r1-gpt-sgd.dump" >"$tmp/h41.cmp" 2>&1 &&
	"$DUMP_COMPARE" --bitwise "$tmp/h41.dump" "$tmp/full-gpt.dump" >>"$tmp/h41.cmp" 2>&1
ok $? "hybrid 1 node of 4 = 1 rank (within its rounding interval) and = full sharding, bitwise"
diag_file "$tmp/h41.cmp"
train 2 h12 SHARDFLOW_SHARDING=hybrid SHARDFLOW_NODE_SIZE=1 --model mlp --optimizer adamw --steps 5
compare_within "hybrid 2 nodes of 1 (DDP of whole units) = 1 rank" h12 r1-mlp-adamw
train 6 h32 SHARDFLOW_SHARDING=hybrid SHARDFLOW_NODE_SIZE=2 --model uneven --optimizer adamw \
	--steps 5 --batch 24
compare_within "hybrid 3 nodes of 2 (6 ranks, padded units) = 1 rank" h32 r1-uneven-adamw

# schedules: bitwise
# shellcheck disable=SC2086
train 4 hd0 $hy SHARDFLOW_PREFETCH_DEPTH=0 --model gpt --optimizer adamw --steps 4
# shellcheck disable=SC2086
train 4 hd3 $hy SHARDFLOW_PREFETCH_DEPTH=3 SHARDFLOW_BACKWARD_PREFETCH=none --model gpt \
	--optimizer adamw --steps 4
compare "hybrid: depth 0 = depth 3 with backward prefetch none, bitwise" hd0 hd3 --bitwise

# the other knobs on top
# shellcheck disable=SC2086
train_interval 1 acc1 --model mlp --optimizer sgd --steps 4 --batch 24
for mode in sharded local; do
	# shellcheck disable=SC2086
	train 4 "hacc-$mode" $hy SHARDFLOW_ACCUM_MODE=$mode --model mlp --optimizer sgd --steps 4 \
		--batch 8 --accum 3
	compare_within "hybrid, 3 micro-batches ($mode) = one batch on 1 rank" "hacc-$mode" acc1
done
# shellcheck disable=SC2086
train_interval 1 clip1 --model gpt --optimizer sgd --steps 4 --clip 0.5
# shellcheck disable=SC2086
train 4 hclip $hy --model gpt --optimizer sgd --steps 4 --clip 0.5
n4=$(sed -n 's/^norm 4 //p' "$tmp/hclip.out")
within_interval hclip clip1 '^norm 4 '
ok $? "hybrid, clipped: the norm counts each shard once (step 4: $n4, 1 rank's $(sed -n 's/^norm 4 //p' "$tmp/clip1.out"), within its rounding interval)"
# shellcheck disable=SC2086
train_interval 4 hbf $hy SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_REDUCE_DTYPE=bf16 --model gpt --optimizer sgd \
	--steps 5
# against fp32 on 1 rank (no ring), as tests/bf16.sh: the losses within 1e-4 (measured
# 1.0e-5: flagged, bf16.sh says why), the fp32 parameters within the bf16 run's rounding
# interval; one rank dropping its partial sum in the bf16 ring moves them 9e-4 and 0.43.
"$DUMP_COMPARE" --rtol 1e-4 --ignore 0:1000000000 "$tmp/hbf.dump" "$tmp/r1-gpt-sgd.dump" \
	>"$tmp/hbf.cmp" 2>&1 &&
	"$DUMP_COMPARE" --up "$tmp/hbf.up.dump" --down "$tmp/hbf.down.dump" --no-losses \
		"$tmp/r1-gpt-sgd.dump" "$tmp/hbf.dump" >>"$tmp/hbf.cmp" 2>&1
ok $? "hybrid with bf16 on the wire: losses within 1e-4 of fp32 on 1 rank, its parameters within the bf16 run's rounding interval"
diag_file "$tmp/hbf.cmp"

# the bytes that leave a node, summed over the 4 ranks, 5 steps of the gpt model: units
# of P = 384 (embed: wte 16 x 16, wpe 8 x 16) and 3 x 1960 (a block) parameters, a
# shard of S = ceil(P / N) floats per unit on a ring of N ranks; each step one gather
# and one reduce-scatter of every unit (the embed unit, read first and last for the
# tied head, stays resident), each sending N - 1 blocks of S.
#  - full sharding, N = 4, S = 96 + 3 x 490 = 1566: the ring leaves a node at ranks 1
#    and 3, 2 ranks x 5 steps x 2 rings x 3 blocks x 1566 x 4 bytes = 375840;
#  - hybrid 2 x 2, S = 192 + 3 x 980 = 3132: gathers and reduce-scatters stay in the
#    node; only the replicas' all-reduce of each rank's gradient shard leaves it (a
#    ring all-reduce of n floats sends 2 (M - 1) / M n, n for M = 2 replicas),
#    4 ranks x 5 steps x 3132 x 4 bytes = 250560.
inter() { awk '$1 == "rank" && $5 == "inter_node" { s += $6 } END { print s + 0 }' "$tmp/$1.out"; }
bf=$(inter full-gpt) bh=$(inter h-gpt-sgd)
s4=$((96 + 3 * 490)) s2=$((192 + 3 * 980))
want_f=$((2 * 5 * 2 * 3 * s4 * 4)) want_h=$((4 * 5 * s2 * 4))
[ "$bf" -eq "$want_f" ] && [ "$bh" -eq "$want_h" ]
ok $? "bytes leaving a node per run, 4 ranks as 2 x 2: hybrid $bh (want $want_h), full $bf (want $want_f)" ||
	diag_file "$tmp/h-gpt-sgd.out"

# refusals
env SHARDFLOW_SHARDING=hybrid SHARDFLOW_NODE_SIZE=3 sh "$RUN_MPI" 4 "$TRAIN_DUMP" --steps 1 \
	--out "$tmp/bad.dump" </dev/null >"$tmp/bad.out" 2>"$tmp/bad.err"
st=$?
[ $st -ne 0 ] && grep -q 'SHARDFLOW_NODE_SIZE=3 does not divide the 4 ranks' "$tmp/bad.err"
ok $? "SHARDFLOW_NODE_SIZE=3 on 4 ranks: refused with the reason (exit $st)" || diag_file "$tmp/bad.err"
# checkpoints: the first node's ranks write the shards (a checkpoint of 2 ranks);
# resumed, the run goes on bitwise; a full-sharding run of another size loads it, and
# a hybrid run loads a full-sharding checkpoint of 3 ranks (SGD: see test_models.h)
DRV="$top_builddir/tests/ckpt_driver"
drv() { # drv NAME NP ENV... -- ARGS
	d_name=$1 d_np=$2
	shift 2
	d_env=
	while [ "$1" != -- ]; do d_env="$d_env $1"; shift; done
	shift
	# shellcheck disable=SC2086
	env $d_env sh "$RUN_MPI" "$d_np" "$DRV" --model gpt "$@" --out "$tmp/$d_name.dump" \
		</dev/null >"$tmp/$d_name.out" 2>"$tmp/$d_name.err" || diag_file "$tmp/$d_name.err"
}
# shellcheck disable=SC2086
drv cu 4 $hy -- --optimizer adamw --steps 6 --dump-losses-from 3
# shellcheck disable=SC2086
drv cs 4 $hy -- --optimizer adamw --steps 3 --save "$tmp/ck" --save-every 3
# shellcheck disable=SC2086
drv cr 4 $hy -- --optimizer adamw --steps 6 --dump-losses-from 3 --resume "$tmp/ck"
n=$(ls "$tmp/ck/step-000000003" 2>/dev/null | grep -c '^rank-')
[ "$n" -eq 2 ]
ok $? "hybrid 2 x 2: a checkpoint holds the first node's 2 rank files ($n)"
compare "hybrid: saved at step 3 and resumed = uninterrupted, bitwise" cr cu --bitwise
# shellcheck disable=SC2086
drv su 4 $hy -- --steps 6 --dump-losses-from 3
for r in up down; do
	# shellcheck disable=SC2086
	drv "su.$r" 4 $hy SHARDFLOW_ROUNDING=${r}ward -- --steps 6 --dump-losses-from 3
done
# shellcheck disable=SC2086
drv ss 4 $hy -- --steps 3 --save "$tmp/cks" --save-every 3
drv sf 2 -- --steps 6 --dump-losses-from 3 --resume "$tmp/cks"
compare_within "a hybrid checkpoint resumed by full sharding on 2 ranks" sf su
drv s3 3 -- --steps 3 --save "$tmp/ck3" --save-every 3
# shellcheck disable=SC2086
drv sh3 4 $hy -- --steps 6 --dump-losses-from 3 --resume "$tmp/ck3"
compare_within "a full-sharding checkpoint of 3 ranks resumed by hybrid 2 x 2" sh3 su
finish
