#!/bin/sh
# tp_resume.sh — examples/gpt's checkpoints resume at another tensor-parallel degree
# (issue 46, bug 2): the example builds linear / linear_split nodes at tp 1 and
# linear_col / linear_row at tp > 1, and a checkpoint's structure hash once took the
# layer types, so a tp 2 checkpoint was "written for another model" at tp 1. The hash
# now takes the parameters' layout (every linear type is linear's: layers/layer.h).
# For the GPT and the Llama (grouped-query attention, the fused q | k | v linear_split),
# with AdamW:
#  - trained 4 steps of 12 at tp 2 on 2 ranks (--max-steps 4: a checkpoint, the
#    12-step schedule), resumed on 1 rank (tp 1) with nothing left to train and exported: the weights are bitwise those the tp 2 run
#    exported (the whole model, whatever the layout);
#  - tp 2 (steps 1-4) -> tp 1 (5-8) -> tp 2 (9-12), each resuming the last one's
#    checkpoint: every step's loss within the uninterrupted 1-rank run's rounding
#    interval (that run again rounded upward and downward, docs/testing.md; tests/tp.sh
#    holds tp 2 to 1 rank the same way), AdamW's moments travelling with the weights;
#  - a checkpoint whose manifest carries the hash of before this change (the types'
#    names) still loads where the model is the same.
. "$(dirname "$0")/lib.sh"
GPT="$top_builddir/examples/gpt"
require_progs "$GPT"

limit=${SF_TEST_TIMEOUT:-300}
text="$tmp/corpus.txt"
sf_corpus "$text"
common="--layers 2 --heads 4 --embd 32 --context 32 --batch 8 --text $text --sample 0 \
--eval-every 1000 --eval-batches 1 --progress-every 1 --lr 0.004 --warmup 2"

plan 6

# gpt NP TP NAME ARGS...: examples/gpt on NP ranks with SHARDFLOW_TP=TP, output in NAME.*
# (rounding as $gpt_rounding says: SHARDFLOW_ROUNDING, unset when empty)
gpt() {
	_np=$1 _tp=$2 _name=$3
	shift 3
	# shellcheck disable=SC2086
	SHARDFLOW_TP=$_tp env ${gpt_rounding:+SHARDFLOW_ROUNDING=$gpt_rounding} \
		timeout -k 5 "$limit" sh "$RUN_MPI" "$_np" "$GPT" $common "$@" </dev/null >"$tmp/$_name.out" 2>"$tmp/$_name.err"
	_st=$?
	[ $_st -eq 0 ] || { diag "$_name: exit $_st"; diag_file "$tmp/$_name.err"; }
	return $_st
}

for arch in gpt llama; do
	a="--arch $arch"
	d=$tmp/ck-$arch
	rm -rf "$d"
	for r in "" up down; do
		gpt_rounding=${r:+${r}ward}
		gpt 1 1 "u-$arch${r:+.$r}" $a --steps 12 \
			--loss-log "$tmp/u-$arch${r:+.$r}.loss"
	done
	gpt_rounding=
	gpt 2 2 "t1-$arch" $a --steps 12 --max-steps 4 --checkpoint-dir "$d" --loss-log "$tmp/t1-$arch.loss" \
		--export "$tmp/w2-$arch.st" &&
		gpt 1 1 "e1-$arch" $a --steps 12 --max-steps 4 --checkpoint-dir "$d" --resume \
			--export "$tmp/w1-$arch.st" &&
		cmp "$tmp/w2-$arch.st" "$tmp/w1-$arch.st" >/dev/null
	ok $? "$arch: a tp 2 checkpoint loads at tp 1: the weights exported there are tp 2's, bitwise"
	gpt 1 1 "t2-$arch" $a --steps 12 --max-steps 8 --checkpoint-dir "$d" --resume \
		--loss-log "$tmp/t2-$arch.loss" &&
		gpt 2 2 "t3-$arch" $a --steps 12 --checkpoint-dir "$d" --resume --loss-log "$tmp/t3-$arch.loss" &&
		cat "$tmp/t1-$arch.loss" "$tmp/t2-$arch.loss" "$tmp/t3-$arch.loss" >"$tmp/chain-$arch.loss" &&
		values_within "$tmp/chain-$arch.loss" "$tmp/u-$arch.loss" "$tmp/u-$arch.up.loss" \
			"$tmp/u-$arch.down.loss" . >"$tmp/within.out" &&
		[ "$(grep -c . "$tmp/chain-$arch.loss")" -eq 12 ]
	ok $? "$arch: tp 2 -> tp 1 -> tp 2, resumed each time: every loss of steps 1-12 = 1 rank uninterrupted (within its rounding interval)"
	diag_file "$tmp/within.out"
done

# a manifest with the older hash (each layer's type name, not its layout): the Llama's
# at tp 1, with linear_split and linear_nobias nodes, whose names the old hash took;
# c981cc157956aa3f is what the library of before this change wrote for this model (the
# structure alone: the text, the steps and the ranks do not enter it)
d=$tmp/ck-old
rm -rf "$d"
gpt 1 1 old --arch llama --steps 2 --checkpoint-dir "$d"
m=$(ls -d "$d"/step-* 2>/dev/null | tail -1)
new=$(grep -o '"structure_hash": *"[0-9a-f]*"' "$m/manifest.json" 2>/dev/null | grep -o '[0-9a-f]\{16\}')
rehash() { # HASH: the manifest's structure hash replaced, its CRC-32 sealed again
	sed -i "s/\"structure_hash\": *\"[0-9a-f]*\"/\"structure_hash\": \"$1\"/" "$m/manifest.json" &&
		ckpt_reseal "$m"
}
rehash c981cc157956aa3f && gpt 1 1 old-load --arch llama --steps 2 --checkpoint-dir "$d" --resume
ok $? "a checkpoint with the older structure hash (c981cc157956aa3f, this model's now $new) still loads"
rehash 0123456789abcdef
gpt 1 1 other-load --arch llama --steps 2 --checkpoint-dir "$d" --resume 2>/dev/null
[ $? -ne 0 ] && grep -q "written for another model" "$tmp/other-load.err"
ok $? "a third hash is refused: \"$(grep -o 'checkpoint was written for another model[^)]*)' "$tmp/other-load.err" | head -1)\""
finish
