#!/bin/sh
# trace_names.sh — tasks carry the user's names: a layer type's, a node's, a unit's.
# Whatever they hold, the built-in trace (SHARDFLOW_TRACE) stays valid JSON and the
# timeline valid XML, and the overlap report names the units.
#
# A task's name is "<kind> <node> (<type> L<n>)" or "<kind> <unit> (L<n>)"
# (trace/event.h). Proves, with Python's own parsers:
#  - examples/custom_layer --type-name registers its "rms_norm" type under another name,
#    used by its node "norm1" (L3): a traced 2-rank run with a name holding a quote, a
#    backslash, <, & and >, a tab (a control character) and a non-ASCII letter writes
#    both Chrome traces, the report JSON and the SVG; each JSON file parses and gives
#    "fwd norm1 (NAME L3)" and "bwd norm1 (NAME L3)" back unchanged on both ranks, with
#    the units' gathers "gather fc1 (L2)", "gather norm1 (L3)", "gather fc2 (L5)"; the
#    report JSON's stall rows name the units fc1, norm1 and fc2; the SVG parses as XML
#    and its tooltips hold the name;
#  - a type name of the longest length (63 bytes, ending in two-byte UTF-8 letters)
#    comes back whole in the task names, and the files still parse;
#  - sf_gpt_graph (tests/train_dump --model nanogpt: units of several nodes, names with
#    dots): the gathers are the units "transformer.wte", "transformer",
#    "transformer.h.0" and "transformer.h.1", a block's projection runs as
#    "fwd transformer.h.1.attn.c_attn (linear L<n>)", and the text report's stall rows
#    read "transformer.h.0 (L<n>)", ... in the units' forward order;
#  - the nodes without parameters are named in their block too: every forward and
#    backward of sf_gpt_graph names a node "transformer.*" or "lm_head" (no automatic
#    "attention6"), among them "transformer.h.1.attn.attention (attention L<n>)",
#    ".mlp.gelu (gelu", ".residual1 (add" and ".residual2 (add"; and sf_llama_graph's
#    (train_dump --model llama-hf, one rank) "model.*" or "lm_head", among them
#    ".self_attn.rotary_emb (rope", ".self_attn.attention (attention_gqa", ".mlp.act_fn
#    (silu", ".mlp.mul (mul", ".residual1 (add" and ".residual2 (add".
# Skipped without python3.
. "$(dirname "$0")/lib.sh"
PROG="$top_builddir/examples/custom_layer"
require_progs "$PROG" "$TRAIN_DUMP"
command -v python3 >/dev/null 2>&1 ||
	skip_all "python3 is not installed (its parsers check the JSON and the SVG)"

# check_files PREFIX NRANKS NAME: parses PREFIX.rank*.json, PREFIX.overlap.json and
# PREFIX.timeline.svg, and finds custom_layer's names: "fwd norm1 (NAME L3)" and
# "bwd norm1 (NAME L3)" and the gathers of fc1, norm1 and fc2 in every rank's trace,
# the units in the stall rows of the report JSON and "fwd norm1 (NAME L3) (" in an SVG
# tooltip. Errors on stdout.
check_files() {
	python3 - "$@" <<'EOF'
import json, sys
import xml.etree.ElementTree as ET
prefix, nranks, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fwd = "fwd norm1 (%s L3)" % name
bad = 0
def fail(msg):
    global bad
    bad += 1
    print(msg)
for r in range(nranks):
    p = "%s.rank%d.json" % (prefix, r)
    try:
        names = {e["name"] for e in json.load(open(p, encoding="utf-8"))["traceEvents"]}
    except Exception as e:
        fail("%s: %s" % (p, e))
        continue
    for want in (fwd, "bwd norm1 (%s L3)" % name, "gather fc1 (L2)", "gather norm1 (L3)",
                 "gather fc2 (L5)"):
        if want not in names:
            fail("%s: no task named %r among %r" % (p, want, sorted(names)))
try:
    rep = json.load(open(prefix + ".overlap.json", encoding="utf-8"))
    units = [s["unit"] for s in rep["forward_stalls"]]
    if units != ["fc1", "norm1", "fc2"]:
        fail("%s.overlap.json: stall rows of units %r, want fc1, norm1, fc2" % (prefix, units))
except Exception as e:
    fail("%s.overlap.json: %s" % (prefix, e))
try:
    svg = ET.parse(prefix + ".timeline.svg")
    titles = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    if not any(t.startswith(fwd + " (") for t in titles):
        fail("%s.timeline.svg: no tooltip for %r" % (prefix, fwd))
except Exception as e:
    fail("%s.timeline.svg: %s" % (prefix, e))
sys.exit(1 if bad else 0)
EOF
}

# traced NAME NP TYPE_NAME: a traced run on NP ranks into $tmp/NAME.*, the type
# registered as TYPE_NAME
traced() {
	env SHARDFLOW_TRACE="$tmp/$1" sh "$RUN_MPI" "$2" "$PROG" --steps 3 --type-name "$3" \
		</dev/null >"$tmp/$1.out" 2>"$tmp/$1.err"
}

plan 9

# a quote, a backslash, XML's specials, a tab, an e acute (UTF-8)
name=$(printf 'sc"a\\le <&> \tx\303\251')
traced t 2 "$name"
ok $? "a traced 2-rank run with a type named with \" \\ < & > a tab and a non-ASCII letter" ||
	diag_file "$tmp/t.err"

for f in rank0.json rank1.json overlap.json timeline.svg; do
	[ -s "$tmp/t.$f" ] || break
done
ok $? "it wrote both Chrome traces, the report JSON and the timeline"

check_files "$tmp/t" 2 "$name" >"$tmp/check.out" 2>&1
ok $? "the files parse and name the node, its type and the units exactly" ||
	diag_file "$tmp/check.out"

# 59 ASCII letters then two 2-byte letters: 63 bytes, the longest name sf_layer_type_register
# takes, comes back whole
long=$(printf 'abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefg\303\251\303\251')
traced u 1 "$long"
ok $? "a traced run with a type name of 63 bytes" || diag_file "$tmp/u.err"
check_files "$tmp/u" 1 "$long" >"$tmp/check.out" 2>&1
ok $? "its task names hold the whole name, and its files parse" || diag_file "$tmp/check.out"

# sf_gpt_graph: grouped units, dotted names
env SHARDFLOW_TRACE="$tmp/g" sh "$RUN_MPI" 2 "$TRAIN_DUMP" --model nanogpt --steps 2 --batch 4 \
	--out "$tmp/g.dump" </dev/null >"$tmp/g.out" 2>"$tmp/g.err"
ok $? "a traced 2-rank run of sf_gpt_graph's model" || diag_file "$tmp/g.err"

python3 - "$tmp/g.rank0.json" >"$tmp/gpt.out" 2>&1 <<'EOF'
import json, re, sys
names = {e["name"] for e in json.load(open(sys.argv[1], encoding="utf-8"))["traceEvents"]}
gathers = sorted(n for n in names if n.startswith("gather "))
units = [re.sub(r" \(L\d+\)$", "", g[len("gather "):]) for g in gathers]
bad = 0
if sorted(units) != sorted(["transformer.wte", "transformer", "transformer.h.0", "transformer.h.1"]):
    print("gathers %r: want the units transformer.wte, transformer, transformer.h.0, transformer.h.1" % gathers)
    bad = 1
if not any(re.fullmatch(r"fwd transformer\.h\.1\.attn\.c_attn \(linear L\d+\)", n) for n in names):
    print("no \"fwd transformer.h.1.attn.c_attn (linear L<n>)\" among %r" % sorted(names))
    bad = 1
sys.exit(bad)
EOF
ok $? "its gathers are the units transformer.wte, transformer, transformer.h.0, .h.1; its nodes keep their dotted names" ||
	diag_file "$tmp/gpt.out"

# named_nodes TRACE PREFIX BLOCK SUFFIX...: every fwd/bwd task of TRACE names a node
# PREFIX* or lm_head, and "fwd BLOCK.SUFFIX L<n>)" is among them for each SUFFIX
named_nodes() {
	python3 - "$@" <<'EOF'
import json, re, sys
trace, prefix, block, suffixes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
names = {e["name"] for e in json.load(open(trace, encoding="utf-8"))["traceEvents"]}
tasks = sorted(n for n in names if n.startswith(("fwd ", "bwd ")))
bad = [n for n in tasks if not n.split(" ", 1)[1].startswith((prefix, "lm_head "))]
if bad or not tasks:
    print("%s: tasks of unnamed nodes %r (all: %r)" % (trace, bad, tasks))
for suf in suffixes:
    want = re.compile(r"fwd %s\.%s L\d+\)" % (re.escape(block), re.escape(suf)))
    if not any(want.fullmatch(n) for n in tasks):
        bad.append(suf)
        print("%s: no task \"fwd %s.%s L<n>)\" among %r" % (trace, block, suf, tasks))
sys.exit(1 if bad or not tasks else 0)
EOF
}
env SHARDFLOW_TRACE="$tmp/l" sh "$RUN_MPI" 1 "$TRAIN_DUMP" --model llama-hf --steps 1 \
	--out "$tmp/l.dump" </dev/null >"$tmp/l.out" 2>"$tmp/l.err" || diag_file "$tmp/l.err"
{
	named_nodes "$tmp/g.rank0.json" transformer. transformer.h.1 "attn.attention (attention" \
		"mlp.gelu (gelu" "residual1 (add" "residual2 (add" &&
		named_nodes "$tmp/l.rank0.json" model. model.layers.1 "self_attn.rotary_emb (rope" \
			"self_attn.attention (attention_gqa" "mlp.act_fn (silu" "mlp.mul (mul" \
			"residual1 (add" "residual2 (add"
} >"$tmp/named.out" 2>&1
ok $? "the decoders' nodes without parameters are named in their blocks" ||
	diag_file "$tmp/named.out"

rows=$(sed -n 's/^  \(.*\) (L[0-9]*) *mean .*/\1/p' "$tmp/g.overlap.txt" | tr '\n' ',')
[ "$rows" = "transformer.wte,transformer,transformer.h.0,transformer.h.1," ]
ok $? "the report's stall rows name the units, in forward order ($rows)" ||
	diag_file "$tmp/g.overlap.txt"

finish
