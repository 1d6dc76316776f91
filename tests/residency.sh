#!/bin/sh
# residency.sh — the prefetch depth bounds memory: at most depth + 1 gathered units.
#
# Gathered parameters live in a ring of depth + 1 slots (docs: DESIGN.md section 2);
# the bound is enforced by data dependencies, not by the submitting thread. For depths
# 0, 1, 2 and 4 on 2 ranks with the 7-unit "deep" model, train_dump's statistics must
# say ring_slots == depth + 1 and 1 <= max_resident <= depth + 1 (and nunits == 7);
# with the variable unset, the default depth 2 gives 3 slots.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP"

plan 13

# field NAME FILE: the number after NAME on the "max_resident ..." line
field() {
	sed -n "s/.*$1 \\([0-9-]*\\).*/\\1/p" "$2" | head -n 1
}

for depth in 0 1 2 4; do
	name=deep-d$depth
	train 2 $name SHARDFLOW_PREFETCH_DEPTH=$depth --model deep --steps 2
	ok $? "depth $depth: 2-rank training of the 7-unit model succeeds"
	slots=$(field ring_slots "$tmp/$name.out")
	res=$(field max_resident "$tmp/$name.out")
	units=$(field nunits "$tmp/$name.out")
	diag "depth $depth: $(grep max_resident "$tmp/$name.out")"
	[ "$slots" = $((depth + 1)) ] && [ "$units" = 7 ]
	ok $? "depth $depth: ring_slots ($slots) == $((depth + 1)), nunits ($units) == 7"
	[ -n "$res" ] && [ "$res" -ge 1 ] && [ "$res" -le $((depth + 1)) ]
	ok $? "depth $depth: 1 <= max_resident ($res) <= $((depth + 1))"
done

train 2 deep-default --model deep --steps 1 # lib.sh unset SHARDFLOW_*
slots=$(field ring_slots "$tmp/deep-default.out")
[ "$slots" = 3 ]
ok $? "depth unset: ring_slots ($slots) == 3 (default depth 2)"
finish
