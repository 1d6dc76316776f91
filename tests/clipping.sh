#!/bin/sh
# clipping.sh — global-norm gradient clipping over shards against PyTorch's
# torch.nn.utils.clip_grad_norm_, and parameter groups (no weight decay on biases,
# layernorms and embeddings) against PyTorch's optimizer param_groups.
#
# train_dump trains with sf_model_options::max_grad_norm and prints each step's norm
# (sf_model_grad_norm); tests/torch_clip.py (Debian's python3-torch, float64) loads
# the same initial weights (--export-init) and the same global batches (--data), runs
# the same steps with clip_grad_norm_ and compares every step's norm (rtol 1e-6) and
# the final parameters (SGD rtol 1e-6; AdamW 1e-4: it amplifies the float32 rounding
# of tiny gradients, see accumulation.sh; floor 1e-2). The max_norm is small enough
# that every step is clipped. Cases: the MLP and sf_gpt_graph (a tied head, layernorms,
# embeddings: every parameter group), N = 1, 2, 3, full / grad_op / none sharding,
# weight decay 0.1 with the default groups and with none, and clipping of an
# accumulated step. Then: every sharding mode on 3 ranks trains like 1 rank (whose
# norm needs no all-reduce: an independent reference for the modes' shared one), a
# max_norm of infinity reports the norm and changes nothing (bitwise). The API's refusals
# (a bad max_grad_norm, the norm of an sf_model_accumulate ticket): tests/test_api.c.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE"
PY=/usr/bin/python3
ORACLE="$top_srcdir/tests/torch_clip.py"

plan 16

have_torch=yes
"$PY" -c 'import torch' >/dev/null 2>&1 || have_torch=no

# name ranks sharding model optimizer batch accum clip wd no-decay
oracle() {
	_name=$1 _np=$2 _sh=$3 _model=$4 _opt=$5 _b=$6 _k=$7 _clip=$8 _wd=$9 _nd=${10}
	_lr=0.01 _prtol=1e-6 _T=1
	[ "$_opt" = adamw ] && _lr=0.001 _prtol=1e-4
	[ "$_model" = nanogpt ] && _T=5
	_desc="$_model, $_opt, clip $_clip, weight decay $_wd, no-decay $_nd, $_np rank(s), $_sh"
	[ "$_k" -gt 1 ] && _desc="$_desc, $_k micro-batches"
	if [ $have_torch = no ]; then
		skip "$_desc: $PY cannot import torch (apt-get install -y python3-torch)"
		return
	fi
	train "$_np" "$_name" SHARDFLOW_SHARDING="$_sh" --model "$_model" --optimizer "$_opt" \
		--steps 5 --batch "$_b" --accum "$_k" --clip "$_clip" --weight-decay "$_wd" \
		--no-decay "$_nd" --export-init "$tmp/$_name.w0" --export "$tmp/$_name.w1" \
		--data "$tmp/$_name.data" || { ok 1 "$_desc: train_dump"; return; }
	"$PY" "$ORACLE" --model "$_model" --weights "$tmp/$_name.w0" --data "$tmp/$_name.data" \
		--steps 5 --rows $((_b * _k * _T)) --optimizer "$_opt" --lr $_lr --clip "$_clip" \
		--weight-decay "$_wd" --no-decay "$_nd" --norms "$tmp/$_name.out" \
		--final "$tmp/$_name.w1" --param-rtol $_prtol >"$tmp/$_name.cmp" 2>&1
	_st=$?
	ok $_st "$_desc: norms and parameters = PyTorch's ($(tail -n 1 "$tmp/$_name.cmp"))"
	[ $_st -ne 0 ] && diag_file "$tmp/$_name.cmp"
}

oracle m1 1 full mlp sgd 24 1 0.1 0 7
oracle m2 2 full mlp sgd 24 1 0.1 0.1 7
oracle m3 3 full mlp sgd 24 1 0.1 0.1 0
oracle m2g 2 grad_op mlp adamw 24 1 0.1 0.1 7
oracle m3n 3 none mlp sgd 24 1 0.1 0.1 7
oracle g1 1 full nanogpt sgd 12 1 0.5 0.1 7
oracle g2 2 full nanogpt adamw 12 1 0.5 0.1 7
oracle g3 3 full nanogpt sgd 12 1 0.5 0.1 7
oracle g3g 3 grad_op nanogpt sgd 12 1 0.5 0.1 0
oracle g2n 2 none nanogpt adamw 12 1 0.5 0.1 7
oracle g3a 3 full nanogpt sgd 4 3 0.5 0.1 7

# every sharding mode on 3 ranks = 1 rank (no PyTorch needed): the 1-rank run's norm
# involves no all-reduce, so a bug there, which the three modes share, shows here.
# Measured: max relative difference 1.9e-7 (full and grad_op), 1.4e-7 (none), floor
# 1e-2; 10x that.
srtol=2e-6
train 1 s-n1 --model nanogpt --steps 5 --batch 12 --clip 0.5
for sh in full grad_op none; do
	train 3 "s-$sh" SHARDFLOW_SHARDING=$sh --model nanogpt --steps 5 --batch 12 --clip 0.5
	compare "clipped nanogpt, 3 ranks, $sh = 1 rank (rtol $srtol)" "s-$sh" s-n1 \
		--rtol $srtol --floor 1e-2
done

# max_norm infinity: the norm, no clipping: bitwise the unclipped run
train 2 inf --model nanogpt --optimizer adamw --steps 5 --batch 12 --clip inf
train 2 off --model nanogpt --optimizer adamw --steps 5 --batch 12
compare "max_grad_norm = inf changes nothing (bitwise)" inf off --bitwise
n=$(grep -c '^norm ' "$tmp/inf.out")
[ "$n" -eq 5 ]
ok $? "max_grad_norm = inf reports the norm of each of the 5 steps ($n lines)"
finish
