#!/bin/sh
# checkpoint_fallback.sh — a resume takes the newest valid step: a damaged newest step
# makes the load fall back to the next older complete one, with a warning naming what
# was wrong; only when no step is valid is it refused, listing each step's fault. And
# the examples refuse a checkpoint whose training position (info.*) does not fit the
# run and its data set, even when its manifest's checksum matches.
#
# Proves, with tests/ckpt_driver on 2 ranks (a directory with steps 3 and 6):
#  - step 6's rank-00001.bin corrupted (only rank 1 reads it): the resume warns naming
#    the file and its CRC-32, loads step 3 on both ranks, and training on to step 9
#    gives bitwise the parameters of 9 uninterrupted steps; its save of step 6 replaces
#    the damaged copy (step 6 loads again, bitwise);
#  - each kind of damage to the newest step — an edited manifest (its CRC-32), a
#    manifest that is not JSON (resealed), a rank file missing, one truncated — falls
#    back to step 3 (bitwise) with a warning naming the fault;
#  - every step damaged: refused (SF_ERR_IO), the message naming each step and its
#    fault, and the model untouched (trained from scratch it equals the plain run);
#  - no fallback where it would hide a mistake: the newest step written by another
#    model is refused at once (SF_ERR_INVALID), and a damaged step directory given
#    itself is refused (it is that step or nothing);
# and with the examples:
#  - examples/gpt, its newest step (40) corrupted: --resume continues from step 20 with
#    the warning and exports bitwise the weights of the uninterrupted 40 steps;
#  - examples/gpt refuses, naming the field, its value and the accepted range, a step
#    whose manifest (CRC-32 rewritten) says info.batch 1000000000, info.epoch 3, or
#    info.step 5000 beyond --steps;
#  - examples/fashion_mnist (skipped without Debian's data set) likewise refuses
#    info.batch 1000000000 (an epoch has 937 batches of 64), info.epoch 11 of 10 and an
#    info.step that its epoch and batch do not make.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
GPT="$top_builddir/examples/gpt"
FM="$top_builddir/examples/fashion_mnist"
require_progs "$GPT" "$FM"

plan 19

same() { # NAME REF DESC: the parameters of run NAME are bitwise those of REF
	compare "$3" "$1" "$2" --bitwise
}
# damaged NAME: a copy of the reference directory as $tmp/NAME, for one kind of damage
damaged() {
	rm -rf "${tmp:?}/$1"
	cp -r "$tmp/ref" "$tmp/$1"
}
# flip FILE: one byte of FILE changed (its size kept)
flip() {
	printf 'X' | dd of="$1" bs=1 seek=100 conv=notrunc 2>/dev/null
}

drv 2 ref --steps 6 --save "$tmp/ref" --save-every 3 --out-params "$tmp/ref6.dump"
drv 2 ref3 --steps 3 --out-params "$tmp/ref3.dump"
drv 2 ref9 --steps 9 --out-params "$tmp/ref9.dump"

# --- the newest step damaged: back to step 3, and on ------------------------------------
damaged rank1
flip "$tmp/rank1/step-000000006/rank-00001.bin"
drv 2 rank1 --steps 9 --resume "$tmp/rank1" --save "$tmp/rank1" --save-every 3 \
	--out-params "$tmp/rank1.dump"
grep -q '^resumed step 3 ' "$tmp/rank1.out" &&
	grep -q "warn: \[rank 0\] checkpoint $tmp/rank1/step-000000006 is damaged, trying the next complete step, $tmp/rank1/step-000000003: .*rank-00001.bin: CRC-32 is [0-9a-f]*, the manifest says [0-9a-f]* (corrupted)" "$tmp/rank1.err"
ok $? "step 6's rank-00001.bin corrupted: a warning naming it and its CRC-32, step 3 loaded" ||
	{ diag_file "$tmp/rank1.out"; diag_file "$tmp/rank1.err"; }
same rank1 ref9 "... and training on to step 9 gives the uninterrupted run's parameters (bitwise)"
drv 2 rank1-6 --steps 6 --resume "$tmp/rank1/step-000000006" --out-params "$tmp/rank1-6.dump"
same rank1-6 ref6 "... its save of step 6 replaced the damaged copy (which loads, bitwise)"

good="$tmp/ref/step-000000006"
damaged crc
sed 's/"epoch": 0/"epoch": 1/' "$good/manifest.json" >"$tmp/crc/step-000000006/manifest.json"
damaged json
echo '{"format": ' >"$tmp/json/step-000000006/manifest.json"
ckpt_reseal "$tmp/json/step-000000006"
damaged missing
rm "$tmp/missing/step-000000006/rank-00000.bin"
damaged truncated
truncate -s 100 "$tmp/truncated/step-000000006/rank-00001.bin"
while read -r name fault what; do
	drv 2 "fb-$name" --steps 3 --resume "$tmp/$name" --out-params "$tmp/fb-$name.dump"
	"$DUMP_COMPARE" --bitwise "$tmp/fb-$name.dump" "$tmp/ref3.dump" >/dev/null 2>&1 &&
		grep -q "step-000000006 is damaged, trying the next complete step, .*step-000000003: .*$fault" "$tmp/fb-$name.err"
	ok $? "$what: step 3 loads (bitwise) with a warning naming the fault" ||
		{ diag_file "$tmp/fb-$name.out"; diag_file "$tmp/fb-$name.err"; }
done <<EOF
crc manifest.json:.CRC-32.is.*manifest.crc32.says an edited manifest
json manifest.json:.not.valid.JSON a manifest that is not JSON (CRC-32 rewritten)
missing cannot.stat.*step-000000006/rank-00000.bin a missing rank file
truncated rank-00001.bin.is.100.bytes,.the.manifest.says a truncated rank file
EOF

# --- no valid step ------------------------------------------------------------------------
damaged none
flip "$tmp/none/step-000000006/rank-00001.bin"
rm "$tmp/none/step-000000003/rank-00000.bin"
drv 2 none --steps 3 --resume "$tmp/none" --resume-may-fail --out-params "$tmp/none.dump"
refused none "^resume_refused -7: sf_checkpoint_load: no valid checkpoint in $tmp/none: each of its 2 complete steps failed its checks: step-000000006: .*rank-00001.bin: CRC-32 is .*; step-000000003: .*cannot stat .*step-000000003/rank-00000.bin" \
	"every step damaged: refused (SF_ERR_IO), naming each step's fault"
same none ref3 "... and the model is untouched (3 steps from scratch = the plain run, bitwise)"

# --- no fallback past a mistake ----------------------------------------------------------
drv 2 other --model uneven --steps 6 --save "$tmp/other" --save-every 6 >/dev/null
damaged mixed
rm -rf "$tmp/mixed/step-000000006"
cp -r "$tmp/other/step-000000006" "$tmp/mixed/"
drv 2 mixed --steps 3 --resume "$tmp/mixed" --resume-may-fail
refused mixed "^resume_refused -1: .*step-000000006/manifest.json: checkpoint was written for another model" \
	"the newest step written by another model: refused at once (SF_ERR_INVALID)"
! grep -q "is damaged" "$tmp/mixed.err"
ok $? "... without falling back to step 3" || diag_file "$tmp/mixed.err"
drv 2 stepdir --steps 6 --resume "$tmp/none/step-000000006" --resume-may-fail
refused stepdir "^resume_refused -7: .*rank-00001.bin: CRC-32 is" \
	"a damaged step directory given itself is refused (that step or nothing)"

# --- the examples -------------------------------------------------------------------------
text="$tmp/corpus.txt"
sf_corpus "$text"
g="--layers 2 --heads 2 --embd 32 --context 32 --batch 8 --text $text --val-fraction 0.2 --eval-every 20 --eval-batches 1 --sample 0 --steps 40"
# gpt NAME ARGS...: examples/gpt on 2 ranks, output in $tmp/NAME.{out,err}
gpt() {
	_n=$1
	shift
	# shellcheck disable=SC2086
	run_mpi 2 "$GPT" $g "$@" >"$tmp/$_n.out" 2>"$tmp/$_n.err"
}
gpt straight --checkpoint-dir "$tmp/g" --checkpoint-every 20 --export "$tmp/straight.st" ||
	diag_file "$tmp/straight.err"
cp -r "$tmp/g" "$tmp/g-pos"
flip "$tmp/g/step-000000040/rank-00000.bin"
gpt back --checkpoint-dir "$tmp/g" --resume --export "$tmp/back.st"
st=$?
[ $st -eq 0 ] && grep -q "step-000000040 is damaged, trying the next complete step, $tmp/g/step-000000020: .*rank-00000.bin: CRC-32 is" "$tmp/back.err" &&
	grep -q "resumed from $tmp/g at step 20" "$tmp/back.err" && cmp -s "$tmp/straight.st" "$tmp/back.st"
ok $? "gpt, step 40 corrupted: resumed from step 20 with the warning, and exports the uninterrupted run's weights (bitwise)" ||
	diag_file "$tmp/back.err"

# position DIR FIELD SED: DIR holds only step 20 of the gpt run, its manifest edited by
# SED and its CRC-32 rewritten (model_steps edited with info.step: counters that
# disagree are the library's refusal, tests/checkpoint_resume.sh; these are the
# example's)
rm -rf "$tmp/g-pos/step-000000040" "$tmp/g-pos/latest"
pos="$tmp/g-pos/step-000000020"
cp "$pos/manifest.json" "$tmp/g-pos.manifest"
while IFS='|' read -r edit pattern what; do
	sed "$edit" "$tmp/g-pos.manifest" >"$pos/manifest.json"
	ckpt_reseal "$pos"
	gpt pos --checkpoint-dir "$tmp/g-pos" --resume
	st=$?
	[ $st -eq 1 ] && grep -qF "gpt: $tmp/g-pos: $pattern" "$tmp/pos.err" && ! grep -q "^step " "$tmp/pos.out"
	ok $? "gpt: $what: refused, naming the field, its value and the range (exit $st)" ||
		diag_file "$tmp/pos.err"
done <<'EOF'
s/"batch": 20/"batch": 1000000000/|info.batch is 1000000000, accepted 20..20 (info.step|info.batch 1000000000 (checksum rewritten)
s/"epoch": 0/"epoch": 3/|info.epoch is 3, accepted 0..0 (|info.epoch 3
s/"step": 20/"step": 5000/;s/"batch": 20/"batch": 5000/;s/"model_steps": 20,/"model_steps": 5000,/|info.step is 5000, accepted 0..40 (--steps)|info.step 5000 beyond --steps 40
EOF

data=/usr/share/datasets/fashion-mnist
if [ -f "$data/train-images-idx3-ubyte.gz" ]; then
	fm="--widths 784,32,10 --batch 64 --epochs 10"
	run_mpi 2 "$FM" $fm --max-steps 5 --checkpoint-dir "$tmp/fm" >"$tmp/fm.out" 2>"$tmp/fm.err" ||
		diag_file "$tmp/fm.err"
	fpos="$tmp/fm/step-000000005"
	cp "$fpos/manifest.json" "$tmp/fm.manifest"
	while IFS='|' read -r edit pattern what; do
		sed "$edit" "$tmp/fm.manifest" >"$fpos/manifest.json"
		ckpt_reseal "$fpos"
		run_mpi 2 "$FM" $fm --max-steps 10 --checkpoint-dir "$tmp/fm" --resume \
			>"$tmp/fpos.out" 2>"$tmp/fpos.err"
		st=$?
		[ $st -eq 1 ] && grep -qF "fashion_mnist: $tmp/fm: $pattern" "$tmp/fpos.err" &&
			! grep -q "^epoch .* step " "$tmp/fpos.out"
		ok $? "fashion_mnist: $what: refused, naming the field, its value and the range (exit $st)" ||
			diag_file "$tmp/fpos.err"
	done <<'EOF'
s/"batch": 5/"batch": 1000000000/|info.batch is 1000000000, accepted 0..936 (60000 training images make 937 batches of 64 an epoch)|info.batch 1000000000 (checksum rewritten)
s/"epoch": 0/"epoch": 11/|info.epoch is 11, accepted 0..10 (--epochs)|info.epoch 11 of 10
s/"step": 5/"step": 6/;s/"model_steps": 5,/"model_steps": 6,/|info.step is 6, accepted 5..5 (epoch 0, batch 5|info.step 6 at epoch 0, batch 5
EOF
else
	for w in info.batch info.epoch info.step; do
		skip "fashion_mnist refuses an out-of-range $w" "Debian's dataset-fashion-mnist is not installed"
	done
fi
finish
