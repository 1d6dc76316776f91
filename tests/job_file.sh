#!/bin/sh
# job_file.sh — shardflow-train's job file (examples/job.h) behaves as its usage and
# docs/training.md say.
#
# 1-2. A run from a job file equals the same options on the command line, bitwise
#      (every step's loss, 2 ranks), and its start-up line names the file.
# 3.   The command line overrides the file (--steps 3 over the file's 6: 3 losses).
# 4.   The file's "shardflow" settings reach the run (sharding grad_op, prefetch
#      depth 1 in the settings line), and the environment's SHARDFLOW_* override
#      them (SHARDFLOW_PREFETCH_DEPTH=2).
# 5-6. The run writes its effective job beside its checkpoints (<dir>/job.json: the
#      options it was given, every setting, the layout), and that file, given back as
#      a job, reproduces the run bitwise.
# 7-13. Mistakes: an unknown section, an option in no section of that name, a flag
#      given a number, a value option given true, malformed JSON (its line and
#      column), a bad setting (named as shardflow.<key> with sf_config_set's reason),
#      a missing file, --job without a value: exit 2, two lines (the mistake, then
#      --help), nothing trained.
. "$(dirname "$0")/lib.sh"

TRAIN="$top_builddir/tools/shardflow-train"
require_progs "$TRAIN"
limit=${SF_TEST_TIMEOUT:-180}

plan 14

# a small text: every run trains the same bytes
i=0
while [ $i -lt 200 ]; do
	echo "It is a truth universally acknowledged, that a single man in possession of a good fortune"
	i=$((i + 1))
done >"$tmp/t.txt"

model='"layers": 1, "heads": 2, "embd": 16, "context": 8'
cat >"$tmp/job.json" <<EOF
{
  "model": {$model},
  "training": {"batch": 4, "steps": 6, "lr": 0.001, "warmup": 2},
  "data": {"text": "$tmp/t.txt", "progress-every": 1, "eval-every": 100, "eval-batches": 1},
  "checkpoints": {"loss-log": "$tmp/job.loss"},
  "generation": {"sample": 0}
}
EOF
flags="--layers 1 --heads 2 --embd 16 --context 8 --batch 4 --steps 6 --lr 0.001 --warmup 2
--text $tmp/t.txt --progress-every 1 --eval-every 100 --eval-batches 1 --sample 0"

# run NAME NP [VAR=VALUE...] -- ARGS...: $tmp/NAME.out, .err; exit status in $st
run() {
	_name=$1 _np=$2
	shift 2
	_env=
	while [ "$1" != "--" ]; do
		_env="$_env $1"
		shift
	done
	shift
	# shellcheck disable=SC2086
	env $_env timeout -k 5 "$limit" sh "$RUN_MPI" "$_np" "$TRAIN" "$@" </dev/null \
		>"$tmp/$_name.out" 2>"$tmp/$_name.err"
	st=$?
}

run job 2 -- --job "$tmp/job.json"
ok $st "2 ranks from a job file: exit 0 (exit $st)" || diag_file "$tmp/job.err"
# shellcheck disable=SC2086
run flags 2 -- $flags --loss-log "$tmp/flags.loss"
[ $st -eq 0 ] && [ "$(grep -c . "$tmp/job.loss")" -eq 6 ] && cmp -s "$tmp/job.loss" "$tmp/flags.loss" &&
	grep -q "job file $tmp/job.json" "$tmp/job.err"
ok $? "the job file's run = the same options on the command line, bitwise (6 losses), its file named" ||
	{ diag_file "$tmp/job.loss"; diag_file "$tmp/flags.loss"; }

run over 1 -- --job "$tmp/job.json" --steps 3 --loss-log "$tmp/over.loss"
[ $st -eq 0 ] && [ "$(grep -c . "$tmp/over.loss")" -eq 3 ]
ok $? "the command line overrides the file: --steps 3 over its 6 gives 3 losses" ||
	diag_file "$tmp/over.err"

sed 's|"generation": {"sample": 0}|"generation": {"sample": 0},\n  "shardflow": {"SHARDFLOW_SHARDING": "grad_op", "prefetch_depth": 1}|' \
	"$tmp/job.json" >"$tmp/set.json"
run set 1 -- --job "$tmp/set.json" --steps 1
run setenv 1 SHARDFLOW_PREFETCH_DEPTH=2 -- --job "$tmp/set.json" --steps 1
grep -q "prefetch_depth=1 .*sharding=grad_op" "$tmp/set.err" &&
	grep -q "prefetch_depth=2 .*sharding=grad_op" "$tmp/setenv.err"
ok $? "the file's settings reach the run, and SHARDFLOW_PREFETCH_DEPTH=2 overrides its depth 1" ||
	{ diag_file "$tmp/set.err"; diag_file "$tmp/setenv.err"; }

run eff 2 -- --job "$tmp/set.json" --checkpoint-dir "$tmp/ck" --loss-log "$tmp/eff.loss" \
	--metrics "$tmp/eff.jsonl"
python3 - "$tmp/ck/job.json" <<'EOF' >"$tmp/eff.check" 2>&1
import json, sys
j = json.load(open(sys.argv[1]))
assert j["model"] == {"layers": "1", "heads": "2", "embd": "16", "context": "8"}, j["model"]
assert j["training"]["steps"] == "6" and j["training"]["lr"] == "0.001", j["training"]
assert j["checkpoints"]["checkpoint-dir"].endswith("/ck"), j["checkpoints"]
assert j["shardflow"]["sharding"] == "grad_op" and j["shardflow"]["prefetch_depth"] == "1"
assert "comm_timeout" in j["shardflow"] and j["layout"] == "dp 2 x tp 1", j
EOF
[ $? -eq 0 ] && cmp -s "$tmp/ck/job.json" "$tmp/eff.jsonl.job.json"
ok $? "the run writes its effective job in its checkpoint directory (options, every setting, layout), and beside its metrics" ||
	{ diag_file "$tmp/eff.check"; diag_file "$tmp/eff.err"; }
run again 2 -- --job "$tmp/ck/job.json" --checkpoint-dir "$tmp/ck2" --loss-log "$tmp/again.loss"
[ $st -eq 0 ] && [ "$(grep -c . "$tmp/again.loss")" -eq 6 ] && cmp -s "$tmp/eff.loss" "$tmp/again.loss"
ok $? "the effective job, given back, reproduces the run bitwise" || diag_file "$tmp/again.err"

# bad WORD FILE-TEXT [ARGS...]: exit 2, two lines naming WORD and --help, no step
bad() {
	_word=$1 _text=$2
	shift 2
	printf '%s\n' "$_text" >"$tmp/bad.json"
	timeout -k 5 "$limit" "$TRAIN" "$@" </dev/null >"$tmp/bad.out" 2>"$tmp/bad.err"
	_st=$?
	[ $_st -eq 2 ] && grep -F -e "$_word" "$tmp/bad.err" >/dev/null &&
		grep -i "^usage: .*--help" "$tmp/bad.err" >/dev/null &&
		[ "$(wc -l <"$tmp/bad.err")" -eq 2 ] && ! grep -q '^step' "$tmp/bad.out"
	ok $? "$_word: exit 2 (exit $_st), two lines" || diag_file "$tmp/bad.err"
}
bad '"optim" is not a section' '{"optim": {"lr": 1}}' --job "$tmp/bad.json"
bad 'model.lr is not an option of section model: its options are arch, layers' \
	'{"model": {"lr": 1}}' --job "$tmp/bad.json"
bad 'model.untied is a flag: true or false' '{"model": {"untied": 1}}' --job "$tmp/bad.json"
bad 'training.lr is true or false, but --lr takes a value' '{"training": {"lr": true}}' \
	--job "$tmp/bad.json"
bad '(line 2, column' '{"model":
 {"layers": }}' --job "$tmp/bad.json"
bad 'shardflow.prefetch_depth:' '{"shardflow": {"prefetch_depth": "deep"}}' --job "$tmp/bad.json"
bad "job file $tmp/none.json" '{}' --job "$tmp/none.json"
bad 'option --job needs a value' '{}' --job
finish
