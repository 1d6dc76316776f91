#!/bin/sh
# pipeline_ckpt.sh — checkpoints under a pipeline (SHARDFLOW_PP=S, issue 49 item 4):
# each stage's ranks write its units' files (the manifest's pp and each unit's stage),
# and a checkpoint of any pp x dp loads at any other. tests/ckpt_driver (step k trains
# on synthetic batch k, so a resumed run sees the batches the uninterrupted one did),
# deep (7 linear units: stages of 3 and 4) with AdamW, whose moments travel with the
# weights, and llama (2 attention blocks, an untied head) with SGD. Checked:
#  - the manifest of pp 2 x dp 2: format version 3, pp 2, 4 files, each unit's stage
#    (deep's first 3 units stage 0, the other 4 stage 1), and rank file r of stage
#    r / 2 holding only its stage's units (its size: the header and those units'
#    slices);
#  - pp 2 x dp 2 resumed at pp 2 x dp 2 = uninterrupted, bitwise (the same sums);
#  - resumed at pp 1 x dp 4, on 1 rank and at pp 2 x dp 1: losses and parameters within
#    the uninterrupted pp 2 x dp 2 run's rounding interval (that run again rounded
#    upward and downward: docs/testing.md); 1 rank's checkpoint resumed at pp 2 x dp 2
#    within the uninterrupted 1-rank run's;
#  - examples/gpt --arch llama (an untied head): pp 2 on 2 ranks for steps 1-2 with a
#    checkpoint, resumed at pp 2 x dp 2 on 4 ranks for steps 3-4, evaluating at steps
#    2 and 4: every step's loss and both val_loss (--metrics, 9 digits) within the
#    uninterrupted 1-rank run's rounding interval (the evaluation goes through the
#    stages; each dp place's rows counted once, though every stage's rank returns them);
#  - the same pp 2 run saving asynchronously writes the synchronous save's step files,
#    byte for byte (diff -r);
#  - shardflow-ckpt reads it: info gives the layout (pp 2 x dp 2), verify passes, and
#    export writes its weights byte for byte as the pp 2 model's own
#    sf_model_export_safetensors at that step.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
TOOL="$top_builddir/tools/shardflow-ckpt"
require_progs "$TOOL"

plan 15

# within DESC A B: A's dump within B's rounding interval (B.up, B.down beside it)
within() {
	"$DUMP_COMPARE" --up "$tmp/$3.up.dump" --down "$tmp/$3.down.dump" "$tmp/$2.dump" \
		"$tmp/$3.dump" >"$tmp/cmp.out" 2>&1
	ok $? "$1 (within $3's rounding interval)"
	sed 's/^/#   /' "$tmp/cmp.out"
}


for m in "deep adamw" "llama sgd"; do
	set -- $m
	model=$1
	opt=$2
	a="--model $model --optimizer $opt --batch 8"
	ck="$tmp/ck-$model"
	rm -rf "$ck" "$ck.1"
	# shellcheck disable=SC2086
	ckpt_ref 4 "u22-$model" SHARDFLOW_PP=2 $a --steps 4
	# shellcheck disable=SC2086
	drv 4 "s22-$model" SHARDFLOW_PP=2 $a --steps 2 --save "$ck" --save-every 2 \
		--export "$tmp/s22-$model.st"
	# shellcheck disable=SC2086
	drv 4 "r22-$model" SHARDFLOW_PP=2 $a --steps 4 --resume "$ck" --out "$tmp/r22-$model.dump"
	compare "$model, $opt: pp 2 x dp 2 resumed at pp 2 x dp 2 = uninterrupted, bitwise" \
		"r22-$model" "u22-$model" --bitwise
	# shellcheck disable=SC2086
	drv 4 "r14-$model" $a --steps 4 --resume "$ck" --out "$tmp/r14-$model.dump"
	within "$model, $opt: pp 2 x dp 2 resumed at pp 1 x dp 4" "r14-$model" "u22-$model"
	# shellcheck disable=SC2086
	drv 1 "r1-$model" $a --steps 4 --resume "$ck" --out "$tmp/r1-$model.dump"
	within "$model, $opt: pp 2 x dp 2 resumed on 1 rank" "r1-$model" "u22-$model"
	# shellcheck disable=SC2086
	drv 2 "r21-$model" SHARDFLOW_PP=2 $a --steps 4 --resume "$ck" --out "$tmp/r21-$model.dump"
	within "$model, $opt: pp 2 x dp 2 resumed at pp 2 x dp 1" "r21-$model" "u22-$model"
	# 1 rank's checkpoint at pp 2 x dp 2
	# shellcheck disable=SC2086
	ckpt_ref 1 "u1-$model" $a --steps 4
	# shellcheck disable=SC2086
	drv 1 "s1-$model" $a --steps 2 --save "$ck.1" --save-every 2
	# shellcheck disable=SC2086
	drv 4 "q22-$model" SHARDFLOW_PP=2 $a --steps 4 --resume "$ck.1" --out "$tmp/q22-$model.dump"
	within "$model, $opt: 1 rank's checkpoint resumed at pp 2 x dp 2" "q22-$model" "u1-$model"
	# the tool reads the stages' files: verified, and the weights the model exported
	"$TOOL" info "$ck" >"$tmp/verify.out" 2>&1 &&
		grep -q "^layout: 4 ranks, pp 2 x dp 2, sharding full, 4 rank files" "$tmp/verify.out" &&
		"$TOOL" verify "$ck" >>"$tmp/verify.out" 2>&1 &&
		"$TOOL" export "$ck" --out "$tmp/tool-$model.st" >>"$tmp/verify.out" 2>&1 &&
		cmp "$tmp/tool-$model.st" "$tmp/s22-$model.st" >>"$tmp/verify.out" 2>&1
	ok $? "$model: shardflow-ckpt's info and verify of pp 2's checkpoint; export = the model's" ||
		diag_file "$tmp/verify.out"
done

# deep's manifest at pp 2 x dp 2 (AdamW: 3 vectors a unit): its 7 units cut after the
# third (tests/pipeline.sh), each file the header and its stage's units' halves
mf="$tmp/ck-deep/step-000000002/manifest.json"
python3 - "$mf" "$tmp/ck-deep/step-000000002" >"$tmp/mf.out" 2>&1 <<'EOF'
import json, os, sys
m = json.load(open(sys.argv[1]))
stages = [u["stage"] for u in m["units"]]
assert m["version"] == 3 and m["pp"] == 2 and m["world_size"] == 4 and m["ranks"] == 4, m
assert stages == [0, 0, 0, 1, 1, 1, 1], stages
for f in range(4):
    s, j = divmod(f, 2)
    want = 24 + sum(-(-u["P"] // 2) * 3 * 4 for u in m["units"] if u["stage"] == s)
    size = os.path.getsize(os.path.join(sys.argv[2], "rank-%05d.bin" % f))
    assert size == want == m["files"][f]["size"], (f, size, want)
print("stages", stages)
EOF
ok $? "deep pp 2 x dp 2: manifest version 3, pp 2, 4 files, each stage's units in its 2 files" ||
	diag_file "$tmp/mf.out"
sed 's/^/#   /' "$tmp/mf.out"

# examples/gpt under a pipeline: checkpoints, resume at another layout, evaluation
GPT="$top_builddir/examples/gpt"
text="$tmp/corpus.txt"
sf_corpus "$text"
g="--arch llama --layers 2 --heads 4 --embd 32 --context 32 --batch 8 --text $text --sample 0
--eval-every 2 --eval-batches 1 --progress-every 1 --lr 0.004 --warmup 2 --steps 4"
# gpt NP NAME [VAR=VALUE...] ARGS...: examples/gpt, its output in NAME.*, metrics NAME.m
gpt() {
	_np=$1 _name=$2
	shift 2
	_env=
	while [ $# -gt 0 ]; do
		case $1 in SHARDFLOW_*=*) _env="$_env $1"; shift ;; *) break ;; esac
	done
	# shellcheck disable=SC2086
	env $_env sh "$RUN_MPI" "$_np" "$GPT" $g --loss-log "$tmp/$_name.loss" \
		--metrics "$tmp/$_name.m" "$@" </dev/null >"$tmp/$_name.out" 2>"$tmp/$_name.err" ||
		{ diag "$_name failed"; diag_file "$tmp/$_name.err"; return 1; }
	# "<step> <loss>" lines, then "val <step> <val_loss>"
	sed -n 's/.*"step": *\([0-9]*\).*"val_loss": *\([-0-9.e+]*\).*/val \1 \2/p' \
		"$tmp/$_name.m" >>"$tmp/$_name.loss"
}
d="$tmp/ck-gpt"
rm -rf "$d"
for r in "" up down; do
	gpt 1 "gu${r:+.$r}" ${r:+SHARDFLOW_ROUNDING=${r}ward}
done
gpt 2 gp2 SHARDFLOW_PP=2 --max-steps 2 --checkpoint-dir "$d" &&
	gpt 4 gp22 SHARDFLOW_PP=2 --checkpoint-dir "$d" --resume &&
	cat "$tmp/gp2.loss" "$tmp/gp22.loss" | sort -k1,1 >"$tmp/gchain.loss" &&
	sort -k1,1 "$tmp/gu.loss" >"$tmp/gu.s" && sort -k1,1 "$tmp/gu.up.loss" >"$tmp/gu.up.s" &&
	sort -k1,1 "$tmp/gu.down.loss" >"$tmp/gu.down.s" &&
	[ "$(grep -c '^val' "$tmp/gchain.loss")" -eq 2 ] &&
	[ "$(grep -c . "$tmp/gchain.loss")" -eq 6 ] &&
	values_within "$tmp/gchain.loss" "$tmp/gu.s" "$tmp/gu.up.s" "$tmp/gu.down.s" . \
		>"$tmp/gw.out"
ok $? "gpt --arch llama: pp 2 (steps 1-2) -> pp 2 x dp 2 (3-4): losses and val_loss = 1 rank (within its rounding interval)" ||
	{ diag_file "$tmp/gchain.loss"; diag_file "$tmp/gu.s"; }
diag_file "$tmp/gw.out"
# the asynchronous save of the same run: its step's files are the synchronous one's
rm -rf "$d.async"
gpt 2 gpa SHARDFLOW_PP=2 --max-steps 2 --checkpoint-dir "$d.async" --checkpoint-async &&
	diff -r "$d/step-000000002" "$d.async/step-000000002" >"$tmp/adiff.out" 2>&1
ok $? "gpt --arch llama at pp 2: --checkpoint-async writes the synchronous save's files, byte for byte" ||
	diag_file "$tmp/adiff.out"
finish
