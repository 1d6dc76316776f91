#!/usr/bin/env python3
"""torch_clip.py — PyTorch (float64) as the reference of shardflow's gradient clipping,
accumulation and weight-decay groups, on the weights and batches tests/train_dump used.

  torch_clip.py --model mlp|nanogpt --weights W0.safetensors --data BATCHES
                --steps N --rows R --optimizer sgd|adamw --lr X --clip X|inf
                [--weight-decay X] [--no-decay MASK] --norms NORMS --final W.safetensors
                [--rtol 1e-6] [--param-rtol X] [--floor 1e-2]

W0 is train_dump's --export-init, BATCHES its --data (each step's global batch of R
rows), NORMS the "norm <step> <value>" lines it printed, W its --export. Each step:
the mean cross-entropy over the R rows, backward, torch.nn.utils.clip_grad_norm_
(its return value against shardflow's norm of that step), the optimizer (SGD with
momentum 0.9, or AdamW with betas 0.9, 0.999, eps 1e-8, as sf_model_options_init),
with parameter groups as sf_model_options::no_decay says. Then every final parameter
against shardflow's: |a - b| / max(|b|, floor) <= param-rtol (default rtol).
Prints the worst differences; exit 0 when within rtol, 1 when not, 2 on bad input.
"""
import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import torch_gpt  # noqa: E402  (the nanoGPT twin: model and safetensors reader)

BIAS, NORM, EMBED = 1, 2, 4


def build(kind):
    import torch.nn as nn
    import torch.nn.functional as F
    if kind == "nanogpt":  # tests/test_models.h: vocab 16, context 5, 2 layers, 2 heads, 10
        return torch_gpt.build_model(2, 2, 10, 5, 16, True), 16, 5

    class MLP(nn.Module):  # 32 -> 64 -> GELU -> 64 -> GELU -> 10
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(32, 64), nn.Linear(64, 64), nn.Linear(64, 10)

        def forward(self, x):
            h = F.gelu(self.fc1(x), approximate="tanh")
            return self.fc3(F.gelu(self.fc2(h), approximate="tanh"))
    return MLP(), 10, 1


def kind_of(name, p):
    """shardflow's parameter-group kind of a tensor (sf_model_options::no_decay)."""
    if ".ln_" in name or name.startswith("ln_") or "ln_f" in name:
        return NORM
    if "wte" in name or "wpe" in name:
        return EMBED
    return BIAS if p.dim() == 1 else 0


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "nanogpt"], required=True)
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
    ap.add_argument("--final", required=True)
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--param-rtol", type=float, default=None)
    ap.add_argument("--floor", type=float, default=1e-2)
    a = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    model, classes, T = build(a.model)
    sd = torch_gpt.read_safetensors(a.weights)
    if a.model == "nanogpt":
        sd["lm_head.weight"] = sd["transformer.wte.weight"]
    model.load_state_dict(sd, strict=True)
    model = model.double()
    named = [(n, p) for n, p in model.named_parameters()]  # a tied tensor appears once
    decay = [p for n, p in named if not (kind_of(n, p) & a.no_decay)]
    nodecay = [p for n, p in named if kind_of(n, p) & a.no_decay]
    groups = [dict(params=decay, weight_decay=a.weight_decay),
              dict(params=nodecay, weight_decay=0.0)]
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(groups, lr=a.lr, momentum=0.9)
    else:
        opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    ours = {}
    with open(a.norms) as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "norm":
                ours[int(w[1])] = float(w[2])
    if sorted(ours) != list(range(1, a.steps + 1)):
        print("%s: norms of steps %s, expected 1..%d" % (a.norms, sorted(ours), a.steps))
        return 2
    R, D = a.rows, 32
    with open(a.data, "rb") as f:
        raw = f.read()
    per = R * 4 * (D if a.model == "mlp" else 1) + R * 4
    if len(raw) != per * a.steps:
        print("%s: %d bytes, expected %d" % (a.data, len(raw), per * a.steps))
        return 2
    worst_norm = 0.0
    for s in range(a.steps):
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
        torch.nn.functional.cross_entropy(logits, y).backward()
        total = torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip).item()
        rel = abs(total - ours[s + 1]) / total
        worst_norm = max(worst_norm, rel)
        print("step %d: norm torch %.12g shardflow %.12g (rel %.2e)" % (s + 1, total, ours[s + 1], rel))
        opt.step()
    final = torch_gpt.read_safetensors(a.final)
    worst, where = 0.0, ""
    for n, p in model.state_dict().items():
        if n == "lm_head.weight" and a.model == "nanogpt":
            continue
        b = final[n].double()
        d = ((p - b).abs() / b.abs().clamp(min=a.floor)).max().item()
        if d > worst:
            worst, where = d, n
    prtol = a.rtol if a.param_rtol is None else a.param_rtol
    ok = worst_norm <= a.rtol and worst <= prtol
    print("norms: max rel %.2e (rtol %g); parameters: max rel %.2e (%s, floor %g, rtol %g): %s"
          % (worst_norm, a.rtol, worst, where, a.floor, prtol, "equal" if ok else "DIFFERENT"))
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (OSError, ValueError, KeyError, struct.error) as e:
        print("torch_clip.py: %s" % e)
        sys.exit(2)
