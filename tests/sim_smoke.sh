#!/bin/sh
# sim_smoke.sh — a simulation build (configure --enable-simulation, docs/scale.md)
# runs the MLP's training steps in StarPU's simulated time, with SMPI simulating the
# ranks' MPI on a platform file, shardflow's own ring collectives included.
#
# The performance models are recorded (tests/sim/: this machine's bus files, a node
# of 4 CPUs, and the MLP's codelets calibrated by real 2- and 4-rank runs with
# STARPU_HOSTNAME=simnode); the platform is 2 or 4 hosts on one switch.
#  - 2 and 4 simulated ranks train 5 steps: exit 0, the final loss printed;
#  - the simulated time is the same in two runs (the simulation is deterministic);
#  - a link 10 times slower makes the run at least 3 times longer in simulated time
#    (the collectives really cross the simulated link; with the collectives left
#    out, or their time not simulated, it would not change).
. "$(dirname "$0")/lib.sh"
. "$top_builddir/tests/config.sh"
SMPIRUN="$STARPU_BINDIR/starpu_smpirun"
require_progs "$MLP" "$SMPIRUN"
command -v xsltproc >/dev/null 2>&1 || skip_all "starpu_smpirun needs xsltproc (Debian package xsltproc)"

plan 7

SF_TEST_TIMEOUT=300
export SF_TEST_TIMEOUT
cp -r "$top_srcdir/tests/sim" "$tmp/models"

# platform N BW: N hosts node0.. on one switch, links of BW bytes/s
platform() {
	cat >"$tmp/platform.xml" <<EOF
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM 'http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd'>
<platform version="4">
<AS id="AS0" routing="Full">
  <cluster id="sim" prefix="node" suffix="" radical="0-$(($1 - 1))" speed="1Gf"
           bw="$2Bps" lat="50us" bb_bw="1000GBps" bb_lat="1us"/>
</AS>
</platform>
EOF
	i=0
	: >"$tmp/hosts"
	while [ $i -lt "$1" ]; do
		echo "node$i" >>"$tmp/hosts"
		i=$((i + 1))
	done
}

# sim N BW OUT: the MLP's 5 steps on N simulated ranks; prints the simulated seconds
sim() {
	platform "$1" "$2"
	STARPU_HOSTNAME=simnode STARPU_PERF_MODEL_DIR="$tmp/models" STARPU_NCPU=2 \
		timeout "$SF_TEST_TIMEOUT" "$SMPIRUN" -platform "$tmp/platform.xml" \
		-hostfile "$tmp/hosts" -np "$1" "$MLP" --steps 5 \
		--cfg=smpi/display-timing:yes >"$3.out" 2>"$3.err"
	echo $? >"$3.rc"
	sed -n 's/.*Simulated time: \([0-9.e+-]*\) seconds.*/\1/p' "$3.err" | head -1
}

t2=$(sim 2 125M "$tmp/a")
[ "$(cat "$tmp/a.rc")" = 0 ] && grep -q "^final_loss" "$tmp/a.out" && [ -n "$t2" ]
if ! ok $? "2 simulated ranks train 5 steps (exit $(cat "$tmp/a.rc"), ${t2:-no} simulated s)"; then
	diag_file "$tmp/a.err"
fi
t2b=$(sim 2 125M "$tmp/b")
[ -n "$t2" ] && [ "$t2" = "$t2b" ]
ok $? "the simulated time is the same in a second run ($t2 and $t2b s)"
t2s=$(sim 2 12.5M "$tmp/c")
[ -n "$t2" ] && [ -n "$t2s" ] && awk -v a="$t2" -v b="$t2s" 'BEGIN { exit !(b >= 3 * a) }'
ok $? "a 10 times slower link: at least 3 times the simulated time ($t2 -> ${t2s:-none} s)"

t4=$(sim 4 125M "$tmp/d")
[ "$(cat "$tmp/d.rc")" = 0 ] && grep -q "^final_loss" "$tmp/d.out" && [ -n "$t4" ]
if ! ok $? "4 simulated ranks train 5 steps (exit $(cat "$tmp/d.rc"), ${t4:-no} simulated s)"; then
	diag_file "$tmp/d.err"
fi
t4s=$(sim 4 12.5M "$tmp/e")
[ -n "$t4" ] && [ -n "$t4s" ] && awk -v a="$t4" -v b="$t4s" 'BEGIN { exit !(b >= 3 * a) }'
ok $? "4 ranks, a 10 times slower link: at least 3 times the simulated time ($t4 -> ${t4s:-none} s)"

grep -q "step 5 loss" "$tmp/d.out"
ok $? "rank 0 reports each of the 5 steps"
! grep -E "shardflow: error|assert|Segmentation" "$tmp/a.err" "$tmp/d.err" >/dev/null
if ! ok $? "no error, assertion or crash in the simulated runs"; then
	diag_file "$tmp/d.err"
fi
finish
