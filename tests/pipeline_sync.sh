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
#  - the interleaved schedule (tags, which NCCL has not) refused, naming mpi-sync.
# mutant pp-link-own-order (each stage posts its transfers in its own schedule's order)
# passes every MPI test and hangs here.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 11

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
# shellcheck disable=SC2086
train_refused "interleaved under mpi-sync: refused, naming the backend and the schedules accepted" \
	'interleaved matches its transfers by tags, which the mpi-sync backend has not (SHARDFLOW_COMM=mpi has); accepted here: gpipe, 1f1b, zero-bubble' \
	2 inter SHARDFLOW_COMM=mpi-sync SHARDFLOW_PP=2 SHARDFLOW_PP_MICROBATCHES=4 \
	SHARDFLOW_PP_SCHEDULE=interleaved $a
