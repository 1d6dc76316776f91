#!/bin/sh
# freeze.sh — a frozen unit (sf_unit_options::frozen, PyTorch's requires_grad=False on
# a whole FSDP unit) trains nothing and costs no gradient, optimizer state or
# reduction, and the rest of the model trains exactly as if that unit's learning rate
# were 0.
#
# Reference: the same run with the unit's tensors at learning-rate scale 0
# (sf_model_tensor_lr_scale, `train_dump --lr-zero UNIT`): its gradients are computed,
# reduced and applied times 0, so every other unit sees the same gradients and the
# frozen unit stays put. Frozen = reference, bitwise (losses and every parameter), for
# a middle block on 1, 2 and 3 ranks, with AdamW, with grad_op, none and hybrid
# sharding, with micro-batches, and for the embedding unit (which the tied head also
# reads). Then what freezing saves: optimizer, gradient and communication bytes below
# the reference's; no backward at all for the frozen embeddings (wte, wpe) in the
# trace, no reduce-scatter and no update of the unit, the head's backward still there
# (the blocks below it train). With clipping, the frozen unit's gradient is left out
# of the norm (PyTorch clips the parameters that have a .grad): every step's norm is
# below the reference's.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"

plan 16

# same NAME NP UNIT [args]: frozen UNIT = UNIT at learning rate 0, bitwise
same() {
	name=$1 np=$2 unit=$3
	shift 3
	run_mpi "$np" "$TRAIN_DUMP" --model gpt --steps 4 --out "$tmp/$name.frozen" \
		--unit-options "$unit:frozen=1" "$@" >"$tmp/$name.fout" 2>"$tmp/$name.ferr" &&
		run_mpi "$np" "$TRAIN_DUMP" --model gpt --steps 4 --out "$tmp/$name.ref" \
			--lr-zero "$unit" "$@" >"$tmp/$name.rout" 2>"$tmp/$name.rerr" &&
		"$DUMP_COMPARE" --bitwise "$tmp/$name.frozen" "$tmp/$name.ref" >"$tmp/$name.cmp" 2>&1
	if ! ok $? "$name: unit $unit frozen = its learning rate 0, bitwise ($np ranks${*:+, $*})"; then
		diag_file "$tmp/$name.ferr"
		diag_file "$tmp/$name.rerr"
		diag_file "$tmp/$name.cmp"
	fi
}

same h1-1 1 h1
same h1-2 2 h1
same h1-3 3 h1
same adamw 2 h1 --optimizer adamw
SHARDFLOW_SHARDING=grad_op same grad_op 2 h1
SHARDFLOW_SHARDING=none same none 3 h0
SHARDFLOW_SHARDING=hybrid SHARDFLOW_NODE_SIZE=2 same hybrid 4 h2
same accum 2 h0 --accum 2
same embed 2 embed

# what freezing saves (rank 0's bytes, 2 ranks, h1 frozen)
val() { sed -n "s/^$2 \([0-9]*\).*/\1/p" "$1" | head -1; }
gval() { sed -n "s/.*grad_bytes \([0-9]*\).*/\1/p" "$1" | head -1; }
fo=$(val "$tmp/h1-2.fout" optimizer_bytes) ro=$(val "$tmp/h1-2.rout" optimizer_bytes)
fg=$(gval "$tmp/h1-2.fout") rg=$(gval "$tmp/h1-2.rout")
fc=$(val "$tmp/h1-2.fout" comm_bytes) rc=$(val "$tmp/h1-2.rout" comm_bytes)
[ -n "$fo" ] && [ -n "$ro" ] && [ "$fo" -lt "$ro" ] && [ "$fg" -lt "$rg" ]
ok $? "no optimizer state or reduced gradient for it: optimizer bytes $fo < $ro, gradient bytes $fg < $rg"
[ -n "$fc" ] && [ -n "$rc" ] && [ "$fc" -lt "$rc" ]
ok $? "no reduce-scatter for it: $fc bytes sent against $rc"

# the trace: frozen embeddings have no backward, the tied head's is there
SHARDFLOW_TRACE="$tmp/tr" run_mpi 2 "$TRAIN_DUMP" --model gpt --steps 2 --out "$tmp/tr.dump" \
	--unit-options embed:frozen=1 >/dev/null 2>"$tmp/tr.err"
names() { grep -o '"name": *"[^"]*"' "$tmp/tr.rank0.json" 2>/dev/null | sed 's/"name": *//'; }
[ -s "$tmp/tr.rank0.json" ] && ! names | grep -q '"bwd wte \|"bwd wpe '
ok $? "frozen embeddings: no backward task for wte or wpe" || diag_file "$tmp/tr.err"
! names | grep -q '"rs embed \|"opt embed '
ok $? "frozen embeddings: no reduce-scatter and no update of unit embed"
names | grep -q '"bwd head ' && names | grep -q '"opt h0 '
ok $? "the tied head's backward still runs (the blocks below it train), and h0 is updated"

# clipping leaves the frozen unit's gradient out of the norm
run_mpi 2 "$TRAIN_DUMP" --model gpt --steps 4 --out "$tmp/cf.dump" --clip 0.05 \
	--unit-options h1:frozen=1 >"$tmp/cf.out" 2>"$tmp/cf.err" &&
	run_mpi 2 "$TRAIN_DUMP" --model gpt --steps 4 --out "$tmp/cr.dump" --clip 0.05 \
		--lr-zero h1 >"$tmp/cr.out" 2>&1
st=$?
grep '^norm' "$tmp/cf.out" >"$tmp/cf.norm"
grep '^norm' "$tmp/cr.out" >"$tmp/cr.norm"
lower=$(paste "$tmp/cf.norm" "$tmp/cr.norm" | awk '$1 == "norm" && $4 == "norm" { n++; if ($3 < $6) k++ }
	END { print (n == 4 && k == 4) ? "yes" : "no " k "/" n }')
[ $st -eq 0 ] && [ "$lower" = yes ]
if ! ok $? "clipping: every step's norm leaves the frozen gradient out (below the reference's: $lower)"; then
	diag_file "$tmp/cf.err"
	grep '^norm' "$tmp/cf.out" "$tmp/cr.out" | sed 's/^/#   /'
fi
# and the frozen unit stayed put under clipping too: its parameters are the
# reference's (learning rate 0), which the other units' differ from
"$DUMP_COMPARE" --bitwise "$tmp/cf.dump" "$tmp/cr.dump" >"$tmp/cc.out" 2>&1
[ $? -ne 0 ] && grep -q "values differ" "$tmp/cc.out"
ok $? "clipping: the other units' steps differ from the reference's (their norm does)"
finish
