#!/bin/sh
# metrics.sh — examples/gpt --metrics and shardflow-plot (issue 46: progress and
# metrics) do what docs/gpt.md says.
#
# Tiny model (tests/lib.sh's corpus, 2 blocks of embd 32), 2 ranks, 12 steps,
# validation at 5, 10 and 12, --grad-clip 1 and --peak-tflops 1:
#  - a progress line carries every field: step, loss, lr, grad_norm, tokens/s, tflops,
#    mfu, mem, time, eta;
#  - the metrics file is one JSON object a line (python3's json): steps 1..12 in order,
#    each with step, loss, lr, grad_norm, tokens (step x 8 x 32), tokens_per_s, tflops,
#    mfu (= tflops / (1 x 2 ranks)), mem_gib and time_s; its losses are --loss-log's
#    values of the same run, read as numbers; an "eval" line at 5, 10 and 12 with
#    val_loss equal to the "step s val_loss" lines' (at their 4 digits);
#  - <metrics>.svg is well-formed XML (xml.etree), its training-loss polyline has 12
#    points, x growing with the step and y in the losses' order (a higher loss higher on
#    the page: smaller y), the validation polyline 3;
#  - stopped at 4 (a checkpoint), resumed to 8 with no checkpoint kept (the checkpoint
#    directory set back to step 4's, as a crash after step 8 leaves it) and a torn line
#    appended, then resumed to 12: the file has steps 1..12 once each, no torn line, and
#    the very losses of the uninterrupted run (resumes are bitwise);
#  - shardflow-plot: -o writes well-formed XML; an empty file and a file of one step give
#    a picture saying so; a line that is not JSON, one without "step", one without
#    "loss" each give exit 1 and one line on stderr naming the line number; no argument
#    is a usage error (exit 2).
. "$(dirname "$0")/lib.sh"
GPT="$top_builddir/examples/gpt"
PLOT="$top_builddir/tools/shardflow-plot"
require_progs "$GPT" "$PLOT"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not found"

limit=${SF_TEST_TIMEOUT:-300}
text="$tmp/corpus.txt"
sf_corpus "$text"
args="--layers 2 --heads 2 --embd 32 --context 32 --batch 8 --text $text --val-fraction 0.2
	--steps 12 --eval-every 5 --eval-batches 2 --progress-every 4 --warmup 2 --lr 0.004
	--grad-clip 1 --peak-tflops 1 --sample 0"

plan 16

# gpt NAME ARGS...: 2 ranks; stdout and stderr in $tmp/NAME.out and .err
gpt() {
	_name=$1
	shift
	# shellcheck disable=SC2086
	timeout -k 5 "$limit" sh "$RUN_MPI" 2 "$GPT" $args "$@" \
		</dev/null >"$tmp/$_name.out" 2>"$tmp/$_name.err"
	_st=$?
	ok $_st "examples/gpt $* (exit $_st)" || diag_file "$tmp/$_name.err"
}

# py DESC SCRIPT ARGS...: a python3 check; its output is the diagnosis
py() {
	_desc=$1
	shift
	python3 - "$@" >"$tmp/py.out" 2>&1
	ok $? "$_desc" || diag_file "$tmp/py.out"
}

gpt full --metrics "$tmp/full.jsonl" --loss-log "$tmp/full.loss"

n=$(grep -cE '^step [0-9]+/12 loss [0-9.]+ lr [0-9.e+-]+ grad_norm [0-9.]+ tokens/s [0-9]+ tflops [0-9.e+-]+ mfu [0-9.]+ mem [0-9.]+GiB time [0-9]+m[0-9]+s eta [0-9]+m[0-9]+s$' "$tmp/full.out")
[ "$n" -eq 3 ]
ok $? "3 progress lines with step, loss, lr, grad_norm, tokens/s, tflops, mfu, mem, time, eta ($n)" ||
	diag_file "$tmp/full.out"

py "the metrics: steps 1..12 with every field; losses = --loss-log's; eval lines at 5, 10, 12" \
	"$tmp/full.jsonl" "$tmp/full.loss" "$tmp/full.out" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
train = [r for r in rows if r.get("kind", "train") == "train"]
evals = [r for r in rows if r.get("kind") == "eval"]
log = [l.split() for l in open(sys.argv[2])]
assert [r["step"] for r in train] == list(range(1, 13)), [r["step"] for r in train]
keys = {"step", "loss", "lr", "grad_norm", "tokens", "tokens_per_s", "tflops", "mfu",
        "mem_gib", "time_s"}
for r in train:
    assert set(r) == keys, sorted(r)
    assert r["tokens"] == r["step"] * 8 * 32, r
    assert abs(r["mfu"] - r["tflops"] / 2) <= 1e-5 * r["tflops"], r
    assert r["tokens_per_s"] > 0 and r["mem_gib"] > 0 and r["grad_norm"] > 0, r
assert [(int(s), float(l)) for s, l in log] == [(r["step"], r["loss"]) for r in train], \
    (log, [r["loss"] for r in train])
val = {}
for l in open(sys.argv[3]):
    w = l.split()
    if len(w) > 2 and w[0] == "step" and w[2] == "val_loss":
        val[int(w[1])] = w[3]
assert [e["step"] for e in evals] == [5, 10, 12], evals
for e in evals:
    assert "%.4f" % e["val_loss"] == val[e["step"]], (e, val)
EOF

py "<metrics>.svg: well-formed XML; 12 training points, x by step, y in the losses' order" \
	"$tmp/full.jsonl.svg" "$tmp/full.jsonl" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
lines = {p.get("id"): p.get("points") for p in root.iter(ns + "polyline")}
pts = [tuple(map(float, p.split(","))) for p in lines["train-loss"].split()]
loss = [r["loss"] for r in map(json.loads, open(sys.argv[2])) if "loss" in r]
assert len(pts) == 12 == len(loss), (len(pts), len(loss))
assert all(a[0] < b[0] for a, b in zip(pts, pts[1:])), pts
span = max(loss) - min(loss)
for i in range(12):
    for j in range(12):
        if loss[i] - loss[j] > 0.01 * span:  # higher loss: higher on the page
            assert pts[i][1] < pts[j][1], (i, j, loss[i], loss[j], pts[i], pts[j])
assert len(lines["val-loss"].split()) == 3, lines["val-loss"]
EOF

# stopped at 4, on to 8 with its checkpoint lost, a torn line, then on to 12
gpt a --metrics "$tmp/r.jsonl" --checkpoint-dir "$tmp/ck" --max-steps 4
cp -r "$tmp/ck" "$tmp/ck4"
gpt b --metrics "$tmp/r.jsonl" --checkpoint-dir "$tmp/ck" --resume --max-steps 8
rm -rf "$tmp/ck" && mv "$tmp/ck4" "$tmp/ck" && printf '{"step":9,"lo' >>"$tmp/r.jsonl"
grep -c '"step":8' "$tmp/r.jsonl" >/dev/null
ok $? "before the last resume, the file holds step 8 and a torn line"
gpt c --metrics "$tmp/r.jsonl" --checkpoint-dir "$tmp/ck" --resume
grep "resumed from .* at step 4" "$tmp/c.err" >/dev/null
ok $? "the last run resumed from step 4" || diag_file "$tmp/c.err"

py "after the resumes: steps 1..12 once each, whole lines, the uninterrupted run's losses" \
	"$tmp/r.jsonl" "$tmp/full.jsonl" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
assert text.endswith("\n"), text[-40:]
rows = [json.loads(l) for l in text.splitlines()]
train = [r for r in rows if r.get("kind", "train") == "train"]
evals = [(r["step"]) for r in rows if r.get("kind") == "eval"]
assert [r["step"] for r in train] == list(range(1, 13)), [r["step"] for r in train]
assert evals == [4, 5, 10, 12], evals
full = [r["loss"] for r in map(json.loads, open(sys.argv[2])) if "loss" in r]
assert [r["loss"] for r in train] == full, ([r["loss"] for r in train], full)
EOF

"$PLOT" "$tmp/full.jsonl" -o "$tmp/on-demand.svg" 2>"$tmp/plot.err" &&
	python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$tmp/on-demand.svg"
ok $? "shardflow-plot -o: well-formed XML" || diag_file "$tmp/plot.err"

: >"$tmp/empty.jsonl"
printf '{"step": 1, "loss": 5.5, "tokens_per_s": 100}\n' >"$tmp/one.jsonl"
"$PLOT" "$tmp/empty.jsonl" && "$PLOT" "$tmp/one.jsonl" &&
	python3 - "$tmp/empty.jsonl.svg" "$tmp/one.jsonl.svg" >"$tmp/py.out" 2>&1 <<'EOF'
import sys, xml.etree.ElementTree as ET
for path, want in zip(sys.argv[1:], ["no step in the metrics yet", "1 point (no curve yet)"]):
    text = "".join(ET.parse(path).getroot().itertext())
    assert want in text, (path, text)
EOF
ok $? "no step, one step: well-formed pictures that say so (default name METRICS.svg)" ||
	diag_file "$tmp/py.out"

# bad DESC LINE CONTENT: exit 1, one line on stderr naming "line LINE"
bad() {
	printf '%b' "$3" >"$tmp/bad.jsonl"
	"$PLOT" "$tmp/bad.jsonl" >"$tmp/bad.out" 2>"$tmp/bad.err"
	_st=$?
	[ $_st -eq 1 ] && [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] &&
		grep -F "bad.jsonl line $2: " "$tmp/bad.err" >/dev/null
	ok $? "shardflow-plot on $1: exit 1 (exit $_st), one line naming line $2" ||
		diag_file "$tmp/bad.err"
}
bad "a line that is not JSON" 2 '{"step": 1, "loss": 2}\nstep 2 loss 3\n'
bad "a line without a step" 1 '{"loss": 2}\n'
bad "a line without its loss" 3 '{"step": 1, "loss": 2}\n{"kind": "eval", "step": 1, "val_loss": 2}\n{"step": 2}\n'

"$PLOT" >/dev/null 2>"$tmp/usage.err"
[ $? -eq 2 ] && grep '^usage: shardflow-plot' "$tmp/usage.err" >/dev/null
ok $? "shardflow-plot with no argument: usage, exit 2" || diag_file "$tmp/usage.err"
finish
