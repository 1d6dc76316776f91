#!/bin/sh
# journey.sh — a newcomer's journey from the README, in one run (issue 46's "done
# means"), on a small GPT so that it fits the suite:
#  1. shardflow-train, from a job file (the model, training, data, checkpoints with
#     --checkpoint-keep 2, --metrics, --export), under shardflow-run on 2 ranks with
#     rank 1 killed in the save of step 12 (tests/kill_save.so): exit 0, one restart,
#     said with the step it resumes from;
#  2. keep-last 2 held: the newest two steps (18 and 24) and latest, nothing older;
#  3. the effective job beside the checkpoints, a job file that reloads (the run's
#     options, every setting, the layout);
#  4. the metrics file holds steps 1..24 once each across the restart, and the loss
#     SVG opens (python's XML parser reads it, and its training-loss curve has 24
#     points);
#  5. the export and its config.json load strictly in the PyTorch twin's
#     GPT2LMHeadModel, built from the config alone, whose logits are shardflow's
#     (through --init DIR and tests/gpt_logits on the same weights).
# The Llama half of the journey (a Hugging Face directory made by the twin initialises
# a run) is tests/hf.sh's.
. "$(dirname "$0")/lib.sh"
twin_setup
TRAIN="$top_builddir/tools/shardflow-train"
RUN="$top_builddir/tools/shardflow-run"
KILL_SO="$top_builddir/tests/.libs/kill_save.so"
require_progs "$TRAIN" "$RUN"
[ -f "$KILL_SO" ] || bail_out "$KILL_SO is not built (make check builds it)"

limit=${SF_TEST_TIMEOUT:-300}
text="$tmp/corpus.txt"
sf_corpus "$text"
shape="--layers 2 --heads 2 --embd 32 --context 32"
ck="$tmp/run1"

plan 7

cat >"$tmp/run1.json" <<EOF
{
  "model": {"layers": 2, "heads": 2, "embd": 32, "context": 32},
  "training": {"batch": 8, "steps": 24, "lr": 0.004, "warmup": 2},
  "data": {"text": "$text", "val-fraction": 0.2, "eval-every": 12, "eval-batches": 1,
           "progress-every": 6},
  "checkpoints": {"checkpoint-dir": "$ck", "checkpoint-every": 6, "checkpoint-keep": 2,
                  "metrics": "$tmp/run1.jsonl", "export": "$tmp/export/model.safetensors"},
  "generation": {"sample": 0}
}
EOF
mkdir -p "$tmp/export" "$tmp/stamps"

timeout -k 10 "$limit" "$RUN" --np 2 --max-restarts 2 --backoff 0.1 \
	--mpirun-args "--bind-to none --oversubscribe -x LD_PRELOAD=$KILL_SO -x SF_KILL_SAVE=1:12 -x SF_KILL_STAMPS=$tmp/stamps" \
	-- "$TRAIN" --job "$tmp/run1.json" </dev/null >"$tmp/run.out" 2>"$tmp/run.err"
st=$?
grep '^shardflow-run: ' "$tmp/run.err" >"$tmp/run.log"
[ $st -eq 0 ] && [ -e "$tmp/stamps/killed-1-12" ] && [ "$(grep -c '^shardflow-run: restart ' "$tmp/run.log")" -eq 1 ] &&
	grep -q 'resuming from step 6 ' "$tmp/run.log" && grep -q '^step 24/24 ' "$tmp/run.out"
ok $? "shardflow-train --job under shardflow-run, rank 1 killed saving step 12: exit 0 (exit $st), one restart from step 6, 24 steps" ||
	{ diag_file "$tmp/run.log"; diag_file "$tmp/run.err"; }

steps=$(cd "$ck" && ls -d step-* 2>/dev/null | tr '\n' ' ')
[ "$steps" = "step-000000018 step-000000024 " ] && [ "$(cat "$ck/latest")" = step-000000024 ]
ok $? "--checkpoint-keep 2 held: ${steps:-no step} and latest on step 24"

"$PY" - "$ck/job.json" <<'EOF' >"$tmp/job.check" 2>&1
import json, sys
j = json.load(open(sys.argv[1]))
assert j["checkpoints"]["checkpoint-keep"] == "2", j["checkpoints"]
assert j["layout"] == "dp 2 x tp 1" and "prefetch_depth" in j["shardflow"], j
EOF
ok $? "the effective job is beside the checkpoints (keep 2, the layout, every setting)" ||
	diag_file "$tmp/job.check"

"$PY" - "$tmp/run1.jsonl" "$tmp/run1.jsonl.svg" <<'EOF' >"$tmp/metrics.check" 2>&1
import json, sys
import xml.etree.ElementTree as ET
steps = [json.loads(l)["step"] for l in open(sys.argv[1]) if l.strip()
         and json.loads(l).get("kind", "train") == "train"]
assert steps == list(range(1, 25)), steps
svg = ET.parse(sys.argv[2]).getroot()
ns = "{http://www.w3.org/2000/svg}"
lines = [p for p in svg.iter(ns + "polyline") if p.get("id") == "train-loss"
         or "train-loss" in (p.get("class") or "")]
assert lines, "no training-loss polyline"
pts = lines[0].get("points").split()
assert len(pts) == 24, len(pts)
EOF
ok $? "the metrics hold steps 1..24 once each across the restart; the loss SVG opens with 24 points" ||
	diag_file "$tmp/metrics.check"

[ -s "$tmp/export/model.safetensors" ] && [ -s "$tmp/export/config.json" ]
ok $? "the export and its config.json are written"

# the same weights in nanoGPT's layout for tests/gpt_logits (a run that trains nothing)
timeout -k 5 "$limit" sh "$RUN_MPI" 1 "$GPT" $shape --text "$text" --val-fraction 0.2 \
	--steps 1 --sample 0 --init "$tmp/export" --export-layout nanogpt \
	--export-init "$tmp/w.st" </dev/null >"$tmp/conv.out" 2>&1 || diag_file "$tmp/conv.out"
# shardflow's logits rounded to nearest, upward and downward: the float64 twin (with
# shardflow's formulas, tests/torch_gpt.sh) within that interval (docs/testing.md)
for r in "" up down; do
	# shellcheck disable=SC2086
	env ${r:+SHARDFLOW_ROUNDING=${r}ward} timeout -k 5 "$limit" sh "$RUN_MPI" 2 "$LOGITS" $shape \
		--batch 5 --index 3 --val-fraction 0.2 --text "$text" --init "$tmp/w.st" \
		--out "$tmp/d${r:+.$r}" </dev/null >"$tmp/d.out" 2>&1 || diag_file "$tmp/d.out"
done
# shellcheck disable=SC2086
"$PY" "$TWIN" logits $shape --batch 5 --index 3 --val-fraction 0.2 --text "$text" \
	--hf "$tmp/export" --double --dumps "$tmp/d" --dumps-up "$tmp/d.up" \
	--dumps-down "$tmp/d.down" >"$tmp/hf.cmp" 2>&1
ok $? "the export loads strictly in the twin's GPT2LMHeadModel from its config.json: logits = shardflow's ($(cat "$tmp/hf.cmp"))"

"$TRAIN" --job "$ck/job.json" --help >/dev/null 2>&1
ok $? "the effective job reloads as a job file (--help after it: exit 0)"
finish
