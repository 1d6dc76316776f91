#!/bin/sh
# llama_graph.sh — sf_llama_graph (models/llama.c) as train_dump's "llama-hf" model
# (vocabulary 16, context 5, dim 16, 2 layers, 4 query heads on 2 key/value heads,
# MLP 48, untied):
#  - its safetensors export holds exactly Hugging Face's LlamaForCausalLM keys with
#    their shapes (model.embed_tokens.weight (16, 16), per layer input_layernorm,
#    self_attn.{q,k,v,o}_proj ((16, 16), (8, 16), (8, 16), (16, 16)), post_attention_
#    layernorm, mlp.{gate,up}_proj (48, 16), mlp.down_proj (16, 48); model.norm,
#    lm_head.weight (16, 16)): q, k and v come out of one linear_split GEMM as three
#    tensors (python3 reads the header; skipped without it);
#  - it learns: the loss of step 30 is below a third of step 1's (measured 2.76 to
#    0.0096 at lr 0.05);
#  - 2 ranks: prefetch depth 0 and backward prefetch post give the bits of depth 2, pre.
# N ranks = 1 rank: tests/equivalence.sh; the op families: tests/test_kernels_fd.
. "$(dirname "$0")/lib.sh"
require_progs "$TRAIN_DUMP"
plan 4

train 1 hf --model llama-hf --steps 30 --lr 0.05 --export "$tmp/hf.safetensors"
[ -s "$tmp/hf.safetensors" ]
ok $? "train_dump --model llama-hf: 30 steps, exported"

if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/hf.safetensors" >"$tmp/keys.out" 2>&1 <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
got = {k: v["shape"] for k, v in h.items() if k != "__metadata__"}
want = {"model.embed_tokens.weight": [16, 16], "model.norm.weight": [16],
        "lm_head.weight": [16, 16]}
for i in range(2):
    p = "model.layers.%d." % i
    want.update({p + "input_layernorm.weight": [16], p + "post_attention_layernorm.weight": [16],
                 p + "self_attn.q_proj.weight": [16, 16], p + "self_attn.k_proj.weight": [8, 16],
                 p + "self_attn.v_proj.weight": [8, 16], p + "self_attn.o_proj.weight": [16, 16],
                 p + "mlp.gate_proj.weight": [48, 16], p + "mlp.up_proj.weight": [48, 16],
                 p + "mlp.down_proj.weight": [16, 48]})
bad = sorted(set(got) ^ set(want)) + sorted(k for k in want if k in got and got[k] != want[k])
print("%d keys%s" % (len(got), "; differ: " + ", ".join(bad) if bad else ""))
sys.exit(1 if bad else 0)
PY
	ok $? "the export's keys and shapes are LlamaForCausalLM's ($(cat "$tmp/keys.out"))"
else
	skip "the export's keys and shapes are LlamaForCausalLM's" "python3 is not installed"
fi

train 1 hf1 --model llama-hf --steps 1 --lr 0.05
l1=$(sed -n 's/^final_loss //p' "$tmp/hf1.out" "$tmp/hf1.err" | head -1)
l30=$(sed -n 's/^final_loss //p' "$tmp/hf.out" "$tmp/hf.err" | head -1)
[ -n "$l1" ] && [ -n "$l30" ] && awk -v a="$l1" -v b="$l30" 'BEGIN { exit !(b < a / 3) }'
ok $? "it learns: the loss of step 30 (${l30:-?}) is below a third of step 1's (${l1:-?})"

train 2 d2 --model llama-hf --steps 4 --batch 8
train 2 d0 SHARDFLOW_PREFETCH_DEPTH=0 SHARDFLOW_BACKWARD_PREFETCH=post --model llama-hf \
	--steps 4 --batch 8
compare "2 ranks: depth 0, backward post = depth 2, pre (bitwise)" d0 d2 --bitwise
finish
