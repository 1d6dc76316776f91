#!/bin/sh
# checkpoint.sh — checkpoints resume training exactly, reshard, and refuse bad input.
#
# Proves, with tests/ckpt_driver (train_dump's models and dump format):
#  - resuming from the checkpoint of step 3 and training to step 6 gives bitwise the
#    losses of steps 4..6 and the parameters of an uninterrupted 6-step run (SGD, whose
#    momentum is saved, and AdamW, whose moments and step count are), on 2 ranks;
#  - a checkpoint written by 2 ranks resumes on 3, and one written by 3 on 1, equal to
#    the uninterrupted run within its rounding interval (as tests/equivalence.sh: more
#    or fewer ranks sum gradients in another order), model uneven (every unit padded);
#    and one written with sharding none resumes with grad_op (the format knows no
#    sharding);
#  - safetensors: parameters exported on 2 ranks and imported on 1 are bitwise those of
#    the exporter, re-exporting gives the same file, the header is what the format
#    says (checked with python3's json when python3 exists), a truncated file is refused;
#  - a flipped byte (CRC-32), a truncated rank file (size), an edited structure hash
#    (manifest.crc32 rewritten to match) and a checkpoint of another model are refused with a message saying so, and the
#    refused model then trains bitwise like a fresh one: the load changed nothing;
#  - the blocks model (units of several nodes, a head tied to the embedding) saved on 2
#    ranks resumes on 3 like the uninterrupted run (within its rounding interval);
#  - a loading rank reads only the rank files holding its slices (SHARDFLOW_LOG=debug
#    logs each file it opens): 2 ranks loading a checkpoint of 2 read one file each, 3
#    ranks loading the uneven checkpoint of 2 read file 0, files 0 and 1, and file 1,
#    and with sharding none (every rank keeps whole units) every rank reads every file;
#  - a writer killed between its rank files and the manifest (the driver's --crash
#    kills itself at that point) leaves dir/latest on the previous checkpoint, which
#    resumes bitwise, and the half-written staging directory step-N.tmp is refused
#    when named directly. (tests/checkpoint_safety.sh kills saves at other points.)
#  - retention (sf_checkpoint_prune): keep 2 of 4 steps leaves the newest two and a
#    staged step-N.tmp alone, and latest still resumes bitwise; the step latest names
#    stays whatever its age; keep 0 is refused and removes nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"

# interval NP NAME ARGS...: the uninterrupted run NAME (from step 3) again, rounded
# upward and downward, for compare_within
interval() {
	_vnp=$1 _vname=$2
	shift 2
	for _r in up down; do
		drv "$_vnp" "$_vname.$_r" SHARDFLOW_ROUNDING=${_r}ward "$@" --dump-losses-from 3 \
			--out "$tmp/$_vname.$_r.dump"
	done
}

# read_by NAME RANK: the rank files that rank RANK of run NAME opened, sorted, one line
read_by() {
	sed -n 's|.*checkpoint: reading .*/\(rank-[0-9]*\.bin\)$|\1|p' "$tmp/$1.err.$2" \
		2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//'
}

# reads NAME DESC WANT_0 WANT_1 ...: one result: rank r of run NAME opened exactly the
# rank files WANT_r (their numbers, separated by commas)
reads() {
	_name=$1
	_desc=$2
	shift 2
	_r=0
	_bad=
	for _want in "$@"; do
		_w=$(echo "$_want" | tr ',' '\n' | while read -r _i; do
			printf 'rank-%05d.bin\n' "$_i"
		done | sort | tr '\n' ' ' | sed 's/ $//')
		_got=$(read_by "$_name" $_r)
		[ "$_got" = "$_w" ] || _bad="$_bad rank $_r read \"$_got\", expected \"$_w\";"
		_r=$((_r + 1))
	done
	[ -z "$_bad" ]
	ok $? "$_desc" || diag "$_bad"
}

# flip_byte FILE OFFSET: replaces the byte at OFFSET by another value
flip_byte() {
	_b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	_nb=$(((_b + 1) % 256))
	# shellcheck disable=SC2059
	printf "\\$(printf %o "$_nb")" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

plan 31

# --- resume equals uninterrupted, bitwise -----------------------------------------------
for opt in sgd adamw lion; do
	drv 2 full-$opt --optimizer $opt --steps 6 --save "$tmp/ck-$opt" --save-every 3 \
		--dump-losses-from 3 --out "$tmp/full-$opt.dump"
	drv 2 resumed-$opt --optimizer $opt --steps 6 --resume "$tmp/ck-$opt/step-000000003" \
		--out "$tmp/resumed-$opt.dump"
	compare "mlp $opt, 2 ranks: resumed at step 3 = uninterrupted (bitwise)" \
		resumed-$opt full-$opt --bitwise
done

# --- resharding ---------------------------------------------------------------------------
u="--model uneven --optimizer adamw --steps 6"
# shellcheck disable=SC2086
drv 2 u2 $u --save "$tmp/ck-u2" --save-every 3 --dump-losses-from 3 --out "$tmp/u2.dump" \
	--out-params "$tmp/u2-params.dump" --export "$tmp/u2.safetensors"
# shellcheck disable=SC2086
drv 3 u2to3 $u --resume "$tmp/ck-u2/step-000000003" --out "$tmp/u2to3.dump"
# shellcheck disable=SC2086
interval 2 u2 $u
compare_within "uneven adamw: saved on 2 ranks, resumed on 3 = uninterrupted" u2to3 u2
# shellcheck disable=SC2086
drv 3 u3 $u --save "$tmp/ck-u3" --save-every 3 --dump-losses-from 3 --out "$tmp/u3.dump"
# shellcheck disable=SC2086
drv 1 u3to1 $u --resume "$tmp/ck-u3/step-000000003" --out "$tmp/u3to1.dump"
# shellcheck disable=SC2086
interval 3 u3 $u
compare_within "uneven adamw: saved on 3 ranks, resumed on 1 = uninterrupted" u3to1 u3
# Lion's one state vector (m) resharded: the checkpoint holds param and m only
l="--model uneven --optimizer lion --steps 6"
# shellcheck disable=SC2086
drv 2 l2 $l --save "$tmp/ck-l2" --save-every 3 --dump-losses-from 3 --out "$tmp/l2.dump"
# shellcheck disable=SC2086
drv 3 l2to3 $l --resume "$tmp/ck-l2/step-000000003" --out "$tmp/l2to3.dump"
vecs=$(tr -d ' \n' <"$tmp/ck-l2/step-000000003/manifest.json" | grep -o '"vectors":\[[^]]*\]')
if [ "$vecs" = '"vectors":["param","m"]' ]; then
	# shellcheck disable=SC2086
	interval 2 l2 $l
	compare_within "uneven lion: saved on 2 ranks (param, m), resumed on 3 = uninterrupted" \
		l2to3 l2
else
	ok 1 "uneven lion: the manifest names the vectors param and m (it says: ${vecs:-nothing})"
fi

drv 2 none SHARDFLOW_SHARDING=none --optimizer adamw --steps 6 --save "$tmp/ck-none" \
	--save-every 3 --dump-losses-from 3 --out "$tmp/none.dump"
drv 3 none-to-grad-op SHARDFLOW_SHARDING=grad_op --optimizer adamw --steps 6 \
	--resume "$tmp/ck-none/step-000000003" --out "$tmp/none-to-grad-op.dump"
interval 2 none SHARDFLOW_SHARDING=none --optimizer adamw --steps 6
compare_within "mlp adamw: saved with sharding none on 2 ranks, resumed with grad_op on 3" \
	none-to-grad-op none

b="--model blocks --optimizer adamw --steps 6"
# shellcheck disable=SC2086
drv 2 b2 $b --save "$tmp/ck-b2" --save-every 3 --dump-losses-from 3 --out "$tmp/b2.dump"
# shellcheck disable=SC2086
drv 3 b2to3 $b --resume "$tmp/ck-b2/step-000000003" --out "$tmp/b2to3.dump"
# shellcheck disable=SC2086
interval 2 b2 $b
compare_within "blocks (grouped units, tied head): saved on 2 ranks, resumed on 3" b2to3 b2

# --- each loading rank reads only the files holding its slices -------------------------
# (--steps 3 and the checkpoint of step 3: a load and no step)
drv_split=1
drv 2 reads-2to2 SHARDFLOW_LOG=debug --steps 3 --resume "$tmp/ck-sgd/step-000000003"
reads reads-2to2 "saved on 2 ranks, loaded on 2: each rank reads its own rank file only" 0 1
# shellcheck disable=SC2086
drv 3 reads-2to3 SHARDFLOW_LOG=debug $u --steps 3 --resume "$tmp/ck-u2/step-000000003"
reads reads-2to3 "uneven, saved on 2, loaded on 3: ranks read file 0 / files 0, 1 / file 1" \
	0 0,1 1
drv 2 reads-none SHARDFLOW_LOG=debug SHARDFLOW_SHARDING=none --steps 3 \
	--resume "$tmp/ck-sgd/step-000000003"
reads reads-none "sharding none keeps whole units: every rank reads every file" 0,1 0,1
drv_split=

# --- safetensors --------------------------------------------------------------------------
drv 1 st-import --model uneven --optimizer adamw --steps 0 --init "$tmp/u2.safetensors" \
	--out-params "$tmp/st-import.dump" --export "$tmp/again.safetensors"
compare "safetensors: exported on 2 ranks, imported on 1: parameters equal (bitwise)" \
	st-import u2-params --bitwise
cmp "$tmp/u2.safetensors" "$tmp/again.safetensors" >"$tmp/cmp.out" 2>&1
ok $? "safetensors: re-exporting the imported model gives the same file" || diag_file "$tmp/cmp.out"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/u2.safetensors" >"$tmp/py.out" 2>&1 <<'EOF'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
assert n % 8 == 0, "header length %d is not a multiple of 8" % n
h = json.loads(data[8:8 + n].decode("utf-8"))
assert h["__metadata__"] == {"format": "pt", "producer": "shardflow"}, h["__metadata__"]
want = {"fc1.weight": [13, 12], "fc1.bias": [13], "fc2.weight": [25, 13],
        "fc2.bias": [25], "fc3.weight": [5, 25], "fc3.bias": [5]}
assert sorted(k for k in h if k != "__metadata__") == sorted(want), sorted(h)
end = 0
for k, t in sorted(((k, t) for k, t in h.items() if k != "__metadata__"),
                   key=lambda kt: kt[1]["data_offsets"][0]):
    assert t["dtype"] == "F32" and t["shape"] == want[k], (k, t)
    b, e = t["data_offsets"]
    count = 1
    for d in t["shape"]:
        count *= d
    assert b == end and e - b == 4 * count, (k, t, end)
    end = e
assert 8 + n + end == len(data), "file is %d bytes, header says %d" % (len(data), 8 + n + end)
print("header ok: %d bytes, %d tensors" % (n, len(want)))
EOF
	ok $? "safetensors: header length, JSON, metadata, names, shapes and offsets" ||
		diag_file "$tmp/py.out"
else
	skip "safetensors: header layout" "python3 not found"
fi
size=$(wc -c <"$tmp/u2.safetensors")
head -c $((size - 4)) "$tmp/u2.safetensors" >"$tmp/short.safetensors"
run_mpi 1 "$CKPT_DRIVER" --model uneven --optimizer adamw --steps 0 \
	--init "$tmp/short.safetensors" >"$tmp/st-short.out" 2>"$tmp/st-short.err"
st=$?
[ $st -ne 0 ] && grep -E -q "truncated or trailing|outside the" "$tmp/st-short.err"
ok $? "safetensors: a truncated file is refused" || diag_file "$tmp/st-short.err"

# --- corrupted checkpoints are refused and change nothing ---------------------------------
drv 2 fresh --steps 3 --out "$tmp/fresh.dump"
good="$tmp/ck-sgd/step-000000003"
corrupt() { # corrupt NAME: a copy of the good step directory, to be damaged
	rm -rf "${tmp:?}/$1"
	cp -r "$good" "$tmp/$1"
}
corrupt bad-crc
flip_byte "$tmp/bad-crc/rank-00001.bin" 1000
corrupt bad-size
sz=$(wc -c <"$tmp/bad-size/rank-00000.bin")
head -c $((sz - 8)) "$good/rank-00000.bin" >"$tmp/bad-size/rank-00000.bin"
corrupt bad-hash
sed 's/"structure_hash": "[0-9a-f]*"/"structure_hash": "0123456789abcdef"/' \
	"$good/manifest.json" >"$tmp/bad-hash/manifest.json"
ckpt_reseal "$tmp/bad-hash"
while read -r name pattern what; do
	drv 2 "load-$name" --steps 3 --resume "$tmp/$name" --resume-may-fail \
		--out "$tmp/load-$name.dump"
	refused "load-$name" "$pattern" "$what refused"
	compare "after the refused load ($what) the model trains like a fresh one" \
		"load-$name" fresh --bitwise
done <<EOF
bad-crc CRC-32 a flipped byte in rank-00001.bin
bad-size truncated a truncated rank-00000.bin
bad-hash another.model an edited structure hash
EOF
drv 1 load-other-model --model uneven --steps 0 --resume "$good" --resume-may-fail
refused load-other-model "written for another model" \
	"a checkpoint of model mlp loaded into model uneven is refused"

# --- a writer killed between its rank files and the manifest -----------------------------
for mode in shards manifest; do
	drv 2 crash-$mode --steps 6 --save "$tmp/crash-$mode" --save-every 3 --crash $mode \
		>/dev/null 2>&1
	st=$?
	half="$tmp/crash-$mode/step-000000006.tmp"
	[ $st -ne 0 ] && [ "$(cat "$tmp/crash-$mode/latest")" = step-000000003 ] &&
		[ -d "$half" ] && [ ! -f "$half/manifest.json" ] &&
		[ ! -e "$tmp/crash-$mode/step-000000006" ]
	# (run-mpi.sh reports the SIGKILL as a timeout: any non-zero status will do)
	if ! ok $? "killed at $mode: latest still names step 3, step 6 is staged without manifest"; then
		diag "exit status $st; the checkpoint directory holds:"
		find "$tmp/crash-$mode" | sed 's/^/#   /'
	fi
done
[ -f "$tmp/crash-manifest/step-000000006.tmp/manifest.json.tmp" ]
ok $? "killed at manifest: manifest.json.tmp is left over"
drv 2 after-crash --steps 6 --resume "$tmp/crash-manifest" --out "$tmp/after-crash.dump"
compare "after the crash, dir/latest resumes bitwise like the uninterrupted run" \
	after-crash full-sgd --bitwise
drv 1 half --steps 0 --resume "$tmp/crash-shards/step-000000006.tmp" --resume-may-fail
refused half "half-written" "the half-written step 6 (staged), named directly, is refused"

# --- retention: sf_checkpoint_prune ----------------------------------------------------
# steps 2, 4, 6, 8 saved; a staged step-000000005.tmp with a manifest (a save in flight)
keepd=$tmp/keep
rm -rf "$keepd"
steps_of() { (cd "$1" && ls -d step-* 2>/dev/null | tr '\n' ' '); }
drv 2 keep-save --steps 8 --save "$keepd" --save-every 2 &&
	mkdir "$keepd/step-000000005.tmp" && cp "$keepd/step-000000004/manifest.json" "$keepd/step-000000005.tmp/" &&
	drv 2 keep-2 --steps 0 --prune "$keepd" --keep 2 &&
	grep -q "^prune_removed 2$" "$tmp/keep-2.out" &&
	[ "$(steps_of "$keepd")" = "step-000000005.tmp step-000000006 step-000000008 " ]
ok $? "keep 2 of steps 2, 4, 6, 8: 6 and 8 stay, the staged step-5.tmp is left alone ($(steps_of "$keepd"))"
drv 2 keep-resume --steps 8 --resume "$keepd" --out-params "$tmp/keep-resume.dump" &&
	drv 2 keep-full --steps 8 --out-params "$tmp/keep-full.dump"
compare "after the prune, dir/latest (step 8) loads the uninterrupted run's parameters, bitwise" \
	keep-resume keep-full --bitwise
# latest naming an older step: that one stays too
echo step-000000006 >"$keepd/latest"
drv 1 keep-1 --steps 0 --prune "$keepd" --keep 1 &&
	grep -q "^prune_removed 0$" "$tmp/keep-1.out" &&
	[ "$(steps_of "$keepd")" = "step-000000005.tmp step-000000006 step-000000008 " ]
ok $? "keep 1 with latest naming step 6: the newest (8) and latest's (6) both stay"
drv 1 keep-0 --steps 0 --prune "$keepd" --keep 0
grep -q "prune_refused.*keep is 0" "$tmp/keep-0.out" &&
	[ "$(steps_of "$keepd")" = "step-000000005.tmp step-000000006 step-000000008 " ]
ok $? "keep 0 is refused, nothing removed: $(cut -c1-100 "$tmp/keep-0.out")"
finish
