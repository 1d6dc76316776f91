#!/bin/sh
# ckpt_tool.sh — shardflow-ckpt reads examples/gpt's checkpoints without the model.
#
# A real checkpoint directory: examples/gpt on 2 ranks, 40 steps, a checkpoint every 20
# (steps 20 and 40), and --export of its final weights. Proves:
#  - info: the steps present (those of ls) and latest (the file's content); for the
#    step a resume loads, the layout the run was given (2 ranks, dp 2 x tp 1, sharding
#    full, 2 rank files), the counters (step 40, 40 updates), AdamW's vectors, the
#    bytes of the rank files (wc -c), and the tensors with their shapes and the number
#    of parameters exactly as the trainer's export header lists them (python3's json);
#  - verify: every step ok (exit 0); then, on copies, a flipped byte of a rank file
#    (CRC-32), a truncated one (size), a deleted one, and a flipped byte of the
#    manifest each give exit 1 and a line naming that file, while the intact step 20
#    still verifies; a step directory given alone is verified alone;
#  - export: the checkpoint directory's and the step directory's exports are bitwise
#    the trainer's --export of that step (cmp), and with SHARDFLOW_TP=2 (dp 1 x tp 2,
#    one rank file holding the whole layout) too; a damaged step or a manifest without
#    tensors (as before 2026-11-28; info says "not recorded") is refused with exit 1
#    and no file;
#  - bad input: a missing directory, a directory holding no checkpoint, a plain file:
#    exit 1 and one line; no command, an unknown one, export without --out, an extra
#    argument, an unknown option: exit 2 and one line.
. "$(dirname "$0")/lib.sh"
TOOL="$top_builddir/tools/shardflow-ckpt"
GPT="$top_builddir/examples/gpt"
require_progs "$TOOL" "$GPT"

plan 32

text="$tmp/corpus.txt"
sf_corpus "$text"
g="--layers 2 --heads 2 --embd 32 --context 32 --batch 8 --text $text --val-fraction 0.2 --eval-every 20 --eval-batches 1 --sample 0"
# gpt NAME NP ARGS...: examples/gpt on NP ranks, output in $tmp/NAME.{out,err}
gpt() {
	_n=$1
	_np=$2
	shift 2
	# shellcheck disable=SC2086
	run_mpi "$_np" "$GPT" $g "$@" >"$tmp/$_n.out" 2>"$tmp/$_n.err" || {
		diag "examples/gpt $* failed:"
		diag_file "$tmp/$_n.err"
		bail_out "examples/gpt did not write the checkpoint"
	}
}
# tool NAME ARGS...: the tool, output in $tmp/NAME.{out,err}, its status in $st
tool() {
	_n=$1
	shift
	"$TOOL" "$@" >"$tmp/$_n.out" 2>"$tmp/$_n.err"
	st=$?
}
# field NAME KEY: the rest of run NAME's line "KEY: ..."
field() {
	sed -n "s/^$2: //p" "$tmp/$1.out"
}

c="$tmp/ck"
gpt run 2 --steps 40 --checkpoint-dir "$c" --checkpoint-every 20 --export "$tmp/run.st" \
	--export-layout nanogpt
s40="$c/step-000000040"

# --- info ------------------------------------------------------------------------------
tool info info "$c"
ok $st "info on the checkpoint directory" || diag_file "$tmp/info.err"
want=$(cd "$c" && ls -d step-* | tr '\n' ' ' | sed 's/ $//')
[ "$(field info steps)" = "$want" ] && [ "$want" = "step-000000020 step-000000040" ]
ok $? "info: the steps present ($(field info steps); ls: $want)"
[ "$(field info latest)" = "$(cat "$c/latest")" ]
ok $? "info: latest ($(field info latest))"
[ "$(field info step)" = "$s40" ]
ok $? "info: the step a resume loads ($(field info step))"
[ "$(field info layout)" = "2 ranks, dp 2 x tp 1, sharding full, 2 rank files" ]
ok $? "info: the layout it was written at ($(field info layout))"
field info counters | grep -q "^step 40, .*optimizer updates 40$"
ok $? "info: the step counters ($(field info counters))"
[ "$(field info optimizer)" = "adamw, vectors: param m v" ]
ok $? "info: the optimizer state kept ($(field info optimizer))"
bytes=$(cat "$s40"/rank-*.bin | wc -c)
field info size | grep -q "^$bytes bytes in 2 rank files"
ok $? "info: the rank files' size ($(field info size); wc -c: $bytes)"

if command -v python3 >/dev/null 2>&1; then
	# the trainer's export header: "tensor: NAME [SHAPE] f32" lines, and the parameters
	python3 - "$tmp/run.st" >"$tmp/header.txt" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h.pop("__metadata__", None)
for k, v in sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    print("tensor: %s [%s] f32" % (k, ", ".join(str(d) for d in v["shape"])))
print("params: %d" % ((len(b) - 8 - n) // 4))
EOF
	grep '^tensor: ' "$tmp/info.out" >"$tmp/info-tensors.txt"
	grep '^tensor: ' "$tmp/header.txt" | cmp -s - "$tmp/info-tensors.txt"
	ok $? "info: the tensors and shapes of the trainer's export ($(wc -l <"$tmp/info-tensors.txt") tensors)" ||
		diag "$(grep '^tensor: ' "$tmp/header.txt" | diff - "$tmp/info-tensors.txt")"
	p=$(sed -n 's/^params: //p' "$tmp/header.txt")
	field info model | grep -q ", $p parameters, dtype f32$"
	ok $? "info: the model's parameters ($(field info model); the export: $p)"
else
	skip "info: the tensors" "python3 is not installed (reads the export's header)"
	skip "info: the parameters" "python3 is not installed (reads the export's header)"
fi
tool infostep info "$s40"
[ $st -eq 0 ] && ! grep -q '^steps:' "$tmp/infostep.out" && [ "$(field infostep step)" = "$s40" ]
ok $? "info on a step directory: that step, no step list"

# --- verify ----------------------------------------------------------------------------
tool verify verify "$c"
[ $st -eq 0 ] && [ "$(grep -c '^ok: ' "$tmp/verify.out")" -eq 2 ]
ok $? "verify: both steps of the intact checkpoint are ok (exit $st)" || diag_file "$tmp/verify.err"

# damaged NAME HOW FILE PATTERN: a copy of the checkpoint whose step 40 FILE is damaged
# (HOW: flip, truncate or delete): verify exits 1 with one line naming it (PATTERN),
# step 20 still ok
damaged() {
	rm -rf "$tmp/$1"
	cp -r "$c" "$tmp/$1"
	_f="$tmp/$1/step-000000040/$3"
	case $2 in
	flip) printf 'X' | dd of="$_f" bs=1 seek=100 conv=notrunc 2>/dev/null ;;
	truncate) head -c 1000 "$_f" >"$_f.cut" && mv "$_f.cut" "$_f" ;;
	delete) rm -f "$_f" ;;
	esac
	tool "$1" verify "$tmp/$1"
	[ $st -eq 1 ] && [ "$(wc -l <"$tmp/$1.err")" -eq 1 ] &&
		grep -q "^shardflow-ckpt: step-000000040: bad: .*$3.*$4" "$tmp/$1.err" &&
		grep -q "^ok: .*step-000000020 " "$tmp/$1.out"
	ok $? "verify: $2 $3 of step 40: exit 1 naming it, step 20 ok (exit $st: $(cat "$tmp/$1.err"))"
}
damaged flipped flip rank-00001.bin "CRC-32 is"
damaged truncated truncate rank-00000.bin "is 1000 bytes, the manifest says"
damaged deleted delete rank-00001.bin "No such file"
damaged manifest flip manifest.json "CRC-32 is .*manifest.crc32 says"
tool verifystep verify "$tmp/flipped/step-000000040"
[ $st -eq 1 ] && ! grep -q '^ok: ' "$tmp/verifystep.out"
ok $? "verify of the damaged step directory alone: exit 1, nothing else verified"

# --- export ----------------------------------------------------------------------------
tool export export "$c" --out "$tmp/tool.st"
[ $st -eq 0 ] && cmp -s "$tmp/run.st" "$tmp/tool.st"
ok $? "export of the checkpoint directory: bitwise the trainer's --export (cmp)" ||
	diag_file "$tmp/export.err"
tool exportstep export "$s40" --out "$tmp/step.st"
[ $st -eq 0 ] && cmp -s "$tmp/run.st" "$tmp/step.st"
ok $? "export of the step directory: bitwise the trainer's --export (cmp)"
tool exportbad export "$tmp/flipped" --out "$tmp/bad.st"
[ $st -eq 1 ] && [ ! -e "$tmp/bad.st" ] && grep -q "rank-00001.bin: CRC-32 is" "$tmp/exportbad.err"
ok $? "export of a damaged step: exit 1 naming the file, no output ($(cat "$tmp/exportbad.err"))"

if command -v python3 >/dev/null 2>&1; then
	rm -rf "$tmp/old" && cp -r "$c" "$tmp/old"
	python3 - "$tmp/old/step-000000040/manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
del m["tensors"], m["ranks"]
open(sys.argv[1], "w").write(json.dumps(m, indent=2))
EOF
	ckpt_reseal "$tmp/old/step-000000040"
	tool oldinfo info "$tmp/old"
	[ $st -eq 0 ] && grep -q "^tensors: not recorded" "$tmp/oldinfo.out" &&
		[ "$(field oldinfo layout)" = "2 rank files, tp 1, sharding full" ]
	ok $? "info on an older manifest (no tensors, no ranks): says so" || diag_file "$tmp/oldinfo.err"
	tool oldexport export "$tmp/old" --out "$tmp/old.st"
	[ $st -eq 1 ] && [ ! -e "$tmp/old.st" ] && grep -q "names no tensors" "$tmp/oldexport.err"
	ok $? "export of an older manifest: refused, exit 1 ($(cat "$tmp/oldexport.err"))"
else
	skip "info on an older manifest" "python3 is not installed (edits a manifest)"
	skip "export of an older manifest" "python3 is not installed (edits a manifest)"
fi

SHARDFLOW_TP=2 gpt tp 2 --steps 20 --checkpoint-dir "$tmp/tp" --export "$tmp/tp.st" \
	--export-layout nanogpt
tool tpinfo info "$tmp/tp"
[ "$(field tpinfo layout)" = "2 ranks, dp 1 x tp 2, sharding full, 1 rank files" ]
ok $? "info with SHARDFLOW_TP=2: the layout ($(field tpinfo layout))"
tool tpexport export "$tmp/tp" --out "$tmp/tptool.st"
[ $st -eq 0 ] && cmp -s "$tmp/tp.st" "$tmp/tptool.st"
ok $? "export with SHARDFLOW_TP=2: bitwise the trainer's --export (cmp)" || diag_file "$tmp/tpexport.err"

# --- bad input -------------------------------------------------------------------------
# bad NAME STATUS PATTERN ARGS...: the tool exits STATUS with one line matching PATTERN
bad() {
	_n=$1
	_want=$2
	_pat=$3
	shift 3
	tool "$_n" "$@"
	[ $st -eq "$_want" ] && [ "$(wc -l <"$tmp/$_n.err")" -eq 1 ] && grep -q "$_pat" "$tmp/$_n.err"
	ok $? "$* : exit $_want, one line (exit $st: $(cat "$tmp/$_n.err"))"
}
mkdir "$tmp/empty"
bad missing 1 "no checkpoint in $tmp/nowhere" info "$tmp/nowhere"
bad empty 1 "no checkpoint in $tmp/empty" verify "$tmp/empty"
bad plainfile 1 "is not a directory" export "$text" --out "$tmp/x.st"
bad nocmd 2 "no command given"
bad unknown 2 "unknown command \"frobnicate\"" frobnicate "$c"
bad noout 2 "export needs --out" export "$c"
bad extra 2 "one DIR expected" info "$c" "$c"
bad option 2 "unknown option \"--all\"" verify --all "$c"

finish
