#!/bin/sh
# pipeline_grad_op.sh — SHARDFLOW_SHARDING=grad_op (ZeRO-2) under SHARDFLOW_PP: each rank
# of a stage holds the stage's parameters whole for the step, its gradients are
# reduce-scattered and its optimizer state sharded over the stage's dp ranks, and the
# updated shards are all-gathered once a step (torchtitan's reshard_after_forward=False
# under a pipeline). With full sharding every pass gathers its units again: 2 M
# gathers a unit a step.
# Checked:
#  - deep (7 linear units), AdamW, clip 0.5, pp 2 x dp 2 on 4 ranks: grad_op = full,
#    bitwise, under 1f1b, gpipe, zero-bubble and interleaved (the same reductions of the
#    same gradients, the same parameters gathered);
#  - nanogpt (the tied head: read by both ends, its gradients summed between the first
#    and the last stage) at pp 2 x dp 2, and llama-hf-tp at pp 2 x tp 2: grad_op = full,
#    bitwise;
#  - the traffic (the built-in trace, deep, 4 micro-batches, 2 steps): no gather in any
#    pass and one all-gather of each updated shard a step ("ag": stage 0's 3 units, stage
#    1's 4), where full sharding gathers in the passes and has no "ag"; fewer bytes;
#  - with SHARDFLOW_ACCUM_MODE=local one reduce-scatter a unit a step (the micro-batches'
#    gradients summed whole on the rank first) instead of one a micro-batch, within
#    dump_compare's tolerance of the sharded sums;
#  - memory: each rank's parameter bytes are its stage's units whole and their shards,
#    exactly, and no gather slots; the memory plan = sf_model_stats on every rank;
#  - checkpoints: 2 steps at grad_op, saved, and 2 resumed = 4 steps of full sharding,
#    bitwise;
#  - none and hybrid sharding are still refused under a pipeline, naming grad_op.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE" "$CKPT_DRIVER"

plan 13

# as_full NAME DESC ENV... -- ARGS: NAME's run at grad_op = its run at full, bitwise (4
# ranks, pp 2); NAME-full and NAME are kept for the checks below
as_full() {
	f_name=$1 f_desc=$2 f_env=
	shift 2
	while [ "$1" != -- ]; do
		f_env="$f_env $1"
		shift
	done
	shift
	# shellcheck disable=SC2086
	train 4 "$f_name-full" SHARDFLOW_PP=2 $f_env "$@"
	# shellcheck disable=SC2086
	train 4 "$f_name" SHARDFLOW_PP=2 SHARDFLOW_SHARDING=grad_op $f_env "$@"
	compare "$f_desc: grad_op = full, bitwise" "$f_name" "$f_name-full" --bitwise
}
a="--model deep --optimizer adamw --clip 0.5 --steps 2 --batch 16"
# shellcheck disable=SC2086
as_full z2 "deep, adamw, clip, pp 2 x dp 2 (1f1b)" SHARDFLOW_LOG=info -- $a
for sch in gpipe zero-bubble interleaved; do
	# shellcheck disable=SC2086
	train 4 "z2-$sch" SHARDFLOW_PP=2 SHARDFLOW_SHARDING=grad_op SHARDFLOW_PP_SCHEDULE=$sch $a
	compare "deep, pp 2 x dp 2, $sch: grad_op = full 1f1b, bitwise" "z2-$sch" z2-full --bitwise
done
# shellcheck disable=SC2086
as_full gz2 "nanogpt (tied head), pp 2 x dp 2" -- --model nanogpt --optimizer adamw --clip 0.5 \
	--steps 2 --batch 8
# shellcheck disable=SC2086
as_full tz2 "llama-hf-tp, pp 2 x tp 2" SHARDFLOW_TP=2 -- --model llama-hf-tp --optimizer sgd \
	--steps 2 --batch 8
# the traffic, traced (the same runs again)
# shellcheck disable=SC2086
train 4 tf SHARDFLOW_PP=2 SHARDFLOW_TRACE="$tmp/tf" $a
# shellcheck disable=SC2086
train 4 tz SHARDFLOW_PP=2 SHARDFLOW_SHARDING=grad_op SHARDFLOW_TRACE="$tmp/tz" $a

# the trace: rank r's tasks of a kind over the 2 steps
kinds() { grep -c "\"kind\": \"$2\"" "$tmp/$1.rank$3.json" 2>/dev/null; }
ok_t=0
for r in 0 1 2 3; do
	u=$((r < 2 ? 3 : 4)) # stage 0 holds units 0..2, stage 1 units 3..6
	gz=$(kinds tz gather $r) az=$(kinds tz ag $r) gf=$(kinds tf gather $r) af=$(kinds tf ag $r)
	[ "${gz:-1}" -eq 0 ] && [ "${az:-0}" -eq $((2 * u)) ] && [ "${gf:-0}" -gt 0 ] &&
		[ "${af:-1}" -eq 0 ] || {
		ok_t=1
		diag "  rank $r: grad_op ${gz:-no} gathers, ${az:-no} ag; full ${gf:-no} gathers, ${af:-no} ag"
	}
done
ok $ok_t "trace: grad_op gathers nothing in the passes and all-gathers each unit once a step (3 or 4 a step); full gathers in them"
bf=$(sed -n 's/^comm_bytes //p' "$tmp/tf.out") bz=$(sed -n 's/^comm_bytes //p' "$tmp/tz.out")
[ "${bz:-0}" -gt 0 ] && [ "$bz" -lt "${bf:-0}" ]
ok $? "rank 0's bytes: grad_op ${bz:-none} < full ${bf:-none}"

# local accumulation: one reduce-scatter a unit a step
# shellcheck disable=SC2086
train 4 z2l SHARDFLOW_PP=2 SHARDFLOW_SHARDING=grad_op SHARDFLOW_ACCUM_MODE=local \
	SHARDFLOW_TRACE="$tmp/tl" $a
compare "grad_op with SHARDFLOW_ACCUM_MODE=local = sharded sums (dump_compare's tolerance)" z2l z2
ok_l=0
for r in 0 1 2 3; do
	u=$((r < 2 ? 3 : 4))
	nl=$(kinds tl rs $r) nz=$(kinds tz rs $r)
	[ "${nl:-0}" -eq $((2 * u)) ] && [ "${nz:-0}" -eq $((2 * 4 * u)) ] || {
		ok_l=1
		diag "  rank $r: local ${nl:-no} reduce-scatters, sharded ${nz:-no}"
	}
done
ok $ok_l "local: one reduce-scatter a unit a step (sharded: one a micro-batch, 4)"

# memory: the stage's parameters whole beside their shards, no gather slots (ring), the
# plan = sf_model_stats. deep's units: 16 x 24 + 24 = 408 parameters, 24 x 24 + 24 =
# 600 (five), 24 x 10 + 10 = 250; stage 0 holds 408 + 2 x 600 = 1 608, stage 1 3 x 600
# + 250 = 2 050, each whole and its half a shard: 4 x 1.5 x P bytes
ok_m=0
for r in 0 1 2 3; do
	P=$((r < 2 ? 1608 : 2050))
	pz=$(stats_of z2 $r params) ring=$(stats_of z2 $r ring)
	[ "${pz:-0}" -eq $((6 * P)) ] && [ "${ring:-1}" -eq 0 ] && plan_ok z2 $r || {
		ok_m=1
		diag "  rank $r: parameter bytes ${pz:-none} (want $((6 * P))), ring ${ring:-none}"
	}
done
ok $ok_m "grad_op: each rank's parameters its stage's whole and their shards (6 x 1 608 and 6 x 2 050 bytes), no ring; the plan = sf_model_stats"

# checkpoints: grad_op saves the shards full sharding does; 2 steps saved and 2 resumed
# at grad_op = 4 uninterrupted steps of full sharding, bitwise
ca="--model deep --optimizer adamw --batch 16"
ck="$tmp/ck"
# shellcheck disable=SC2086
drv 4 u SHARDFLOW_PP=2 $ca --steps 4 --out "$tmp/u.dump" --dump-losses-from 2 &&
	drv 4 s SHARDFLOW_PP=2 SHARDFLOW_SHARDING=grad_op $ca --steps 2 --save "$ck" \
		--save-every 2 &&
	drv 4 r SHARDFLOW_PP=2 SHARDFLOW_SHARDING=grad_op $ca --steps 4 --resume "$ck" \
		--out "$tmp/r.dump"
compare "grad_op pp 2 x dp 2: 2 steps, saved, 2 resumed = 4 steps of full sharding, bitwise" r u --bitwise

ok_r=0
for s in none hybrid; do
	# shellcheck disable=SC2086
	env SHARDFLOW_PP=2 SHARDFLOW_SHARDING=$s sh "$RUN_MPI" 2 "$TRAIN_DUMP" $a \
		--out "$tmp/bad.dump" </dev/null >"$tmp/bad-$s.out" 2>"$tmp/bad-$s.err" && ok_r=1
	grep -q "SHARDFLOW_SHARDING=$s: not supported yet; accepted with a pipeline: sharding full or grad_op" "$tmp/bad-$s.err" ||
		{ ok_r=1; diag_file "$tmp/bad-$s.err"; }
done
ok $ok_r "SHARDFLOW_SHARDING=none and hybrid under a pipeline: refused, naming full and grad_op"
finish
