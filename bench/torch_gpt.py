#!/usr/bin/python3
"""torch_gpt.py — the PyTorch twin of shardflow's GPT (sf_gpt_graph, examples/gpt).

The model is nanoGPT's model.py written for PyTorch 1.13 (Debian's python3-torch):
token and position embeddings, pre-norm blocks (x + attn(ln_1(x)); x + mlp(ln_2(x)))
with causal multi-head attention (q, k, v split of c_attn, scale 1/sqrt(head size))
and a 4C MLP with GELU in its tanh form, ln_f, and lm_head tied to wte (or not). Its
parameter names are nanoGPT's, which are the names shardflow exports, so
`load_state_dict(strict=True)` takes shardflow's safetensors file as it is (a tied
lm_head has no tensor of its own). Layernorm eps 1e-5, as shardflow's.

The data are shardflow's: text_batch() draws the windows sf_text_batch draws (the same
splitmix64 stream of data/mix.h and data/text.c), so both sides train on the same
batches. The optimizer is shardflow's AdamW: torch.optim.AdamW with decoupled weight
decay in shardflow's default parameter groups (none on biases, norms and
embeddings: see the training options below), beta2 0.99 and eps 1e-8 as
examples/gpt, the same warmup and cosine schedule.

  torch_gpt.py logits --weights W --dumps PREFIX [model options] --text FILE
                      [--batch B --seed S --index I --val-fraction X] [--rtol R]
                      [--perturb] [--double [--dumps-up UP --dumps-down DOWN]]
      loads W (shardflow's export) into the module, reads PREFIX.rank<r> written by
      tests/gpt_logits (each rank's ids and logits of one batch), checks that the ids
      are the batch text_batch() draws, runs the module on them and compares the
      logits: max |torch - shardflow| / max |shardflow| <= R (default 1e-4). Prints the
      error; exit 0 within R, 1 beyond, 2 on bad input. --perturb first scales the
      token embedding wte by 1.001 (the comparison must then fail: the test
      proves it can). --double: the module in float64 with shardflow's formulas and
      constants (below). --dumps-up/--dumps-down (both, or neither): gpt_logits' dumps
      of the same batch rounded upward and downward (SHARDFLOW_ROUNDING); instead of
      --rtol, the logits must lie within that rounding interval, in blocks of 128 by
      2-norm as tests/dump_compare --up/--down: ||torch - shardflow|| <= ||w|| +
      eps32 ||shardflow||, w each logit's span of the three dumps (an interval that is
      zero everywhere fails).

  torch_gpt.py train --weights W0 --text FILE [model options] [training options]
                     [--ddp | --double] [--out-losses FILE] [--time-from K]
      trains from W0 (shardflow's initial weights, examples/gpt --export-init) on the
      batches examples/gpt uses, printing "step s loss x" per step on rank 0 and, at the
      end, one JSON line: tokens_per_s (the tokens of the steps after --time-from over
      their summed time, rank 0's clock), step_ms_median, ranks, threads, final_loss.
      --ddp: DistributedDataParallel over gloo, launched by mpirun
      (rank and size from OMPI_COMM_WORLD_*), each rank its rows of the global batch
      (sf_model_local_rows' split), the loss the mean over the global batch. One CPU
      thread per process (torch.set_num_threads(--threads), default 1): one core per
      rank, as shardflow; --threads 2 lets a single process use both cores.
      --double (one process): float64 with shardflow's formulas and constants, its
      AdamW written out with the bias corrections rounded to float, the learning rate
      from examples/gpt's float schedule: to ~1e-16 the exact result of what
      shardflow rounds, so its losses lie within the rounding interval of shardflow's
      (tests/torch_gpt.sh; docs/testing.md, "The rounding interval").

  torch_gpt.py speed [model options] [--device cuda] [--precision fp32|bf16]
                     [--attn manual|sdpa] [--compile] [--tf32] [--steps 20]
                     [--warmup-steps 3] [--batch B]
      training throughput as a user runs PyTorch fast (scripts/gpu-check.sh's speed
      stage): random tokens, AdamW (fused on CUDA), fp32 (TF32 off unless --tf32, as
      shardflow's cuBLAS calls) or bf16 autocast, the twin's attention or
      F.scaled_dot_product_attention (PyTorch >= 2.0), eager or torch.compile. One
      JSON line: tokens_per_s, step_ms_median, params, flops_per_token (nanoGPT's
      6 N + 12 L H Q T), peak_mem_mib.

Model options: --layers 4 --heads 4 --embd 128 --context 128 --vocab 256 [--untied].
Training options (examples/gpt's defaults): --steps 4000 --batch 16 --lr 0.002
--min-lr (lr/10) --warmup 100 --weight-decay 0.01 --seed 1 --val-fraction 0.1
--grad-clip 0 --grad-accum (SHARDFLOW_GRAD_ACCUM, default 1). AdamW's parameter groups
are shardflow's default: no weight decay on biases, layernorms and embeddings (wte,
wpe; a tied lm_head is wte). Micro-batch j of step s is training batch s K + j, as
examples/gpt takes them; clipping is torch.nn.utils.clip_grad_norm_ of their mean.
"""
import argparse
import json
import math
import os
import statistics
import struct
import sys
import time

PROG = "torch_gpt.py"
MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


# --- shardflow's data: sf_text_load's split and sf_text_batch's windows -------------

def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def train_end(n, val_fraction):
    val = math.floor(n * val_fraction)
    if val > n - 1:
        val = n - 1
    if val < 0:
        val = 0
    return n - val


def window_start(seed, split, index, g, count):
    key = mix64(mix64(mix64(mix64(seed) ^ split) ^ index) ^ g)
    accept = MASK64 - MASK64 % count
    while True:
        key = (key + GOLDEN) & MASK64
        r = mix64(key)
        if r < accept:
            return r % count


def text_batch(data, end, split, seed, index, first, rows, T):
    """Rows [first, first + rows) of global batch `index`: (x, y) lists of rows*T ids."""
    lo, hi = (0, end) if split == 0 else (end, len(data))
    if hi - lo < T + 1:
        raise ValueError("the split has %d bytes: a window of T + 1 = %d needs more"
                         % (hi - lo, T + 1))
    count = hi - lo - T
    x, y = [], []
    for r in range(rows):
        s = lo + window_start(seed, split, index, first + r, count)
        w = data[s:s + T + 1]
        x.extend(w[:T])
        y.extend(w[1:])
    return x, y


def local_rows(batch, rank, world):
    """sf_model_local_rows: batch / N each, the first batch % N ranks one more."""
    base, extra = divmod(batch, world)
    rows = base + (1 if rank < extra else 0)
    first = rank * base + min(rank, extra)
    return first, rows


# --- safetensors --------------------------------------------------------------------

def read_safetensors(path):
    import torch
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: shorter than a safetensors header" % path)
    (hlen,) = struct.unpack("<Q", data[:8])
    if 8 + hlen > len(data):
        raise ValueError("%s: a header of %d bytes runs past the end" % (path, hlen))
    header = json.loads(data[8:8 + hlen])
    body = memoryview(data)[8 + hlen:]
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta.get("dtype") != "F32":
            raise ValueError("%s: %s is %s, not F32" % (path, name, meta.get("dtype")))
        a, b = meta["data_offsets"]
        t = torch.frombuffer(bytearray(body[a:b]), dtype=torch.float32)
        out[name] = t.reshape(meta["shape"]).clone()
    return out


def write_safetensors(path, tensors):
    """tensors (name -> float32 tensor) as a safetensors file, in the given order"""
    header, off, blobs = {}, 0, []
    for name, t in tensors.items():
        b = t.detach().contiguous().to(dtype=__import__("torch").float32).numpy().astype("<f4").tobytes()
        header[name] = dict(dtype="F32", shape=list(t.shape), data_offsets=[off, off + len(b)])
        off += len(b)
        blobs.append(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


# Hugging Face's model directory: config.json, then model.safetensors or
# model.safetensors.index.json ({"weight_map": name -> shard}) and its shards

def read_hf_dir(d):
    index = os.path.join(d, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(d, "model.safetensors"))
    with open(index) as f:
        wm = json.load(f)["weight_map"]
    out = {}
    for shard in sorted(set(wm.values())):
        part = read_safetensors(os.path.join(d, shard))
        for name, t in part.items():
            if wm.get(name) != shard:
                raise ValueError("%s: %s is in %s, the index says %s" % (d, name, shard, wm.get(name)))
            out[name] = t
    missing = set(wm) - set(out)
    if missing:
        raise ValueError("%s: the index names %s, in no shard" % (d, sorted(missing)[0]))
    return out


def write_hf_dir(d, config, sd, shards):
    """config.json, then sd in `shards` files (model-0000i-of-0000n.safetensors) with
    their index, the tensors split in order into parts of about equal count"""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    names = list(sd)
    wm, total = {}, 0
    for i in range(shards):
        part = names[i * len(names) // shards:(i + 1) * len(names) // shards]
        fn = "model-%05d-of-%05d.safetensors" % (i + 1, shards)
        write_safetensors(os.path.join(d, fn), {n: sd[n] for n in part})
        wm.update({n: fn for n in part})
        total += sum(sd[n].numel() * 4 for n in part)
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump(dict(metadata=dict(total_size=total), weight_map=wm), f, indent=2)


# --- shardflow's formulas in float64 (--double) ----------------------------------------
#
# The float64 twin computes, to ~1e-16, the exact result of the formulas shardflow
# evaluates in float32, so that it lies within the rounding interval of a shardflow run
# (docs/testing.md, "The rounding interval"). The interval brackets rounding only, so the
# twin takes shardflow's formulas where they are not the textbook's and its constants as
# the floats it holds: the exponential of the softmaxes, GELU and the loss is exp_v4's
# degree-7 Taylor polynomial (its truncation, up to 7.3e-9 relative, is not a rounding),
# with its float coefficients; GELU is v / (1 + exp(-2u)) with float K and C; the norms'
# eps, the loss scale, AdamW's constants and the learning rate are the floats shardflow
# computes (on the host, rounding to nearest; a constant a worker computes rounds within
# the interval either way).

def f32(x):
    """x rounded to float32, as a Python float"""
    return struct.unpack("f", struct.pack("f", x))[0]


EXP_POLY = [f32(1.0 / 5040.0), f32(1.0 / 720.0), f32(1.0 / 120.0), f32(1.0 / 24.0),
            f32(1.0 / 6.0), 0.5, 1.0, 1.0]  # layers/softmax_xent_math.h's sf_exp_poly
GELU_K, GELU_C = f32(0.7978845608028654), f32(0.044715)  # layers/gelu_math.h


def exp_poly(x):
    """sf_exp_poly (exp_v4's lanes) in float64: 2^k p(r), k = round(x / ln 2), r = x -
    k ln 2, p the Taylor polynomial of degree 7 with float coefficients, x clamped to
    [-87, 88]. Its derivative is taken as itself, as shardflow's backward formulas use
    the forward's exponentials (softmax's p (dy - sum p dy), GELU's e)."""
    import torch

    class ExpPoly(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x = x.clamp(-87.0, 88.0)
            k = torch.round(x / math.log(2.0))
            r = x - k * math.log(2.0)
            p = torch.full_like(r, EXP_POLY[0])
            for c in EXP_POLY[1:]:
                p = p * r + c
            out = torch.ldexp(p, k)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out
    return ExpPoly.apply(x)


def softmax_poly(att, mask):
    """a causal softmax of the last dimension as shardflow's attention: exp_poly of the
    scores less their row's maximum, over the allowed entries only"""
    mx = att.masked_fill(~mask, float("-inf")).amax(-1, keepdim=True).detach()
    e = exp_poly((att - mx).masked_fill(~mask, -87.0)).masked_fill(~mask, 0.0)
    return e / e.sum(-1, keepdim=True)


def gelu_poly(v):
    """layers/gelu_math.h: v / (1 + exp(-2 K (v + C v^3)))"""
    return v / (1.0 + exp_poly(-2.0 * (GELU_K * (v + GELU_C * v * v * v))))


def xent_sum_poly(logits, y):
    """the summed cross-entropy of the rows as sf_softmax_xent_row: log(sum exp_poly(z -
    max)) + max - z[label]"""
    mx = logits.amax(-1, keepdim=True).detach()
    s = exp_poly(logits - mx).sum(-1)
    return (s.log() + mx.squeeze(-1) - logits.gather(-1, y.view(-1, 1)).squeeze(-1)).sum()


# --- the model ------------------------------------------------------------------------

def build_model(layers, heads, embd, context, vocab, tied, sdpa=False, poly=False):
    """nanoGPT's GPT; poly: shardflow's formulas and constants (see exp_poly), for the
    float64 twin"""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(embd, 3 * embd)
            self.c_proj = nn.Linear(embd, embd)
            # a plain attribute, not a buffer: DDP broadcasts buffers at start, and gloo
            # cannot broadcast bool tensors
            mask = torch.tril(torch.ones(context, context, dtype=torch.bool))
            self.mask = mask.view(1, 1, context, context)

        def forward(self, x):
            B, T, C = x.shape
            hs = C // heads
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T, heads, hs).transpose(1, 2)
            k = k.view(B, T, heads, hs).transpose(1, 2)
            v = v.view(B, T, heads, hs).transpose(1, 2)
            if sdpa:  # PyTorch >= 2.0's fused kernels (flash / memory-efficient)
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
            if self.mask.device != x.device:
                self.mask = self.mask.to(x.device)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            if poly:
                att = softmax_poly(att, self.mask[:, :, :T, :T])
            else:
                att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
                att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(embd, 4 * embd)
            self.c_proj = nn.Linear(4 * embd, embd)

        def forward(self, x):
            if poly:
                return self.c_proj(gelu_poly(self.c_fc(x)))
            return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))

    ln_eps = f32(1e-5) if poly else 1e-5

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(embd, eps=ln_eps)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(embd, eps=ln_eps)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, embd),
                wpe=nn.Embedding(context, embd),
                h=nn.ModuleList([Block() for _ in range(layers)]),
                ln_f=nn.LayerNorm(embd, eps=ln_eps)))
            self.lm_head = nn.Linear(embd, vocab, bias=False)
            if tied:
                self.lm_head.weight = self.transformer.wte.weight

        def forward(self, idx):
            B, T = idx.shape
            pos = torch.arange(T, dtype=torch.long, device=idx.device)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for blk in self.transformer.h:
                x = blk(x)
            return self.lm_head(self.transformer.ln_f(x))

    return GPT()


CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def build_hf_gpt2(c, poly=False):
    """transformers' GPT2LMHeadModel as its modules and state_dict keys are, written
    out from its config.json (the package is not here): Conv1D layers, whose weight is
    (in, out) and which compute x @ W + b; gelu_new; lm_head tied to wte unless
    tie_word_embeddings is false. poly: shardflow's formulas and constants (see
    exp_poly), for the float64 twin"""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    embd, heads, layers = c["n_embd"], c["n_head"], c["n_layer"]
    ctx, vocab, eps = c["n_positions"], c["vocab_size"], c.get("layer_norm_epsilon", 1e-5)
    inner = c.get("n_inner") or 4 * embd
    if c.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        raise ValueError("activation_function %r: the twin has gelu_new only"
                         % c["activation_function"])

    class Conv1D(nn.Module):
        def __init__(self, nf, nx):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(nx, nf))
            self.bias = nn.Parameter(torch.zeros(nf))

        def forward(self, x):
            return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(
                *x.shape[:-1], self.weight.shape[1])

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = Conv1D(3 * embd, embd)
            self.c_proj = Conv1D(embd, embd)

        def forward(self, x):
            B, T, C = x.shape
            hs = C // heads
            q, k, v = (t.view(B, T, heads, hs).transpose(1, 2)
                       for t in self.c_attn(x).split(C, dim=2))
            mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
            if poly:
                att = softmax_poly((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs)),
                                   mask[None, None])
            else:
                att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
                att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
            return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = Conv1D(inner, embd)
            self.c_proj = Conv1D(embd, inner)

        def forward(self, x):
            if poly:
                return self.c_proj(gelu_poly(self.c_fc(x)))
            return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))

    if poly:
        eps = f32(eps)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(embd, eps=eps)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(embd, eps=eps)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, embd)
            self.wpe = nn.Embedding(ctx, embd)
            self.h = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(embd, eps=eps)

    class GPT2LMHeadModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = Transformer()
            self.lm_head = nn.Linear(embd, vocab, bias=False)
            if c.get("tie_word_embeddings", True):
                self.lm_head.weight = self.transformer.wte.weight

        def forward(self, idx):
            t = self.transformer
            x = t.wte(idx) + t.wpe(torch.arange(idx.shape[1]))
            for blk in t.h:
                x = blk(x)
            return self.lm_head(t.ln_f(x))

    return GPT2LMHeadModel()


def load_hf(d, poly=False):
    """the twin of d's config.json (GPT2LMHeadModel or LlamaForCausalLM), d's weights
    loaded into it strictly (a tied head's weight is the embedding's); poly: shardflow's
    formulas and constants (see exp_poly), for the float64 twin"""
    with open(os.path.join(d, "config.json")) as f:
        c = json.load(f)
    sd = read_hf_dir(d)
    if c.get("model_type") == "gpt2":
        model = build_hf_gpt2(c, poly)
        if c.get("tie_word_embeddings", True):
            sd["lm_head.weight"] = sd["transformer.wte.weight"]
    else:
        model = llama_from_config(c, poly)
        if c["tie_word_embeddings"]:
            sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
    model.load_state_dict(sd, strict=True)
    return model


def llama_from_config(c, poly=False):
    return build_llama(c["num_hidden_layers"], c["num_attention_heads"],
                       c["num_key_value_heads"], c["hidden_size"],
                       c["max_position_embeddings"], c["vocab_size"],
                       c["tie_word_embeddings"], c["intermediate_size"], c["rope_theta"],
                       eps=c["rms_norm_eps"], poly=poly)


def llama_ffn_dim(embd, ffn_dim, multiple_of=32):
    """sf_llama_ffn_dim's rule (models/llama.c), without a multiplier"""
    if ffn_dim:
        return ffn_dim
    h = 2 * (4 * embd) // 3
    return (h + multiple_of - 1) // multiple_of * multiple_of


def build_llama(layers, heads, kv_heads, embd, context, vocab, tied, ffn_dim, rope_theta,
                eps=1e-5, sdpa=False, poly=False):
    """Hugging Face's LlamaForCausalLM (modeling_llama.py, written out: no transformers on
    Debian 12): RMSNorm, rotate_half rotary embeddings, repeat_kv grouped-query
    attention, SwiGLU MLP, no biases. The state_dict keys are LlamaForCausalLM's. The
    rotary angles are computed in float64 and rounded, as shardflow's rope table.
    sdpa: attention by F.scaled_dot_product_attention (causal, enable_gqa), as a user
    runs it fast (the speed command; PyTorch 2.5 or newer). poly: shardflow's formulas
    and constants (see exp_poly), for the float64 twin."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    hs = embd // heads
    ffn = llama_ffn_dim(embd, ffn_dim)
    if poly:
        eps = f32(eps)

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(embd))

        def forward(self, x):
            var = x.pow(2).mean(-1, keepdim=True)
            return self.weight * (x * torch.rsqrt(var + eps))

    t = torch.arange(context, dtype=torch.float64)
    inv = 1.0 / (rope_theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
    ang = torch.outer(t, inv)
    cos = torch.cat((ang.cos(), ang.cos()), -1).float()
    sin = torch.cat((ang.sin(), ang.sin()), -1).float()

    def rotate_half(x):
        x1, x2 = x[..., :hs // 2], x[..., hs // 2:]
        return torch.cat((-x2, x1), dim=-1)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(embd, heads * hs, bias=False)
            self.k_proj = nn.Linear(embd, kv_heads * hs, bias=False)
            self.v_proj = nn.Linear(embd, kv_heads * hs, bias=False)
            self.o_proj = nn.Linear(heads * hs, embd, bias=False)
            # buffers that are not state: they follow .to(device), load_state_dict
            # (strict) does not see them
            self.register_buffer("mask", torch.tril(torch.ones(context, context, dtype=torch.bool)),
                                 persistent=False)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)

        def forward(self, x):
            B, T, C = x.shape
            q = self.q_proj(x).view(B, T, heads, hs).transpose(1, 2)
            k = self.k_proj(x).view(B, T, kv_heads, hs).transpose(1, 2)
            v = self.v_proj(x).view(B, T, kv_heads, hs).transpose(1, 2)
            c, s = self.cos[:T].to(q.dtype), self.sin[:T].to(q.dtype)
            q = q * c + rotate_half(q) * s
            k = k * c + rotate_half(k) * s
            if sdpa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                   enable_gqa=kv_heads != heads)
                return self.o_proj(y.transpose(1, 2).contiguous().view(B, T, C))
            g = heads // kv_heads  # repeat_kv
            k = k[:, :, None].expand(B, kv_heads, g, T, hs).reshape(B, heads, T, hs)
            v = v[:, :, None].expand(B, kv_heads, g, T, hs).reshape(B, heads, T, hs)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            if poly:
                att = softmax_poly(att, self.mask[:T, :T])
            else:
                att = F.softmax(att.masked_fill(~self.mask[:T, :T], float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.o_proj(y)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj = nn.Linear(embd, ffn, bias=False)
            self.up_proj = nn.Linear(embd, ffn, bias=False)
            self.down_proj = nn.Linear(ffn, embd, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = RMSNorm()
            self.self_attn = Attention()
            self.post_attention_layernorm = RMSNorm()
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.self_attn(self.input_layernorm(x))
            return x + self.mlp(self.post_attention_layernorm(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(vocab, embd)
            self.layers = nn.ModuleList([Layer() for _ in range(layers)])
            self.norm = RMSNorm()

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = Model()
            self.lm_head = nn.Linear(embd, vocab, bias=False)
            if tied:
                self.lm_head.weight = self.model.embed_tokens.weight

        def forward(self, idx):
            x = self.model.embed_tokens(idx)
            for layer in self.model.layers:
                x = layer(x)
            return self.lm_head(self.model.norm(x))

    return Llama()


def make_model(a):
    """--arch's model, its weights from a.weights, and whether its head is tied"""
    if getattr(a, "arch", "gpt") == "llama":
        kv = a.kv_heads or (a.heads // 2 if a.heads % 2 == 0 else a.heads)
        model = build_llama(a.layers, a.heads, kv, a.embd, a.context, a.vocab, a.tied,
                            a.ffn_dim, a.rope_theta, poly=getattr(a, "double", False))
        sd = read_safetensors(a.weights)
        if a.tied:
            sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
        model.load_state_dict(sd, strict=True)
        return model
    model = build_model(a.layers, a.heads, a.embd, a.context, a.vocab, not a.untied,
                        poly=getattr(a, "double", False))
    return load_weights(model, a.weights, not a.untied)


def load_weights(model, path, tied):
    sd = read_safetensors(path)
    if tied:
        if "lm_head.weight" in sd:
            raise ValueError("%s has lm_head.weight: it was exported untied (--untied)" % path)
        sd["lm_head.weight"] = sd["transformer.wte.weight"]
    model.load_state_dict(sd, strict=True)
    return model


# --- command line ---------------------------------------------------------------------

def add_model_args(p, text=True):
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--embd", type=int, default=128)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--untied", action="store_true")
    p.add_argument("--arch", choices=("gpt", "llama"), default="gpt")
    p.add_argument("--kv-heads", type=int, default=0)
    p.add_argument("--ffn-dim", type=int, default=0)
    p.add_argument("--rope-theta", type=float, default=10000.0)
    p.add_argument("--tied", action="store_true", help="llama: lm_head is embed_tokens")
    if text:
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--text")
        src.add_argument("--tokens", help="a token file (llm.c shard or raw uint16): "
                         "its windows drawn as sf_tokens_batch draws them")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--val-fraction", type=float, default=0.1)


def parse_args(argv):
    ap = argparse.ArgumentParser(prog=PROG, description="the PyTorch twin of shardflow's GPT")
    sub = ap.add_subparsers(dest="cmd", required=True)
    lg = sub.add_parser("logits", help="compare one batch's logits with tests/gpt_logits'")
    add_model_args(lg)
    lg.add_argument("--weights")
    lg.add_argument("--hf", help="a Hugging Face directory instead of --weights: "
                    "GPT2LMHeadModel (Conv1D) built from its config.json alone")
    lg.add_argument("--dumps", required=True)
    lg.add_argument("--index", type=int, default=0)
    lg.add_argument("--rtol", type=float, default=1e-4)
    lg.add_argument("--perturb", action="store_true")
    lg.add_argument("--double", action="store_true")
    lg.add_argument("--dumps-up")
    lg.add_argument("--dumps-down")
    tr = sub.add_parser("train", help="train from shardflow's initial weights")
    add_model_args(tr)
    tr.add_argument("--weights", required=True)
    tr.add_argument("--steps", type=int, default=4000)
    tr.add_argument("--lr", type=float, default=2e-3)
    tr.add_argument("--min-lr", type=float, default=-1.0)
    tr.add_argument("--warmup", type=int, default=100)
    tr.add_argument("--weight-decay", type=float, default=0.01)
    tr.add_argument("--grad-clip", type=float, default=0.0)
    tr.add_argument("--grad-accum", type=int,
                    default=int(os.environ.get("SHARDFLOW_GRAD_ACCUM", "1") or 1))
    tr.add_argument("--ddp", action="store_true")
    tr.add_argument("--double", action="store_true")
    tr.add_argument("--threads", type=int, default=1)
    tr.add_argument("--out-losses")
    tr.add_argument("--time-from", type=int, default=2)
    tr.add_argument("--master-addr")
    tr.add_argument("--master-port", type=int, default=0)
    tr.add_argument("--ifname")
    hs = sub.add_parser("hf-save", help="--weights (shardflow's own layout) as a Hugging "
                        "Face directory, in --shards files with their index")
    add_model_args(hs, text=False)
    hs.add_argument("--weights", required=True)
    hs.add_argument("--out", required=True)
    hs.add_argument("--shards", type=int, default=2)
    sp = sub.add_parser("speed", help="tokens/s of training on a device, as a user runs it fast")
    add_model_args(sp, text=False)
    sp.add_argument("--device", default="cuda")
    sp.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    sp.add_argument("--attn", choices=("manual", "sdpa"), default="sdpa")
    sp.add_argument("--compile", action="store_true")
    sp.add_argument("--tf32", action="store_true")
    sp.add_argument("--steps", type=int, default=20)
    sp.add_argument("--warmup-steps", type=int, default=3)
    a = ap.parse_args(argv)
    for name in ("layers", "heads", "embd", "context", "vocab", "batch") + (
            ("threads", "steps") if a.cmd == "train" else ("steps",) if a.cmd == "speed" else ()):
        if getattr(a, name) < 1:
            ap.error("--%s %d is invalid: expected a positive integer" % (name, getattr(a, name)))
    if a.embd % a.heads:
        ap.error("--embd %d must be a multiple of --heads %d" % (a.embd, a.heads))
    if a.cmd == "logits" and not (a.weights or a.hf):
        ap.error("logits needs --weights or --hf")
    if a.cmd == "train":
        a.min_lr_given = a.min_lr >= 0
        if a.min_lr < 0:
            a.min_lr = a.lr / 10
    return a


def read_tokens(path):
    """A token file as sf_tokens_load reads it: an llm.c shard (magic 20240520) or raw
    little-endian uint16 ids; the whole file is the split (end = its length)."""
    import array
    with open(path, "rb") as f:
        raw = f.read()
    at = 0
    if len(raw) >= 1024 and struct.unpack("<i", raw[:4])[0] == 20240520:
        magic, version, count = struct.unpack("<3i", raw[:12])
        if version != 1 or 1024 + 2 * count != len(raw):
            raise ValueError("%s: a bad llm.c shard header" % path)
        at = 1024
    ids = array.array("H")
    ids.frombytes(raw[at:])
    if sys.byteorder != "little":
        ids.byteswap()
    if not ids:
        raise ValueError("%s holds no token" % path)
    return ids, len(ids)


def read_data(a):
    """--text's bytes with its validation split, or --tokens' ids (all training)"""
    if getattr(a, "tokens", None):
        return read_tokens(a.tokens)
    return read_text(a.text, a.val_fraction)


def read_text(path, val_fraction):
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        raise ValueError("%s is empty" % path)
    return data, train_end(len(data), val_fraction)


def read_dump(path):
    import torch
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 24 or raw[:8] != b"SFLOGIT1":
        raise ValueError("%s is not a gpt_logits dump" % path)
    first, rows, T, V = struct.unpack("=4i", raw[8:24])
    n = rows * T
    want = 24 + 4 * n + 4 * n * V
    if len(raw) != want:
        raise ValueError("%s has %d bytes, its header says %d" % (path, len(raw), want))
    ids = list(struct.unpack("=%di" % n, raw[24:24 + 4 * n]))
    logits = torch.frombuffer(bytearray(raw[24 + 4 * n:]), dtype=torch.float32)
    return first, rows, T, V, ids, logits.reshape(rows, T, V)


def cmd_logits(a):
    import torch
    torch.set_num_threads(1)
    if a.hf:
        model = load_hf(a.hf, poly=a.double)
    else:
        model = build_model(a.layers, a.heads, a.embd, a.context, a.vocab, not a.untied,
                            poly=a.double)
        load_weights(model, a.weights, not a.untied)
    if a.perturb:
        with torch.no_grad():
            model.transformer.wte.weight.mul_(1.001)
    if a.double:
        model = model.double()
    if a.dumps_up or a.dumps_down:
        return logits_within(a, model)
    data, end = read_data(a)
    rank, worst, scale, rows_seen = 0, 0.0, 0.0, 0
    while os.path.exists("%s.rank%d" % (a.dumps, rank)):
        first, rows, T, V, ids, ref = read_dump("%s.rank%d" % (a.dumps, rank))
        if T != a.context or V != a.vocab:
            raise ValueError("rank %d's dump is T %d, V %d; the options say %d, %d"
                             % (rank, T, V, a.context, a.vocab))
        x, _ = text_batch(data, end, 0, a.seed, a.index, first, rows, T)
        if x != ids:
            print("rank %d: the ids differ from the batch text_batch() draws" % rank)
            return 1
        with torch.no_grad():
            got = model(torch.tensor(ids, dtype=torch.long).view(rows, T))
        worst = max(worst, (got.double() - ref.double()).abs().max().item())
        scale = max(scale, ref.abs().max().item())
        rows_seen += rows
        rank += 1
    if rank == 0:
        raise ValueError("no %s.rank0" % a.dumps)
    rel = worst / scale if scale > 0 else float("inf")
    ok = rel <= a.rtol
    print("%d rank file(s), %d sequences of %d: max |torch - shardflow| %.3g, max |logit| "
          "%.3g, relative %.3g (tolerance %.3g): %s"
          % (rank, rows_seen, a.context, worst, scale, rel, a.rtol, "equal" if ok else "DIFFERENT"))
    return 0 if ok else 1


EPS32 = 2.0 ** -24


def within_blocks(a, b, up, down, block=128):
    """(worst ratio, its block, the interval's total width) over the blocks of `block`
    consecutive values: ||a - b||_2 against ||w||_2 + eps32 ||b||_2, w each value's span
    of b, up and down (tests/dump_compare's --up/--down rule; all four tensors of one
    shape, compared in float64)"""
    import torch
    a, b, up, down = (t.double().reshape(-1) for t in (a, b, up, down))
    pad = -a.numel() % block

    def blocks(t):
        return torch.cat((t, t.new_zeros(pad))).view(-1, block).norm(dim=1)
    span = torch.maximum(b, torch.maximum(up, down)) - torch.minimum(b, torch.minimum(up, down))
    diff, width, own = blocks(a - b), blocks(span), blocks(b)
    bound = width + EPS32 * own
    ratio = torch.where(diff == 0, torch.zeros_like(diff), diff / bound)
    at = int(ratio.argmax())
    return float(ratio[at]), at, float(width.sum())


def logits_within(a, model):
    """--dumps-up/--dumps-down: each rank's logits of the float64 twin within the
    rounding interval of shardflow's (the same gpt_logits run rounded upward and
    downward): blocks of 128 by 2-norm, as tests/dump_compare --up/--down"""
    import torch
    if not (a.dumps_up and a.dumps_down):
        raise ValueError("--dumps-up and --dumps-down go together")
    data, end = read_data(a)
    rank, worst, where, width = 0, 0.0, "", 0.0
    while os.path.exists("%s.rank%d" % (a.dumps, rank)):
        dumps = [read_dump("%s.rank%d" % (d, rank)) for d in (a.dumps, a.dumps_up, a.dumps_down)]
        first, rows, T, V, ids, ref = dumps[0]
        if T != a.context or V != a.vocab:
            raise ValueError("rank %d's dump is T %d, V %d; the options say %d, %d"
                             % (rank, T, V, a.context, a.vocab))
        if any(d[:5] != dumps[0][:5] for d in dumps[1:]):
            raise ValueError("rank %d: the upward and downward dumps are not of the same batch"
                             % rank)
        x, _ = text_batch(data, end, 0, a.seed, a.index, first, rows, T)
        if x != ids:
            print("rank %d: the ids differ from the batch text_batch() draws" % rank)
            return 1
        with torch.no_grad():
            got = model(torch.tensor(ids, dtype=torch.long).view(rows, T))
        r, at, w = within_blocks(got, ref, dumps[1][5], dumps[2][5])
        width += w
        if r > worst or not where:
            worst, where = r, "rank %d, block %d" % (rank, at)
        rank += 1
    if rank == 0:
        raise ValueError("no %s.rank0" % a.dumps)
    ok = worst <= 1.0 and width > 0
    print("%d rank file(s): the largest difference is %.3g of its interval (%s; blocks of 128)"
          "%s: %s" % (rank, worst, where, "" if width > 0 else ", the interval is empty",
                      "within" if ok else "DIFFERENT"))
    return 0 if ok else 1


def lr_at_f32(a, step):
    """examples/gpt's lr_at, its float operations each rounded to float32 (the host's
    rounding to nearest): the learning rate shardflow's optimizer is given"""
    import numpy as np
    lr, warmup = np.float32(a.lr), np.float32(a.warmup)
    min_lr = np.float32(a.min_lr) if a.min_lr_given else lr / np.float32(10)
    if step < a.warmup:
        return float(lr * np.float32(step + 1) / warmup)
    span = float(a.steps - a.warmup)
    p = (step - a.warmup) / span if span > 0 else 1.0
    p = min(p, 1.0)
    return float(min_lr + np.float32(0.5 * (1.0 + math.cos(math.pi * p))) * (lr - min_lr))


def adamw_f32_step(groups, state, lr, b1, b2, eps):
    """shardflow's AdamW (tasks/optimizers/adamw.h) in the parameters' dtype, its
    constants as shardflow holds them: lr, b1, b2, eps, wd floats, the bias corrections
    1 - b^t computed in double and rounded to float (_sf_adamw_corrections)"""
    import torch
    state["t"] = t = state.get("t", 0) + 1
    c1, c2 = f32(1.0 - b1 ** t), f32(1.0 - b2 ** t)
    with torch.no_grad():
        for g in groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = state.setdefault(id(p), [torch.zeros_like(p), torch.zeros_like(p)])
                m, v = st
                p.sub_(lr * g["weight_decay"] * p)
                m.mul_(b1).add_((1.0 - b1) * p.grad)
                v.mul_(b2).add_((1.0 - b2) * p.grad * p.grad)
                p.sub_(lr * (m / c1) / ((v / c2).sqrt() + eps))


def lr_at(a, step):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    span = a.steps - a.warmup
    p = (step - a.warmup) / span if span > 0 else 1.0
    p = min(p, 1.0)
    return a.min_lr + 0.5 * (1.0 + math.cos(math.pi * p)) * (a.lr - a.min_lr)


def env_int(names, default):
    for n in names:
        v = os.environ.get(n)
        if v:
            return int(v, 10)
    return default


def cmd_train(a):
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import torch
    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    rank = env_int(["OMPI_COMM_WORLD_RANK", "RANK"], 0) if a.ddp else 0
    world = env_int(["OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"], 1) if a.ddp else 1
    if a.batch < world:
        raise ValueError("--batch %d is smaller than the %d ranks" % (a.batch, world))
    model = make_model(a)
    if a.double:
        if a.ddp:
            raise ValueError("--double is the single-process reference: not with --ddp")
        model = model.double()
    net = model
    if a.ddp:
        import datetime
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        jobid = env_int(["OMPI_MCA_ess_base_jobid"], 0)
        port = a.master_port or env_int(["MASTER_PORT"], 0) or (
            20000 + (jobid >> 16) % 30000 if jobid else 29500)
        os.environ["MASTER_ADDR"] = a.master_addr or os.environ.get("MASTER_ADDR") or "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        if a.ifname:
            os.environ["GLOO_SOCKET_IFNAME"] = a.ifname
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=300))
        net = DDP(model)
    # shardflow's parameter groups (sf_model_options::no_decay's default)
    decay, nodecay = [], []
    for n, p in model.named_parameters():  # a tied lm_head is wte: named once
        skip = (p.dim() < 2 or "wte" in n or "wpe" in n or ".ln_" in n or "ln_f" in n
                or "embed_tokens" in n)
        (nodecay if skip else decay).append(p)
    groups = [dict(params=decay, weight_decay=f32(a.weight_decay) if a.double else a.weight_decay),
              dict(params=nodecay, weight_decay=0.0)]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.99), eps=1e-8)
    adam_state = {}
    K = a.grad_accum
    data, end = read_data(a)
    first, rows = local_rows(a.batch, rank, world)
    T, losses, times = a.context, [], []
    for step in range(a.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at_f32(a, step) if a.double else lr_at(a, step)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = 0.0
        for j in range(K):
            x, y = text_batch(data, end, 0, a.seed, step * K + j, first, rows, T)
            xt = torch.tensor(x, dtype=torch.long).view(rows, T)
            yt = torch.tensor(y, dtype=torch.long).view(-1)
            logits = net(xt)
            # the mean over the global batch: this rank's sum / (B T), summed by DDP's
            # all-reduce of the gradients, which averages over the ranks: scale by
            # world; the mean over the K micro-batches: by 1 / K
            if a.double:  # shardflow's loss row and its scale, a float
                loss_sum = xent_sum_poly(logits.view(-1, a.vocab), yt)
                (loss_sum * f32(1.0 / (a.batch * T * K))).backward()
            else:
                loss_sum = torch.nn.functional.cross_entropy(logits.view(-1, a.vocab), yt,
                                                             reduction="sum")
                (loss_sum * (world / (a.batch * T * K))).backward()
            loss = loss + loss_sum.detach() / K
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        if a.double:
            adamw_f32_step(groups, adam_state, lr_at_f32(a, step), f32(0.9), f32(0.99), f32(1e-8))
        else:
            opt.step()
        times.append(time.perf_counter() - t0)
        if a.ddp:
            import torch.distributed as dist
            dist.all_reduce(loss)
        losses.append(loss.item() / (a.batch * T))
        if rank == 0:
            print("step %d loss %.9g" % (step + 1, losses[-1]), flush=True)
    timed = times[a.time_from:] if len(times) > a.time_from else times
    if rank == 0:
        if a.out_losses:
            with open(a.out_losses, "w") as f:
                for i, l in enumerate(losses):
                    f.write("%d %.9g\n" % (i + 1, l))
        med = statistics.median(timed)
        print(json.dumps(dict(framework="pytorch", version=torch.__version__,
                              mode="ddp" if a.ddp else "single", ranks=world,
                              threads=torch.get_num_threads(), batch=a.batch, context=T,
                              steps=a.steps, timed_steps=len(timed),
                              step_ms_median=round(med * 1e3, 3),
                              tokens_per_s=round(a.batch * T * K * len(timed) / sum(timed), 1),
                              final_loss=losses[-1])), flush=True)
    if a.ddp:
        import torch.distributed as dist
        dist.destroy_process_group()
    return 0


def cmd_speed(a):
    """Training throughput on a device: random tokens (speed does not depend on them),
    AdamW (fused on CUDA), fp32 (TF32 off unless --tf32, as shardflow's cuBLAS calls)
    or bf16 autocast, manual or fused attention, eager or torch.compile. Prints one
    JSON line: tokens_per_s over the timed steps, step_ms_median, the parameters and
    nanoGPT's FLOPs per token (6 N + 12 L H Q T, N without wpe), the peak memory."""
    import torch
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device %s: torch.cuda.is_available() is False (torch %s, "
                           "built for CUDA %s)" % (a.device, torch.__version__,
                                                   torch.version.cuda))
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.manual_seed(a.seed)
    if a.arch == "llama":
        kv = a.kv_heads or (a.heads // 2 if a.heads % 2 == 0 else a.heads)
        model = build_llama(a.layers, a.heads, kv, a.embd, a.context, a.vocab, a.tied,
                            a.ffn_dim, a.rope_theta, sdpa=a.attn == "sdpa")
    else:
        model = build_model(a.layers, a.heads, a.embd, a.context, a.vocab, not a.untied,
                            sdpa=a.attn == "sdpa")
    for mod in model.modules():  # nanoGPT's initialisation (PyTorch's default
        if isinstance(mod, (torch.nn.Linear, torch.nn.Embedding)):  # gives a tied head
            torch.nn.init.normal_(mod.weight, 0.0, 0.02)  # logits in the hundreds)
            if getattr(mod, "bias", None) is not None:
                torch.nn.init.zeros_(mod.bias)
    model = model.to(dev)
    params = {id(p): p for p in model.parameters()}.values()
    n_params = sum(p.numel() for p in params)
    # nanoGPT's count leaves the position table out; a Llama has none
    n_flops = n_params - (0 if a.arch == "llama" else model.transformer.wpe.weight.numel())
    hs = a.embd // a.heads
    flops_per_token = 6 * n_flops + 12 * a.layers * a.heads * hs * a.context
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.99), eps=1e-8,
                            weight_decay=0.01, **({"fused": True} if dev.type == "cuda" else {}))
    net = torch.compile(model) if a.compile else model
    g = torch.Generator(device="cpu").manual_seed(a.seed)
    x = torch.randint(0, a.vocab, (a.batch, a.context), generator=g).to(dev)
    y = torch.randint(0, a.vocab, (a.batch * a.context,), generator=g).to(dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    times, loss = [], None
    t_start = time.perf_counter()
    for step in range(a.warmup_steps + a.steps):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            logits = net(x)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, a.vocab).float(), y)
        loss.backward()
        opt.step()
        sync()
        if step >= a.warmup_steps:
            times.append(time.perf_counter() - t0)
    peak = torch.cuda.max_memory_allocated(dev) if dev.type == "cuda" else 0
    print(json.dumps(dict(framework="pytorch", version=torch.__version__,
                          device=torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
                          precision=a.precision, attn=a.attn, compile=a.compile, tf32=a.tf32,
                          layers=a.layers, heads=a.heads, embd=a.embd, context=a.context,
                          batch=a.batch, params=n_params, flops_per_token=flops_per_token,
                          steps=a.steps, step_ms_median=round(statistics.median(times) * 1e3, 3),
                          tokens_per_s=round(a.batch * a.context * len(times) / sum(times), 1),
                          wall_s=round(time.perf_counter() - t_start, 1),
                          peak_mem_mib=round(peak / 2**20, 1), final_loss=loss.item())),
          flush=True)
    return 0


def cmd_hf_save(a):
    """The model of --weights in transformers' layout and config.json, written by the
    twin alone: GPT-2's Conv1D weights transposed to (in, out)"""
    import torch
    model = make_model(a)
    sd = {k: v for k, v in model.state_dict().items()}
    if a.arch == "llama":
        kv = a.kv_heads or (a.heads // 2 if a.heads % 2 == 0 else a.heads)
        config = dict(architectures=["LlamaForCausalLM"], model_type="llama",
                      hidden_size=a.embd, num_hidden_layers=a.layers,
                      num_attention_heads=a.heads, num_key_value_heads=kv,
                      intermediate_size=llama_ffn_dim(a.embd, a.ffn_dim),
                      vocab_size=a.vocab, max_position_embeddings=a.context,
                      rms_norm_eps=1e-5, rope_theta=a.rope_theta,
                      tie_word_embeddings=a.tied)
        if a.tied:
            del sd["lm_head.weight"]
    else:
        config = dict(architectures=["GPT2LMHeadModel"], model_type="gpt2", n_embd=a.embd,
                      n_layer=a.layers, n_head=a.heads, n_positions=a.context,
                      vocab_size=a.vocab, layer_norm_epsilon=1e-5,
                      activation_function="gelu_new", tie_word_embeddings=not a.untied)
        if not a.untied:
            del sd["lm_head.weight"]
        sd = {k: (v.t().contiguous() if k.endswith(CONV1D) else v) for k, v in sd.items()}
    with torch.no_grad():
        write_hf_dir(a.out, config, sd, a.shards)
    print(json.dumps(dict(ok=True, tensors=len(sd), shards=a.shards, out=a.out)))
    return 0


def cmd_hf_load(args):
    """hf-load CONFIG.JSON WEIGHTS.safetensors: Hugging Face's way in: the
    LlamaForCausalLM twin built from config.json's fields alone (what
    from_pretrained reads), then the weights loaded strictly. Prints one JSON line;
    exit 0 when every tensor matched, 2 otherwise (the first mismatch named)."""
    if len(args) != 2:
        print("usage: %s hf-load CONFIG.JSON WEIGHTS.safetensors" % PROG, file=sys.stderr)
        return 2
    with open(args[0]) as f:
        c = json.load(f)
    if c.get("model_type") != "llama" or c.get("architectures") != ["LlamaForCausalLM"]:
        raise ValueError("%s: not a LlamaForCausalLM config (model_type %r)" %
                         (args[0], c.get("model_type")))
    model = build_llama(c["num_hidden_layers"], c["num_attention_heads"],
                        c["num_key_value_heads"], c["hidden_size"],
                        c["max_position_embeddings"], c["vocab_size"],
                        c["tie_word_embeddings"], c["intermediate_size"], c["rope_theta"],
                        eps=c["rms_norm_eps"])
    sd = read_safetensors(args[1])
    if c["tie_word_embeddings"]:
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
    model.load_state_dict(sd, strict=True)
    n = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    print(json.dumps(dict(ok=True, params=n, config=args[0])))
    return 0


def main(argv):
    if argv[:1] == ["hf-load"]:
        try:
            return cmd_hf_load(argv[1:])
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            print("%s: error: %s" % (PROG, e), file=sys.stderr)
            return 2
    a = parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("%s: error: cannot import torch: install Debian's python3-torch "
              "(apt-get install -y python3-torch) and run /usr/bin/python3" % PROG,
              file=sys.stderr)
        return 2
    try:
        if a.cmd == "speed":
            return cmd_speed(a)
        if a.cmd == "hf-save":
            return cmd_hf_save(a)
        return cmd_logits(a) if a.cmd == "logits" else cmd_train(a)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
