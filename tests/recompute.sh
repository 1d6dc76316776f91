#!/bin/sh
# recompute.sh — activation recompute per unit (SHARDFLOW_RECOMPUTE=units).
#
# A segment's inner activations are dropped after forward and recomputed before its
# backward, from the same kernels on the same inputs: training must not change a
# bit. Checked bitwise against SHARDFLOW_RECOMPUTE=none:
#  - train_dump's gpt (3 blocks of layernorm, attention, MLP; a tied head) and blocks
#    (3 grouped MLP blocks), SGD and AdamW, 1, 2 and 3 ranks, prefetch depth 0 and 2,
#    backward prefetch none, every sharding, 3 micro-batches a step;
#  - examples/gpt with 6 blocks on 2 ranks: the exported weights are the same file,
#    and the activation memory per rank it prints (sf_model_stats) falls; the same
#    file with the Llama of 4 layers at tp 2, and at cp 2 (the ring run again);
#  - the built-in trace names the recompute tasks ("recompute <node> (<type> L<n>)",
#    compute of kind "recompute"), one per dropped node of each block per step that a
#    backward reads (fc_b's output is read by the last add alone: not run again), and the
#    MLP example (three alike units) trains to the same loss with recompute on.
. "$(dirname "$0")/lib.sh"
GPT="$top_builddir/examples/gpt"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE" "$GPT" "$MLP"

plan 17

# name np env... -- train_dump args: both runs, compared bitwise
both() {
	b_name=$1 b_np=$2
	shift 2
	b_env=
	while [ "$1" != -- ]; do b_env="$b_env $1"; shift; done
	shift
	# shellcheck disable=SC2086
	train "$b_np" "$b_name-none" $b_env SHARDFLOW_RECOMPUTE=none "$@"
	# shellcheck disable=SC2086
	train "$b_np" "$b_name-units" $b_env SHARDFLOW_RECOMPUTE=units "$@"
	compare "$b_name: recompute = none, bitwise ($b_np rank(s)${b_env:+,$b_env})" \
		"$b_name-units" "$b_name-none" --bitwise
}

both gpt-sgd-1 1 -- --model gpt --optimizer sgd --steps 4
both gpt-adamw-2 2 -- --model gpt --optimizer adamw --steps 4
both gpt-adamw-3 3 -- --model gpt --optimizer adamw --steps 4
both gpt-d0 2 SHARDFLOW_PREFETCH_DEPTH=0 -- --model gpt --optimizer adamw --steps 4
both gpt-bwdnone 2 SHARDFLOW_BACKWARD_PREFETCH=none -- --model gpt --optimizer adamw --steps 4
both gpt-gradop 2 SHARDFLOW_SHARDING=grad_op -- --model gpt --optimizer adamw --steps 4
both gpt-none 3 SHARDFLOW_SHARDING=none -- --model gpt --optimizer sgd --steps 4
both gpt-accum 2 SHARDFLOW_ACCUM_MODE=local -- --model gpt --optimizer adamw --steps 3 \
	--batch 8 --accum 3
both blocks-2 2 -- --model blocks --optimizer adamw --steps 4
both gpt-inflight 2 -- --model gpt --optimizer sgd --steps 6 --inflight 3

# examples/gpt, 6 blocks: the same weights, less activation memory, on lib.sh's fixed
# corpus (not the README: a docs edit must not change what a test trains on)
sf_corpus "$tmp/corpus.txt"
small="--layers 6 --heads 2 --embd 32 --context 32 --batch 8 --steps 8 --sample 0
--eval-every 1000 --progress-every 4 --text $tmp/corpus.txt"
for r in none units; do
	# shellcheck disable=SC2086
	env SHARDFLOW_RECOMPUTE=$r sh "$RUN_MPI" 2 "$GPT" $small --export "$tmp/gpt-$r.st" \
		</dev/null >"$tmp/gpt-$r.out" 2>"$tmp/gpt-$r.err" ||
		{ diag_file "$tmp/gpt-$r.err"; }
done
cmp -s "$tmp/gpt-none.st" "$tmp/gpt-units.st"
ok $? "examples/gpt, 6 blocks, 2 ranks: the exported weights are the same file"
mib() { sed -n 's/.*activations \([0-9.]*\) MiB.*/\1/p' "$1" | head -1; }
a=$(mib "$tmp/gpt-none.err") b=$(mib "$tmp/gpt-units.err")
awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { exit !(a > 0 && b > 0 && b < 0.7 * a) }'
ok $? "examples/gpt, 6 blocks: activation memory per rank falls ($a MiB -> $b MiB, below 0.7x)"

# llama_both NAME VAR=VALUE: examples/gpt --arch llama, 4 layers, on 2 ranks with the
# variable, recompute none and units, exported to $tmp/NAME-{none,units}.st
llama_both() {
	for r in none units; do
		env "$2" SHARDFLOW_RECOMPUTE=$r sh "$RUN_MPI" 2 "$GPT" --arch llama --layers 4 \
			--heads 4 --embd 32 --context 16 --batch 4 --steps 4 --sample 0 --eval-every 1000 \
			--text "$tmp/corpus.txt" --export "$tmp/$1-$r.st" </dev/null >"$tmp/$1-$r.out" \
			2>"$tmp/$1-$r.err" || diag_file "$tmp/$1-$r.err"
	done
	[ -s "$tmp/$1-none.st" ] && cmp -s "$tmp/$1-none.st" "$tmp/$1-units.st"
}

# under tensor parallelism: the Llama (linear_cols whose partial input gradients have
# buffers of their own in the recomputed units), 4 layers at tp 2
llama_both tp SHARDFLOW_TP=2
ok $? "examples/gpt --arch llama, 4 layers, tp 2: recompute's exported weights are the same file"

# under context parallelism: a recomputed attention runs its ring again (cp 2)
llama_both cp SHARDFLOW_CP=2 && a=$(mib "$tmp/cp-none.err") b=$(mib "$tmp/cp-units.err") &&
	awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { exit !(a > 0 && b > 0 && b < a) }'
ok $? "examples/gpt --arch llama, 4 layers, cp 2: recompute's exported weights are the same file, activations $a -> $b MiB"

# the trace names the recompute tasks: every step, the dropped nodes of 3 blocks
env SHARDFLOW_TRACE="$tmp/tr" SHARDFLOW_RECOMPUTE=units sh "$RUN_MPI" 2 "$TRAIN_DUMP" \
	--model gpt --steps 2 --out "$tmp/tr.dump" </dev/null >"$tmp/tr.out" 2>"$tmp/tr.err" ||
	diag_file "$tmp/tr.err"
n=$(grep -c '"name": "recompute .* ([^ ]* L[0-9]*)"' "$tmp/tr.rank0.json" 2>/dev/null)
# a block drops ln_1 qkv attention proj add ln_2 fc_a gelu fc_b (the last add is kept)
# and runs again all but fc_b, whose only reader, that add, reads no input in its
# backward (plan.c's rerun)
f=$(grep -c '"name": "recompute h[0-9]*\.mlp\.c_proj ' "$tmp/tr.rank0.json" 2>/dev/null)
g=$(grep -c '"name": "recompute h[0-9]*\.mlp\.c_fc ' "$tmp/tr.rank0.json" 2>/dev/null)
[ "${n:-0}" -eq $((2 * 3 * 8)) ] && [ "${f:-1}" -eq 0 ] && [ "${g:-0}" -eq 6 ]
ok $? "trace: $n recompute tasks on rank 0 in 2 steps (2 steps x 3 blocks x 8 of the 9 dropped nodes: mlp.c_fc's ${g:-no}, mlp.c_proj's (fc_b) ${f:-no})"
c=$(grep '"name": "recompute ' "$tmp/tr.rank0.json" 2>/dev/null | grep -c '"cat": "compute".*"kind": "recompute"')
[ "${c:-0}" -eq "${n:-0}" ] && [ "${n:-0}" -gt 0 ] && [ -s "$tmp/tr.overlap.txt" ]
ok $? "trace: every recompute task is compute of kind \"recompute\" ($c of $n); the overlap report is written"

# the MLP example: three alike units (784 -> 1024 -> 1024 -> 1024) recompute as well
for r in none units; do
	env SHARDFLOW_RECOMPUTE=$r sh "$RUN_MPI" 2 "$MLP" --steps 3 --widths 24,32,32,32,10 \
		--batch 8 </dev/null >"$tmp/mlp-$r.out" 2>"$tmp/mlp-$r.err"
done
a=$(grep final_loss "$tmp/mlp-none.out") b=$(grep final_loss "$tmp/mlp-units.out")
[ -n "$a" ] && [ "$a" = "$b" ]
ok $? "mlp_synthetic 24-32-32-32-10: the same final loss with recompute ($b)"
finish
