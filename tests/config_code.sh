#!/bin/sh
# config_code.sh — every knob can be set in code, and the environment still tunes.
#
#  - knobs in code = the same knobs in the environment, bitwise: the runtime's through
#    sf_init_config (train_dump --init-config), the model's through
#    sf_model_options::config (--config), and the model's again as the context's
#    defaults; two sets (depth 3, backward post, recompute, bf16 on the wire, chunk,
#    timeout, memory check off; and grad_op with local accumulation); and each set
#    does change the run (its losses differ from the defaults');
#  - a variable set in the environment overrides the program's value, and rank 0 logs
#    it once ("SHARDFLOW_PARAM_DTYPE=bf16 overrides the program's fp32 (model ...)",
#    and for sf_init_config's knobs); the run is then the environment's, bitwise;
#  - refused, naming what was wrong: a bad value set in code, a runtime knob in a
#    model's config, a hybrid model on a context that is not, an unknown unit;
#  - per-unit options: every unit kept in fp32 under bf16 knobs trains bitwise as fp32
#    and moves fp32's bytes; a unit not resharded after forward (depth 0) takes one ring
#    slot more and moves fewer bytes, with the same parameters, bitwise.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 14

args="--model nanogpt --optimizer adamw --steps 6"
set1_env="SHARDFLOW_PREFETCH_DEPTH=3 SHARDFLOW_BACKWARD_PREFETCH=post SHARDFLOW_RECOMPUTE=units
SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_REDUCE_DTYPE=bf16 SHARDFLOW_COMM_CHUNK=4096
SHARDFLOW_COMM_TIMEOUT=30 SHARDFLOW_MEMORY_CHECK=off"
set1_init="--init-config comm_chunk=4096 --init-config SHARDFLOW_COMM_TIMEOUT=30"
set1_model="--config prefetch_depth=3 --config bwd_prefetch=post --config recompute=units
--config param_dtype=bf16 --config reduce_dtype=bf16 --config memory_check=off"
set1_all_init="$set1_init $(echo "$set1_model" | sed 's/--config/--init-config/g')"

train 2 default $args
# shellcheck disable=SC2086
train 2 env1 $set1_env $args
# shellcheck disable=SC2086
train 2 code1 $set1_init $set1_model $args
compare "set 1: sf_init_config's and the model's config = the environment, bitwise" \
	code1 env1 --bitwise
# shellcheck disable=SC2086
train 2 init1 $set1_all_init $args
compare "set 1: every knob through sf_init_config = the environment, bitwise" init1 env1 --bitwise
"$DUMP_COMPARE" --bitwise "$tmp/env1.dump" "$tmp/default.dump" >"$tmp/c.out" 2>&1
[ $? -ne 0 ]
ok $? "set 1 changes the run (bf16 on the wire): its dump differs from the defaults'"

accum="--accum 2 --batch 12"
# shellcheck disable=SC2086
train 3 env2 SHARDFLOW_SHARDING=grad_op SHARDFLOW_ACCUM_MODE=local $args $accum
# shellcheck disable=SC2086
train 3 code2 --config sharding=grad_op --config accum_mode=local $args $accum
compare "set 2 (grad_op, local accumulation, 3 ranks): code = environment, bitwise" \
	code2 env2 --bitwise

# the environment overrides the program, and says so once
# shellcheck disable=SC2086
train 2 over SHARDFLOW_PARAM_DTYPE=bf16 --config param_dtype=fp32 $args
# shellcheck disable=SC2086
train 2 envb SHARDFLOW_PARAM_DTYPE=bf16 $args
compare "SHARDFLOW_PARAM_DTYPE=bf16 over the model's fp32: the run is the environment's, bitwise" \
	over envb --bitwise
n=$(grep -c -F 'SHARDFLOW_PARAM_DTYPE=bf16 overrides the program'"'"'s fp32 (model "gpt")' "$tmp/over.err")
[ "$n" = 1 ]
ok $? "the override is logged once (found $n time(s))" || diag_file "$tmp/over.err"
# shellcheck disable=SC2086
train 1 overi SHARDFLOW_COMM_TIMEOUT=40 --init-config comm_timeout=30 --steps 1
grep -q -F "SHARDFLOW_COMM_TIMEOUT=40 overrides the program's 30" "$tmp/overi.err"
ok $? "sf_init_config: SHARDFLOW_COMM_TIMEOUT=40 over the program's 30 is logged" ||
	diag_file "$tmp/overi.err"

# refusals, each naming what was wrong
refused() { # refused DESC EXPECTED ARGS...
	_d=$1 _want=$2
	shift 2
	sh "$RUN_MPI" 1 "$TRAIN_DUMP" --out "$tmp/r.dump" --steps 1 "$@" </dev/null \
		>"$tmp/r.out" 2>"$tmp/r.err"
	_st=$?
	grep -q -F "$_want" "$tmp/r.err"
	ok $(( _st == 0 || $? )) "$_d" || diag_file "$tmp/r.err"
}
refused "a bad value in code is refused naming it and the range" \
	'prefetch_depth="99" is invalid: accepted values are integers from 0 to 64 (default 2)' \
	--config prefetch_depth=99
refused "a runtime knob in a model's config is refused, naming sf_init_config" \
	"sf_model_create: config.comm_timeout=30 is the runtime's" --config comm_timeout=30
refused "a hybrid model on a context that is not hybrid is refused" \
	"sf_model_create: sharding hybrid on a context started with sharding full" \
	--config sharding=hybrid
refused "an unknown unit's options are refused, naming the graph's units" \
	'has no unit "h.9" (its units, named by sf_graph_unit_begin or by a layer with parameters outside a group: "transformer.wte", "transformer"' \
	--model nanogpt --unit-options h.9:keep_fp32=1

# per-unit options
all32="--unit-options transformer.wte:keep_fp32=1 --unit-options transformer:keep_fp32=1
--unit-options transformer.h.0:keep_fp32=1
--unit-options transformer.h.1:keep_fp32=1"
train 2 f32 $args
# shellcheck disable=SC2086
train 2 kept SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_REDUCE_DTYPE=bf16 $args $all32
compare "bf16 knobs with every unit kept in fp32 = fp32, bitwise" kept f32 --bitwise
b32=$(sed -n 's/^comm_bytes \([0-9]*\).*/\1/p' "$tmp/f32.out")
bk=$(sed -n 's/^comm_bytes \([0-9]*\).*/\1/p' "$tmp/kept.out")
[ -n "$b32" ] && [ "$b32" -gt 0 ] && [ "$b32" = "$bk" ]
ok $? "units kept in fp32 move fp32's bytes ($bk against $b32)"

# shellcheck disable=SC2086
train 2 d0 SHARDFLOW_PREFETCH_DEPTH=0 $args
# shellcheck disable=SC2086
train 2 d0keep SHARDFLOW_PREFETCH_DEPTH=0 $args \
	--unit-options transformer.h.0:reshard_after_forward=0
"$DUMP_COMPARE" --bitwise "$tmp/d0keep.dump" "$tmp/d0.dump" >"$tmp/c.out" 2>&1
st=$?
r0=$(sed -n 's/^max_resident.* ring_slots \([0-9]*\).*/\1/p' "$tmp/d0.out")
rk=$(sed -n 's/^max_resident.* ring_slots \([0-9]*\).*/\1/p' "$tmp/d0keep.out")
b0=$(sed -n 's/^comm_bytes \([0-9]*\).*/\1/p' "$tmp/d0.out")
bk=$(sed -n 's/^comm_bytes \([0-9]*\).*/\1/p' "$tmp/d0keep.out")
[ $st -eq 0 ] && [ -n "$r0" ] && [ "$rk" = $((r0 + 1)) ] && [ -n "$b0" ] && [ "$bk" -lt "$b0" ]
ok $? "reshard_after_forward 0 on a block (depth 0): bitwise the same, ring $r0 -> $rk slots, bytes $b0 -> $bk" ||
	diag_file "$tmp/c.out"
finish
