#!/usr/bin/env python3
"""st_tool.py — safetensors arithmetic for the shell tests (Python's standard library
only: no numpy, no torch).

  st_tool.py untie IN OUT        OUT = IN plus lm_head.weight, a copy of
                                 transformer.wte.weight (a tied model's weights for
                                 the untied twin)
  st_tool.py tied-check W0 T1 U1 TUP TDOWN
                                 one SGD step of a tied model (T1) against one of its
                                 untied twin (U1), both from W0: the tied matrix must
                                 have moved by the sum of the untied embedding's and
                                 head's moves, T1.wte = W0.wte + (U1.wte - W0.wte) +
                                 (U1.lm_head - W0.wte), and every other tensor as in
                                 U1, within T1's rounding interval: T1's run again with
                                 every CPU worker rounding upward (TUP) and downward
                                 (TDOWN). Prints the worst ratios; exit 0 when within,
                                 1 otherwise, 2 on bad input.
Within the interval: in blocks of 128 consecutive values of a tensor, ||a - b||_2 <=
||w||_2 + eps32 ||b||_2, w each value's span of T1, TUP and TDOWN: tests/dump_compare's
--up/--down rule
(docs/testing.md, "The rounding interval"). The untied twin sums the same gradients in
other groups and rounds its update once a matrix, where the tied run adds the two
gradients and rounds once: the eps32 ||b|| term is that extra rounding of the weights.
Each untied move must also exceed 10 times the whole matrix's bound, so that a tied
move missing either is caught.
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


EPS32 = 2.0 ** -24  # float32's unit roundoff


def blocks_within(a, b, up, down, block=128):
    """The worst ratio over blocks of `block` consecutive values of ||a - b||_2 to
    ||w||_2 + eps32 ||b||_2, w each value's span of b, up and down (tests/dump_compare's
    --up/--down rule), its block, the whole vectors' bound (the sum of the blocks') and
    the interval's part of it (zero when the rounding never reached the workers)"""
    worst, at, total, width = 0.0, -1, 0.0, 0.0
    for i in range(0, len(b), block):
        d = w = n = 0.0
        for x, y, u, v in zip(a[i:i + block], b[i:i + block], up[i:i + block], down[i:i + block]):
            d += (x - y) ** 2
            w += (max(y, u, v) - min(y, u, v)) ** 2
            n += y * y
        bound = w ** 0.5 + EPS32 * n ** 0.5
        total += bound
        width += w ** 0.5
        r = 0.0 if d == 0 else d ** 0.5 / bound if bound > 0 else float("inf")
        if r > worst or at < 0:
            worst, at = r, i // block
    return worst, at, total, width


def tied_check(w0p, t1p, u1p, upp, downp):
    w0, t1, u1, up, down = read(w0p), read(t1p), read(u1p), read(upp), read(downp)
    wte = "transformer.wte.weight"
    # T1 may hold more (tests/tied.sh passes an untied file as T1 to see it refused)
    if (not set(w0) <= set(t1) or set(u1) != set(w0) | {"lm_head.weight"}
            or set(up) != set(w0) or set(down) != set(w0)):
        raise ValueError(f"tensor names differ: {t1p}, {upp} and {downp} must hold those of "
                         f"{w0p}, {u1p} those and lm_head.weight")
    for name in sorted(w0):
        same_shapes(name, (w0p, *w0[name]), (t1p, *t1[name]), (u1p, *u1[name]),
                    (upp, *up[name]), (downp, *down[name]))
    same_shapes("lm_head.weight against " + wte, (w0p, *w0[wte]), (u1p, *u1["lm_head.weight"]))
    e0 = w0[wte][1]
    # the tied matrix against W0 moved by both untied moves (in double: a difference of
    # two floats is exact there)
    emb = [ue - e for ue, e in zip(u1[wte][1], e0)]
    head = [uh - e for uh, e in zip(u1["lm_head.weight"][1], e0)]
    twin = [e + m + h for e, m, h in zip(e0, emb, head)]
    d, at, bound, width = blocks_within(twin, t1[wte][1], up[wte][1], down[wte][1])
    print(f"wte: tied against W0 + the untied twin's embedding and head moves: the "
          f"largest difference is {d:.3g} of the tied run's rounding interval (block {at} "
          f"of 128 values)")
    ok = d <= 1.0 and width > 0
    if not width > 0:
        print(f"{upp} and {downp} hold the same wte: the interval is empty")
    # each untied move alone is far outside the bound: leaving either out is caught
    emb_move = sum(v * v for v in emb) ** 0.5
    head_move = sum(v * v for v in head) ** 0.5
    print(f"untied moves (2-norm): embedding {emb_move:.3g}, head {head_move:.3g}; the "
          f"interval's bound over wte {bound:.3g}")
    ok &= head_move > 10 * bound and emb_move > 10 * bound
    for name in sorted(w0):
        if name == wte:
            continue
        w, at, _, _ = blocks_within(u1[name][1], t1[name][1], up[name][1], down[name][1])
        if not w <= 1.0:
            print(f"{name}: the untied twin's is {w:.3g} of the tied run's rounding interval "
                  f"(block {at})")
            ok = False
    print("equal" if ok else "DIFFERENT")
    return 0 if ok else 1


def main(argv):
    try:
        if len(argv) == 4 and argv[1] == "untie":
            untie(argv[2], argv[3])
            return 0
        if len(argv) == 7 and argv[1] == "tied-check":
            return tied_check(*argv[2:7])
    except (OSError, ValueError, KeyError) as e:
        print(f"st_tool.py: {e}", file=sys.stderr)
        return 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
