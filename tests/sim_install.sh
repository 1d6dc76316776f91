#!/bin/sh
# sim_install.sh — the simulation build installs a shardflow-sim that runs from its
# prefix alone (docs/scale.md, "Installing the simulator").
#
# make install into a prefix under $tmp (every installation directory given), then:
#  - the prefix's bin/ holds shardflow-sim and its job, shardflow-sim-job, and
#    share/shardflow/calibrations every measured calibration of the source tree's
#    bench/calibrations;
#  - the prefix, moved elsewhere as a whole, still runs: the installed shardflow-sim
#    simulates a small GPT on one H100 in TF32 and takes that prefix's measured TF32
#    calibration, naming its path;
#  - without its job beside it, it stops naming the job it looked for in its own bin/
#    (not the build tree's);
#  - without the prefix's calibrations, it says that none is measured and uses the
#    roofline (it does not read the build tree's bench/calibrations);
#  - bad options are refused before a launch (exit 2).
# It writes only under $tmp (removed on exit).
. "$(dirname "$0")/lib.sh"
. "$top_builddir/tests/config.sh"
SMPIRUN="$STARPU_BINDIR/starpu_smpirun"
require_progs "$top_builddir/tools/shardflow-sim-job" "$SMPIRUN"
command -v xsltproc >/dev/null 2>&1 || skip_all "starpu_smpirun needs xsltproc (Debian package xsltproc)"
prefix=$tmp/prefix
moved=$tmp/moved

plan 6

# make install with every installation directory under $prefix; an outer make's
# MAKEFLAGS (make check TESTS=..., its jobserver) is not passed on
(
	unset MAKEFLAGS MFLAGS MAKELEVEL
	"${MAKE:-make}" -C "$top_builddir" install DESTDIR= prefix="$prefix" \
		exec_prefix="$prefix" bindir="$prefix/bin" libdir="$prefix/lib" \
		includedir="$prefix/include" datarootdir="$prefix/share"
) </dev/null >"$tmp/make-install.out" 2>&1
st=$?
ok $st "make install into $prefix (exit $st)" || diag_file "$tmp/make-install.out"

missing=
for f in bin/shardflow-sim bin/shardflow-sim-job; do
	[ -x "$prefix/$f" ] || missing="$missing $f"
done
for c in "$top_srcdir"/bench/calibrations/*.tsv; do
	[ -f "$prefix/share/shardflow/calibrations/$(basename "$c")" ] ||
		missing="$missing share/shardflow/calibrations/$(basename "$c")"
done
[ -z "$missing" ]
ok $? "the prefix holds shardflow-sim, shardflow-sim-job and bench/calibrations' files${missing:+ (missing:$missing)}"

mv "$prefix" "$moved"
small="--arch gpt --layers 2 --dim 64 --heads 2 --vocab 256 --context 64 --batch 2 --gpus-per-node 1 --no-breakdown"
# shellcheck disable=SC2086
timeout 300 "$moved/bin/shardflow-sim" $small --gpu h100:tf32 >"$tmp/run.out" 2>&1
st=$?
[ $st -eq 0 ] &&
	grep -qF "shardflow-sim: compute: the measured efficiencies of $moved/share/shardflow/calibrations/h100-tf32-gpt124m.tsv" "$tmp/run.out" &&
	grep -Eq '^ +1 +- +[0-9.]+ ' "$tmp/run.out"
ok $? "the moved prefix's shardflow-sim simulates 1 H100 with that prefix's TF32 calibration (exit $st)" ||
	diag_file "$tmp/run.out"

mv "$moved/bin/shardflow-sim-job" "$tmp/job"
# shellcheck disable=SC2086
"$moved/bin/shardflow-sim" $small --gpu h100:tf32 >"$tmp/nojob.out" 2>&1
st=$?
mv "$tmp/job" "$moved/bin/shardflow-sim-job"
[ $st -ne 0 ] && grep -qF "no $moved/bin/shardflow-sim-job" "$tmp/nojob.out"
ok $? "without its job it stops, naming $moved/bin/shardflow-sim-job (exit $st)" ||
	diag_file "$tmp/nojob.out"

rm -r "$moved/share/shardflow/calibrations"
# shellcheck disable=SC2086
timeout 300 "$moved/bin/shardflow-sim" $small --gpu h100:tf32 >"$tmp/nocal.out" 2>&1
st=$?
[ $st -eq 0 ] &&
	grep -q "^shardflow-sim: compute: the roofline's assumed efficiencies: no measured calibration of h100 tf32" "$tmp/nocal.out"
ok $? "without the prefix's calibrations: the roofline, said so, not the build tree's file (exit $st)" ||
	diag_file "$tmp/nocal.out"

"$moved/bin/shardflow-sim" --model gpt2 --gpu v100 >"$tmp/bad.out" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "accepted h100, h200, a100" "$tmp/bad.out"
ok $? "a bad --gpu is refused before a launch (exit $st)" || diag_file "$tmp/bad.out"
finish
