#!/bin/sh
# checkpoint_safety.sh — checkpoints survive kills at any point of a save, re-saves
# included, their manifest is checksummed and range-checked, and one directory has one
# writer at a time.
#
# Proves, with tests/ckpt_driver (its --crash MODE kills the process at a given rename
# of the save: deterministic, no timing):
#  - a first save killed after its manifest, before latest exists, resumes (the newest
#    complete step is taken); so does a step directory without latest, and a latest
#    naming a step without manifest falls back to the newest complete one;
#  - a directory holding no checkpoint (missing, empty, or only a save killed before
#    its manifest) is "no checkpoint yet": sf_checkpoint_latest finds none, and
#    sf_checkpoint_load says SF_ERR_NOT_FOUND (-9);
#  - re-saving the step latest names with another state (every value differs), killed
#    at each point (rank files, manifest, switch — old step-N moved aside, step-N.tmp
#    not yet renamed — latest), leaves a checkpoint that resumes bitwise as the old
#    state before the new manifest exists and as the new one after; a later save
#    finishes a switch that was cut short and leaves no staging or old copy;
#  - an edited manifest is refused by its CRC-32 (manifest.crc32); with the CRC-32
#    rewritten, model_steps = INT64_MAX, a negative epoch and a batch of 2^53 are
#    refused by the range checks; a version-2 manifest without manifest.crc32 is
#    refused; a version-1 checkpoint (older shardflow, no checksum) still loads;
#  - while another process holds dir/.lock, a save is refused naming the directory
#    and the holder's pid, and writes nothing; once released, the save succeeds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"

# same NAME REF DESC: the parameters run NAME loaded are bitwise those of REF
same() {
	compare "$3" "$1" "$2" --bitwise
}

plan 24

# references: the parameters after 3 and after 6 steps, and a checkpoint directory
# with steps 3 and 6 (latest: step 6)
drv 2 ref --steps 6 --save "$tmp/ref" --save-every 3 --out-params "$tmp/ref6.dump"
drv 2 ref3 --steps 3 --out-params "$tmp/ref3.dump"

# --- resume takes the newest complete step when latest cannot -----------------------
drv 2 first-latest --steps 3 --save "$tmp/first" --save-every 3 --crash latest >/dev/null
st=$?
[ $st -ne 0 ] && [ ! -e "$tmp/first/latest" ] && [ -f "$tmp/first/step-000000003/manifest.json" ]
ok $? "first save killed before latest: no latest, step 3 complete (exit $st)" ||
	find "$tmp/first" | sed 's/^/#   /'
drv 2 first-resumed --steps 3 --latest "$tmp/first" --resume "$tmp/first" \
	--out-params "$tmp/first-resumed.dump"
same first-resumed ref3 "... and --resume of the directory loads step 3 (bitwise)"
grep -q "^latest 1 .*/first/step-000000003$" "$tmp/first-resumed.out"
ok $? "sf_checkpoint_latest names step 3" || diag_file "$tmp/first-resumed.out"

mkdir -p "$tmp/nolatest"
cp -r "$tmp/ref/step-000000003" "$tmp/nolatest/"
drv 2 nolatest --steps 3 --resume "$tmp/nolatest" --out-params "$tmp/nolatest.dump"
same nolatest ref3 "a directory with a complete step and no latest resumes (bitwise)"

cp -r "$tmp/ref" "$tmp/incomplete"
rm "$tmp/incomplete/step-000000006/manifest.json"
drv 2 incomplete --steps 3 --resume "$tmp/incomplete" --out-params "$tmp/incomplete.dump"
same incomplete ref3 "latest naming a step without manifest: the newest complete (3) loads"
grep -q "latest names .*step-000000006, which has no manifest.json (a half-written or removed step); falling back to the newest complete step" \
	"$tmp/incomplete.err"
ok $? "... with a warning saying so" || diag_file "$tmp/incomplete.err"

# --- no checkpoint yet ----------------------------------------------------------------
mkdir -p "$tmp/empty"
drv 2 first-shards --steps 3 --save "$tmp/killed" --save-every 3 --crash shards >/dev/null
for d in empty missing killed; do
	drv 2 none-$d --steps 0 --latest "$tmp/$d" --resume "$tmp/$d" --resume-may-fail
	grep -q '^latest 0 $' "$tmp/none-$d.out" &&
		grep -q "^resume_refused -9: no checkpoint in $tmp/$d yet" "$tmp/none-$d.out"
	ok $? "$d directory: no checkpoint found, the load says SF_ERR_NOT_FOUND" ||
		diag_file "$tmp/none-$d.out"
done

# --- re-saving the step latest names, killed at every point -----------------------------
# The re-save holds another state of step 6 (seed 2: other initial weights and batches),
# every value different from the old one, so a resume tells which copy it read: the
# old one while the new is not published (killed at shards, manifest), the new one once
# its staging directory is complete and being switched in (switch, latest). A mix of
# the two, or the old copy where the new is due, fails.
drv 2 new6 --steps 6 --seed 2 --out-params "$tmp/new6.dump"
"$DUMP_COMPARE" --bitwise "$tmp/new6.dump" "$tmp/ref6.dump" >"$tmp/new6.cmp" 2>&1
[ $? -eq 1 ] && grep -q '^bitwise: \([0-9]*\) of \1 values differ' "$tmp/new6.cmp"
ok $? "the re-save's step 6 (seed 2) differs from the old step 6 in every value ($(tail -n 1 "$tmp/new6.cmp"))"
for mode in shards manifest switch latest; do
	want=ref6 which="the old step 6"
	case $mode in switch | latest) want=new6 which="the new step 6" ;; esac
	rm -rf "$tmp/re-$mode"
	cp -r "$tmp/ref" "$tmp/re-$mode"
	drv 2 resave-$mode --steps 6 --seed 2 --save "$tmp/re-$mode" --save-every 6 \
		--crash $mode >/dev/null 2>&1
	drv 2 after-$mode --steps 6 --resume "$tmp/re-$mode" --out-params "$tmp/after-$mode.dump"
	same after-$mode $want "re-save of step 6 killed at $mode: the directory resumes $which (bitwise)"
	if [ $mode = switch ]; then
		[ ! -e "$tmp/re-switch/step-000000006" ] &&
			[ -f "$tmp/re-switch/step-000000006.tmp/manifest.json" ] &&
			[ -f "$tmp/re-switch/step-000000006.old/manifest.json" ]
		ok $? "... (killed at switch: step 6 moved aside, the staged copy complete)" ||
			find "$tmp/re-switch" | sed 's/^/#   /'
	fi
done
drv 2 finish-switch --steps 6 --save "$tmp/re-switch" --save-every 6
[ "$(cat "$tmp/re-switch/latest")" = step-000000006 ] &&
	[ -f "$tmp/re-switch/step-000000006/manifest.json" ] &&
	[ -z "$(find "$tmp/re-switch" -name '*.tmp' -o -name '*.old')" ]
ok $? "a save after the cut switch: step 6 in place, no staging or old copy left" ||
	find "$tmp/re-switch" | sed 's/^/#   /'

# --- the manifest: checksum and ranges ------------------------------------------------
good="$tmp/ref/step-000000003"
# edit NAME SED_EXPR [reseal]: a copy of the good step 3 with its manifest edited
edit() {
	rm -rf "${tmp:?}/$1"
	cp -r "$good" "$tmp/$1"
	sed "$2" "$good/manifest.json" >"$tmp/$1/manifest.json"
	[ -z "${3:-}" ] || ckpt_reseal "$tmp/$1"
}
edit crc 's/"epoch": 0/"epoch": 1/'
edit steps 's/"model_steps": [0-9]*/"model_steps": 9223372036854775807/' reseal
edit epoch 's/"epoch": 0/"epoch": -1/' reseal
edit batch 's/"batch": [0-9]*/"batch": 9007199254740992/' reseal
edit nocrc 's/"epoch": 0/"epoch": 0/'
rm "$tmp/nocrc/manifest.crc32"
while read -r name pattern what; do
	drv 1 m-$name --steps 0 --resume "$tmp/$name" --resume-may-fail
	refused m-$name "$pattern" "$what: refused"
done <<EOF
crc CRC-32.is.*manifest.crc32.says an edited manifest (epoch 0 -> 1)
steps "model_steps".is.9223372036854775807 model_steps = INT64_MAX (CRC-32 rewritten)
epoch "epoch".is.-1 epoch = -1 (CRC-32 rewritten)
batch "batch".is.9007199254740992 batch = 2^53 (CRC-32 rewritten)
nocrc manifest.crc32,.which.is.missing a version-2 manifest without manifest.crc32
EOF
edit v1 's/"version": 2/"version": 1/'
rm "$tmp/v1/manifest.crc32"
drv 2 v1 --steps 3 --resume "$tmp/v1" --out-params "$tmp/v1.dump"
same v1 ref3 "a version-1 checkpoint (no manifest.crc32) still loads (bitwise)"

# --- one writer per directory ---------------------------------------------------------
if ! command -v flock >/dev/null 2>&1; then
	skip "a save while another process holds the lock is refused" "flock(1) not found"
	skip "once the lock is released the save succeeds" "flock(1) not found"
	finish
fi
lk="$tmp/locked"
mkdir -p "$lk"
flock -n "$lk/.lock" sh -c 'echo "$$ lockhost" >"$1"; while [ ! -f "$2" ]; do sleep 0.1; done' \
	sh "$lk/.lock" "$tmp/release" &
holder=$!
i=0
while ! grep -q lockhost "$lk/.lock" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
pid=$(cut -d' ' -f1 "$lk/.lock")
drv 2 locked --steps 3 --save "$lk" --save-every 3 >/dev/null
st=$?
[ $st -ne 0 ] &&
	grep -q "checkpoint directory $lk is being written by another job (pid $pid on lockhost holds" \
		"$tmp/locked.err" && [ -z "$(find "$lk" -name 'step-*')" ]
ok $? "a save while another process holds $lk/.lock is refused naming it and pid $pid (exit $st), nothing written" ||
	diag_file "$tmp/locked.err"
touch "$tmp/release"
wait $holder
drv 2 unlocked --steps 3 --save "$lk" --save-every 3 --out-params "$tmp/unlocked.dump" &&
	[ "$(cat "$lk/latest")" = step-000000003 ]
ok $? "once the lock is released the save succeeds"
finish
