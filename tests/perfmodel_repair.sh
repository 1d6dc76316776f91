#!/bin/sh
# perfmodel_repair.sh — a StarPU performance model cut short (a rank killed while
# StarPU rewrote it at shutdown: a job ending on one rank's error kills the others)
# does not break every later run on the machine.
#
# StarPU 1.3 truncates a history model and rewrites it at starpu_shutdown, and its
# reader asserts on a file cut short. shardflow calibrates by default, so any killed
# job could leave such a file; sf_init moves it aside (<file>.corrupt, with a
# warning) before StarPU starts, and StarPU calibrates that codelet anew. Checked
# here: a model cut in the middle of a line, and one cut at a line boundary (rows
# missing from its table), each followed by a run that succeeds, warns naming the
# file, moves it aside and writes a whole model again; whole models are left alone.
. "$(dirname "$0")/lib.sh"
require_progs "$MLP"

plan 8

STARPU_HOME="$tmp/home"
export STARPU_HOME
mkdir -p "$STARPU_HOME"
run() {
	"$MLP" --steps 3 --widths 16,32,10 --batch 8 >"$tmp/out" 2>"$tmp/err"
}
run
dir=$(dirname "$(find "$STARPU_HOME" -name 'sf_linear_fwd.*' | head -1)")
model=$(find "$STARPU_HOME" -name 'sf_linear_fwd.*' | head -1)
[ -n "$model" ] && [ -s "$model" ] && grep -q "number of entries" "$model"
ok $? "a first run records the models (here: $(basename "${model:-none}"))" || diag_file "$tmp/err"
nbefore=$(ls "$dir" | grep -vc '\.corrupt$')

# cut mid-line
size=$(wc -c <"$model")
head -c $((size * 2 / 3)) "$model" >"$tmp/cut" && cp "$tmp/cut" "$model"
tail -c 1 "$model" | od -c | grep -q '\\n'
[ $? -ne 0 ]
ok $? "the model is cut in the middle of a line ($((size * 2 / 3)) of $size bytes)"
run
st=$?
[ $st -eq 0 ] && grep -q "StarPU performance model .*sf_linear_fwd.* was cut short" "$tmp/err" &&
	[ -f "$model.corrupt" ]
if ! ok $? "the next run succeeds (exit $st), warns naming the file and moves it aside"; then
	diag_file "$tmp/err"
fi
[ -s "$model" ] && tail -c 1 "$model" | od -c | grep -q '\\n' && [ "$(wc -c <"$model")" -gt $((size / 2)) ]
ok $? "StarPU wrote a whole model again"

# cut at a line boundary: rows missing from the table
rm -f "$model.corrupt"
lines=$(wc -l <"$model")
head -n $((lines - 3)) "$model" >"$tmp/cut" && cp "$tmp/cut" "$model"
run
st=$?
[ $st -eq 0 ] && grep -q "was cut short" "$tmp/err" && [ -f "$model.corrupt" ]
if ! ok $? "rows missing at a line boundary: found too (exit $st)"; then
	diag_file "$tmp/err"
fi
run
st=$?
[ $st -eq 0 ] && ! grep -q "cut short" "$tmp/err"
ok $? "whole models are left alone: no warning on the next run (exit $st)"
nafter=$(ls "$dir" | grep -vc '\.corrupt$')
[ "$nafter" -eq "$nbefore" ]
ok $? "every model is in place ($nafter files, $nbefore after the first run)"
n=$(ls "$dir" | grep -c '\.corrupt$')
[ "$n" -eq 1 ]
ok $? "only the cut model was moved aside ($n file)"
finish
