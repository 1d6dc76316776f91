#!/bin/sh
# bf16.sh — mixed precision: SHARDFLOW_PARAM_DTYPE and SHARDFLOW_REDUCE_DTYPE.
#
#  - what a gather delivers (tests/bf16_probe: the forward pass of a linear layer on
#    the identity shows the gathered weights exactly): with PARAM_DTYPE=bf16 every
#    gathered parameter is the bf16 rounding (nearest, ties to even) of its fp32 master
#    shard, bitwise, on 1, 2, 3 and 5 ranks (a padded unit) and with grad_op's replicas;
#    with fp32 the master itself, and then not all of them equal their bf16 rounding
#    (the probe can tell the two apart);
#  - the bytes on the wire (sf_model_stats::comm_bytes): bf16 gathers and
#    reduce-scatters send exactly half of fp32's;
#  - training: sf_gpt_graph's model (train_dump --model nanogpt), SGD, 20 steps on 3
#    ranks, every combination of the two, against fp32 on 1 rank (no ring at all, so a
#    reduce-scatter bug cannot hide in the reference): the fp32 run's parameters lie
#    within the bf16 run's rounding interval (the bf16 run again with every rounding,
#    float operations and bf16 conversions of the wire and the products, upward and
#    then downward: the fp32 values lie between their bf16 roundings down and up),
#    and every loss within about 10x the measured bf16 error (below);
#  - bf16 changes no schedule property: bitwise equal across prefetch depths (AdamW);
#  - with oneDNN (configure found libdnnl-dev) the linear layers' products run in bf16
#    (the training and bitwise cases above then cover them; the log says which);
#  - refused with a message naming the variable: sharding none (no gathers).
. "$(dirname "$0")/lib.sh"
PROBE="$top_builddir/tests/bf16_probe"
require_progs "$PROBE" "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 14

probe() { # probe NAME NP ENV...
	_n=$1 _np=$2
	shift 2
	env "$@" sh "$RUN_MPI" "$_np" "$PROBE" 3 </dev/null >"$tmp/$_n.out" 2>"$tmp/$_n.err"
}

for np in 1 2 3 5; do
	probe "p$np" "$np" SHARDFLOW_PARAM_DTYPE=bf16
	st=$?
	ok $st "PARAM_DTYPE=bf16, $np rank(s): every gathered weight = bf16(master) ($(tr '\n' ';' <"$tmp/p$np.out"))" ||
		diag_file "$tmp/p$np.err"
done
probe pg 2 SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_SHARDING=grad_op
ok $? "PARAM_DTYPE=bf16, grad_op, 2 ranks: the replicas hold bf16(master) ($(tr '\n' ';' <"$tmp/pg.out"))"
probe p32 3 SHARDFLOW_PARAM_DTYPE=fp32
st=$?
awk '{ if ($6 < $10) differ = 1 } END { exit !differ }' "$tmp/p32.out"
ok $((st || $?)) "fp32, 3 ranks: the gathered weights are the masters, not all bf16 values ($(tr '\n' ';' <"$tmp/p32.out"))"

# training, 3 ranks, 20 steps of SGD on sf_gpt_graph's model, against fp32 on 1 rank.
# SGD, not AdamW: AdamW turns the bf16 rounding of a gradient near zero into a step of
# +-lr whose sign is noise (measured: parameters 1.2 apart relative, AdamW, 20 steps),
# while SGD's parameter error stays proportional to the rounding.
# The parameters: derived, the fp32 run within the bf16 run's rounding interval
# (dump_compare --up/--down, blocks of 128; measured at most 0.22 of it).
# The losses: measured, flagged (docs/testing.md). A loss is a signed sum over the
# parameters: rounding every gradient up shortens half the steps and lengthens the
# others, so the interval of a loss can close where a nearest rounding's does not
# (measured up to 8x it). Measured maximum relative differences of the losses against
# 1 rank in fp32, and the bounds (about 10x):
#   PARAM REDUCE   losses   rtol
#   bf16  fp32     3.2e-4   3e-3
#   fp32  bf16     2.0e-5   2e-4
#   bf16  bf16     3.0e-4   3e-3
# One rank dropping its first partial sum in the reduce-scatter ring moves the
# parameters 0.8 (bf16 ring) to 1.4 (fp32 ring) apart and the losses 1.2e-2.
args="--model nanogpt --optimizer sgd --steps 20"
# shellcheck disable=SC2086
train_interval 1 ref $args
# shellcheck disable=SC2086
train 3 f32 $args
compare_within "fp32, 3 ranks: 20 losses and the parameters = 1 rank" f32 ref
for c in bf16:fp32:3e-3 fp32:bf16:2e-4 bf16:bf16:3e-3; do
	p=${c%%:*} c=${c#*:}
	r=${c%%:*} tl=${c#*:}
	b="b-$p-$r"
	# shellcheck disable=SC2086
	train_interval 3 "$b" SHARDFLOW_PARAM_DTYPE="$p" SHARDFLOW_REDUCE_DTYPE="$r" $args
	"$DUMP_COMPARE" --rtol "$tl" --ignore 0:1000000000 "$tmp/$b.dump" "$tmp/ref.dump" \
		>"$tmp/cmp-$p-$r.out" 2>&1 &&
		"$DUMP_COMPARE" --up "$tmp/$b.up.dump" --down "$tmp/$b.down.dump" --no-losses \
			"$tmp/ref.dump" "$tmp/$b.dump" >>"$tmp/cmp-$p-$r.out" 2>&1
	ok $? "PARAM_DTYPE=$p REDUCE_DTYPE=$r: 20 losses within $tl of fp32 on 1 rank, its parameters within the bf16 run's rounding interval"
	diag_file "$tmp/cmp-$p-$r.out"
done
b32=$(sed -n "s/^comm_bytes \([0-9]*\).*/\1/p" "$tmp/f32.out")
b16=$(sed -n "s/^comm_bytes \([0-9]*\).*/\1/p" "$tmp/b-bf16-bf16.out")
[ -n "$b32" ] && [ -n "$b16" ] && [ "$b32" -gt 0 ] && [ $((b16 * 2)) -eq "$b32" ]
ok $? "bf16 gathers and reduce-scatters send half the bytes of fp32 ($b16 against $b32 on rank 0)"

# schedules stay bitwise equal with bf16
sched="--model nanogpt --optimizer adamw --steps 20"
# shellcheck disable=SC2086
train 2 d0 SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_REDUCE_DTYPE=bf16 SHARDFLOW_PREFETCH_DEPTH=0 $sched
# shellcheck disable=SC2086
train 2 d3 SHARDFLOW_PARAM_DTYPE=bf16 SHARDFLOW_REDUCE_DTYPE=bf16 SHARDFLOW_PREFETCH_DEPTH=3 \
	SHARDFLOW_BACKWARD_PREFETCH=post $sched
compare "bf16: depth 0 = depth 3 with backward prefetch post, bitwise" d0 d3 --bitwise

# the linear layers' products: bf16 through oneDNN in a build that has it, else fp32
env SHARDFLOW_LOG=info SHARDFLOW_PARAM_DTYPE=bf16 sh "$RUN_MPI" 1 "$TRAIN_DUMP" --model mlp \
	--steps 1 --out "$tmp/log.dump" </dev/null >"$tmp/log.out" 2>"$tmp/log.err"
if [ "${SF_HAVE_DNNL:-no}" = yes ]; then want="in bf16 through oneDNN"; else want="in fp32 (this build has no oneDNN)"; fi
grep -q -F "products $want" "$tmp/log.err"
ok $? "PARAM_DTYPE=bf16: the log says the products run $want (oneDNN in this build: ${SF_HAVE_DNNL:-no})" ||
	diag_file "$tmp/log.err"

# sharding none has no gathers: refused, naming the variable
env SHARDFLOW_SHARDING=none SHARDFLOW_REDUCE_DTYPE=bf16 sh "$RUN_MPI" 2 "$TRAIN_DUMP" \
	--model mlp --steps 1 --out "$tmp/none.dump" </dev/null >"$tmp/none.out" 2>"$tmp/none.err"
st=$?
[ $st -ne 0 ] && grep -q 'SHARDFLOW_REDUCE_DTYPE=bf16' "$tmp/none.err" &&
	grep -q 'SHARDFLOW_SHARDING=none' "$tmp/none.err"
ok $? "REDUCE_DTYPE=bf16 with sharding none: refused with the reason (exit $st)" ||
	diag_file "$tmp/none.err"
finish
