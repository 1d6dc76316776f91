#!/bin/sh
# pipeline_recompute.sh — activation recompute under a pipeline (issue 49, item 4:
# SHARDFLOW_RECOMPUTE=units with SHARDFLOW_PP). A stage keeps, for each micro-batch in
# flight, only its segments' inputs and outputs; the dropped activations live in the
# like segments' two shared sets (scheduler/plan.c), which every pass of the rank
# takes in turn (StarPU orders them by submission: the schedule's order), and a
# segment's forward runs again before its backward of that micro-batch. The same
# kernels on the same inputs: training must not change a bit. Checked:
#  - deep (7 units, 6 of them like segments: 16 -> 24 and 24 -> 24, GELU), AdamW with
#    clipping, pp 2: 1f1b, gpipe, zero-bubble and interleaved (V 2) with recompute =
#    1f1b without, bitwise; pp 2 x dp 2 and pp 4 the same;
#  - gpt (3 attention blocks, a tied head held by both stages) at pp 2, bitwise;
#  - pairs (a linear reading a dropped activation) under zero-bubble, bitwise;
#  - the trace: each rank's recompute tasks, one per dropped node of each held
#    segment, every micro-batch of every step;
#  - memory: each stage's activations fall, by the dropped buffers of its micro-batch
#    sets less the shared sets it uses (at pp 4 a stage holding one like segment makes
#    one shared set, not the group's two), and the memory plan = sf_model_stats;
#  - examples/gpt --arch llama, 6 layers, pp 2 x tp 2 and pp 2 x cp 2: the exported
#    weights are the same file, the activation memory it prints falls.
. "$(dirname "$0")/lib.sh"
GPT="$top_builddir/examples/gpt"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE" "$GPT"

plan 15

a="--model deep --optimizer adamw --clip 0.5 --steps 2 --batch 8"
# shellcheck disable=SC2086
train 2 none SHARDFLOW_PP=2 SHARDFLOW_LOG=info $a
# shellcheck disable=SC2086
train 2 units SHARDFLOW_PP=2 SHARDFLOW_LOG=info SHARDFLOW_RECOMPUTE=units \
	SHARDFLOW_TRACE="$tmp/tr" $a
compare "deep, adamw, clip, pp 2 (1f1b): recompute = none, bitwise" units none --bitwise
for sch in gpipe zero-bubble interleaved; do
	# shellcheck disable=SC2086
	train 2 "u-$sch" SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=$sch SHARDFLOW_RECOMPUTE=units $a
	compare "deep, pp 2, $sch with recompute = 1f1b without, bitwise" "u-$sch" none --bitwise
done
b="--model deep --optimizer adamw --clip 0.5 --steps 2 --batch 16"
# shellcheck disable=SC2086
train 4 none22 SHARDFLOW_PP=2 $b
# shellcheck disable=SC2086
train 4 units22 SHARDFLOW_PP=2 SHARDFLOW_RECOMPUTE=units $b
compare "deep, pp 2 x dp 2 on 4 ranks: recompute = none, bitwise" units22 none22 --bitwise
c="--model deep --optimizer sgd --steps 2 --batch 8"
# shellcheck disable=SC2086
train 4 none4 SHARDFLOW_PP=4 SHARDFLOW_LOG=info $c
# shellcheck disable=SC2086
train 4 units4 SHARDFLOW_PP=4 SHARDFLOW_LOG=info SHARDFLOW_RECOMPUTE=units $c
compare "deep, sgd, pp 4: recompute = none, bitwise" units4 none4 --bitwise
g="--model gpt --optimizer adamw --steps 2 --batch 8"
# shellcheck disable=SC2086
train 2 gnone SHARDFLOW_PP=2 $g
# shellcheck disable=SC2086
train 2 gunits SHARDFLOW_PP=2 SHARDFLOW_RECOMPUTE=units $g
compare "gpt (attention blocks, tied head), pp 2: recompute = none, bitwise" gunits gnone --bitwise

# pairs: each unit's fc_b keeps its output and reads a dropped one (the GELU's); zero-
# bubble defers no weight gradient that reads recompute's shared buffers (stage 0's
# three units take the two sets in turn: a deferred fc_b would read its input after
# the next segment's recompute rewrote it)
p="--model pairs --optimizer sgd --steps 2 --batch 8"
# shellcheck disable=SC2086
train 2 pnone SHARDFLOW_PP=2 $p
# shellcheck disable=SC2086
train 2 pzb SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=zero-bubble SHARDFLOW_RECOMPUTE=units $p
compare "pairs, pp 2: zero-bubble with recompute = 1f1b without, bitwise" pzb pnone --bitwise

# the trace, pp 2: stage 0 holds units 0..2, stage 1 units 3..6, each three of deep's six
# like segments (a linear then a GELU: the linear's output dropped), 4 micro-batches, 2
# steps: 3 x 4 x 2 recompute tasks a rank
ok_tr=0
for r in 0 1; do
	n=$(grep -c '"kind": "recompute"' "$tmp/tr.rank$r.json" 2>/dev/null)
	[ "${n:-0}" -eq 24 ] || { ok_tr=1; diag "  rank $r: ${n:-no} recompute tasks"; }
done
ok $ok_tr "trace, pp 2: 24 recompute tasks a rank (3 segments x 4 micro-batches x 2 steps)"

# memory. pp 2, 4 micro-batches of 2 rows: stage 0 holds 3 like segments in 2 sets
# (1f1b: S - s micro-batches in flight), stage 1 3 in 1; a dropped linear output of 24
# floats a row, with its gradient: 2 x 24 x 2 rows x 4 bytes = 384 bytes a segment a
# set, of which the shared sets keep 2 (the group's two, both used by three segments)
drop() { echo $(($(stats_of "$1" "$3" activations) - $(stats_of "$2" "$3" activations))); }
d0=$(drop none units 0) d1=$(drop none units 1)
[ "$d0" -eq $(((3 * 2 - 2) * 384)) ] && [ "$d1" -eq $(((3 * 1 - 2) * 384)) ]
ok $? "pp 2: activations fall by the dropped sets less the shared ones (rank 0 $d0 = 4 x 384, rank 1 $d1 = 1 x 384 bytes)"
plan_ok units 0 && plan_ok units 1
ok $? "pp 2 with recompute: the memory plan = sf_model_stats on both ranks"
# pp 4, 8 micro-batches of 1 row (a segment's set: 192 bytes): stage 1 holds unit 2
# alone, one like segment in 3 sets, and makes the one shared set it uses
d=$(drop none4 units4 1)
[ "$d" -eq $(((3 - 1) * 192)) ]
ok $? "pp 4: stage 1 (one like segment, 3 sets) keeps one shared set ($d = 2 x 192 bytes)"
ok_p=0
for r in 0 1 2 3; do plan_ok units4 $r || ok_p=1; done
ok $ok_p "pp 4 with recompute: the memory plan = sf_model_stats on every rank"

# examples/gpt, the Llama of 6 layers at pp 2 x tp 2 (3 layers a stage), and at pp 2 x
# cp 2 (each stage's CP ring in the recomputed blocks' forwards)
sf_corpus "$tmp/corpus.txt"
mib() { sed -n 's/.*activations \([0-9.]*\) MiB.*/\1/p' "$1" | head -1; }
gpt_recompute() { # gpt_recompute NAME LAYOUT ENV...: with and without recompute
	g_name=$1 g_desc=$2
	shift 2
	for r in none units; do
		env "$@" SHARDFLOW_RECOMPUTE=$r sh "$RUN_MPI" 4 "$GPT" \
			--arch llama --layers 6 --heads 4 --embd 32 --context 16 --batch 8 --steps 3 \
			--sample 0 --eval-every 1000 --text "$tmp/corpus.txt" --export "$tmp/$g_name-$r.st" \
			</dev/null >"$tmp/$g_name-$r.out" 2>"$tmp/$g_name-$r.err" ||
			diag_file "$tmp/$g_name-$r.err"
	done
	x=$(mib "$tmp/$g_name-none.err") y=$(mib "$tmp/$g_name-units.err")
	[ -s "$tmp/$g_name-none.st" ] && cmp -s "$tmp/$g_name-none.st" "$tmp/$g_name-units.st" &&
		awk -v a="${x:-0}" -v b="${y:-0}" 'BEGIN { exit !(a > 0 && b > 0 && b < a) }'
	ok $? "examples/gpt --arch llama, 6 layers, $g_desc: the same exported weights, activations $x -> $y MiB"
}
gpt_recompute l "pp 2 x tp 2" SHARDFLOW_PP=2 SHARDFLOW_TP=2
gpt_recompute c "pp 2 x cp 2" SHARDFLOW_PP=2 SHARDFLOW_CP=2
finish
