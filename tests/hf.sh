#!/bin/sh
# hf.sh — Hugging Face in and out (issue 46): examples/gpt's exports load in
# transformers' layouts, and --init reads a Hugging Face model directory. The
# reference is bench/torch_gpt.py's own GPT2LMHeadModel (Conv1D, written out from
# config.json alone: no transformers package here) and its own directory writer.
# Skipped when /usr/bin/python3 cannot import torch.
#  - GPT-2, 2 ranks, 5 steps: --export in the default layout writes config.json and
#    Conv1D's (in, out) weights; the twin built from that config.json alone loads them
#    strictly, and its logits on a batch equal tests/gpt_logits' on the same run's
#    --export-layout nanogpt file (the float64 twin within shardflow's rounding
#    interval, as tests/torch_gpt.sh);
#  - the twin writes that model as a directory of 2 shards with an index (its Conv1D
#    transposes its own): --init DIR on 2 ranks starts from those weights: its
#    --export-init (nanoGPT layout) is the exported file byte for byte; a single
#    model.safetensors directory round-trips bitwise too;
#  - Llama the same way (2 shards, --arch llama): --export-init is the twin's input
#    byte for byte;
#  - refusals, exit 1 naming the first mismatch: config.json's n_layer (file 3, model
#    2); an index naming a tensor the model lacks; a shard whose wpe has another shape.
. "$(dirname "$0")/lib.sh"
twin_setup

limit=${SF_TEST_TIMEOUT:-300}
text="$tmp/corpus.txt"
sf_corpus "$text"
shape="--layers 2 --heads 2 --embd 32 --context 32"
train="$shape --batch 8 --text $text --val-fraction 0.2 --warmup 2 --lr 0.004"
quiet="--sample 0 --eval-every 1000 --progress-every 10"

plan 8

# gpt NP NAME ARGS...: examples/gpt on NP ranks, output in $tmp/NAME.out/.err; its status
gpt() {
	_np=$1 _name=$2
	shift 2
	# shellcheck disable=SC2086
	timeout -k 5 "$limit" sh "$RUN_MPI" "$_np" "$GPT" $train $quiet "$@" \
		</dev/null >"$tmp/$_name.out" 2>"$tmp/$_name.err"
}
mkdir -p "$tmp/n" "$tmp/h" "$tmp/h2"

gpt 2 nano --steps 5 --export-layout nanogpt --export "$tmp/n/w.st" || diag_file "$tmp/nano.err"
gpt 2 hf --steps 5 --export "$tmp/h/model.safetensors" || diag_file "$tmp/hf.err"
# shardflow's logits rounded to nearest, upward and downward: the float64 twin (with
# shardflow's formulas, tests/torch_gpt.sh) within that interval (docs/testing.md)
for r in "" up down; do
	# shellcheck disable=SC2086
	env ${r:+SHARDFLOW_ROUNDING=${r}ward} timeout -k 5 "$limit" sh "$RUN_MPI" 2 "$LOGITS" $shape \
		--batch 5 --index 7 --val-fraction 0.2 --text "$text" --init "$tmp/n/w.st" \
		--out "$tmp/d${r:+.$r}" </dev/null >"$tmp/d.out" 2>&1 || diag_file "$tmp/d.out"
done
# shellcheck disable=SC2086
"$PY" "$TWIN" logits $shape --batch 5 --index 7 --val-fraction 0.2 --text "$text" \
	--hf "$tmp/h" --double --dumps "$tmp/d" --dumps-up "$tmp/d.up" --dumps-down "$tmp/d.down" \
	>"$tmp/hf.cmp" 2>&1
ok $? "GPT-2's export loads strictly in the twin's GPT2LMHeadModel built from its config.json: logits = shardflow's ($(cat "$tmp/hf.cmp"))"

"$PY" "$TWIN" hf-save $shape --weights "$tmp/n/w.st" --out "$tmp/hs" --shards 2 \
	>"$tmp/hs.out" 2>&1 || diag_file "$tmp/hs.out"
gpt 2 fromhf --steps 1 --init "$tmp/hs" --export-layout nanogpt --export-init "$tmp/back.st" &&
	cmp -s "$tmp/n/w.st" "$tmp/back.st" && [ -f "$tmp/hs/model-00002-of-00002.safetensors" ]
ok $? "--init DIR, 2 shards and an index in Conv1D's layout (the twin's): the run starts from those weights, bitwise" ||
	diag_file "$tmp/fromhf.err"

cp "$tmp/h/config.json" "$tmp/h2/"
gpt 1 single --steps 1 --init "$tmp/h" --export-init "$tmp/h2/model.safetensors" &&
	cmp -s "$tmp/h/model.safetensors" "$tmp/h2/model.safetensors"
ok $? "--init DIR with one model.safetensors, 1 rank: --export-init is the file it read, bitwise" ||
	diag_file "$tmp/single.err"

gpt 2 llama --arch llama --heads 4 --steps 1 --export-init "$tmp/lw.st" || diag_file "$tmp/llama.err"
"$PY" "$TWIN" hf-save --arch llama $shape --heads 4 --weights "$tmp/lw.st" --out "$tmp/ls" \
	--shards 2 >"$tmp/ls.out" 2>&1 || diag_file "$tmp/ls.out"
gpt 2 lback --arch llama --heads 4 --steps 1 --init "$tmp/ls" --export-init "$tmp/lback.st" &&
	cmp -s "$tmp/lw.st" "$tmp/lback.st"
ok $? "--arch llama --init DIR (the twin's 2 shards): the run starts from those weights, bitwise" ||
	diag_file "$tmp/lback.err"

# refusals: the first mismatch named, with both values
cp -r "$tmp/hs" "$tmp/bad1"
sed 's/"n_layer": 2/"n_layer": 3/' "$tmp/hs/config.json" >"$tmp/bad1/config.json"
gpt 2 bad1 --steps 1 --init "$tmp/bad1"
st=$?
[ $st -eq 1 ] && grep -q '"n_layer" is 3, the model.s is 2' "$tmp/bad1.err"
ok $? "a config.json with n_layer 3 for a 2-layer run: refused naming it and both values (exit $st)" ||
	diag_file "$tmp/bad1.err"

cp -r "$tmp/hs" "$tmp/bad2"
sed 's/"transformer.ln_f.bias"/"transformer.ln_g.bias"/' "$tmp/hs/model.safetensors.index.json" \
	>"$tmp/bad2/model.safetensors.index.json"
gpt 2 bad2 --steps 1 --init "$tmp/bad2"
st=$?
[ $st -eq 1 ] && grep -q 'transformer.ln_g.bias' "$tmp/bad2.err"
ok $? "an index naming a tensor the model lacks: refused naming it (exit $st)" ||
	diag_file "$tmp/bad2.err"

# a model of context 16 against a directory of context 32: config.json's n_positions
# (32 >= 16) is fine, wpe's shape is not
gpt 2 bad3 --steps 1 --context 16 --init "$tmp/hs"
st=$?
[ $st -eq 1 ] && grep -q 'transformer.wpe.weight' "$tmp/bad3.err"
ok $? "a shard whose wpe is (32, 32) for a model of context 16: refused naming the tensor (exit $st)" ||
	diag_file "$tmp/bad3.err"

[ -f "$tmp/h/config.json" ] && grep -q '"activation_function": "gelu_new"' "$tmp/h/config.json" &&
	grep -q '"n_positions": 32' "$tmp/h/config.json" && grep -q '"tie_word_embeddings": true' "$tmp/h/config.json"
ok $? "GPT-2's config.json: GPT2Config's fields (gelu_new, n_positions, tied)" ||
	diag_file "$tmp/h/config.json"
finish
