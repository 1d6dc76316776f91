#!/usr/bin/env python3
"""st_tool.py — safetensors arithmetic for the shell tests (Python's standard library
only: no numpy, no torch).

  st_tool.py untie IN OUT        OUT = IN plus lm_head.weight, a copy of
                                 transformer.wte.weight (a tied model's weights for
                                 the untied twin)
  st_tool.py tied-check W0 T1 U1 RTOL
                                 one SGD step of a tied model (T1) against one of its
                                 untied twin (U1), both from W0: the tied matrix must
                                 have moved by the sum of the untied embedding's and
                                 head's moves, T1.wte - W0.wte = (U1.wte - W0.wte) +
                                 (U1.lm_head - W0.wte), and every other tensor as in
                                 U1. Prints the worst relative differences; exit 0 when
                                 within RTOL, 1 otherwise, 2 on bad input.
Relative difference: |a - b| / max(|a|, |b|, floor), floor = 1e-3 of the largest move.
Tensors of different shapes or sizes, a tensor whose data_offsets do not match its
shape, or files without the tensors compared (W0's in T1, W0's and lm_head.weight in
U1) are bad input (exit 2, a message naming the tensor), never compared on their
common part.
"""
import json
import struct
import sys
from array import array


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: shorter than a safetensors header")
    (hlen,) = struct.unpack("<Q", data[:8])
    if 8 + hlen > len(data):
        raise ValueError(f"{path}: header length {hlen} past the end")
    header = json.loads(data[8:8 + hlen])
    body = data[8 + hlen:]
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] != "F32":
            raise ValueError(f"{path}: {name} is {meta['dtype']}, not F32")
        a, b = meta["data_offsets"]
        count = 1
        for d in meta["shape"]:
            count *= d
        if not 0 <= a <= b <= len(body) or b - a != 4 * count:
            raise ValueError(f"{path}: {name}: data_offsets [{a}, {b}) do not hold its shape "
                             f"{meta['shape']} ({4 * count} bytes) within the {len(body)} "
                             f"bytes of data")
        arr = array("f")
        arr.frombytes(body[a:b])
        if sys.byteorder != "little":
            arr.byteswap()
        out[name] = (meta["shape"], arr)
    return out


def same_shapes(what, *named):
    """Raises ValueError unless every (path, shape, values) in named has the shape and
    the number of values of the first: zip() would otherwise compare the common prefix
    of two different tensors and call them equal."""
    p0, s0, v0 = named[0]
    for p, s, v in named[1:]:
        if s != s0 or len(v) != len(v0):
            raise ValueError(f"{what}: shape {s} ({len(v)} values) in {p}, {s0} "
                             f"({len(v0)} values) in {p0}")


def write(path, tensors):
    header, off, chunks = {}, 0, []
    for name in sorted(tensors):
        shape, arr = tensors[name]
        raw = arr.tobytes() if sys.byteorder == "little" else _swapped(arr)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(chunks))


def _swapped(arr):
    c = array("f", arr)
    c.byteswap()
    return c.tobytes()


def untie(src, dst):
    t = read(src)
    if "lm_head.weight" in t:
        raise ValueError(f"{src}: already has lm_head.weight")
    shape, wte = t["transformer.wte.weight"]
    t["lm_head.weight"] = (shape, array("f", wte))
    write(dst, t)


def tied_check(w0p, t1p, u1p, rtol):
    w0, t1, u1 = read(w0p), read(t1p), read(u1p)
    wte = "transformer.wte.weight"
    # T1 may hold more (tests/tied.sh passes an untied file as T1 to see it refused)
    if not set(w0) <= set(t1) or set(u1) != set(w0) | {"lm_head.weight"}:
        raise ValueError(f"tensor names differ: {t1p} must hold those of {w0p}, {u1p} "
                         f"those and lm_head.weight")
    for name in sorted(w0):
        same_shapes(name, (w0p, *w0[name]), (t1p, *t1[name]), (u1p, *u1[name]))
    same_shapes("lm_head.weight against " + wte, (w0p, *w0[wte]), (u1p, *u1["lm_head.weight"]))
    e0 = w0[wte][1]
    # the tied matrix's move against the sum of the two untied moves
    tmove = [a - e for a, e in zip(t1["transformer.wte.weight"][1], e0)]
    umove = [(ue - e) + (uh - e) for ue, uh, e in
             zip(u1["transformer.wte.weight"][1], u1["lm_head.weight"][1], e0)]
    scale = max(max(abs(v) for v in tmove), 1e-30)
    floor = 1e-3 * scale

    def worst(xs, ys):
        w, at = 0.0, -1
        for i, (a, b) in enumerate(zip(xs, ys)):
            d = abs(a - b) / max(abs(a), abs(b), floor)
            if d > w:
                w, at = d, i
        return w, at

    ok = True
    d, at = worst(tmove, umove)
    print(f"wte move: tied vs embedding + head moves of the untied twin: max relative "
          f"difference {d:.3g} at {at} (largest move {scale:.3g})")
    ok &= d <= rtol
    head_move = max(abs(uh - e) for uh, e in zip(u1["lm_head.weight"][1], e0))
    emb_move = max(abs(ue - e) for ue, e in zip(u1["transformer.wte.weight"][1], e0))
    print(f"untied moves: embedding {emb_move:.3g}, head {head_move:.3g}")
    ok &= head_move > 10 * rtol * scale and emb_move > 10 * rtol * scale
    for name in sorted(w0):
        if name == wte:
            continue
        a, b = t1[name][1], u1[name][1]
        m0 = w0[name][1]
        mv = max(max(abs(x - y) for x, y in zip(a, m0)), 1e-30)
        fl = 1e-3 * mv
        w = max((abs(x - y) / max(abs(x - z), abs(y - z), fl) for x, y, z in zip(a, b, m0)),
                default=0.0)
        if w > rtol:
            print(f"{name}: moves differ by {w:.3g} (relative)")
            ok = False
    print("equal" if ok else "DIFFERENT")
    return 0 if ok else 1


def main(argv):
    try:
        if len(argv) == 4 and argv[1] == "untie":
            untie(argv[2], argv[3])
            return 0
        if len(argv) == 6 and argv[1] == "tied-check":
            return tied_check(argv[2], argv[3], argv[4], float(argv[5]))
    except (OSError, ValueError, KeyError) as e:
        print(f"st_tool.py: {e}", file=sys.stderr)
        return 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
