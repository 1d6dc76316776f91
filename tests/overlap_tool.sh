#!/bin/sh
# overlap_tool.sh — shardflow-overlap on a real tasks.rec and on broken copies of it.
#
# The input is a tasks.rec produced by a real traced run, never a hand-written one:
# $SF_TASKS_REC when set, else the one tests/fxt_trace.sh keeps
# (tests/fxt-run.tasks.rec); without either (no FxT StarPU) the test is skipped.
# Proves: the tool reads it, reports every rank, step and layer, busy <= wall,
# overlap in [0, 1], writes the text, JSON and SVG files; the report's stall rows name
# the gathered units as their gathers do ("fc1 (L2)"); in fxt_trace.sh's run
# (mlp_synthetic), FxT recorded the tasks under the graph's names ("fwd fc1 (linear L2)",
# "gather fc1 (L2)") and the JSON's stall rows say "unit": "fc1"; and every malformed
# variant derived from the real file (truncated record, missing EndTime, non-numeric
# WorkerId, malformed task name, no shardflow task, missing file) is refused with
# exit 1 and a message naming the problem — never a crash.
. "$(dirname "$0")/lib.sh"
TOOL="$top_builddir/tools/shardflow-overlap"
require_progs "$TOOL"

rec=${SF_TASKS_REC:-$top_builddir/tests/fxt-run.tasks.rec}
[ -s "$rec" ] || skip_all "no tasks.rec from a real FxT run (set SF_TASKS_REC or run tests/fxt_trace.sh with an FxT StarPU)"

plan 19

"$TOOL" --out "$tmp/r" "$rec" >"$tmp/r.out" 2>"$tmp/r.err"
ok $? "the tool reads the real tasks.rec" || diag_file "$tmp/r.err"

ranks=$(sed -n 's/^MPIRank: \([0-9]*\)$/\1/p' "$rec" | sort -u | wc -l)
[ "$ranks" -lt 1 ] && ranks=1
steps=$(grep -c '^Name: loss allreduce$' "$rec")
steps=$((steps / ranks))
lines=$(grep -c '^rank [0-9]* step [0-9]* ' "$tmp/r.out")
[ "$lines" -eq $((ranks * steps)) ] && [ "$steps" -ge 1 ]
ok $? "a report line for each of $ranks rank(s) x $steps step(s) ($lines)"

# the gathered units, "<name> (L<n>)", in the order of their index
units=$(sed -n 's/^Name: gather \(.* (L\([0-9]*\))\)$/\2 \1/p' "$rec" | sort -u | sort -n | cut -d' ' -f2- |
	tr '\n' ',')
rows=$(sed -n 's/^  \(.*)\) *mean .*/\1/p' "$tmp/r.out" | tr '\n' ',')
[ "$rows" = "$units" ] && [ -n "$units" ]
ok $? "a forward stall row for each gathered unit, named as its gathers ($rows)" ||
	{ diag "gathered units: $units"; diag_file "$tmp/r.out"; }

if [ -z "$SF_TASKS_REC" ]; then
	grep -q '^Name: fwd fc1 (linear L2)$' "$rec" && grep -q '^Name: gather fc1 (L2)$' "$rec" &&
		grep -q '^Name: bwd relu3 (relu L3)$' "$rec" && grep -q '^Name: rs fc1 (L2)$' "$rec"
	ok $? "FxT recorded the tasks under the graph's names: fwd fc1 (linear L2), gather fc1 (L2), ..."
	"$TOOL" --json "$rec" 2>/dev/null | grep -q '{"layer": 2, "unit": "fc1", "mean_ms"'
	ok $? "the JSON report's stall rows name the unit (\"unit\": \"fc1\")"
else
	skip "FxT recorded the tasks under the graph's names" "SF_TASKS_REC is not fxt_trace.sh's run"
	skip "the JSON report's stall rows name the unit" "SF_TASKS_REC is not fxt_trace.sh's run"
fi

awk -F'[:,}]' '/"wall_ms"/ {
	for (i = 1; i < NF; i++) { gsub(/[ "{]/, "", $i); v[$i] = $(i + 1) + 0 }
	n++
	if (v["compute_ms"] > v["wall_ms"] + 1e-6 || v["comm_ms"] > v["wall_ms"] + 1e-6) bad++
	if (v["overlap"] < 0 || v["overlap"] > 1) bad++
}
END { exit (n >= 1 && !bad) ? 0 : 1 }' "$tmp/r.overlap.json"
ok $? "busy times never exceed the wall time, overlap lies in [0, 1]"

[ -s "$tmp/r.overlap.txt" ] && [ -s "$tmp/r.overlap.json" ] && grep -q '</svg>' "$tmp/r.timeline.svg"
ok $? "--out wrote PREFIX.overlap.txt, .overlap.json and a complete .timeline.svg"
if command -v xmllint >/dev/null 2>&1; then
	xmllint --noout "$tmp/r.timeline.svg" 2>"$tmp/xml.err"
	ok $? "the timeline is well-formed XML" || diag_file "$tmp/xml.err"
else
	grep -c '<rect' "$tmp/r.timeline.svg" | awk '{exit !($1 > 10)}'
	ok $? "the timeline draws the tasks (xmllint not installed: rect count only)"
fi

"$TOOL" --json "$rec" >"$tmp/j.out" 2>/dev/null && grep -q '"per_step"' "$tmp/j.out"
ok $? "--json prints the JSON report"

# refused FILE PATTERN DESC: exit 1 (not a crash) and a message matching PATTERN
refused() {
	"$TOOL" "$1" >"$tmp/bad.out" 2>"$tmp/bad.err"
	_st=$?
	[ $_st -eq 1 ] && grep -q -e "$2" "$tmp/bad.err"
	if ! ok $? "$3: exit 1 ($_st) with a clear message"; then
		diag_file "$tmp/bad.err"
	fi
}

# 1. truncated in the middle of a shardflow record: keep the lines up to the
#    StartTime of the 3rd "gather" record
awk '/^Name: gather / {g++} {print} g == 3 && /^StartTime:/ {exit}' "$rec" >"$tmp/trunc.rec"
refused "$tmp/trunc.rec" "truncated" "a file cut inside a task record"

# 2. a task record whose EndTime line was deleted
awk '/^Name: fwd / && !done {inrec = 1} inrec && /^EndTime:/ {inrec = 0; done = 1; next} {print}' \
	"$rec" >"$tmp/noend.rec"
refused "$tmp/noend.rec" "no EndTime" "a task without EndTime"

# 3. a WorkerId that is not a number, in the first "fwd" record (records are
#    paragraphs; StarPU's own tasks, such as the comm worker's clock task at start,
#    are skipped by the tool and so not checked)
awk 'BEGIN {RS = ""; ORS = "\n\n"} /(^|\n)Name: fwd / && !done {sub(/WorkerId: [^\n]*/, "WorkerId: one"); done = 1} {print}' \
	"$rec" >"$tmp/worker.rec"
refused "$tmp/worker.rec" 'WorkerId "one" is invalid' "a non-numeric WorkerId"

# 4. a malformed shardflow task name: a gather without its node index
awk '/^Name: gather / && !done {print "Name: gather fc1"; done = 1; next} {print}' "$rec" >"$tmp/name.rec"
refused "$tmp/name.rec" 'malformed shardflow task name "gather fc1"' "a malformed task name"

# 5. only StarPU's own records, no task of shardflow's
awk 'BEGIN {RS = ""; ORS = "\n\n"} !/Name: (gather|fwd|bwd|rs|opt|ag|free) |Name: loss/' "$rec" >"$tmp/none.rec"
refused "$tmp/none.rec" "shardflow run" "a tasks.rec with no shardflow task"

# 6. a missing file, an empty file
refused "$tmp/no-such-file.rec" "no-such-file.rec" "a missing file"
: >"$tmp/empty.rec"
refused "$tmp/empty.rec" "shardflow" "an empty file"

# 7. EndTime before StartTime
awk '/^Name: bwd / && !done {inrec = 1} inrec && /^EndTime:/ {print "EndTime: 0.000001"; inrec = 0; done = 1; next} {print}' \
	"$rec" >"$tmp/back.rec"
refused "$tmp/back.rec" "before StartTime" "a task that ends before it starts"

# bad usage: exit 2 with the usage
"$TOOL" --bogus "$rec" >/dev/null 2>"$tmp/usage.err"
st=$?
[ $st -eq 2 ] && grep -q '^usage: shardflow-overlap' "$tmp/usage.err"
ok $? "an unknown option exits 2 with the usage ($st)"

"$TOOL" --help >"$tmp/help.out" 2>&1
ok $? "--help exits 0"

finish
