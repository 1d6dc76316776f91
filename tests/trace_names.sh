#!/bin/sh
# trace_names.sh — a layer type's name is the user's: whatever it holds, the built-in
# trace (SHARDFLOW_TRACE) stays valid JSON and the timeline valid XML.
#
# examples/custom_layer --type-name registers its "rms_norm" type under another name, and
# the task names carry it ("fwd L3 <name>"). Proves, with Python's own parsers:
#  - a traced 2-rank run with a name holding a quote, a backslash, <, & and >, a tab
#    (a control character) and a non-ASCII letter writes both Chrome traces, the
#    report JSON and the SVG; each JSON file parses and gives the task names back
#    unchanged on both ranks; the SVG parses as XML and its tooltips hold the name;
#  - a name that the 63-byte task name cuts inside a UTF-8 character still gives
#    JSON and XML that parse (the cut bytes become U+FFFD).
# Skipped without python3.
. "$(dirname "$0")/lib.sh"
PROG="$top_builddir/examples/custom_layer"
require_progs "$PROG"
command -v python3 >/dev/null 2>&1 ||
	skip_all "python3 is not installed (its parsers check the JSON and the SVG)"

# check_files PREFIX NRANKS NAME: parses PREFIX.rank*.json, PREFIX.overlap.json and
# PREFIX.timeline.svg; with NAME, also finds "fwd L3 NAME" and "bwd L3 NAME" in every
# rank's trace and "fwd L3 NAME (" in an SVG tooltip. Errors on stdout.
check_files() {
	python3 - "$@" <<'EOF'
import json, sys
import xml.etree.ElementTree as ET
prefix, nranks, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
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
    for want in ("fwd L3 " + name, "bwd L3 " + name):
        if name and want not in names:
            fail("%s: no task named %r among %r" % (p, want, sorted(names)))
try:
    json.load(open(prefix + ".overlap.json", encoding="utf-8"))
except Exception as e:
    fail("%s.overlap.json: %s" % (prefix, e))
try:
    svg = ET.parse(prefix + ".timeline.svg")
    titles = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    if name and not any(t.startswith("fwd L3 " + name + " (") for t in titles):
        fail("%s.timeline.svg: no tooltip for %r" % (prefix, "fwd L3 " + name))
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

plan 5

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
ok $? "the JSON files parse and name the tasks exactly, the SVG parses and shows the name" ||
	diag_file "$tmp/check.out"

# 55 ASCII letters then two 2-byte letters: "fwd L3 " (7 bytes) and the name are cut at
# 63 bytes, between the two bytes of the first e acute
long=$(printf 'abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabc\303\251\303\251')
traced u 1 "$long"
ok $? "a traced run with a type name that task names cut inside a UTF-8 character" ||
	diag_file "$tmp/u.err"
check_files "$tmp/u" 1 "" >"$tmp/check.out" 2>&1
ok $? "its JSON files and its SVG still parse" || diag_file "$tmp/check.out"

finish
