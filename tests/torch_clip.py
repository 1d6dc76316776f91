#!/usr/bin/env python3
"""torch_clip.py — PyTorch (float64) as the reference of shardflow's gradient clipping,
accumulation and weight-decay groups, on the weights and batches tests/train_dump used.

  torch_clip.py --model mlp|nanogpt|llama-hf --weights W0.safetensors --data BATCHES
                --steps N --rows R --optimizer sgd|adamw --lr X --clip X|inf
                [--weight-decay X] [--no-decay MASK] --norms NORMS
                (--final W.safetensors [--rtol 1e-6] [--param-rtol X] [--floor 1e-2]
                 | --per-step PREFIX)
                [--clipped all|none|some]

W0 is train_dump's --export-init, BATCHES its --data (each step's global batch of R
rows), NORMS the "norm <step> <value>" lines it printed, W its --export. Each step:
the mean cross-entropy over the R rows, backward, torch.nn.utils.clip_grad_norm_
(its return value against shardflow's norm of that step), the optimizer (SGD with
momentum 0.9, or AdamW with betas 0.9, 0.999, eps 1e-8, as sf_model_options_init),
with parameter groups as sf_model_options::no_decay says, each tensor's group told
from the PyTorch model's names (kind_of), not from shardflow's layer types. The models
are bench/torch_gpt.py's with shardflow's formulas and float constants (poly: its
exponential polynomial, GELU's exp form, the norms' eps), the loss scale 1 / R and the
optimizers' constants (lr, momentum, weight decay, betas, eps, AdamW's bias
corrections) are the floats shardflow holds: in float64 the oracle computes, to
~1e-16, the exact result of what shardflow rounds.

Free-running (--final): PyTorch runs all the steps from W0, then its norms and final
parameters must lie within the rounding interval of shardflow's (docs/testing.md, "The
rounding interval"): the same train_dump run with every CPU worker rounding upward
(--norms-up, --final-up) and downward (--norms-down, --final-down), as
tests/dump_compare --up/--down checks, w a value's span of shardflow's three: each
step's norm |a - b| <= w + eps32 max(|a|, |b|); the parameters in blocks of 128
consecutive values of each tensor, ||a - b||_2 <= ||w||_2 + eps32 ||b||_2 (one value's
interval can close by chance).

--per-step PREFIX (SGD; train_dump --export-steps PREFIX): step k starts from
shardflow's parameters after step k - 1 (PREFIX.<k-1>, W0 for k = 1), PyTorch's SGD
keeping its own momentum buffer, so that both take step k from the same point and no
difference of an earlier step feeds a later gradient. Then every tolerance follows from
float32 rounding (u = 2^-24), with no measured input:
  - the gradient. Each gradient entry is the end of a chain of float32 sums: every dot
    product of the forward from its parameter to the loss, the loss's mean over the
    rows, the dot products of the backward, and the sum over the rows (and over ranks
    and micro-batches). A chain of n roundings is within gamma_n = n u / (1 - n u) of
    the exact value (Higham, Accuracy and Stability of Numerical Algorithms, 3.1),
    relative to the terms' magnitudes, taken here as the gradient's (a first-order
    worst case). ROUNDINGS counts n per model from its widths (below); E = gamma_n
    bounds |g' - g| / |g| in 2-norm, and so the norm's relative error (| |g'| - |g| |
    <= |g' - g|), plus u for its scaling by 1/K in float: the norms' rtol, E + u.
  - the update. SGD's is linear in the gradient, so its error is the gradient's,
    carried by the momentum, plus the rounding of each float32 operation (each within
    u of its result, and of lr, momentum and weight decay stored as floats), bounded in
    2-norm over the whole model, to first order, with the reference's own vectors (a
    the clipped gradient f g, w the decay term wd p, b the momentum buffer, p the
    parameters; primes are shardflow's):
      |a' - a| <= (2 E + 5 u) |a|       g's error; the clip factor's (from the norm,
                                        relative E, times 1/K in float: u); the factor
                                        cast to float, 1/K, their product, g x s
      |d' - d| <= that + 3 u (|a| + |w|)            d = a + w, wd p and wd rounded
      |b'_k - b_k| <= e_k = 0.9 e_(k-1) + |d' - d| + 3 u (|b_(k-1)| + |b_k|)
                                                    b = 0.9 b + d, 0.9 rounded
      |p'_k - p_k| <= lr e_k + 3 u lr |b_k| + u |p_k|       p = p - lr b, lr rounded
    AdamW's update divides by the gradient's magnitude (a gradient near zero flips its
    step's sign), so no bound of this form holds: --per-step refuses it.
Step k's parameters must be within that bound in 2-norm (the worst element is printed
too). --clipped says which steps must be clipped by the reference's norm (all, none,
some: at least one clipped and one not), so a case is sure to test what it claims.
Prints the worst differences; exit 0 when within the tolerances, 1 when not, 2 on bad
input.
"""
import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import torch_gpt  # noqa: E402  (the nanoGPT twin: model and safetensors reader)

BIAS, NORM, EMBED = 1, 2, 4
U = 2.0 ** -24  # float32's unit roundoff

# n, the float32 roundings on a gradient entry's chain (see the top), for R rows: the
# forward's dot products and elementwise steps from the first layer to the loss, the
# loss's softmax and mean over the R rows, the backward's dot products, the sum over
# the rows for the weight gradient (a tied matrix: two, added), and 8 partial sums
# over ranks and micro-batches (at most 4 ranks, 3 micro-batches, an all-reduce).
#   mlp      forward 33 + 65 + 65 (each dot product and its bias), GELU 2 x 8, loss
#            over 10 classes 13: 192; backward 3 + 10 + 10 + 64 + 10 = 97
#   nanogpt  a block's forward: layernorm 25 (mean, variance, scaling), c_attn 11,
#            scores 5 + 1, softmax 8, att v 5, c_proj 11, add 1, layernorm 25, c_fc
#            11, GELU 8, c_proj 41, add 1 = 153, 2 blocks; wte + wpe 1, ln_f 25, head
#            10, loss over 16 classes 19: 361; backward: a block 175 (the same widths
#            transposed, attention's 5 + 5 + 8 + 5, c_attn's 30), 2 blocks, loss 3,
#            head 16, ln_f 25: 394; tied head: 3 sums over the rows
#   llama-hf a block's forward: RMSNorm 21, qkv 16, rope 3, scores 4 + 1, softmax 8,
#            att v 5, o 16, add 1, RMSNorm 21, gate 16, SiLU 4, product 1, down 48, add
#            1 = 166, 2 blocks; norm 21, head 16, loss 19: 388; backward: a block 190
#            (down 16, gate and up 48 + 1, the two heads a key serves 2, qkv 32),
#            2 blocks, loss 3, head 16, norm 21: 420
ROUNDINGS = {
    "mlp": lambda rows: 192 + 97 + 2 * rows + 8,
    "nanogpt": lambda rows: 361 + 394 + 3 * rows + 8,
    "llama-hf": lambda rows: 388 + 420 + 2 * rows + 8,
}


def build(kind):
    import torch.nn as nn
    if kind == "nanogpt":  # tests/test_models.h: vocab 16, context 5, 2 layers, 2 heads, 10
        return torch_gpt.build_model(2, 2, 10, 5, 16, True, poly=True), 16, 5
    if kind == "llama-hf":  # tests/test_models.h: vocab 16, context 5, dim 16, 2 layers,
        # 4 heads on 2 key/value heads, MLP 48 (Llama's rule, multiple_of 8), untied
        return torch_gpt.build_llama(2, 4, 2, 16, 5, 16, False, 48, 10000.0, poly=True), 16, 5

    class MLP(nn.Module):  # 32 -> 64 -> GELU -> 64 -> GELU -> 10
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(32, 64), nn.Linear(64, 64), nn.Linear(64, 10)

        def forward(self, x):
            h = torch_gpt.gelu_poly(self.fc1(x))
            return self.fc3(torch_gpt.gelu_poly(self.fc2(h)))
    return MLP(), 10, 1


def kind_of(name, p):
    """A tensor's parameter-group kind (sf_model_options::no_decay) from the PyTorch
    twin's names: nanoGPT's ln_1, ln_2, ln_f and Llama's input_layernorm,
    post_attention_layernorm and norm are norms, nanoGPT's wte, wpe and Llama's
    embed_tokens embeddings, any other vector a bias, matrices none."""
    modules = name.split(".")[:-1]  # without "weight" / "bias"
    if any(q.startswith("ln_") or q.endswith("layernorm") or q == "norm" for q in modules):
        return NORM
    if any(q in ("wte", "wpe", "embed_tokens") for q in modules):
        return EMBED
    return BIAS if p.dim() == 1 else 0


def norm2(tensors):
    return sum(float((t.double() ** 2).sum()) for t in tensors) ** 0.5


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "nanogpt", "llama-hf"], required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--optimizer", choices=["sgd", "adamw"], required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--clip", type=float, required=True)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--no-decay", type=int, default=7)
    ap.add_argument("--norms", required=True)
    ap.add_argument("--final")
    ap.add_argument("--final-up")
    ap.add_argument("--final-down")
    ap.add_argument("--norms-up")
    ap.add_argument("--norms-down")
    ap.add_argument("--per-step")
    ap.add_argument("--clipped", choices=["all", "none", "some"])
    a = ap.parse_args(argv)
    if (a.final is None) == (a.per_step is None):
        print("torch_clip.py: give one of --final and --per-step")
        return 2
    if a.final and not (a.final_up and a.final_down and a.norms_up and a.norms_down):
        print("torch_clip.py: --final needs its interval: --final-up, --final-down, "
              "--norms-up and --norms-down")
        return 2
    if a.per_step and a.optimizer != "sgd":
        print("torch_clip.py: --per-step bounds SGD's update only (see the top)")
        return 2
    import torch
    torch.set_num_threads(1)
    model, classes, T = build(a.model)
    tied = a.model == "nanogpt"

    def load(path):
        sd = torch_gpt.read_safetensors(path)
        if tied:
            sd["lm_head.weight"] = sd["transformer.wte.weight"]
        return sd

    model.load_state_dict(load(a.weights), strict=True)
    model = model.double()
    named = [(n, p) for n, p in model.named_parameters()]  # a tied tensor appears once
    decay = [p for n, p in named if not (kind_of(n, p) & a.no_decay)]
    nodecay = [p for n, p in named if kind_of(n, p) & a.no_decay]
    f32 = torch_gpt.f32  # shardflow's constants are floats
    groups = [dict(params=decay, weight_decay=f32(a.weight_decay)),
              dict(params=nodecay, weight_decay=0.0)]
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(groups, lr=f32(a.lr), momentum=f32(0.9))
    else:  # shardflow's AdamW, its bias corrections rounded to float
        adam_state = {}
        opt = torch.optim.SGD(groups, lr=f32(a.lr))  # for zero_grad only

    def read_norms(path):
        out = {}
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) == 3 and w[0] == "norm":
                    out[int(w[1])] = float(w[2])
        if sorted(out) != list(range(1, a.steps + 1)):
            raise ValueError("%s: norms of steps %s, expected 1..%d" % (path, sorted(out), a.steps))
        return out
    ours = read_norms(a.norms)
    if a.final:
        ours_up, ours_down = read_norms(a.norms_up), read_norms(a.norms_down)
    R, D = a.rows, 32
    with open(a.data, "rb") as f:
        raw = f.read()
    per = R * 4 * (D if a.model == "mlp" else 1) + R * 4
    if len(raw) != per * a.steps:
        print("%s: %d bytes, expected %d" % (a.data, len(raw), per * a.steps))
        return 2
    n_round = ROUNDINGS[a.model](R)
    E = n_round * U / (1 - n_round * U)
    rtol = E + U
    worst_norm, clipped = 0.0, []
    e_b, b_prev, worst_step, step_note = 0.0, 0.0, 0.0, ""
    for s in range(a.steps):
        if a.per_step and s > 0:  # start from shardflow's parameters after step s
            with torch.no_grad():
                sd = load("%s.%d" % (a.per_step, s))
                for n, p in named:
                    p.copy_(sd[n])
        chunk = raw[s * per:(s + 1) * per]
        n_in = R * (D if a.model == "mlp" else 1)
        if a.model == "mlp":
            x = torch.tensor(struct.unpack("<%df" % n_in, chunk[:4 * n_in]),
                             dtype=torch.float64).view(R, D)
        else:
            x = torch.tensor(struct.unpack("<%di" % n_in, chunk[:4 * n_in]),
                             dtype=torch.long).view(R // T, T)
        y = torch.tensor(struct.unpack("<%di" % R, chunk[4 * n_in:]), dtype=torch.long)
        opt.zero_grad(set_to_none=True)
        logits = model(x).reshape(R, classes)
        (torch_gpt.xent_sum_poly(logits, y) * f32(1.0 / R)).backward()
        total = torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip).item()
        if total > a.clip:
            clipped.append(s + 1)
        if a.per_step:  # relative, against the derived E + u
            rel = abs(total - ours[s + 1]) / total
        else:  # of the step's rounding interval
            b = ours[s + 1]
            span = max(b, ours_up[s + 1], ours_down[s + 1]) - min(b, ours_up[s + 1],
                                                                    ours_down[s + 1])
            rel = abs(total - b) / (span + U * max(abs(total), abs(b)))
        worst_norm = max(worst_norm, rel)
        print("step %d: norm torch %.12g shardflow %.12g (%s %.2e)%s"
              % (s + 1, total, ours[s + 1], "rel" if a.per_step else "of its interval", rel,
                 " clipped" if total > a.clip else ""))
        if a.per_step:
            n_a = norm2(p.grad for _, p in named if p.grad is not None)  # f g, clipped
            n_w = a.weight_decay * norm2(decay)
            opt.step()
            n_b = norm2(opt.state[p]["momentum_buffer"] for _, p in named)
            n_p = norm2(p for _, p in named)
            e_d = (2 * E + 5 * U) * n_a + 3 * U * (n_a + n_w)
            e_b = 0.9 * e_b + e_d + 3 * U * (b_prev + n_b)
            bound = a.lr * e_b + 3 * U * a.lr * n_b + U * n_p
            b_prev = n_b
            theirs = load("%s.%d" % (a.per_step, s + 1))
            diff = norm2(p - theirs[n].double() for n, p in named)
            el, el_name = max((float((p - theirs[n].double()).abs().max()), n) for n, p in named)
            print("step %d: parameters |diff| %.3e, bound %.3e (worst element %.2e, %s)"
                  % (s + 1, diff, bound, el, el_name))
            if diff / bound > worst_step:
                worst_step = diff / bound
                step_note = "step %d: |diff| %.2e, bound %.2e" % (s + 1, diff, bound)
        elif a.optimizer == "sgd":
            opt.step()
        else:
            torch_gpt.adamw_f32_step(groups, adam_state, f32(a.lr), f32(0.9), f32(0.999),
                                     f32(1e-8))
    premise = {"all": len(clipped) == a.steps, "none": not clipped,
               "some": 0 < len(clipped) < a.steps, None: True}[a.clipped]
    why = "clipped steps: %s of %d%s" % (
        " ".join(map(str, clipped)) or "none", a.steps,
        "" if premise else " (expected %s: the case does not test what it claims)" % a.clipped)
    groups_note = "no decay on %d of %d tensors" % (len(nodecay), len(named))
    if a.per_step:
        ok = worst_norm <= rtol and worst_step <= 1.0 and premise
        print("norms: max rel %.2e (rtol E + u = %.2e, n = %d); parameters: max |diff| / "
              "bound %.2e (%s); %s; %s: %s"
              % (worst_norm, rtol, n_round, worst_step, step_note, why, groups_note,
                 "equal" if ok else "DIFFERENT"))
        return 0 if ok else 1
    final, up, down = (torch_gpt.read_safetensors(f)
                       for f in (a.final, a.final_up, a.final_down))
    worst, where, width = 0.0, "", 0.0
    for n, p in model.state_dict().items():
        if n == "lm_head.weight" and tied:
            continue
        r, at, w = torch_gpt.within_blocks(p, final[n], up[n], down[n])
        width += w
        if r > worst or not where:
            worst, where = r, "%s, block %d" % (n, at)
    ok = worst_norm <= 1.0 and worst <= 1.0 and width > 0 and premise
    print("within shardflow's rounding interval: norms at most %.3g of it; parameters %.3g "
          "(%s; blocks of 128)%s; %s; %s: %s"
          % (worst_norm, worst, where, "" if width > 0 else ", the interval is empty", why,
             groups_note, "equal" if ok else "DIFFERENT"))
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (OSError, ValueError, KeyError, struct.error) as e:
        print("torch_clip.py: %s" % e)
        sys.exit(2)
