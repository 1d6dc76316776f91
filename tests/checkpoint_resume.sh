#!/bin/sh
# checkpoint_resume.sh — the one resume rule: any damage to dir/latest or to the
# newest step falls back to the newest valid complete step, with a warning naming the
# damage; only "no valid step" refuses. A manifest whose counters disagree is such
# damage, and a re-save clears what a damaged step left in its way.
#
# Proves, with tests/ckpt_driver on 2 ranks (a directory with steps 3 and 6, latest on
# step 6):
#  - latest garbage, empty, a directory, naming a missing step, or missing: the
#    resume loads step 6 (bitwise), warning with the damage and the step it took, and
#    sf_checkpoint_latest names step 6;
#  - latest garbage and step 6 damaged too: step 3 loads (bitwise), each warned;
#  - latest garbage and no complete step: refused (SF_ERR_IO), naming latest;
#  - a save into a directory whose latest is a directory clears it (latest then names
#    the new step);
#  - a save writes "info_steps_per_update": 1 (info.step counts the updates); step 6's
#    manifest with model_steps 5 (CRC-32 rewritten) is refused naming the counters, and
#    the resume falls back to step 3 (bitwise), as shardflow-ckpt verify agrees;
#  - step 6's manifest.json a directory: the resume falls back to step 3, and training
#    on re-saves step 6 at once (the old copy cleared, nothing left over), which loads
#    bitwise as the uninterrupted run's step 6.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
CKPT="$top_builddir/tools/shardflow-ckpt"
require_progs "$CKPT"

plan 18

same() { # NAME REF DESC: the parameters of run NAME are bitwise those of REF
	compare "$3" "$1" "$2" --bitwise
}
# damaged NAME: a copy of the reference directory as $tmp/NAME, for one kind of damage
damaged() {
	rm -rf "${tmp:?}/$1"
	cp -r "$tmp/ref" "$tmp/$1"
}

drv 2 ref --steps 6 --save "$tmp/ref" --save-every 3 --out-params "$tmp/ref6.dump"
drv 2 ref3 --steps 3 --out-params "$tmp/ref3.dump"

# --- every damage to latest: the newest complete step, with a warning ---------------------
damaged garbage
printf 'bits\001of\377something\n' >"$tmp/garbage/latest"
damaged empty
: >"$tmp/empty/latest"
damaged isdir
rm "$tmp/isdir/latest"
mkdir "$tmp/isdir/latest"
damaged dangling
echo step-000000009 >"$tmp/dangling/latest"
damaged missing
rm "$tmp/missing/latest"
while read -r name fault what; do
	drv 2 "l-$name" --steps 6 --latest "$tmp/$name" --resume "$tmp/$name" \
		--out-params "$tmp/l-$name.dump"
	"$DUMP_COMPARE" --bitwise "$tmp/l-$name.dump" "$tmp/ref6.dump" >/dev/null 2>&1 &&
		grep -q "^latest 1 $tmp/$name/step-000000006\$" "$tmp/l-$name.out" &&
		grep -q "warn: \[rank 0\] checkpoint $tmp/$name: $tmp/$name/latest$fault; falling back to the newest complete step, $tmp/$name/step-000000006" "$tmp/l-$name.err" &&
		[ "$(grep -c 'falling back to the newest complete step' "$tmp/l-$name.err")" -eq 1 ]
	ok $? "latest $what: step 6 loads (bitwise) with a warning naming the damage, once (sf_checkpoint_latest, then the load)" ||
		{ diag_file "$tmp/l-$name.out"; diag_file "$tmp/l-$name.err"; }
done <<EOF
garbage .holds."bits?of?something",.not."step-<digits>" garbage
empty .is.empty empty
isdir .is.a.directory,.not.a.file a directory
dangling .names.$tmp/dangling/step-000000009,.which.has.no.manifest.json.(a.half-written.or.removed.step) naming a missing step
missing :.missing missing
EOF

# --- latest and the newest step both damaged: the newest valid step -----------------------
damaged both
echo 'not a step' >"$tmp/both/latest"
printf 'X' | dd of="$tmp/both/step-000000006/rank-00001.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
drv 2 both --steps 3 --resume "$tmp/both" --out-params "$tmp/both.dump"
grep -q "latest holds \"not a step\"" "$tmp/both.err" &&
	grep -q "step-000000006 is damaged, trying the next complete step, .*step-000000003: .*CRC-32" "$tmp/both.err"
ok $? "latest garbage and step 6 corrupted: both warned" || diag_file "$tmp/both.err"
same both ref3 "... and step 3 loads (bitwise)"

# --- no valid step: refused ---------------------------------------------------------------
mkdir -p "$tmp/nostep"
echo garbage >"$tmp/nostep/latest"
drv 2 nostep --steps 3 --resume "$tmp/nostep" --resume-may-fail
refused nostep "^resume_refused -7: checkpoint $tmp/nostep: $tmp/nostep/latest holds \"garbage\", not \"step-<digits>\", and no step directory is complete" \
	"latest garbage and no complete step: refused (SF_ERR_IO), naming latest"

# --- a save clears a latest that is a directory -------------------------------------------
drv 2 isdir-save --steps 9 --resume "$tmp/isdir" --save "$tmp/isdir" --save-every 3 \
	--out-params "$tmp/isdir-save.dump"
[ $? -eq 0 ] && [ -f "$tmp/isdir/latest" ] && [ "$(cat "$tmp/isdir/latest")" = step-000000009 ]
ok $? "a save into a directory whose latest is a directory: cleared, latest names step 9" ||
	{ diag_file "$tmp/isdir-save.err"; find "$tmp/isdir" | sed 's/^/#   /'; }

# --- the manifest's counters --------------------------------------------------------------
m6="$tmp/ref/step-000000006/manifest.json"
grep -q '"model_steps": 6,' "$m6" && grep -q '"info_steps_per_update": 1,' "$m6" &&
	grep -q '"step": 6,' "$m6"
ok $? "a save records model_steps 6, info.step 6 and info_steps_per_update 1" || diag_file "$m6"
damaged counters
sed 's/"model_steps": 6,/"model_steps": 5,/' "$m6" >"$tmp/counters/step-000000006/manifest.json"
ckpt_reseal "$tmp/counters/step-000000006"
drv 2 counters --steps 3 --resume "$tmp/counters" --out-params "$tmp/counters.dump"
grep -q "step-000000006 is damaged, trying the next complete step, .*step-000000003: .*step-000000006/manifest.json: the counters disagree: info.step is 6, but model_steps 5 x info_steps_per_update 1 does not make it" "$tmp/counters.err"
ok $? "model_steps 5 with info.step 6 (CRC-32 rewritten): refused naming the counters" ||
	diag_file "$tmp/counters.err"
same counters ref3 "... and the resume falls back to step 3 (bitwise)"
"$CKPT" verify "$tmp/counters/step-000000006" >"$tmp/verify.out" 2>&1
[ $? -eq 1 ] && grep -q "the counters disagree" "$tmp/verify.out"
ok $? "shardflow-ckpt verify refuses it too" || diag_file "$tmp/verify.out"
damaged agree
sed 's/"model_steps": 6,/"model_steps": 5,/; s/"step": 6,/"step": 5,/' "$m6" \
	>"$tmp/agree/step-000000006/manifest.json"
ckpt_reseal "$tmp/agree/step-000000006"
"$CKPT" verify "$tmp/agree/step-000000006" >"$tmp/agree.out" 2>&1
ok $? "counters edited together (5 and 5) still agree: verify passes" || diag_file "$tmp/agree.out"

# --- a directory in a re-save's way -------------------------------------------------------
damaged mfdir
rm "$tmp/mfdir/step-000000006/manifest.json"
mkdir "$tmp/mfdir/step-000000006/manifest.json"
drv 2 mfdir --steps 6 --resume "$tmp/mfdir" --save "$tmp/mfdir" --save-every 3 \
	--out-params "$tmp/mfdir.dump"
st=$?
[ $st -eq 0 ] && grep -q '^resumed step 3 ' "$tmp/mfdir.out" &&
	grep -q "step-000000006 is damaged, trying the next complete step" "$tmp/mfdir.err"
ok $? "step 6's manifest.json a directory: step 3 resumed with a warning (exit $st)" ||
	{ diag_file "$tmp/mfdir.out"; diag_file "$tmp/mfdir.err"; }
same mfdir ref6 "... training on to step 6 gives the uninterrupted run's parameters (bitwise)"
[ "$(cat "$tmp/mfdir/latest")" = step-000000006 ] &&
	[ -f "$tmp/mfdir/step-000000006/manifest.json" ] &&
	[ -z "$(find "$tmp/mfdir" -name '*.tmp' -o -name '*.old')" ]
ok $? "... its re-save of step 6 cleared the damaged copy: latest on step 6, nothing left over" ||
	find "$tmp/mfdir" | sed 's/^/#   /'
drv 2 mfdir-6 --steps 6 --resume "$tmp/mfdir/step-000000006" --out-params "$tmp/mfdir-6.dump"
same mfdir-6 ref6 "... and the re-saved step 6 loads (bitwise)"
finish
