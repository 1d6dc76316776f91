#!/bin/sh
# pipeline.sh — pipeline parallelism (SHARDFLOW_PP=S, world = S x dp) against 1 rank.
#
# A pipeline step of M micro-batches must update the parameters as 1 rank does with M
# micro-batches accumulated (train_dump --accum M --batch B/M on 1 rank, as
# accumulation.sh's reference): each micro-batch's loss is the mean over its rows,
# the gradients are summed and scaled by 1/M. With dp 1 a micro-batch holds the same
# rows as the reference's; with dp 2 it holds other rows of the same batch, so the sums
# run in another order: the run must lie within the reference's rounding interval (the
# reference again rounded upward and downward: docs/testing.md), losses, parameters and
# clip norms. Models (tests/test_models.h): deep (7 linear units, a chain of float
# rows), llama (token ids, 2 attention blocks, an untied head: the transformer whose
# units follow each other) and nanogpt-untied (sf_gpt_graph untied: ln_f and lm_head a
# unit of their own after the blocks; blocks, gpt and nanogpt hold a tied head, whose
# unit is read at both ends: tests/pipeline_tied.sh). Checked:
#  - pp 2 on 2 ranks, pp 4 on 4 ranks (8 micro-batches) and pp 2 x dp 2 on 4 ranks
#    = 1 rank, SGD and AdamW, with clipping (max norm 0.5: the norm summed across the
#    stages, printed and compared) and both accumulation modes;
#  - fewer micro-batches than stages; one micro-batch with 3 steps in flight and no
#    prefetch = a plain 1-rank step, bitwise;
#  - gpipe = 1f1b = zero-bubble bitwise (all sum the micro-batches' gradients in
#    micro-batch order; zero-bubble's weight-gradient tasks write the same parts of a
#    unit's gradient slot as the whole backward, each part once), pp 2 and pp 4, deep
#    and llama (pp 2 x dp 2); llama pp 4 under zero-bubble = 1 rank;
#  - nanogpt-untied (the GPT, untied), pp 2 on 2 ranks, AdamW with clipping = 1 rank;
#  - SHARDFLOW_PP_BALANCE: examples/gpt untied at embd 8 on byte tokens (vocabulary
#    256), whose head's product (2 x 8 x 256 a token) outweighs a block's (about 1 800)
#    while its parameters weigh about two blocks': params cuts after the first block
#    (the embeddings' 2 112 parameters and a block's 900 before the cut, 3 012 against
#    the half 2 988), flops after the second (two blocks' 3 584 against the half 3 840;
#    one block's 1 792 is farther); the losses of the two cuts bitwise the same (dp 1:
#    the same sums) and those of 1 rank within 1e-5; a bad value refused; flops
#    counts the backward too: examples/mlp_synthetic 640-512-512-512-10, whose first
#    linear reads the graph's input and computes dW alone (1.25 + 1.25 products of
#    512^2 a row, against 3 for each 512 x 512 unit), cut after its second unit (5.5
#    against the half 5.75) where params (1.25 against 1.63) and a count of the
#    forwards alone (1.25 against 1.63) cut after the first; the losses bitwise;
#  - ignored labels (--ignore-every 3): pp 2's step = 1 rank's batch without
#    micro-batches, its loss and gradient the mean over the step's counted rows;
#  - the safetensors export of pp 2 (each unit from its stage's ranks) = 1 rank's,
#    byte for byte (dp 1: the same sums in the same order);
#  - the transfers' bytes, exactly: pp 2 on 2 ranks (dp 1: no ring sends anything),
#    each stage sends steps x rows x 24 floats (deep's cut after its third unit);
#  - memory divided by the stages (sf_model_stats of every rank, train_dump's "bytes"
#    lines), against figures this script computes from deep's shapes (P = O (I + 1) a
#    linear unit, the cut closest to half the parameters, S = ceil(P / dp)): a rank's
#    optimizer state is its stage's units' shards alone (the two stages' sum = a
#    1-stage rank's at the same dp), its parameters those shards and R ring slots of
#    its stage's largest unit, its gradients the shards, 2 gradient slots of that unit
#    and the accumulation buffer of its shard; at dp 1 (SGD) and dp 2 (AdamW); under
#    zero-bubble one gradient slot a unit of the stage (kept until its weight
#    gradients run);
#  - the activations: under gpipe a stage keeps M sets, and the two stages' sets are
#    1 rank's (at the micro-batch's rows) and the boundary's activation and gradient;
#    under 1f1b stage s keeps min(M, S - s) sets of its layers' buffers (its input M);
#  - the memory plan (SHARDFLOW_MEMORY_CHECK, logged at SHARDFLOW_LOG=info) = what
#    sf_model_stats counts once the model holds it, part by part, on every rank;
#  - refused with the reason: S not dividing the world, more stages than units, a bad
#    schedule name, micro-batches not dividing the batch, and
#    sf_model_accumulate under a pipeline.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 36

# name: the norms of a run's steps (clipping), one per line
norms() {
	grep '^norm ' "$tmp/$1.out" | awk '{print $3}'
}

# desc a b: every step's norm of run a within b's rounding interval
same_norms() {
	within_interval "$2" "$3" '^norm ' >"$tmp/nw"
	ok $? "$1"
	norms "$2" >"$tmp/na"
	norms "$3" >"$tmp/nb"
	paste "$tmp/na" "$tmp/nb" | sed 's/^/#   norm /'
	diag_file "$tmp/nw"
}

# deep, SGD, clipping: pp 2 (M 4), pp 4 (M 8) against 1 rank
train 1 deep-r4 --model deep --optimizer sgd --steps 4 --batch 2 --accum 4 --clip 0.5 \
	--export "$tmp/deep-r4.st" &&
	interval_of 1 deep-r4 --model deep --optimizer sgd --steps 4 --batch 2 --accum 4 --clip 0.5 ||
	bail_out "the reference run failed"
train 2 deep-p2 SHARDFLOW_PP=2 SHARDFLOW_LOG=info --model deep --optimizer sgd --steps 4 --batch 8 --clip 0.5 \
	--export "$tmp/deep-p2.st"
compare_within "deep, sgd, clip: pp 2 on 2 ranks (4 micro-batches) = 1 rank" deep-p2 deep-r4
same_norms "deep: the clip norm of pp 2 = 1 rank's (both stages' units)" deep-p2 deep-r4
cmp -s "$tmp/deep-p2.st" "$tmp/deep-r4.st"
ok $? "deep: pp 2's safetensors export = 1 rank's, byte for byte (each unit from its stage)"
train 2 deep-p2g SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=gpipe SHARDFLOW_LOG=info --model deep \
	--optimizer sgd --steps 4 --batch 8 --clip 0.5
compare "deep: gpipe = 1f1b on 2 stages, bitwise" deep-p2g deep-p2 --bitwise
train 2 deep-p2z SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=zero-bubble SHARDFLOW_LOG=info \
	--model deep --optimizer sgd --steps 4 --batch 8 --clip 0.5
compare "deep: zero-bubble = 1f1b on 2 stages, bitwise" deep-p2z deep-p2 --bitwise
# dp 1: only the boundary moves: 8 rows x 24 floats a step each way
want=$((4 * 8 * 24 * 4))
got0=$(sent_bytes deep-p2 0)
got1=$(sent_bytes deep-p2 1)
[ "$got0" = "$want" ] && [ "$got1" = "$want" ]
ok $? "pp 2, dp 1: each stage sends its boundary tensor once a micro-batch ($want bytes: rank 0 $got0, rank 1 $got1)"

train_interval 1 deep-r8 --model deep --optimizer sgd --steps 3 --batch 1 --accum 8 --clip 0.5 ||
	bail_out "the reference run failed"
train 4 deep-p4 SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=8 --model deep --optimizer sgd \
	--steps 3 --batch 8 --clip 0.5
compare_within "deep, sgd, clip: pp 4 on 4 ranks (8 micro-batches, 1f1b) = 1 rank" deep-p4 deep-r8
train 4 deep-p4g SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=8 SHARDFLOW_PP_SCHEDULE=gpipe \
	--model deep --optimizer sgd --steps 3 --batch 8 --clip 0.5
compare "deep: gpipe = 1f1b on 4 stages, bitwise" deep-p4g deep-p4 --bitwise
train 4 deep-p4z SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=8 SHARDFLOW_PP_SCHEDULE=zero-bubble \
	--model deep --optimizer sgd --steps 3 --batch 8 --clip 0.5
compare "deep: zero-bubble = 1f1b on 4 stages, bitwise" deep-p4z deep-p4 --bitwise

# fewer micro-batches than stages (AdamW); one micro-batch, steps in flight, no
# prefetch: a plain step of the whole batch, bitwise
train_interval 1 deep-r2 --model deep --optimizer adamw --steps 3 --batch 4 --accum 2 ||
	bail_out "the reference run failed"
train 4 deep-p4m2 SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=2 --model deep --optimizer adamw \
	--steps 3 --batch 8
compare_within "deep, adamw: pp 4 with 2 micro-batches (fewer than the stages) = 1 rank" \
	deep-p4m2 deep-r2
train 1 deep-r1 --model deep --optimizer sgd --steps 3 --batch 8 ||
	bail_out "the reference run failed"
train 2 deep-p2m1 SHARDFLOW_PP=2 SHARDFLOW_PP_MICROBATCHES=1 SHARDFLOW_PREFETCH_DEPTH=0 \
	SHARDFLOW_BACKWARD_PREFETCH=none --model deep --optimizer sgd --steps 3 --batch 8 --inflight 3
compare "deep: pp 2 with 1 micro-batch, 3 steps in flight, depth 0 = 1 rank's step, bitwise" \
	deep-p2m1 deep-r1 --bitwise

# llama, pp 2 x dp 2 on 4 ranks: SGD; AdamW with clipping, both schedules
for opt in sgd adamw; do
	train_interval 1 "llama-r-$opt" --model llama --optimizer $opt --steps 4 --batch 2 --accum 4 \
		--clip 0.5 || bail_out "the reference run failed"
	train 4 "llama-p-$opt" SHARDFLOW_PP=2 --model llama --optimizer $opt --steps 4 \
		--batch 8 --clip 0.5
	compare_within "llama, $opt, clip: pp 2 x dp 2 on 4 ranks = 1 rank" "llama-p-$opt" \
		"llama-r-$opt"
done
same_norms "llama: the clip norm of pp 2 x dp 2 = 1 rank's" llama-p-adamw llama-r-adamw
train 4 llama-pg-adamw SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=gpipe --model llama \
	--optimizer adamw --steps 4 --batch 8 --clip 0.5
compare "llama, adamw: gpipe = 1f1b on pp 2 x dp 2, bitwise" llama-pg-adamw llama-p-adamw --bitwise
train 4 llama-pz-adamw SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=zero-bubble --model llama \
	--optimizer adamw --steps 4 --batch 8 --clip 0.5
compare "llama, adamw: zero-bubble = 1f1b on pp 2 x dp 2, bitwise" llama-pz-adamw llama-p-adamw \
	--bitwise
# pp 4 on 4 ranks, 4 micro-batches of 2: the reference's micro-batches
train 4 llama-p4z-adamw SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=4 SHARDFLOW_PP_SCHEDULE=zero-bubble \
	--model llama --optimizer adamw --steps 4 --batch 8 --clip 0.5
compare_within "llama, adamw, clip: pp 4 on 4 ranks, zero-bubble = 1 rank" llama-p4z-adamw \
	llama-r-adamw

# the GPT untied: its head's unit (ln_f, lm_head) in the last stage
train_interval 1 gptu-r --model nanogpt-untied --optimizer adamw --steps 3 --batch 2 --accum 4 \
	--clip 0.5 || bail_out "the reference run failed"
train 2 gptu-p2 SHARDFLOW_PP=2 --model nanogpt-untied --optimizer adamw --steps 3 --batch 8 \
	--clip 0.5
compare_within "nanogpt-untied, adamw, clip: pp 2 on 2 ranks = 1 rank" gptu-p2 gptu-r

# the stages' balance: the same model cut by parameters and by flops
GPT="$top_builddir/examples/gpt"
text="$tmp/corpus.txt"
sf_corpus "$text"
g="--untied --layers 2 --heads 2 --embd 8 --context 8 --batch 8 --sample 0 --tokens 20
--eval-every 100000 --progress-every 1 --steps 3"
# shellcheck disable=SC2086
sh "$RUN_MPI" 1 "$GPT" $g --text "$text" --loss-log "$tmp/b1.loss" </dev/null >"$tmp/b1.out" \
	2>"$tmp/b1.err"
for b in params flops; do
	# shellcheck disable=SC2086
	env SHARDFLOW_PP=2 SHARDFLOW_PP_BALANCE=$b SHARDFLOW_LOG=info sh "$RUN_MPI" 2 "$GPT" $g \
		--text "$text" --loss-log "$tmp/b-$b.loss" </dev/null >"$tmp/b-$b.out" 2>"$tmp/b-$b.err"
	echo $? >"$tmp/b-$b.st"
done
[ "$(cat "$tmp/b-params.st")" = 0 ] && [ "$(cat "$tmp/b-flops.st")" = 0 ] &&
	grep -q 'pipeline stage 0 of 2: units 0\.\.1, .*(cut by params)' "$tmp/b-params.err" &&
	grep -q 'pipeline stage 1 of 2: units 2\.\.3, .*(cut by params)' "$tmp/b-params.err"
ok $? "SHARDFLOW_PP_BALANCE=params: the GPT cut after its first block" || diag_file "$tmp/b-params.err"
grep -q 'pipeline stage 0 of 2: units 0\.\.2, .*(cut by flops)' "$tmp/b-flops.err" &&
	grep -q 'pipeline stage 1 of 2: units 3\.\.3, .*(cut by flops)' "$tmp/b-flops.err" &&
	cmp "$tmp/b-params.loss" "$tmp/b-flops.loss" >/dev/null &&
	loss_logs_within "$tmp/b1.loss" "$tmp/b-flops.loss" 3
ok $? "SHARDFLOW_PP_BALANCE=flops: the head's stage alone; losses bitwise params', 1 rank's within 1e-5" ||
	diag_file "$tmp/b-flops.err"
for b in params flops; do
	env SHARDFLOW_PP=2 SHARDFLOW_PP_BALANCE=$b SHARDFLOW_LOG=info sh "$RUN_MPI" 2 "$MLP" \
		--widths 640,512,512,512,10 --batch 64 --steps 3 >"$tmp/m-$b.out" 2>"$tmp/m-$b.err"
	echo $? >"$tmp/m-$b.st"
done
[ "$(cat "$tmp/m-params.st")" = 0 ] && [ "$(cat "$tmp/m-flops.st")" = 0 ] &&
	grep -q 'pipeline stage 0 of 2: units 0\.\.0, .*(cut by params)' "$tmp/m-params.err" &&
	grep -q 'pipeline stage 0 of 2: units 0\.\.1, .*(cut by flops)' "$tmp/m-flops.err" &&
	grep -q 'pipeline stage 1 of 2: units 2\.\.3, .*(cut by flops)' "$tmp/m-flops.err" &&
	[ -n "$(awk '/^step/ {print $4}' "$tmp/m-flops.out")" ] &&
	[ "$(awk '/^step/ {print $4}' "$tmp/m-params.out")" = "$(awk '/^step/ {print $4}' "$tmp/m-flops.out")" ]
ok $? "SHARDFLOW_PP_BALANCE=flops counts the backward: a first linear's dW alone moves the cut; losses bitwise" ||
	diag_file "$tmp/m-flops.err"

# ignored labels (every third row): the step's loss and gradient are the mean over
# the step's counted rows (each micro-batch scaled by M / their count), as 1 rank's
# batch of 8 without micro-batches; a mean of the micro-batches' means is not
train_interval 1 llama-ig-r --model llama --optimizer sgd --steps 3 --batch 8 --ignore-every 3 ||
	bail_out "the reference run failed"
train 2 llama-ig-p2 SHARDFLOW_PP=2 --model llama --optimizer sgd --steps 3 --batch 8 \
	--ignore-every 3
compare_within "llama, sgd, every third label ignored: pp 2 (4 micro-batches) = 1 rank's batch" \
	llama-ig-p2 llama-ig-r
train 4 llama-pl-sgd SHARDFLOW_PP=2 SHARDFLOW_ACCUM_MODE=local --model llama --optimizer sgd \
	--steps 4 --batch 8 --clip 0.5
compare_within "llama, sgd: pp 2 x dp 2 with SHARDFLOW_ACCUM_MODE=local = 1 rank" \
	llama-pl-sgd llama-r-sgd

# ---- memory divided by the stages ----
# deep's units' P (16 -> 6 x linear 24 -> linear 10: O (I + 1) each)
deep_P=$(awk 'BEGIN { i = 16; for (u = 0; u < 7; u++) { o = u < 6 ? 24 : 10; printf "%d ", o * (i + 1); i = o } }')

# stage_fig s dp: "sum_S max_NS max_S" of stage s of 2 (-1: the whole model) at dp ranks
stage_fig() {
	echo "$deep_P" | awk -v s="$1" -v N="$2" '{
		t = 0
		for (u = 1; u <= NF; u++) { b[u] = t; t += $u }
		best = -1
		for (c = 1; c < NF; c++) { # stage 1 from unit c + 1: closest to half
			d = b[c + 1] - t / 2; if (d < 0) d = -d
			if (best < 0 || d < best) { best = d; cut = c }
		}
		lo = s == 1 ? cut + 1 : 1; hi = s == 0 ? cut : NF
		for (u = lo; u <= hi; u++) {
			S = int(($u + N - 1) / N); sum += S
			if (S * N > mx) mx = S * N
			if (S > ms) ms = S
		}
		print sum, mx, ms }'
}

# state_ok run rank s dp nstate: the rank of stage s (-1: no pipeline) holds exactly
# its stage's shards: optimizer nstate x, parameters + R ring slots, gradients + 2
# slots + the accumulation buffer (all of the stage's largest unit)
state_ok() {
	set -- "$@" $(stage_fig "$3" "$4")
	_S=$6 _NS=$7 _MS=$8 _R=$(stats_of "$1" "$2" ring)
	_o=$(stats_of "$1" "$2" optimizer) _p=$(stats_of "$1" "$2" params) _g=$(stats_of "$1" "$2" grads)
	diag "  $1 rank $2 (stage $3, dp $4): optimizer $_o (want $((4 * $5 * _S))), params $_p" \
		"(want $((4 * (_S + _R * _NS)))), grads $_g (want $((4 * (_S + 2 * _NS + _MS))))"
	[ "$_o" = $((4 * $5 * _S)) ] && [ "$_p" = $((4 * (_S + _R * _NS))) ] &&
		[ "$_g" = $((4 * (_S + 2 * _NS + _MS))) ]
}

st=0
for r in 0 1; do state_ok deep-p2 $r $r 1 1 || st=1; done
state_ok deep-r4 0 -1 1 1 || st=1
o0=$(stats_of deep-p2 0 optimizer) o1=$(stats_of deep-p2 1 optimizer) o=$(stats_of deep-r4 0 optimizer)
[ $st = 0 ] && [ $((o0 + o1)) = "$o" ]
ok $? "pp 2, dp 1, sgd: each rank holds its stage's state only (optimizer $o0 + $o1 = 1 rank's $o bytes)"
# zero-bubble keeps each unit's gradient slot until its weight gradients: one slot a
# unit of the stage (at dp 1 a unit's whole gradient is its shard: the slots sum to S)
st=0
for r in 0 1; do
	set -- $(stage_fig $r 1)
	_g=$(stats_of deep-p2z $r grads)
	diag "  deep-p2z rank $r: grads $_g (want $((4 * (2 * $1 + $3))))"
	[ "$_g" = $((4 * (2 * $1 + $3))) ] || st=1
done
ok $st "zero-bubble: a stage's gradient slots are its units' whole gradients, one each"

train_interval 1 deep-r4a --model deep --optimizer adamw --steps 2 --batch 4 --accum 4 ||
	bail_out "the reference run failed"
train 2 deep-d2 --model deep --optimizer adamw --steps 2 --batch 4 --accum 4 ||
	bail_out "the 1-stage dp 2 run failed"
train 4 deep-p2d2 SHARDFLOW_PP=2 SHARDFLOW_LOG=info --model deep --optimizer adamw --steps 2 \
	--batch 16
compare_within "deep, adamw: pp 2 x dp 2 on 4 ranks = 1 rank" deep-p2d2 deep-r4a
st=0
for r in 0 1 2 3; do state_ok deep-p2d2 $r $((r / 2)) 2 2 || st=1; done
for r in 0 1; do state_ok deep-d2 $r -1 2 2 || st=1; done
o0=$(stats_of deep-p2d2 0 optimizer) o1=$(stats_of deep-p2d2 2 optimizer) o=$(stats_of deep-d2 0 optimizer)
[ $st = 0 ] && [ $((o0 + o1)) = "$o" ]
ok $? "pp 2 x dp 2, adamw: each rank holds its stage's shards only (optimizer $o0 + $o1 = a 1-stage dp 2 rank's $o bytes)"

# the activations: M = 4 micro-batches of 2 rows; deep's boundary is 24 wide, its input 16
a=$(stats_of deep-r4 0 activations) g0=$(stats_of deep-p2g 0 activations) g1=$(stats_of deep-p2g 1 activations)
set0=$((g0 / 4)) set1=$((g1 / 4)) bnd=$((2 * 2 * 24 * 4)) inp=$((2 * 16 * 4))
[ $((set0 * 4)) = "$g0" ] && [ $((set1 * 4)) = "$g1" ] && [ $((set0 + set1)) = $((a + bnd)) ]
ok $? "gpipe: each stage keeps 4 sets of its activations ($g0, $g1 bytes), one set of each = 1 rank's $a + the boundary's $bnd"
f0=$(stats_of deep-p2 0 activations) f1=$(stats_of deep-p2 1 activations)
[ "$f0" = $((4 * inp + 2 * (set0 - inp))) ] && [ "$f1" = "$set1" ]
ok $? "1f1b: stage 0 keeps 2 sets of its layers' buffers (4 of its input: $f0 bytes), stage 1 one ($f1 bytes), not 4"

st=0
for r in 0 1; do plan_ok deep-p2 $r && plan_ok deep-p2g $r && plan_ok deep-p2z $r || st=1; done
for r in 0 1 2 3; do plan_ok deep-p2d2 $r || st=1; done
ok $st "the memory plan = sf_model_stats on every rank, part by part (pp 2 under 1f1b, gpipe and zero-bubble, pp 2 x dp 2)"

# refusals: a failed run whose stderr says why (lib.sh's train_refused)
train_refused "SHARDFLOW_PP=3 on 2 ranks: refused" "SHARDFLOW_PP=3 does not divide the 2 ranks" \
	2 bad-div SHARDFLOW_PP=3 --model deep --steps 1 --batch 6
train_refused "SHARDFLOW_PP=4 for the mlp's 3 units: refused" "has 3 units, fewer than the 4 pipeline stages" \
	4 bad-units SHARDFLOW_PP=4 --model mlp --steps 1 --batch 8
train_refused "SHARDFLOW_PP_SCHEDULE=zb-v: refused, naming the schedules" \
	'SHARDFLOW_PP_SCHEDULE="zb-v" is invalid: accepted values are gpipe, 1f1b, zero-bubble, interleaved' \
	2 bad-sched SHARDFLOW_PP=2 SHARDFLOW_PP_SCHEDULE=zb-v --model deep --steps 1 --batch 8
train_refused "SHARDFLOW_PP_BALANCE=time: refused, naming the balances" \
	'SHARDFLOW_PP_BALANCE="time" is invalid: accepted values are flops, params' \
	2 bad-bal SHARDFLOW_PP=2 SHARDFLOW_PP_BALANCE=time --model deep --steps 1 --batch 8
train_refused "SHARDFLOW_PP_MICROBATCHES=3 for a batch of 8: refused" \
	"batch 8 does not split into 1 data-parallel ranks x 3 micro-batches" \
	2 bad-mb SHARDFLOW_PP=2 SHARDFLOW_PP_MICROBATCHES=3 --model deep --steps 1 --batch 8
train_refused "sf_model_accumulate under a pipeline: refused" "splits each step into its" \
	2 bad-acc SHARDFLOW_PP=2 --model deep --steps 1 --batch 8 --accum 2
