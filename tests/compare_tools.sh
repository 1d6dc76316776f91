#!/bin/sh
# compare_tools.sh — the comparison tools the other tests trust refuse comparisons that
# would pass vacuously.
#
# tests/dump_compare (hand-written train_dump files, no training):
#  - two dumps with no loss and no parameter are not "equal" under --bitwise nor
#    --rtol (exit 1, "nothing compared"), nor are two whose every parameter is
#    --ignore'd; equal non-empty dumps are (so the refusals are not a broken tool);
#    one parameter changed by 1 ulp (1.2e-7) fails --bitwise and passes --rtol 1e-6
#    while a 2e-5 change fails it; a different parameter count fails;
#  - --up U --down D (the rounding interval): 1 ulp within an interval 2e-5 wide
#    passes, 2e-5 against an interval of 1 ulp fails, an empty interval (U = D) fails
#    whatever A and B, and --up without --down is bad usage;
#  - its command line is the shared parser of tools/cli.h, checked here where it is
#    cheap: "--name=value", "--" before the operands and options after them work; a
#    flag given a value, a number with trailing text, an unknown option and a third
#    operand are bad usage (exit 2, one line naming the mistake, one pointing at
#    --help);
# tests/st_tool.py tied-check (files written with its own writer; skipped without
# python3): a consistent tied step and its untied twin compare equal (exit 0); a bias
# of another size, a head of another size or shape than wte (the same 12 values as
# 3 x 4 included), and an untied twin without lm_head.weight are bad input (exit 2,
# naming the tensor), never zip()ped over their common part.
. "$(dirname "$0")/lib.sh"
require_progs "$DUMP_COMPARE"

plan 23

# The byte strings below are printf formats on purpose (octal escapes).
# shellcheck disable=SC2059
# le64 N: N (small, >= 0) as 8 little-endian bytes
le64() {
	printf "\\$(printf %o $(($1 & 255)))\\$(printf %o $(($1 >> 8 & 255)))\\000\\000\\000\\000\\000\\000"
}
# dump FILE LOSSES PARAMS: a train_dump file; LOSSES and PARAMS are octal-escaped bytes
# (8 per double, 4 per float, little-endian), their counts given by the lengths
# shellcheck disable=SC2059
dump() {
	printf 'SFDUMP1\n' >"$1"
	_nl=$(printf "$2" | wc -c)
	_np=$(printf "$3" | wc -c)
	{ le64 $((_nl / 8)); printf "$2"; le64 $((_np / 4)); printf "$3"; } >>"$1"
}
one_d='\000\000\000\000\000\000\360\077' # 1.0 (double)
one_f='\000\000\200\077'                 # 1.0f
ulp_f='\001\000\200\077'                 # 1.0f + 2^-23 (1.2e-7 relative)
e5_f='\247\000\200\077'                  # 1.0f + 167 ulp (2.0e-5 relative)
two_f='\000\000\000\100'                 # 2.0f

dump "$tmp/empty.dump" '' ''
dump "$tmp/p2.dump" '' "$one_f$two_f"
dump "$tmp/a.dump" "$one_d" "$one_f$two_f"
dump "$tmp/b.dump" "$one_d" "$one_f$two_f"
dump "$tmp/ulp.dump" "$one_d" "$ulp_f$two_f"
dump "$tmp/e5.dump" "$one_d" "$e5_f$two_f"
dump "$tmp/short.dump" "$one_d" "$one_f"

# refused DESC OPTS... A B: dump_compare exits 1 and says "nothing compared"
refused() {
	_d=$1
	shift
	"$DUMP_COMPARE" "$@" >"$tmp/dc.out" 2>&1
	_st=$?
	[ $_st -eq 1 ] && grep -q '^nothing compared' "$tmp/dc.out"
	ok $? "$_d (exit $_st: $(tail -n 1 "$tmp/dc.out"))" || diag_file "$tmp/dc.out"
}
# status WANT DESC OPTS... A B: dump_compare exits WANT
status() {
	_w=$1 _d=$2
	shift 2
	"$DUMP_COMPARE" "$@" >"$tmp/dc.out" 2>&1
	_st=$?
	[ $_st -eq "$_w" ]
	ok $? "$_d (exit $_st: $(head -n 1 "$tmp/dc.out"))" || diag_file "$tmp/dc.out"
}

refused "dump_compare --bitwise: two empty dumps are refused" --bitwise \
	"$tmp/empty.dump" "$tmp/empty.dump"
refused "dump_compare --rtol 1e-5: two empty dumps are refused" --rtol 1e-5 \
	"$tmp/empty.dump" "$tmp/empty.dump"
refused "dump_compare: no loss and every parameter ignored is refused" --rtol 1e-5 \
	--ignore 0:2 "$tmp/p2.dump" "$tmp/p2.dump"
status 0 "dump_compare --bitwise: equal dumps (1 loss, 2 parameters) are equal" --bitwise \
	"$tmp/a.dump" "$tmp/b.dump"
status 1 "dump_compare --bitwise: a parameter 1 ulp apart differs" --bitwise \
	"$tmp/ulp.dump" "$tmp/a.dump"
status 0 "dump_compare --rtol 1e-6: 1 ulp (1.2e-7) is within" --rtol 1e-6 \
	"$tmp/ulp.dump" "$tmp/a.dump"
status 1 "dump_compare --rtol 1e-6: 2e-5 is not" --rtol 1e-6 "$tmp/e5.dump" "$tmp/a.dump"
status 1 "dump_compare: 1 parameter against 2 differs" --rtol 1 "$tmp/short.dump" \
	"$tmp/a.dump"
status 0 "dump_compare --up --down: 1 ulp within an interval 2e-5 wide" --up "$tmp/e5.dump" \
	--down "$tmp/a.dump" "$tmp/ulp.dump" "$tmp/a.dump"
status 1 "dump_compare --up --down: 2e-5 outside an interval of 1 ulp" --up "$tmp/ulp.dump" \
	--down "$tmp/a.dump" "$tmp/e5.dump" "$tmp/a.dump"
"$DUMP_COMPARE" --up "$tmp/a.dump" --down "$tmp/b.dump" "$tmp/a.dump" "$tmp/b.dump" \
	>"$tmp/dc.out" 2>&1
st=$?
[ $st -eq 1 ] && grep -q '^the interval is empty' "$tmp/dc.out"
ok $? "dump_compare --up --down: an empty interval (U = D) fails even for equal dumps (exit $st)" ||
	diag_file "$tmp/dc.out"

# the shared command line (tools/cli.h)
status 0 "dump_compare --rtol=1e-6: the --name=value form" --rtol=1e-6 "$tmp/ulp.dump" \
	"$tmp/a.dump"
status 1 "dump_compare A B --bitwise -- : an option after the operands, then --" \
	"$tmp/ulp.dump" "$tmp/a.dump" --bitwise --
# bad_usage TEXT DESC ARGS...: exit 2, stdout empty, stderr two lines: TEXT, then the
# pointer at --help
bad_usage() {
	_t=$1 _d=$2
	shift 2
	"$DUMP_COMPARE" "$@" >"$tmp/dc.out" 2>"$tmp/dc.err"
	_st=$?
	[ $_st -eq 2 ] && [ ! -s "$tmp/dc.out" ] && [ "$(wc -l <"$tmp/dc.err")" -eq 2 ] &&
		head -n 1 "$tmp/dc.err" | grep -qF -e "dump_compare: $_t" &&
		tail -n 1 "$tmp/dc.err" | grep -qF "'dump_compare --help' lists them"
	ok $? "$_d: exit 2 (exit $_st), '$_t'" || diag_file "$tmp/dc.err"
}
bad_usage '--bitwise takes no value' "a flag given a value" --bitwise=1 "$tmp/a.dump" \
	"$tmp/b.dump"
bad_usage '--rtol "1e-6x" is invalid: expected a non-negative number' \
	"a number with trailing text" --rtol 1e-6x "$tmp/a.dump" "$tmp/b.dump"
bad_usage '--up and --down go together' "--up without --down" --up "$tmp/a.dump" "$tmp/a.dump" \
	"$tmp/b.dump"
bad_usage 'unknown option "--bogus"' "an unknown option" --bogus "$tmp/a.dump" "$tmp/b.dump"
bad_usage "unexpected argument \"$tmp/a.dump\"" "a third operand" "$tmp/a.dump" "$tmp/b.dump" \
	"$tmp/a.dump"

# --- st_tool.py tied-check --------------------------------------------------------------
if ! command -v python3 >/dev/null 2>&1; then
	for d in "consistent files" "bias size" "head size" "head shape" "names"; do
		skip "st_tool.py tied-check: $d" "python3 is not installed"
	done
	finish
fi
ST="$top_srcdir/tests/st_tool.py"
# st NAME WTE_SHAPE WTE_SEED BIAS_SIZE BIAS_SEED [HEAD_SHAPE HEAD_SEED]: $tmp/NAME.st with
# wte of WTE_SHAPE ("4,3"), a bias "b" and, when given, lm_head.weight; value i of a
# tensor is 0.01 ((7 i) mod 13) + 0.001 SEED (i mod 3 + 1): linear in the seed, so
# seeds 0 (W0), 1 and 2 (the untied twin's wte and head) and 3 (the tied wte) are a
# consistent step (3 - 0 = (1 - 0) + (2 - 0)); seeds 3.001 and 2.999 (bias 1.001 and
# 0.999) the tied run's rounding interval, wider than the values' own rounding
st() {
	python3 - "$ST" "$tmp/$1.st" "$2" "$3" "$4" "$5" "${6:-}" "${7:-0}" <<'EOF'
import sys
from array import array
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
import st_tool
path, wte, ws, nb, bs, head, hs = sys.argv[2:9]
def tensor(shape, seed):
    n = 1
    for d in shape:
        n *= d
    return (shape, array("f", [0.01 * (i * 7 % 13) + 0.001 * float(seed) * (i % 3 + 1)
                               for i in range(n)]))
def dims(s):
    return [int(d) for d in s.split(",")]
t = {"transformer.wte.weight": tensor(dims(wte), ws), "b": tensor([int(nb)], bs)}
if head:
    t["lm_head.weight"] = tensor(dims(head), hs)
st_tool.write(path, t)
EOF
}
st w0 4,3 0 5 0
st t1 4,3 3 5 1
st u1 4,3 1 5 1 4,3 2
st t1short 4,3 3 4 1
st u1wide 4,3 1 5 1 3,4 2
st u1big 4,3 1 5 1 5,3 2
st tup 4,3 3.001 5 1.001
st tdown 4,3 2.999 5 0.999
# tied ST_T1 ST_U1 WANT DESC PATTERN: tied-check exits WANT, its output matching PATTERN
tied() {
	python3 "$ST" tied-check "$tmp/w0.st" "$tmp/$1.st" "$tmp/$2.st" "$tmp/tup.st" "$tmp/tdown.st" \
		>"$tmp/tc.out" 2>&1
	_st=$?
	[ $_st -eq "$3" ] && grep -q -- "$5" "$tmp/tc.out"
	ok $? "$4 (exit $_st: $(tail -n 1 "$tmp/tc.out"))" || diag_file "$tmp/tc.out"
}
tied t1 u1 0 "st_tool.py tied-check: a consistent tied step and its untied twin compare equal" \
	'^equal$'
tied t1short u1 2 "st_tool.py tied-check: a bias of 4 values against 5 is refused" \
	'^st_tool.py: b: shape \[4\]'
tied t1 u1big 2 "st_tool.py tied-check: lm_head.weight 5x3 against wte 4x3 is refused" \
	'lm_head.weight against transformer.wte.weight: shape \[5, 3\]'
# u1wide: the head has wte's 12 values in a 3x4 shape
tied t1 u1wide 2 "st_tool.py tied-check: lm_head.weight 3x4 against wte 4x3 (same size) is refused" \
	'shape \[3, 4\]'
tied t1 t1 2 "st_tool.py tied-check: an untied twin without lm_head.weight is refused" \
	'tensor names differ'
finish
