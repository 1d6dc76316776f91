#!/bin/sh
# fashion_mnist.sh — the real job end to end, kept short (a few dozen steps).
#
# Proves, on Debian's Fashion-MNIST (skipped when dataset-fashion-mnist is absent):
#  - 2-rank training prints the documented progress and epoch lines and ends with
#    "test_accuracy <x>"; the loss falls and the model beats chance by far;
#  - a progress line carries its own step: with --progress-every 1 steps 1, 2, 3 each
#    get a line, and with --progress-every 3 the line of step 3 is the mean of those
#    three (issue 46: a line once showed the losses up to the step before it);
#  - stop and resume: 20 steps, stop (checkpoint), resume to 40 gives bitwise the
#    same weights (exported safetensors compared byte for byte) as 40 steps straight;
#    resumed with --max-steps 20 already reached, the job does not save step 20 again
#    (its manifest keeps its inode);
#  - --resume on a directory without any checkpoint yet starts from scratch with a
#    notice, and saves there;
#  - --init from an export starts from those weights (same accuracy as the exporter);
#  - bad options exit 2 with the usage; a wrong --data-dir exits 1 naming the file;
#  - a test set of another image size, or with a label past the classes, exits 1.
. "$(dirname "$0")/lib.sh"
FM="$top_builddir/examples/fashion_mnist"
require_progs "$FM"
data=/usr/share/datasets/fashion-mnist
[ -f "$data/train-images-idx3-ubyte.gz" ] || skip_all "Debian's dataset-fashion-mnist is not installed"

plan 17
small="--widths 784,128,10 --batch 64 --progress-every 10"

sh "$RUN_MPI" 2 "$FM" $small --max-steps 40 --export "$tmp/straight.st" \
	--checkpoint-dir "$tmp/ck-straight" </dev/null >"$tmp/a.out" 2>"$tmp/a.err"
ok $? "2 ranks, 40 steps with a checkpoint dir and an export" || diag_file "$tmp/a.err"

grep -Eq '^epoch 1/[0-9]+ step 10/[0-9]+ loss [0-9.]+ samples/s [0-9.]+ eta [0-9]+m[0-9]{2}s$' "$tmp/a.out"
ok $? "progress lines: epoch e/E step s/S loss x samples/s x eta MmSSs" || diag_file "$tmp/a.out"
tail -1 "$tmp/a.out" | grep -Eq '^test_accuracy 0\.[0-9]{4}$'
ok $? "the last line is test_accuracy <x>" || diag_file "$tmp/a.out"
acc=$(tail -1 "$tmp/a.out" | awk '{print $2}')
first=$(awk '/ step 10\// {print $6}' "$tmp/a.out")
last=$(awk '/ step 40\// {print $6}' "$tmp/a.out")
awk -v f="$first" -v l="$last" -v a="$acc" 'BEGIN {exit !(l < f && a > 0.5)}'
ok $? "the loss falls ($first -> $last) and accuracy beats chance by far ($acc)"

sh "$RUN_MPI" 2 "$FM" $small --max-steps 3 --progress-every 1 </dev/null >"$tmp/p1.out" 2>&1
sh "$RUN_MPI" 2 "$FM" $small --max-steps 3 --progress-every 3 </dev/null >"$tmp/p3.out" 2>&1
labels=$(awk '$3 == "step" { split($4, s, "/"); l = l (l == "" ? "" : " ") s[1] } END { print l }' "$tmp/p1.out")
mean=$(awk '$3 == "step" { m += $6; n++ } END { if (n) printf "%.5f", m / n }' "$tmp/p1.out")
three=$(awk '$3 == "step" && $4 ~ /^3\// { print $6 }' "$tmp/p3.out")
[ "$labels" = "1 2 3" ] && [ -n "$three" ] &&
	awk -v a="$mean" -v b="$three" 'BEGIN { d = a - b; exit !(d < 1.5e-4 && d > -1.5e-4) }'
ok $? "each progress line is its own step's: steps $labels a line each, step 3's mean of 1-3 ${three:-none} = ${mean:-none} (within rounding)" ||
	{ diag_file "$tmp/p1.out"; diag_file "$tmp/p3.out"; }

sh "$RUN_MPI" 2 "$FM" $small --max-steps 20 --checkpoint-dir "$tmp/ck" \
	</dev/null >"$tmp/b1.out" 2>"$tmp/b1.err"
ok $? "2 ranks stop after 20 steps, leaving a checkpoint" || diag_file "$tmp/b1.err"
[ -f "$tmp/ck/latest" ] && [ -f "$tmp/ck/$(cat "$tmp/ck/latest")/manifest.json" ]
ok $? "the checkpoint has latest and its manifest ($(cat "$tmp/ck/latest" 2>/dev/null))"
ino() { ls -i "$1" 2>/dev/null | awk '{print $1}'; }
m20="$tmp/ck/step-000000020/manifest.json"
before=$(ino "$m20")
sh "$RUN_MPI" 2 "$FM" $small --max-steps 20 --checkpoint-dir "$tmp/ck" --resume \
	</dev/null >"$tmp/b3.out" 2>"$tmp/b3.err"
st=$?
[ $st -eq 0 ] && [ -n "$before" ] && [ "$(ino "$m20")" = "$before" ]
ok $? "resumed at --max-steps 20 already reached: step 20 not saved again (exit $st, inode $before -> $(ino "$m20"))" ||
	diag_file "$tmp/b3.err"
sh "$RUN_MPI" 2 "$FM" $small --max-steps 40 --checkpoint-dir "$tmp/ck" --resume \
	--export "$tmp/resumed.st" </dev/null >"$tmp/b2.out" 2>"$tmp/b2.err"
ok $? "resumed to 40 steps" || diag_file "$tmp/b2.err"
cmp -s "$tmp/straight.st" "$tmp/resumed.st"
ok $? "stopped at 20 and resumed = 40 straight, bitwise (exported weights)"

sh "$RUN_MPI" 2 "$FM" $small --max-steps 5 --checkpoint-dir "$tmp/ck-new" --resume \
	</dev/null >"$tmp/n.out" 2>"$tmp/n.err"
ok $? "--resume with no checkpoint yet runs" || diag_file "$tmp/n.err"
grep -q "no checkpoint in $tmp/ck-new yet: starting from scratch" "$tmp/n.err" &&
	[ "$(cat "$tmp/ck-new/latest" 2>/dev/null)" = step-000000005 ]
ok $? "... starting from scratch with a notice, and saving step 5 there" || diag_file "$tmp/n.err"

"$FM" $small --max-steps 1 --init "$tmp/straight.st" </dev/null >"$tmp/c.out" 2>"$tmp/c.err"
ok $? "1 rank starts from the 2-rank export (--init) and trains" || diag_file "$tmp/c.err"

"$FM" --epochs 0 </dev/null >"$tmp/u.out" 2>"$tmp/u.err"
st=$?
"$FM" --bogus </dev/null >>"$tmp/u.out" 2>>"$tmp/u.err"
st2=$?
[ $st -eq 2 ] && [ $st2 -eq 2 ] && grep -q '^usage: fashion_mnist' "$tmp/u.err"
ok $? "bad options exit 2 with the usage ($st, $st2)"

"$FM" --data-dir "$tmp/nowhere" --max-steps 1 </dev/null >"$tmp/d.out" 2>"$tmp/d.err"
st=$?
[ $st -eq 1 ] && grep -q "nowhere/train-images-idx3-ubyte.gz" "$tmp/d.err"
ok $? "a wrong --data-dir exits 1 naming the file ($st)" || diag_file "$tmp/d.err"

# A test set that does not match the training set: images of 14 x 14 (read past
# the array before), then a label of class 12 with 10 classes (read out of bounds).
# idx FILE MAGIC N [ROWS COLS] BYTE: an IDX file of N items, every byte BYTE.
idx() {
	_f=$1 _magic=$2 _n=$3
	shift 3
	_len=$_n
	{
		printf "\\000\\000\\010\\$_magic"
		be32 "$_n"
		if [ $# -eq 3 ]; then be32 "$1"; be32 "$2"; _len=$((_n * $1 * $2)); shift 2; fi
		head -c "$_len" /dev/zero | tr '\000' "\\$1"
	} >"$_f"
}
be32() { printf "\\$(printf %o $(($1 >> 24 & 255)))\\$(printf %o $(($1 >> 16 & 255)))\\$(printf %o $(($1 >> 8 & 255)))\\$(printf %o $(($1 & 255)))"; }
for case in size label; do
	d="$tmp/bad-$case"
	mkdir -p "$d"
	ln -sf "$data/train-images-idx3-ubyte.gz" "$data/train-labels-idx1-ubyte.gz" "$d/"
	if [ $case = size ]; then
		idx "$d/t10k-images-idx3-ubyte.gz" 003 4 14 14 001
		idx "$d/t10k-labels-idx1-ubyte.gz" 001 4 001
	else
		idx "$d/t10k-images-idx3-ubyte.gz" 003 4 28 28 001
		idx "$d/t10k-labels-idx1-ubyte.gz" 001 4 014
	fi
	"$FM" --data-dir "$d" --max-steps 1 </dev/null >"$tmp/t$case.out" 2>"$tmp/t$case.err"
	st=$?
	[ $st -eq 1 ] && grep -q "test set (t10k) does not match" "$tmp/t$case.err"
	ok $? "a test set with another image size or a label past the classes ($case) exits 1 ($st)" ||
		diag_file "$tmp/t$case.err"
done

finish
