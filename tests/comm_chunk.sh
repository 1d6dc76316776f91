#!/bin/sh
# comm_chunk.sh — cutting a collective into pieces changes the messages, never the sums.
#
# SHARDFLOW_COMM_CHUNK sets the largest MPI message of a ring step (comm/comm_mpi.c):
# 0 sends each block whole, the default (61440 bytes) and 1024 (the smallest) cut it
# into pieces, up to 64 in flight at a time. The ring still adds the same blocks in
# the same order, so every setting must give bitwise identical losses and parameters.
# The "wide" model's fc2 shard is 32 896 floats on 2 ranks: at 1024 bytes that is 129
# pieces, so the window of 64 is refilled twice; on 3 ranks every shard is padded.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

steps=3

plan 6

for np in 2 3; do
	for opt in sgd adamw; do
		[ "$np" -eq 3 ] && [ "$opt" = adamw ] && continue
		base="wide-$opt-n$np-whole"
		train "$np" "$base" SHARDFLOW_COMM_CHUNK=0 --model wide --optimizer $opt --steps $steps
		for chunk in 61440 1024; do
			train "$np" "wide-$opt-n$np-c$chunk" SHARDFLOW_COMM_CHUNK=$chunk \
				--model wide --optimizer $opt --steps $steps
			compare "wide, $opt, $np ranks: SHARDFLOW_COMM_CHUNK=$chunk = 0 (bitwise)" \
				"wide-$opt-n$np-c$chunk" "$base" --bitwise
		done
	done
done
finish
