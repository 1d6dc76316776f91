#!/bin/sh
# torch_gpt.sh — shardflow's GPT against its PyTorch twin (bench/torch_gpt.py: nanoGPT's
# model.py on Debian's python3-torch 1.13), on the same weights and the same batches.
# Skipped when /usr/bin/python3 cannot import torch.
#
# The twin runs in float64 (--double) with shardflow's formulas and float constants
# (its exponential polynomial, GELU's form, the norms' eps, the loss scale, AdamW's
# constants and learning rate: bench/torch_gpt.py's exp_poly): to ~1e-16 the exact
# result of what shardflow computes in float32, which then differs from it by rounding
# alone. So each comparison holds the twin within shardflow's rounding interval: the
# same shardflow run again with every CPU worker rounding upward and downward
# (SHARDFLOW_ROUNDING; docs/testing.md, "The rounding interval"), a bound the run
# derives on the machine that runs it, not a figure measured on one CPU.
#  - examples/gpt trains a tiny GPT (2 blocks, embd 32, context 32) for 30 steps on 2
#    ranks and exports it; tests/gpt_logits loads that file, draws one batch and writes
#    its logits (1 rank, and 2 ranks with 5 sequences: 3 + 2 rows), rounded to nearest,
#    upward and downward; the PyTorch module loads the same file with
#    load_state_dict(strict=True) (nanoGPT's names, lm_head tied to wte), checks the ids
#    are the batch its own copy of sf_text_batch draws, and its logits lie within the
#    interval: in blocks of 128 by 2-norm, ||torch - shardflow|| <= ||w|| + eps32
#    ||shardflow||, w each logit's span of shardflow's three (tests/dump_compare's
#    rule; measured at most 0.10 of it);
#  - the same with an untied head (the export then has lm_head.weight);
#  - the token embedding (and tied head) scaled by 1.001 on the PyTorch side fails the
#    comparison (it can fail: 1400x its interval);
#  - training: PyTorch from examples/gpt's initial weights (--export-init), on the same
#    batches with the same AdamW and schedule: its per-step losses (--out-losses) within
#    the interval of shardflow's (--loss-log, rounded three ways), every step 1..30
#    (lib.sh's values_within: |a - b| <= |up - down| + eps32 max(|a|, |b|); measured at
#    most 0.014 of it); and the same with 3 micro-batches a step
#    (SHARDFLOW_GRAD_ACCUM=3) clipped at 0.5, the twin with --grad-accum 3 --grad-clip
#    0.5 (its clip_grad_norm_ and nanoGPT's param groups; 0.048);
#  - --arch llama's export writes Hugging Face's config.json beside it: the twin built
#    from that file alone (as from_pretrained reads it) loads the weights strictly, and
#    a config with the key/value heads wrong is refused naming the mismatch;
#  - the Llama family: examples/gpt --arch llama (sf_llama_graph) on 1 and 2 ranks
#    against the twin's LlamaForCausalLM, written out in bench/torch_gpt.py (RMSNorm,
#    rotate_half RoPE, repeat_kv grouped-query attention, SwiGLU), every step 1..30
#    within each run's interval (0.062 and 0.055);
#  - GPT-2 tokens: with scripts/install-deps.sh's austen-gpt2-train.bin, examples/gpt
#    --train-tokens (vocab 50 257) on 2 ranks against the twin reading the same file
#    (--tokens: sf_tokens_batch's draws), every step 1..30 within the interval (0.025);
#    skipped when the file is not there.
# The float32 twin (no --double) is outside the interval (1.7x on the plain curve): its
# own rounding, in another library's kernels, is not bracketed by shardflow's.
. "$(dirname "$0")/lib.sh"
twin_setup

limit=${SF_TEST_TIMEOUT:-300}
text="$tmp/corpus.txt"
sf_corpus "$text" # fixed bytes: the docs change, the tolerances below must not
shape="--layers 2 --heads 2 --embd 32 --context 32"
train="$shape --batch 8 --text $text --val-fraction 0.2 --warmup 5 --lr 0.004 --steps 30"
quiet="--sample 0 --eval-every 1000 --progress-every 10 --export-layout nanogpt"

plan 17

# gpt NP NAME ARGS...: examples/gpt on NP ranks, output in $tmp/NAME.out/.err
# (rounding as $gpt_rounding says: SHARDFLOW_ROUNDING, unset when empty)
gpt() {
	_np=$1 _name=$2
	shift 2
	# shellcheck disable=SC2086
	env ${gpt_rounding:+SHARDFLOW_ROUNDING=$gpt_rounding} \
		timeout -k 5 "$limit" sh "$RUN_MPI" "$_np" "$GPT" $train $quiet "$@" \
		</dev/null >"$tmp/$_name.out" 2>"$tmp/$_name.err"
	_st=$?
	ok $_st "$_np rank(s): examples/gpt $* (exit $_st)" || diag_file "$tmp/$_name.err"
}

# interval NP NAME ARGS...: NAME's run again rounded upward and downward, each writing
# its --loss-log to $tmp/NAME.sf.up.loss and .down.loss (ARGS without NAME's exports and
# loss log); not counted as tests: a failed run leaves the curve's check incomparable
interval() {
	_inp=$1 _iname=$2
	shift 2
	for _r in up down; do
		# shellcheck disable=SC2086
		SHARDFLOW_ROUNDING=${_r}ward timeout -k 5 "$limit" sh "$RUN_MPI" "$_inp" "$GPT" \
			$train $quiet "$@" --loss-log "$tmp/$_iname.sf.$_r.loss" </dev/null \
			>"$tmp/$_iname.$_r.out" 2>"$tmp/$_iname.$_r.err" ||
			{ diag "$_iname, rounded ${_r}ward: examples/gpt failed"; diag_file "$tmp/$_iname.$_r.err"; }
	done
}

# logits NP NAME WEIGHTS BATCH [--untied] [PY-OPTIONS...]: tests/gpt_logits on NP ranks,
# rounded to nearest ($tmp/NAME.rank<r>), upward (NAME.up) and downward (NAME.down),
# then the float64 twin's logits within that interval (blocks of 128 by 2-norm: one
# logit's interval can close by chance, docs/testing.md); returns the twin's status,
# its line in $tmp/NAME.cmp
logits() {
	_np=$1 _name=$2 _w=$3 _b=$4
	shift 4
	_untied=
	[ "${1:-}" = --untied ] && { _untied=--untied; shift; }
	for _r in "" up down; do
		# shellcheck disable=SC2086
		env ${_r:+SHARDFLOW_ROUNDING=${_r}ward} timeout -k 5 "$limit" sh "$RUN_MPI" "$_np" \
			"$LOGITS" $shape $_untied --batch "$_b" --index 7 --val-fraction 0.2 \
			--text "$text" --init "$_w" --out "$tmp/$_name${_r:+.$_r}" </dev/null \
			>"$tmp/$_name.lout" 2>&1 || { diag_file "$tmp/$_name.lout"; return 3; }
	done
	# shellcheck disable=SC2086
	"$PY" "$TWIN" logits $shape $_untied --batch "$_b" --index 7 --val-fraction 0.2 \
		--text "$text" --weights "$_w" --double --dumps "$tmp/$_name" \
		--dumps-up "$tmp/$_name.up" --dumps-down "$tmp/$_name.down" "$@" >"$tmp/$_name.cmp" 2>&1
}

gpt 2 tied --export "$tmp/tied.st" --export-init "$tmp/w0.st" --loss-log "$tmp/sf.loss"
for c in 1:4 2:5; do
	np=${c%:*} b=${c#*:}
	logits "$np" "t$np" "$tmp/tied.st" "$b"
	ok $? "tied head, $np rank(s), $b sequences: PyTorch's logits = shardflow's ($(cat "$tmp/t$np.cmp"))"
done
# the float64 twin scaled on the PyTorch side, against t2's dumps
# shellcheck disable=SC2086
"$PY" "$TWIN" logits $shape --batch 5 --index 7 --val-fraction 0.2 --text "$text" \
	--weights "$tmp/tied.st" --double --dumps "$tmp/t2" --dumps-up "$tmp/t2.up" \
	--dumps-down "$tmp/t2.down" --perturb >"$tmp/perturbed.cmp" 2>&1
st=$?
[ $st -eq 1 ]
ok $? "PyTorch's wte scaled by 1.001 is caught (exit $st: $(cat "$tmp/perturbed.cmp"))"

gpt 2 untied --untied --export "$tmp/untied.st"
logits 2 u2 "$tmp/untied.st" 5 --untied
ok $? "untied head, 2 ranks: PyTorch's logits = shardflow's ($(cat "$tmp/u2.cmp"))"
"$PY" "$TWIN" logits $shape --batch 5 --index 7 --val-fraction 0.2 --text "$text" \
	--weights "$tmp/untied.st" --dumps "$tmp/u2" >"$tmp/mix.cmp" 2>&1
st=$?
[ $st -eq 2 ] && grep -q 'lm_head.weight' "$tmp/mix.cmp"
ok $? "an untied file loaded as tied is refused, naming lm_head.weight (exit $st)"

# training side by side: plain, then 3 micro-batches a step with clipping at 0.5
# curve NAME: $tmp/NAME.pt.loss (the float64 twin's) within the rounding interval of
# $tmp/NAME.sf.loss ($tmp/NAME.sf.up.loss, .down.loss): every step 1..30, in order
curve() {
	awk '$1 != FNR { bad = 1 } FNR == 30 { n++ } END { exit !(n == 2 && !bad) }' \
		"$tmp/$1.sf.loss" "$tmp/$1.pt.loss" 2>/dev/null &&
		values_within "$tmp/$1.pt.loss" "$tmp/$1.sf.loss" "$tmp/$1.sf.up.loss" \
			"$tmp/$1.sf.down.loss" . >"$tmp/$1.curve"
	_st=$?
	[ -s "$tmp/$1.curve" ] || echo "# steps missing or out of order" >"$tmp/$1.curve"
	sed -i 's/^# //' "$tmp/$1.curve"
	return $_st
}
cp "$tmp/sf.loss" "$tmp/plain.sf.loss"
interval 2 plain
# shellcheck disable=SC2086
"$PY" "$TWIN" train $shape --batch 8 --text "$text" --val-fraction 0.2 --warmup 5 \
	--lr 0.004 --steps 30 --weights "$tmp/w0.st" --out-losses "$tmp/plain.pt.loss" --double \
	>"$tmp/pt.out" 2>&1 || diag_file "$tmp/pt.out"
curve plain
st=$?
ok $st "PyTorch (float64) trained from shardflow's initial weights on the same batches: losses within shardflow's rounding interval ($(cat "$tmp/plain.curve"))" ||
	diag_file "$tmp/plain.pt.loss"

SHARDFLOW_GRAD_ACCUM=3 gpt 2 accum --export-init "$tmp/w0a.st" --loss-log "$tmp/accum.sf.loss" \
	--grad-clip 0.5
SHARDFLOW_GRAD_ACCUM=3 interval 2 accum --grad-clip 0.5
# shellcheck disable=SC2086
"$PY" "$TWIN" train $shape --batch 8 --text "$text" --val-fraction 0.2 --warmup 5 \
	--lr 0.004 --steps 30 --weights "$tmp/w0a.st" --out-losses "$tmp/accum.pt.loss" \
	--grad-accum 3 --grad-clip 0.5 --double >"$tmp/pta.out" 2>&1 || diag_file "$tmp/pta.out"
curve accum
st=$?
ok $st "3 micro-batches a step, clipped at 0.5 (SHARDFLOW_GRAD_ACCUM=3 --grad-clip 0.5): PyTorch's losses within the interval ($(cat "$tmp/accum.curve"))" ||
	diag_file "$tmp/accum.pt.loss"

# the Llama family (examples/gpt --arch llama: sf_llama_graph, 4 query heads on 2
# key/value heads, rope, SwiGLU of 96, untied) against the twin's LlamaForCausalLM
# (bench/torch_gpt.py build_llama): the same initial weights (the 1- and 2-rank exports
# are the same file), every step's loss on 1 and 2 ranks within each one's interval
for np in 1 2; do
	gpt $np "llama$np" --arch llama --heads 4 --export-init "$tmp/lw$np.st" \
		--loss-log "$tmp/llama$np.sf.loss"
	interval $np "llama$np" --arch llama --heads 4
done
# shellcheck disable=SC2086
"$PY" "$TWIN" train --arch llama $shape --heads 4 --batch 8 --text "$text" --val-fraction 0.2 \
	--warmup 5 --lr 0.004 --steps 30 --weights "$tmp/lw1.st" --out-losses "$tmp/llama1.pt.loss" \
	--double >"$tmp/ptl.out" 2>&1 || diag_file "$tmp/ptl.out"
cp "$tmp/llama1.pt.loss" "$tmp/llama2.pt.loss" 2>/dev/null
for np in 1 2; do
	curve "llama$np"
	st=$?
	cmp -s "$tmp/lw1.st" "$tmp/lw$np.st" || st=1
	ok $st "Llama, $np rank(s): PyTorch's LlamaForCausalLM twin from the same weights and batches: losses within the interval ($(cat "$tmp/llama$np.curve"))" ||
		diag_file "$tmp/llama$np.pt.loss"
done
# Hugging Face's way in (issue 46): the export's config.json alone builds the twin
# (as from_pretrained reads it) and the weights load into it strictly; a config with
# one field wrong names the first mismatching tensor
"$PY" "$TWIN" hf-load "$tmp/config.json" "$tmp/lw1.st" >"$tmp/hf.out" 2>&1 &&
	grep -q '"ok": true' "$tmp/hf.out" && grep -q '"intermediate_size": 96' "$tmp/config.json"
ok $? "--arch llama's export writes config.json beside it: LlamaForCausalLM built from it alone loads the weights strictly" ||
	diag_file "$tmp/hf.out"
sed 's/"num_key_value_heads": 2/"num_key_value_heads": 4/' "$tmp/config.json" >"$tmp/config-bad.json"
! "$PY" "$TWIN" hf-load "$tmp/config-bad.json" "$tmp/lw1.st" >"$tmp/hf-bad.out" 2>&1 &&
	grep -q "size mismatch" "$tmp/hf-bad.out"
ok $? "a config.json with the key/value heads wrong: refused, naming the mismatch" ||
	diag_file "$tmp/hf-bad.out"

# GPT-2 tokens of Austen, a vocabulary of 50 257: the twin draws the same windows
data=${SF_DATA_PREFIX:-/opt/shardflow-data}
if [ -f "$data/austen-gpt2-train.bin" ] && [ -f "$data/austen-gpt2-val.bin" ]; then
	tok="$shape --batch 8 --warmup 5 --lr 0.004 --steps 30 --vocab 50257"
	for r in "" up down; do
		# shellcheck disable=SC2086
		env ${r:+SHARDFLOW_ROUNDING=${r}ward} timeout -k 5 "$limit" sh "$RUN_MPI" 2 "$GPT" $tok \
			$quiet --train-tokens "$data/austen-gpt2-train.bin" --val-tokens "$data/austen-gpt2-val.bin" \
			--export-init "$tmp/tw0${r:+.$r}.st" --loss-log "$tmp/tokens.sf${r:+.$r}.loss" </dev/null \
			>"$tmp/tokens.out" 2>"$tmp/tokens.err" || diag_file "$tmp/tokens.err"
	done
	# shellcheck disable=SC2086
	"$PY" "$TWIN" train $tok --tokens "$data/austen-gpt2-train.bin" --weights "$tmp/tw0.st" \
		--out-losses "$tmp/tokens.pt.loss" --double >"$tmp/ptt.out" 2>&1 || diag_file "$tmp/ptt.out"
	curve tokens
	ok $? "GPT-2 tokens (vocab 50257), 2 ranks: the twin reading the same token file, within the interval ($(cat "$tmp/tokens.curve"))" ||
		diag_file "$tmp/tokens.pt.loss"
else
	skip "GPT-2 tokens against the twin" "no $data/austen-gpt2-train.bin (scripts/install-deps.sh makes it)"
fi
finish
