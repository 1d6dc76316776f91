#!/bin/sh
# trace_builtin.sh — the built-in trace (SHARDFLOW_TRACE) records real schedules.
#
# Checked on schedules, never on timings (the machine is shared and noisy):
#  - a traced 2-rank run writes one Chrome trace per rank (valid JSON), the overlap
#    report (text and JSON) and the timeline (SVG);
#  - with SHARDFLOW_PREFETCH_DEPTH=0, no forward gather of unit l+1 starts before
#    fwd of unit l ends (there is no prefetch to overlap);
#  - with depth 2 and the comm worker, some forward gather of unit l+1 starts before
#    fwd of unit l ends (the overlap the ring allows);
#  - every rank, step and layer appears; busy times never exceed the wall time;
#    overlap lies in [0, 1];
#  - tasks carry the graph's names, not only indices: the gathers are "gather fc1 (L2)"
#    .. "gather fc5 (L10)" (the units, named after their linears), the forwards
#    "fwd fc1 (linear L2)" .. and "fwd relu3 (relu L3)" (an unnamed node's name, its
#    type and index), and the report's stall rows read "fc1 (L2)" .. "fc5 (L10)";
#  - at depth 0 (one ring slot) each unit is gathered twice a step, for forward and
#    for backward, except the last (kept from forward to backward) and the first,
#    whose linear backward needs no parameters (it reads the graph's input, so no
#    input gradient): 3 steps give the counts 3 3 6 6 6.
. "$(dirname "$0")/lib.sh"
require_progs "$MLP"

model="--steps 3 --widths 24,32,32,32,32,10 --batch 16"
units=5

# trace NAME DEPTH: a traced 2-rank run into $tmp/NAME.*
trace() {
	env SHARDFLOW_TRACE="$tmp/$1" SHARDFLOW_PREFETCH_DEPTH="$2" \
		sh "$RUN_MPI" 2 "$MLP" $model </dev/null >"$tmp/$1.out" 2>"$tmp/$1.err"
}

# events FILE: "rank step name start end" per task, from the one-event-per-line JSON
# (the name is every field between step and start: "fwd fc1 (linear L2)")
events() {
	sed -n 's/^{"name": "\([^"]*\)", "cat": "[a-z]*", "ph": "X", "ts": \([0-9.]*\), "dur": \([0-9.]*\), "pid": \([0-9]*\), "tid": [0-9]*, "cname": "[a-z_]*", "args": {"step": \([0-9]*\),.*/\4 \5 \2 \3 \1/p' "$1" |
		awk '{n = $5; for (i = 6; i <= NF; i++) n = n " " $i; printf "%s %s %s %.3f %.3f\n", $1, $2, n, $3, $3 + $4}'
}

# order FILE: for each rank and step, the forward units in order and, per pair
# (l, next), whether the first gather of next starts before fwd l ends. A task's
# node index l ends its name: "gather fc2 (L4)", "fwd fc2 (linear L4)".
# Prints "early N late M" counts.
early_late() {
	events "$1" | awk '
	{
		rank = $1; step = $2; start = $(NF - 1); end = $NF
		name = $3; for (i = 4; i <= NF - 2; i++) name = name " " $i
		key = rank " " step
		l = -1
		if (match(name, /L[0-9]+\)$/)) l = substr(name, RSTART + 1, RLENGTH - 2) + 0
		if (name ~ /^fwd .* \(linear L[0-9]+\)$/) {
			fwd_end[key, l] = end; isunit[key, l] = 1; keys[key] = 1
		}
		if (name ~ /^gather /) {
			if (!((key, l) in g_start) || start < g_start[key, l]) g_start[key, l] = start
		}
	}
	END {
		early = 0; late = 0
		for (k in keys) {
			prev = -1
			for (l = 0; l < 1000; l++) {
				if (!((k, l) in isunit)) continue
				if (prev >= 0) {
					if (g_start[k, l] < fwd_end[k, prev]) early++; else late++
				}
				prev = l
			}
		}
		printf "early %d late %d\n", early, late
	}'
}

plan 26

trace d0 0
ok $? "depth 0: traced 2-rank run succeeds" || diag_file "$tmp/d0.err"
trace d2 2
ok $? "depth 2: traced 2-rank run succeeds" || diag_file "$tmp/d2.err"

for f in d0.rank0.json d0.rank1.json d0.overlap.txt d0.overlap.json d0.timeline.svg; do
	[ -s "$tmp/$f" ]
	ok $? "depth 0 wrote $f"
done

if command -v python3 >/dev/null 2>&1; then
	python3 -c 'import json, sys
for p in sys.argv[1:]:
    json.load(open(p))' "$tmp/d0.rank0.json" "$tmp/d0.rank1.json" "$tmp/d0.overlap.json" 2>"$tmp/json.err"
	ok $? "the Chrome traces and the report JSON parse as JSON" || diag_file "$tmp/json.err"
else
	skip "the Chrome traces and the report JSON parse as JSON" "python3 is not installed"
fi

# bench/trace_top.py (gpu-check.sh's profile): its counts are the trace's, steps 2..
if command -v python3 >/dev/null 2>&1; then
	python3 "$top_srcdir/bench/trace_top.py" --top 100 "$tmp/d2.rank0.json" "$tmp/d2.rank1.json" \
		>"$tmp/top.out" 2>&1
	st=$?
	want=$( (events "$tmp/d2.rank0.json"; events "$tmp/d2.rank1.json") |
		awk '$2 >= 2 { n++; if ($3 == "fwd" && $5 == "(linear") f++ } END { print n + 0, f + 0 }')
	got=$(awk '/^all tasks/ { n = $3 } /^fwd linear / { f = $3 } END { print n + 0, f + 0 }' "$tmp/top.out")
	[ $st -eq 0 ] && [ "$got" = "$want" ] && [ "${want% *}" -gt 0 ]
	ok $? "trace_top.py: tasks of steps 2.. and 'fwd linear' tasks = the trace's ($got, want $want)" ||
		diag_file "$tmp/top.out"
	# the per-worker table: its task counts add up to the total, busy and idle are >= 0,
	# and no compute worker is busy longer than the run's steps took
	awk '/^all tasks/ { n = $3 } /^worker / { w = 1; next } w && /^rank / && NF >= 8 {
		t += $(NF - 3); if ($(NF - 2) < 0 || $(NF - 1) < 0) bad = 1; rows++ }
		w && /^$/ && rows { w = 0 }
		END { exit !(rows == 4 && t == n && !bad) }' "$tmp/top.out"
	ok $? "trace_top.py: one row per rank and worker, their tasks add up to the total, busy and idle >= 0" ||
		diag_file "$tmp/top.out"
	# the tasks' flops and bytes reach the trace: a product's row has a rate of both, a
	# gather (no flops) only of bytes
	awk '/^fwd linear / { f = ($(NF - 1) > 0 && $NF > 0) } /^gather / { g = ($(NF - 1) == "-" && $NF > 0) }
		END { exit !(f && g) }' "$tmp/top.out"
	ok $? "trace_top.py: the rates from the trace's flops and bytes (fwd linear: both; gather: bytes only)" ||
		diag_file "$tmp/top.out"
	# bench/sim_calibrate.py: a row per codelet model, sf_linear_fwd's task count the
	# trace's fwd linear tasks, a positive efficiency; the ceilings are required
	python3 "$top_srcdir/bench/sim_calibrate.py" --peak-tflops 0.1 --bandwidth-gbs 10 \
		--device "this machine" --out "$tmp/cal.tsv" "$tmp/d2.rank0.json" "$tmp/d2.rank1.json" \
		>"$tmp/cal.out" 2>&1
	st=$?
	python3 "$top_srcdir/bench/sim_calibrate.py" "$tmp/d2.rank0.json" >"$tmp/cal.bad" 2>&1
	st2=$?
	[ $st -eq 0 ] && [ $st2 -eq 2 ] && grep -q '^# fallback 0*[.0-9]' "$tmp/cal.tsv" &&
		awk -F'\t' -v want="${want#* }" '$1 == "sf_linear_fwd" && $2 == want && $3 > 0 { found = 1 }
			END { exit !found }' "$tmp/cal.tsv"
	ok $? "sim_calibrate.py: a row per model, sf_linear_fwd's tasks = the trace's fwd linear tasks (${want#* }), positive efficiency; no ceilings: exit $st2" ||
		{ diag_file "$tmp/cal.tsv"; diag_file "$tmp/cal.out"; }
	python3 "$top_srcdir/bench/trace_top.py" "$tmp/d2.overlap.txt" >"$tmp/top.bad" 2>&1
	st=$?
	[ $st -eq 1 ] && grep -q 'not a shardflow trace' "$tmp/top.bad"
	ok $? "trace_top.py: a file that is not a trace is refused (exit $st)" || diag_file "$tmp/top.bad"
else
	skip "trace_top.py: counts = the trace's" "python3 is not installed"
	skip "trace_top.py: the per-worker table" "python3 is not installed"
	skip "trace_top.py: the rates" "python3 is not installed"
	skip "sim_calibrate.py: a row per model" "python3 is not installed"
	skip "trace_top.py: a file that is not a trace is refused" "python3 is not installed"
fi

n0=$(events "$tmp/d0.rank0.json" | wc -l)
[ "$n0" -gt 0 ]
ok $? "rank 0's trace holds $n0 tasks"

el=$(early_late "$tmp/d0.rank0.json"; early_late "$tmp/d0.rank1.json")
early=$(echo "$el" | awk '{s += $2} END {print s + 0}')
late=$(echo "$el" | awk '{s += $4} END {print s + 0}')
[ "$early" -eq 0 ] && [ "$late" -eq $((2 * 3 * (units - 1))) ]
ok $? "depth 0: no gather L(l+1) starts before fwd Ll ends ($early early, $late in order)"

counts=$(events "$tmp/d0.rank0.json" | awk '$3 == "gather" { n[$4]++ } END { for (u in n) print n[u] }' |
	sort -n | tr '\n' ' ')
[ "$counts" = "3 3 6 6 6 " ]
ok $? "depth 0: gathers per unit over 3 steps are 3 3 6 6 6: the first and the last unit once a step ($counts)"

el=$(early_late "$tmp/d2.rank0.json"; early_late "$tmp/d2.rank1.json")
early=$(echo "$el" | awk '{s += $2} END {print s + 0}')
[ "$early" -gt 0 ]
ok $? "depth 2: some gathers L(l+1) start before fwd Ll ends ($early of $((2 * 3 * (units - 1))))"

# every rank and step in the report, every unit in the stall table
lines=$(grep -c '^rank [01] step [1-3] ' "$tmp/d2.overlap.txt")
[ "$lines" -eq 6 ]
ok $? "the report has a line for each of 2 ranks x 3 steps ($lines)"
# what was measured, in each file (issue 46: the report did not record it)
cfg='2 rank(s), dp 2 x tp 1; settings: log_level=[a-z]* prefetch_depth=2 '
head -1 "$tmp/d2.overlap.txt" | grep -q "; $cfg" &&
	grep -q "\"source\": *\"[^\"]*; $cfg" "$tmp/d2.overlap.json" &&
	grep -q "$cfg" "$tmp/d2.timeline.svg"
ok $? "the report, its JSON and the timeline record the layout and settings they measured" ||
	diag "$(head -1 "$tmp/d2.overlap.txt")"
rows=$(sed -n 's/^  \(.*\) mean .* max .*/\1/p' "$tmp/d2.overlap.txt" | sed 's/ *$//' | tr '\n' ',')
[ "$rows" = "fc1 (L2),fc2 (L4),fc3 (L6),fc4 (L8),fc5 (L10)," ]
ok $? "the report's stall rows name the $units units: fc1 (L2) .. fc5 (L10) ($rows)" ||
	diag_file "$tmp/d2.overlap.txt"

# the graph's names in the Chrome trace: mlp_synthetic names its linears fc1..fc5;
# its relus are unnamed and get sf_graph's "<type><index>"
names=$(events "$tmp/d2.rank0.json" | awk '{ n = $3; for (i = 4; i <= NF - 2; i++) n = n " " $i; print n }' |
	grep -E '^(gather|fwd) ' | sort -u | tr '\n' ',')
want="fwd fc1 (linear L2),fwd fc2 (linear L4),fwd fc3 (linear L6),fwd fc4 (linear L8),fwd fc5 (linear L10),"
want="${want}fwd relu3 (relu L3),fwd relu5 (relu L5),fwd relu7 (relu L7),fwd relu9 (relu L9),"
want="${want}gather fc1 (L2),gather fc2 (L4),gather fc3 (L6),gather fc4 (L8),gather fc5 (L10),"
[ "$names" = "$want" ]
ok $? "the forwards and gathers carry the nodes' and units' names" ||
	{ diag "got  $names"; diag "want $want"; }

grep -q '"name": "bwd fc3 (linear L6)"' "$tmp/d2.rank1.json" &&
	grep -q '"name": "rs fc3 (L6)"' "$tmp/d2.rank1.json" && grep -q '"name": "opt fc3 (L6)"' "$tmp/d2.rank1.json"
ok $? "so do the backward, the reduce-scatter and the optimizer (rank 1: bwd fc3, rs fc3, opt fc3)"

# per-step figures: one JSON object per line
awk -F'[:,}]' '/"wall_ms"/ {
	for (i = 1; i < NF; i++) {
		gsub(/[ "{]/, "", $i)
		v[$i] = $(i + 1) + 0
	}
	n++
	if (v["compute_ms"] > v["wall_ms"] + 1e-6 || v["comm_ms"] > v["wall_ms"] + 1e-6) bad++
	if (v["exposed_ms"] > v["comm_ms"] + 1e-6) bad++
	if (v["overlap"] < 0 || v["overlap"] > 1) bad++
}
END { if (n < 6 || bad) { printf "%d rows, %d bad\n", n, bad; exit 1 } }' "$tmp/d2.overlap.json" >"$tmp/fig.err"
ok $? "busy times never exceed the wall time, overlap lies in [0, 1]" || diag_file "$tmp/fig.err"

grep -q '</svg>' "$tmp/d2.timeline.svg" && grep -q 'step 2' "$tmp/d2.timeline.svg"
ok $? "the timeline is a complete SVG with step boundaries"

# steps are numbered as the progress lines number them ("step 1 loss ..."): the
# report's rows, the JSON's (which says "step_base": 1), the timeline's labels and the
# Chrome trace's args
nums() { sort -un | tr '\n' ' '; }
want=$(awk '$1 == "step" && $3 == "loss" { print $2 }' "$tmp/d2.out" | nums)
txt=$(awk '$1 == "rank" && $3 == "step" { print $4 }' "$tmp/d2.overlap.txt" | nums)
json=$(grep -o '"step": [0-9]*' "$tmp/d2.overlap.json" | awk '{ print $2 }' | nums)
svg=$(grep -o '>step [0-9]*<' "$tmp/d2.timeline.svg" | tr -dc '0-9\n' | nums)
chrome=$(events "$tmp/d2.rank0.json" | awk '{ print $2 }' | nums)
[ "$want" = "1 2 3 " ] && [ "$txt" = "$want" ] && [ "$json" = "$want" ] && [ "$svg" = "$want" ] &&
	[ "$chrome" = "$want" ] && grep -q '"step_base": 1,' "$tmp/d2.overlap.json"
ok $? "steps numbered as the progress lines ($want): report $txt, JSON $json (step_base 1), timeline $svg, Chrome trace $chrome" ||
	diag_file "$tmp/d2.out"

env SHARDFLOW_TRACE="$tmp/no/such/dir/x" "$MLP" --steps 1 --widths 8,4 --batch 4 </dev/null >"$tmp/bad.out" 2>"$tmp/bad.err"
st=$?
[ $st -ge 1 ] && [ $st -le 123 ] && grep -q 'SHARDFLOW_TRACE=".*no/such/dir/x" is invalid: directory' "$tmp/bad.err"
ok $? "a trace prefix in a missing directory is refused at start (exit $st)" || diag_file "$tmp/bad.err"

finish
