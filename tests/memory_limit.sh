#!/bin/sh
# memory_limit.sh — FSDP's reason to exist: a model whose training state does not fit
# one rank's memory trains when sharded over 4 ranks under the same per-rank limit.
#
# Each rank runs under a hard memory limit of its own (scripts/memcap.sh: a fresh
# memory cgroup, v2 memory.max or v1 memory.limit_in_bytes, no swap); skipped, with the
# reason, where no cgroup can be made (not root, no memory controller). The model is
# examples/gpt with 8 blocks of width 512 (25.4M parameters: AdamW's full training
# state is 16 bytes a parameter, 406 MB) on the tests' corpus, and every rank gets
# LIMIT = 400 MiB:
#  - 1 rank fails at once with SF_ERR_NOMEM: sf_model_create's message names what the
#    rank needs (more than the limit), each part (parameters, gradients, optimizer
#    state, activations), and the cgroup limit;
#  - the same with SHARDFLOW_MEMORY_CHECK=off: the kernel kills the rank (the limit is
#    real, and the check is what turns the kill into a message);
#  - 4 ranks with full sharding train 5 steps under the limit: no rank is killed, no
#    cgroup reaches its limit, and every step's loss is the 1-rank run's (without a
#    limit) within its rounding interval (float sums in another order);
#  - each rank's peak resident set above its start (before sf_model_create) is within
#    10 % of sf_model_stats's prediction (shards + ring + gradients + optimizer state
#    + activations + buffers), as examples/gpt prints them;
#  - initialisation holds one unit's parameters at a time: sf_model_create's own peak
#    is at most the model's buffers plus one unit's full parameters (+5 %).
. "$(dirname "$0")/lib.sh"
GPT="$top_builddir/examples/gpt"
MEMCAP="$top_srcdir/scripts/memcap.sh"
require_progs "$GPT"

why=$("$MEMCAP" --check 2>&1) || skip_all "no memory cgroup can be made here: $why"

LIMIT=400
text="$tmp/corpus.txt"
sf_corpus "$text"
model="--layers 8 --heads 4 --embd 512 --context 32 --batch 4 --text $text --val-fraction 0.2"
run="--steps 5 --warmup 2 --eval-every 5 --eval-batches 1 --progress-every 1 --sample 0"

plan 9

# the reference: 1 rank, no limit
SHARDFLOW_SHARDING=full "$RUN_MPI" 1 "$GPT" $model $run --loss-log "$tmp/ref.loss" \
	>"$tmp/ref.out" 2>"$tmp/ref.err" || {
	diag_file "$tmp/ref.err"
	bail_out "the 1-rank reference run failed"
}

# 1 rank under the limit (a singleton, without mpirun: its status is the rank's own):
# the check refuses
limit=${SF_TEST_TIMEOUT:-180}
timeout -k 5 "$limit" "$MEMCAP" $LIMIT "$GPT" $model $run >"$tmp/one.out" 2>"$tmp/one.err"
st=$?
need=$(sed -n 's/.*rank 0 needs \([0-9.]*\) MiB for this model.*/\1/p' "$tmp/one.err")
[ $st -ne 0 ] && [ -n "$need" ] &&
	awk -v n="$need" -v l=$LIMIT 'BEGIN { exit !(n > l) }' &&
	grep -q "parameters .* MiB: its shards and 5 ring slots" "$tmp/one.err" &&
	grep -q "gradients .*optimizer state .*activations .* MiB of 4 samples" "$tmp/one.err" &&
	grep -q "memory limit, cgroup v[12] memory\.\(max\|limit_in_bytes\) of .*sf-memcap-" "$tmp/one.err" &&
	grep -q "is $LIMIT.0 MiB" "$tmp/one.err" &&
	grep -q "out of memory" "$tmp/one.err"
ok $? "1 rank under $LIMIT MiB: exit $st, 'needs $need MiB' (> $LIMIT), each part and the cgroup's limit named" ||
	diag_file "$tmp/one.err"
grep -q "oom_kill 0" "$tmp/one.err" && ! grep -q "^step" "$tmp/one.out"
ok $? "... refused before allocating: nothing killed, no step run" || diag_file "$tmp/one.err"

# the same without the check: the kernel kills it
SHARDFLOW_MEMORY_CHECK=off timeout -k 5 "$limit" "$MEMCAP" $LIMIT "$GPT" $model $run \
	>"$tmp/off.out" 2>"$tmp/off.err"
st=$?
[ $st -eq 137 ] && grep -q "oom_kill [1-9]" "$tmp/off.err"
ok $? "SHARDFLOW_MEMORY_CHECK=off: the rank is killed by the OOM killer (exit $st: SIGKILL)" ||
	diag_file "$tmp/off.err"

# 4 ranks, fully sharded, each under the limit
SHARDFLOW_SHARDING=full "$RUN_MPI" 4 "$MEMCAP" $LIMIT "$GPT" $model $run \
	--loss-log "$tmp/four.loss" >"$tmp/four.out" 2>"$tmp/four.err"
st=$?
[ $st -eq 0 ] && [ "$(grep -c "^memcap: limit $LIMIT MiB, .* failcnt 0, oom_kill 0" "$tmp/four.err")" -eq 4 ]
ok $? "4 ranks under $LIMIT MiB each train 5 steps: exit $st, no cgroup hit its limit" ||
	diag_file "$tmp/four.err"
grep "^memcap:" "$tmp/four.err" | while read -r l; do diag "$l"; done

# the reference's rounding interval: it again with every operation rounded upward and
# downward (docs/testing.md); its 5 losses bound the 4 ranks' (other sums' order)
for r in up down; do
	SHARDFLOW_SHARDING=full SHARDFLOW_ROUNDING=${r}ward "$RUN_MPI" 1 "$GPT" $model $run \
		--loss-log "$tmp/ref.$r.loss" >"$tmp/ref.$r.out" 2>"$tmp/ref.$r.err" ||
		diag_file "$tmp/ref.$r.err"
done
values_within "$tmp/four.loss" "$tmp/ref.loss" "$tmp/ref.up.loss" "$tmp/ref.down.loss" . \
	>"$tmp/cmp.txt" && [ "$(grep -c . "$tmp/four.loss")" -eq 5 ]
ok $? "every step's loss (5) is within the 1-rank run's rounding interval: $(sed 's/^# //' "$tmp/cmp.txt")"

# "memory: rank r peak RSS p MiB: d MiB above ...; predicted m MiB (model) + b MiB
# ...: measured / predicted x; sf_model_create's peak c MiB above the start (one
# unit's parameters: u MiB)"
grep "memory: rank" "$tmp/four.err" | while read -r l; do diag "$l"; done
# ratio FILE N: N lines of "measured / predicted x", each x in [0.9, 1.1]
ratio() {
	sed -n 's/.*measured \/ predicted \([0-9.]*\);.*/\1/p' "$1" |
		awk -v n="$2" '{ c++; if ($1 < 0.9 || $1 > 1.1) bad++ } END { exit !(c == n && !bad) }'
}
ratio "$tmp/four.err" 4
ok $? "4 ranks: measured peak RSS above the start / predicted within [0.9, 1.1] on every rank"

grep "memory: rank" "$tmp/four.err" | sed 's/.*predicted \([0-9.]*\) MiB (model) + \([0-9.]*\) MiB.*peak \([0-9.]*\) MiB above the start (one unit.s parameters: \([0-9.]*\) MiB)/\1 \2 \3 \4/' |
	awk '{ if ($3 > ($1 + $2 + $4) * 1.05) bad++; n++ } END { exit !(n == 4 && !bad) }'
ok $? "initialisation: sf_model_create's peak <= the model's buffers + one unit's parameters (+5 %) on every rank"

ratio "$tmp/ref.err" 1
ok $? "1 rank without a limit: measured / predicted within [0.9, 1.1]" || diag_file "$tmp/ref.err"

# the 1-rank need is the sharded ranks' many times over
need4=$(sed -n 's/.*rank 0 peak RSS [0-9.]* MiB: \([0-9.]*\) MiB above.*/\1/p' "$tmp/four.err")
awk -v a="$need" -v b="$need4" 'BEGIN { exit !(b > 0 && a / b > 2.5) }'
ok $? "1 rank needs $need MiB, a sharded rank used $need4 MiB: more than 2.5x less"
finish
