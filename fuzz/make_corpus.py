#!/usr/bin/env python3
"""make_corpus.py — writes the fuzzers' seed inputs into fuzz/corpus/<target>/.

The seeds are small valid inputs (and a few near-misses) in each target's input format
(see the top of each fuzz/fuzz_<target>.c); they are committed, this script is how
they were made. Run from anywhere: python3 fuzz/make_corpus.py
"""
import gzip
import json
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(here, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- idx: flags byte, u32le length of the image file, image file, label file
def idx_pair(n, rows, cols, classes):
    im = struct.pack(">IIII", 0x803, n, rows, cols) + bytes((i * 37) % 256 for i in range(n * rows * cols))
    lb = struct.pack(">II", 0x801, n) + bytes(i % classes for i in range(n))
    return im, lb


def idx_input(flags, im, lb):
    return bytes([flags]) + struct.pack("<I", len(im)) + im + lb


im, lb = idx_pair(3, 2, 2, 3)
put("idx", "plain", idx_input(0, im, lb))
put("idx", "gzip-by-flags", idx_input(3, im, lb))
gi, gl = gzip.compress(im, mtime=0), gzip.compress(lb, mtime=0)
put("idx", "gzip-raw", idx_input(0, gi, gl))
im, lb = idx_pair(5, 4, 3, 10)
put("idx", "plain-5x4x3", idx_input(0, im, lb))
put("idx", "trailing", idx_input(0, im + b"\0", lb))

# ---- taskrec: a tasks.rec
def rec(fields):
    return "".join("%s: %s\n" % kv for kv in fields) + "\n"


def trace(ranks, steps, use_job=False):
    out = ["%rec: task\n\n"]
    for r in ranks:
        order, t = 0, 0.0
        for s in range(steps):
            names = ["gather fc0 (L0)", "fwd fc0 (linear L0)", "gather fc1 (L1)",
                     "fwd fc1 (linear L1)", "loss", "bwd fc1 (linear L1)", "rs fc1 (L1)",
                     "opt fc1 (L1)", "bwd fc0 (linear L0)", "rs fc0 (L0)", "opt fc0 (L0)",
                     "loss allreduce"]
            for nm in names:
                comm = nm.split()[0] in ("gather", "rs") or nm == "loss allreduce"
                f = [("Name", nm), ("Model", "x")]
                f.append(("JobId" if use_job else "SubmitOrder", str(order)))
                f += [("WorkerId", "1" if comm else "0"), ("StartTime", "%.3f" % t),
                      ("EndTime", "%.3f" % (t + 0.5))]
                if r is not None:
                    f.append(("MPIRank", str(r)))
                out.append(rec(f))
                order += 1
                t += 0.25
        out.append(rec([("Name", "_starpu_data_acquire_pre"), ("JobId", "999")]))
    return "".join(out)


put("taskrec", "one-rank", trace([None], 2))
put("taskrec", "two-ranks", trace([0, 1], 2))
put("taskrec", "jobid", trace([0], 1, use_job=True))
put("taskrec", "incomplete", trace([0], 1).replace("Name: loss allreduce", "Name: opt fc3 (L3)"))
# users' names that look like the suffix (trace/event.h reads the index from the end)
put("taskrec", "odd-names", trace([0], 1).replace("fc1 (linear L1)", "f (x) (my type L9) L1)")
    .replace("fc1 (L1)", "b (L7) (L1)"))
# regressions (trace/report.c): rank + 1 overflowed; arrays were sized by rank and layer
put("taskrec", "rank-max", rec([("Name", "fwd fc0 (linear L0)"), ("SubmitOrder", "1"), ("WorkerId", "0"),
                               ("StartTime", "1"), ("EndTime", "2"), ("MPIRank", "2147483647")]))
put("taskrec", "layer-1e9", rec([("Name", "gather g (L900000000)"), ("SubmitOrder", "0"), ("WorkerId", "1"),
                                ("StartTime", "0"), ("EndTime", "2")]) +
    rec([("Name", "fwd g (linear L900000000)"), ("SubmitOrder", "1"), ("WorkerId", "0"),
         ("StartTime", "1"), ("EndTime", "3")]))



# ---- safetensors: a file holding fc1.weight [4,3], fc1.bias [4], head.weight [2,4] (F32)
def safetensors(tensors, meta=True, extra=b""):
    header, off, blob = {}, 0, b""
    if meta:
        header["__metadata__"] = {"format": "pt", "producer": "shardflow"}
    for name, shape, dtype in tensors:
        n = 1
        for d in shape:
            n *= d
        size = n * {"F32": 4, "F16": 2, "I64": 8}[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + size]}
        blob += bytes((off + i) % 251 for i in range(size))
        off += size
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + blob + extra


wanted = [("fc1.weight", [4, 3], "F32"), ("fc1.bias", [4], "F32"), ("head.weight", [2, 4], "F32")]
put("safetensors", "valid", safetensors(wanted))
put("safetensors", "no-metadata", safetensors(wanted, meta=False))
put("safetensors", "extra-tensor", safetensors(wanted + [("step", [1], "I64")]))
put("safetensors", "f16", safetensors([("fc1.weight", [4, 3], "F16")] + wanted[1:]))
put("safetensors", "trailing", safetensors(wanted, extra=b"\0\0\0\0"))
put("safetensors", "bad-shape", safetensors([("fc1.weight", [3, 4], "F32")] + wanted[1:]))


# ---- manifest: flags byte (1: manifest.crc32 present, 2: adamw), then manifest.json,
# for the model fuzz_manifest.c expects (units fc1 12, fc2 5, head 7)
def manifest(world, optimizer="sgd", version=2, **over):
    nvec = 3 if optimizer == "adamw" else 2
    size = 24 + sum(-(-p // world) for p in (12, 5, 7)) * nvec * 4
    m = {"format": "shardflow-checkpoint", "version": version, "world_size": world,
         "sharding": "full", "optimizer": optimizer, "structure_hash": "0123456789abcdef",
         "dtype": "f32", "model_steps": 3,
         "info": {"step": 3, "epoch": 0, "batch": 3, "data_seed": "7"},
         "vectors": ["param", "m", "v"][:nvec],
         "units": [{"name": n, "P": p} for n, p in (("fc1", 12), ("fc2", 5), ("head", 7))],
         "files": [{"name": "rank-%05d.bin" % r, "size": size, "crc32": 1234567 + r}
                   for r in range(world)]}
    m.update(over)
    return json.dumps(m, indent=1)


put("manifest", "sgd-2", bytes([1]) + manifest(2).encode())
put("manifest", "adamw-3", bytes([3]) + manifest(3, "adamw").encode())
put("manifest", "version-1", bytes([0]) + manifest(1, version=1).encode())
put("manifest", "steps-max", bytes([1]) + manifest(2, model_steps=2**63 - 1).encode())
put("manifest", "seed-bad", bytes([1]) + manifest(1, info={"step": 1, "epoch": 0, "batch": 1,
                                                           "data_seed": "-1"}).encode())


# ---- tokens: a mode byte (0 auto, 1 raw, 2 llm.c shard, 3 decode table), a u16le word
# w (token files: vocabulary 2 + w, T = 1 + (w >> 8) % 16), then the file
GPT2 = 50257 - 2  # w for GPT-2's vocabulary


def tok_input(mode, w, file):
    return bytes([mode]) + struct.pack("<H", w) + file


def ids(n, vocab=50257):
    return b"".join(struct.pack("<H", (i * 7919) % vocab) for i in range(n))


def shard(n, magic=20240520, version=1, count=None, extra=b""):
    h = struct.pack("<3i", magic, version, n if count is None else count) + b"\0" * (1024 - 12)
    return h + ids(n) + extra


def table(entries, version=1, eot=None, count=None, extra=b""):
    h = [20240328, version, len(entries) if count is None else count]
    if version == 2:
        h.append(len(entries) - 1 if eot is None else eot)
    h = struct.pack("<%dI" % len(h), *h)
    h += b"\0" * (1024 - len(h))
    return h + b"".join(bytes([len(e)]) + e for e in entries) + extra


put("tokens", "raw-auto", tok_input(0, GPT2, ids(40)))
put("tokens", "raw", tok_input(1, GPT2, ids(17)))
put("tokens", "raw-odd", tok_input(1, GPT2, ids(5) + b"\1"))
put("tokens", "raw-id-too-big", tok_input(1, 254, ids(12)))  # vocab 256, ids up to 50k
put("tokens", "raw-short-for-T", tok_input(0, 0x0F00, ids(3, 0x0F02)))  # T = 16
put("tokens", "llmc-auto", tok_input(0, GPT2, shard(64)))
put("tokens", "llmc", tok_input(2, GPT2, shard(9)))
put("tokens", "llmc-as-raw", tok_input(1, GPT2, shard(9)))
put("tokens", "llmc-empty", tok_input(2, GPT2, shard(0)))
put("tokens", "llmc-truncated", tok_input(0, GPT2, shard(8, count=9)))
put("tokens", "llmc-padded", tok_input(0, GPT2, shard(8, extra=b"\0\0")))
put("tokens", "llmc-version-2", tok_input(2, GPT2, shard(8, version=2)))
put("tokens", "llmc-short-header", tok_input(2, GPT2, shard(8)[:600]))
words = [b"!", b"a", b"the", b" token", bytes([0xe2, 0x82]), bytes([0xac]), b"x" * 255]
put("tokens", "vocab-v1", tok_input(3, 64, table(words)))
put("tokens", "vocab-v2", tok_input(3, 5, table(words + [b"<|endoftext|>"], version=2)))
put("tokens", "vocab-eot-out", tok_input(3, 5, table(words, version=2, eot=len(words))))
put("tokens", "vocab-zero-length", tok_input(3, 5, table(words[:3] + [b""] + words[3:])))
put("tokens", "vocab-truncated", tok_input(3, 5, table(words, count=len(words) + 1)))
put("tokens", "vocab-padded", tok_input(3, 5, table(words, extra=b"\0")))
put("tokens", "vocab-version-3", tok_input(3, 5, table(words, version=3)))
