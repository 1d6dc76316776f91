#!/bin/sh
# pipeline_sync.sh — a pipeline's transfer order under NCCL's rules, on CPU ranks
# (SHARDFLOW_COMM=mpi-sync). NCCL runs a rank's sends and receives in order on one
# stream, a send waiting there for its peer's receive: two neighbour stages that post
# their transfers to each other in different orders hang. MPI's posts return at once
# and match in any order, so the MPI runs of the other pipeline tests cannot see such
# an order; under mpi-sync each transfer blocks the comm worker until its peer's
# matching call (a synchronous send), as the stream does, and a wrong order hangs
# until SHARDFLOW_COMM_TIMEOUT (20 s here) ends it with the transfer's name. Without
# two GPUs NCCL's pipeline cannot run here (docs/gpu.md); this is what checks the order
# it will be given (scheduler/pipeline.c's link_advance: stage s replays stage s + 1's
# order).
# Checked, each run = the same run under SHARDFLOW_COMM=mpi, bitwise (mpi-sync changes
# when a transfer completes, not what it carries):
#  - deep (7 linear units), AdamW with clipping, pp 2 under 1f1b, gpipe and zero-bubble
#    (8 micro-batches: 1f1b's warm-up sends two activations ahead of the first
#    gradient), and pp 4 under 1f1b (the middle stages' two links);
#  - pp 2 x dp 2 with grad_op and local accumulation (the stage's collectives between
#    the transfers on one comm worker);
#  - nanogpt (the tied head: its gradient summed between the first and the last
#    stage) pp 2 x dp 2; llama-hf-tp pp 2 x tp 2; llama-hf pp 2 x cp 2 (the CP ring's
#    shifts); nanogpt pp 2 with SHARDFLOW_RECOMPUTE=units;
#  - mpi-sync without a pipeline (dp 2) = mpi;
#  - the interleaved schedule, whose chunks make a ring (the last stage's chunk j feeds
#    the first stage's chunk j + 1), in the order every stage agrees on
#    (scheduler/pipeline_order.c; MPI matches its transfers by tags instead): deep at
#    pp 2 x V 2 (8 micro-batches) and V 3, pp 3 x V 2, pp 2 x dp 2 with grad_op and
#    local accumulation, llama-hf-tp pp 2 x tp 2; examples/gpt untied at pp 4 x V 2 and
#    tied at pp 2 x V 2, training, evaluation and sampling: what it prints the same.
# mutant pp-link-own-order (each stage posts its transfers in its own schedule's order)
# passes every MPI test and hangs here; so does pp-order-own-tiebreak (each stage
# orders a boundary's transfers by its own role, sends first).
. "$(dirname "$0")/lib.sh"
GPT="$top_builddir/examples/gpt"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE" "$GPT"

plan 17

# same DESC NP NAME ENV... -- ARGS: NAME under mpi-sync = under mpi, bitwise
same() {
	s_desc=$1 s_np=$2 s_name=$3 s_env=
	shift 3
	while [ "$1" != -- ]; do
		s_env="$s_env $1"
		shift
	done
	shift
	# shellcheck disable=SC2086
	train "$s_np" "$s_name-mpi" $s_env "$@"
	# shellcheck disable=SC2086
	train "$s_np" "$s_name" SHARDFLOW_COMM=mpi-sync SHARDFLOW_COMM_TIMEOUT=20 $s_env "$@" ||
		diag_file "$tmp/$s_name.err"
	compare "$s_desc: mpi-sync = mpi, bitwise" "$s_name" "$s_name-mpi" --bitwise
}
a="--model deep --optimizer adamw --clip 0.5 --steps 2 --batch 16"
for sch in 1f1b gpipe zero-bubble; do
	# shellcheck disable=SC2086
	same "deep, pp 2, $sch, 8 micro-batches" 2 "d-$sch" SHARDFLOW_PP=2 \
		SHARDFLOW_PP_MICROBATCHES=8 SHARDFLOW_PP_SCHEDULE=$sch -- $a
done
# shellcheck disable=SC2086
same "deep, pp 4, 1f1b" 4 d4 SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=8 -- $a
# shellcheck disable=SC2086
same "deep, pp 2 x dp 2, grad_op, local accumulation" 4 dz SHARDFLOW_PP=2 \
	SHARDFLOW_SHARDING=grad_op SHARDFLOW_ACCUM_MODE=local -- $a
same "nanogpt (tied head), pp 2 x dp 2" 4 g SHARDFLOW_PP=2 -- --model nanogpt \
	--optimizer adamw --clip 0.5 --steps 2 --batch 8
same "llama-hf-tp, pp 2 x tp 2" 4 t SHARDFLOW_PP=2 SHARDFLOW_TP=2 -- --model llama-hf-tp \
	--optimizer sgd --steps 2 --batch 8
same "llama-hf, pp 2 x cp 2" 4 c SHARDFLOW_PP=2 SHARDFLOW_CP=2 -- --model llama-hf \
	--optimizer sgd --steps 2 --context 8
same "nanogpt, pp 2, recompute units" 2 r SHARDFLOW_PP=2 SHARDFLOW_RECOMPUTE=units -- \
	--model nanogpt --optimizer adamw --steps 2 --batch 8
# shellcheck disable=SC2086
same "deep, dp 2 (no pipeline)" 2 p -- $a
IL=SHARDFLOW_PP_SCHEDULE=interleaved
# shellcheck disable=SC2086
same "deep, pp 2, interleaved V 2, 8 micro-batches" 2 i2 SHARDFLOW_PP=2 $IL \
	SHARDFLOW_PP_MICROBATCHES=8 -- $a
# shellcheck disable=SC2086
same "deep, pp 2, interleaved V 3" 2 i3 SHARDFLOW_PP=2 $IL SHARDFLOW_PP_VIRTUAL=3 -- $a
# shellcheck disable=SC2086
same "deep, pp 3, interleaved V 2, 6 micro-batches" 3 i33 SHARDFLOW_PP=3 $IL \
	SHARDFLOW_PP_MICROBATCHES=6 -- --model deep --optimizer adamw --clip 0.5 --steps 2 \
	--batch 12
# shellcheck disable=SC2086
same "deep, pp 2 x dp 2, interleaved, grad_op, local accumulation" 4 iz SHARDFLOW_PP=2 $IL \
	SHARDFLOW_SHARDING=grad_op SHARDFLOW_ACCUM_MODE=local -- $a
same "llama-hf-tp, pp 2 x tp 2, interleaved" 4 it SHARDFLOW_PP=2 SHARDFLOW_TP=2 $IL -- \
	--model llama-hf-tp --optimizer sgd --steps 2 --batch 8

# examples/gpt through the chunks: training, evaluation and sampling (inference's
# transfers), its printed losses, validation loss and sample the same under both
# gpt_same2 DESC NP NAME ENV...: examples/gpt under mpi-sync prints what it prints under mpi
gpt_same2() {
	g_desc=$1 g_np=$2 g_name=$3
	shift 3
	gpt_run "$g_np" "$g_name-mpi" "$@" --text "$text"
	gpt_run "$g_np" "$g_name" SHARDFLOW_COMM=mpi-sync SHARDFLOW_COMM_TIMEOUT=20 "$@" \
		--text "$text" || diag_file "$tmp/$g_name.err"
	gpt_filtered "$g_name-mpi" >"$tmp/$g_name-mpi.f"
	gpt_filtered "$g_name" >"$tmp/$g_name.f"
	grep -q '^sample 1:' "$tmp/$g_name.f" && cmp -s "$tmp/$g_name.f" "$tmp/$g_name-mpi.f"
	ok $? "$g_desc: mpi-sync prints what mpi prints (losses, val_loss, sample)" ||
		diff "$tmp/$g_name-mpi.f" "$tmp/$g_name.f" | sed 's/^/# /'
}
text="$tmp/corpus.txt"
sf_corpus "$text"
common="--layers 6 --heads 2 --embd 16 --context 16 --batch 8 --sample 1 \
--tokens 12 --eval-every 4 --eval-batches 1 --progress-every 1 --lr 0.004 --warmup 2 --steps 4"
gpt_same2 "examples/gpt untied, pp 4 x V 2 (the last stage's chunk 0 to the first's chunk 1)" \
	4 gu SHARDFLOW_PP=4 SHARDFLOW_PP_MICROBATCHES=4 $IL --untied
gpt_same2 "examples/gpt tied, pp 2 x V 2" 2 gt SHARDFLOW_PP=2 $IL
