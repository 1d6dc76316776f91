#!/bin/sh
# sim_expect.sh — a simulation build predicts the emulated cluster's step times as
# bench/sim_validate.sh recorded them (docs/scale.md, "Validation").
#
# tests/sim/emulated/ holds what one run of bench/sim_validate.sh recorded on this
# kind of machine: the MLP's codelet models calibrated on the emulated cluster at
# 1 Gbit/s (mlp-np2, mlp-np4) and expect.tsv: per rank count and depth, the link's
# calibrated bandwidth, latency and CPU per byte, the measured median step time
# there and the simulation's prediction. For each row this test simulates the same
# job on the same platform (SHARDFLOW_SIM_SHARED_CPUS: the machine's 2 cores shared
# by the ranks as scripts/cluster.sh binds them; SHARDFLOW_SIM_COMM_CPU) and checks
#  - the prediction is the recorded one (to 0.5 %: the simulation is deterministic;
#    the margin covers another libm or SimGrid build), and
#  - it is within 10 % of the step time measured on the emulated cluster.
# Then SHARDFLOW_SIM_SHARED_CPUS's effect and refusals: the compute of 4 ranks on
# one shared core takes longer than on two, a host the platform lacks is refused by
# name, and SHARDFLOW_SIM_COMM_CPU without a shared host is refused.
. "$(dirname "$0")/lib.sh"
. "$top_builddir/tests/config.sh"
SMPIRUN="$STARPU_BINDIR/starpu_smpirun"
require_progs "$MLP" "$SMPIRUN"
command -v xsltproc >/dev/null 2>&1 || skip_all "starpu_smpirun needs xsltproc (Debian package xsltproc)"

rec="$top_srcdir/tests/sim/emulated"
rows=$(grep -c '^[0-9]' "$rec/expect.tsv")
plan $((2 * rows + 3))

SF_TEST_TIMEOUT=300
export SF_TEST_TIMEOUT
args=$(sed -n "s/^# args //p" "$rec/expect.tsv")
bw=125000000 lat=0.00001

# platform N: N hosts on one switch at link $bw bytes/s, $lat s, and cores core0, core1
platform() {
	cat >"$tmp/platform.xml" <<EOF
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM 'http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd'>
<platform version="4">
<AS id="AS0" routing="Full">
  <cluster id="emulated" prefix="node" suffix="" radical="0-$(($1 - 1))" speed="1Gf"
           bw="${bw}Bps" lat="${lat}s" bb_bw="1000GBps" bb_lat="0s" sharing_policy="SPLITDUPLEX"/>
  <AS id="cores" routing="None">
    <host id="core0" speed="1Gf"/>
    <host id="core1" speed="1Gf"/>
  </AS>
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

# sim N DEPTH CORES OUT [ENV...]: the MLP on N simulated ranks; prints the median ms
# of the steps after the 3rd
sim() {
	n=$1 d=$2 cores=$3 out=$4
	shift 4
	mkdir -p "$tmp/m$n"
	[ -d "$tmp/m$n/codelets" ] || { cp -r "$rec/mlp-np$n/codelets" "$tmp/m$n/" && cp -r "$top_srcdir/tests/sim/bus" "$tmp/m$n/"; }
	platform "$n"
	# shellcheck disable=SC2086
	env STARPU_HOSTNAME=simnode STARPU_PERF_MODEL_DIR="$tmp/m$n" STARPU_NCPU=2 STARPU_SILENT=1 \
		SHARDFLOW_PREFETCH_DEPTH="$d" SHARDFLOW_SIM_SHARED_CPUS="$cores" "$@" \
		timeout "$SF_TEST_TIMEOUT" "$SMPIRUN" -platform "$tmp/platform.xml" -hostfile "$tmp/hosts" \
		-np "$n" "$MLP" $args --cfg=smpi/send-is-detached-thresh:0 --cfg=smpi/test:0 \
		--cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1 \
		--cfg=smpi/auto-shared-malloc-thresh:1048576 >"$out" 2>"$out.err"
	awk '$1 == "step" && $2 > 3 && $5 == "ms" { print $6 }' "$out" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else if (NR) print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

grep '^[0-9]' "$rec/expect.tsv" >"$tmp/rows"
while read -r n d measured predicted rbw rlat cpu; do
	bw=$rbw lat=$rlat
	got=$(sim "$n" "$d" core0,core1 "$tmp/r$n-$d" SHARDFLOW_SIM_COMM_CPU="$cpu")
	[ -n "$got" ] && awk -v a="$got" -v b="$predicted" 'BEGIN { e = (a - b) / b; exit !(e < 0.005 && e > -0.005) }'
	if ! ok $? "$n ranks, depth $d: the recorded prediction, $predicted ms (now ${got:-none})"; then
		diag_file "$tmp/r$n-$d.err"
	fi
	[ -n "$got" ] && awk -v a="$got" -v b="$measured" 'BEGIN { e = (a - b) / b; exit !(e <= 0.10 && e >= -0.10) }'
	ok $? "$n ranks, depth $d: within 10 % of the emulated cluster's $measured ms ($(awk -v a="${got:-0}" -v b="$measured" 'BEGIN { printf "%+.1f %%", 100 * (a - b) / b }'))"
done <"$tmp/rows"
bw=125000000 lat=0.00001

one=$(sim 4 2 core0 "$tmp/one" SHARDFLOW_SKIP=comm)
two=$(sim 4 2 core0,core1 "$tmp/two" SHARDFLOW_SKIP=comm)
[ -n "$one" ] && [ -n "$two" ] && awk -v a="$one" -v b="$two" 'BEGIN { exit !(a > 1.6 * b) }'
ok $? "compute only: 4 ranks sharing one core take over 1.6 times as long as on two ($two -> ${one:-none} ms)"
sim 2 2 core0,nosuch "$tmp/bad" >/dev/null
grep -q 'SHARDFLOW_SIM_SHARED_CPUS="core0,nosuch": the platform has no host "nosuch"' "$tmp/bad.err"
if ! ok $? "SHARDFLOW_SIM_SHARED_CPUS naming a host the platform lacks: refused by name"; then
	diag_file "$tmp/bad.err"
fi
sim 2 2 "" "$tmp/bad2" SHARDFLOW_SIM_COMM_CPU=1.5 >/dev/null
grep -q 'SHARDFLOW_SIM_COMM_CPU="1.5" needs SHARDFLOW_SIM_SHARED_CPUS' "$tmp/bad2.err"
if ! ok $? "SHARDFLOW_SIM_COMM_CPU without a shared host: refused with the reason"; then
	diag_file "$tmp/bad2.err"
fi
finish
