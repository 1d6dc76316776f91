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
            names = ["gather L0", "fwd L0 linear", "gather L1", "fwd L1 linear", "loss",
                     "bwd L1 linear", "rs L1", "opt L1", "bwd L0 linear", "rs L0", "opt L0",
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
put("taskrec", "incomplete", trace([0], 1).replace("Name: loss allreduce", "Name: opt L3"))
# regressions (trace/report.c): rank + 1 overflowed; arrays were sized by rank and layer
put("taskrec", "rank-max", rec([("Name", "fwd L0 linear"), ("SubmitOrder", "1"), ("WorkerId", "0"),
                               ("StartTime", "1"), ("EndTime", "2"), ("MPIRank", "2147483647")]))
put("taskrec", "layer-1e9", rec([("Name", "gather L900000000"), ("SubmitOrder", "0"), ("WorkerId", "1"),
                                ("StartTime", "0"), ("EndTime", "2")]) +
    rec([("Name", "fwd L900000000 linear"), ("SubmitOrder", "1"), ("WorkerId", "0"),
         ("StartTime", "1"), ("EndTime", "3")]))

