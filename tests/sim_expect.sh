#!/bin/sh
# sim_expect.sh — a simulation build predicts the emulated cluster's step times as
# bench/sim_validate.sh recorded them (docs/scale.md, "Validation").
#
# tests/sim/emulated/ holds what one run of bench/sim_validate.sh recorded on this
# kind of machine: the MLP's codelet models calibrated on the emulated cluster at
# 1 and 10 Gbit/s (RATE-mlp-npN) and expect.tsv: per rate, rank count and depth, the link's
# calibrated bandwidth, latency, CPU per byte and host CPU a step, the measured
# median step time there and the simulation's prediction. For each row this test
# simulates the same job on the same platform (SHARDFLOW_SIM_SHARED_CPUS: the
# machine's 2 cores shared by the ranks as scripts/cluster.sh binds them;
# SHARDFLOW_SIM_COMM_CPU, SHARDFLOW_SIM_HOST_CPU) and checks
#  - the prediction is the recorded one (to 0.5 %: the simulation is deterministic;
#    the margin covers another libm or SimGrid build), and
#  - it is within 10 % of the step time measured on the emulated cluster.
# Then SHARDFLOW_SIM_SHARED_CPUS's effect and refusals: the compute of 4 ranks on
# one shared core takes longer than on two, a host the platform lacks is refused by
# name, and SHARDFLOW_SIM_COMM_CPU without a shared host is refused. And
# SHARDFLOW_SIM_HOST_CPU's: the main thread's charge adds itself to a step of this
# job (it waits for each step), the charge beside the tasks hides in the cores' idle
# time and otherwise adds some of itself and no more, a malformed value or one
# without a shared host is refused.
. "$(dirname "$0")/lib.sh"
. "$top_builddir/tests/config.sh"
SMPIRUN="$STARPU_BINDIR/starpu_smpirun"
require_progs "$MLP" "$SMPIRUN"
command -v xsltproc >/dev/null 2>&1 || skip_all "starpu_smpirun needs xsltproc (Debian package xsltproc)"

rec="$top_srcdir/tests/sim/emulated"
rows=$(grep -c '^[0-9]' "$rec/expect.tsv")
plan $((2 * rows + 8))

SF_TEST_TIMEOUT=300
export SF_TEST_TIMEOUT
args=$(sed -n "s/^# args //p" "$rec/expect.tsv")
bw=125000000 lat=0.00001 rate=1gbit

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
	m=$tmp/m-$rate-$n
	mkdir -p "$m"
	[ -d "$m/codelets" ] || { cp -r "$rec/$rate-mlp-np$n/codelets" "$m/" && cp -r "$top_srcdir/tests/sim/bus" "$m/"; }
	platform "$n"
	# shellcheck disable=SC2086
	env STARPU_HOSTNAME=simnode STARPU_PERF_MODEL_DIR="$m" STARPU_NCPU=2 STARPU_SILENT=1 \
		SHARDFLOW_PREFETCH_DEPTH="$d" SHARDFLOW_SIM_SHARED_CPUS="$cores" "$@" \
		timeout "$SF_TEST_TIMEOUT" "$SMPIRUN" -platform "$tmp/platform.xml" -hostfile "$tmp/hosts" \
		-np "$n" "$MLP" $args --cfg=smpi/send-is-detached-thresh:0 --cfg=smpi/test:0 \
		--cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1 \
		--cfg=smpi/auto-shared-malloc-thresh:1048576 >"$out" 2>"$out.err"
	awk '$1 == "step" && $2 > 3 && $5 == "ms" { print $6 }' "$out" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else if (NR) print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

grep '^[0-9]' "$rec/expect.tsv" >"$tmp/rows"
while read -r rate n d measured predicted rbw rlat cpu host; do
	bw=$rbw lat=$rlat
	got=$(sim "$n" "$d" core0,core1 "$tmp/r$rate-$n-$d" SHARDFLOW_SIM_COMM_CPU="$cpu" SHARDFLOW_SIM_HOST_CPU="$host")
	[ -n "$got" ] && awk -v a="$got" -v b="$predicted" 'BEGIN { e = (a - b) / b; exit !(e < 0.005 && e > -0.005) }'
	if ! ok $? "$rate, $n ranks, depth $d: the recorded prediction, $predicted ms (now ${got:-none})"; then
		diag_file "$tmp/r$rate-$n-$d.err"
	fi
	[ -n "$got" ] && awk -v a="$got" -v b="$measured" 'BEGIN { e = (a - b) / b; exit !(e <= 0.10 && e >= -0.10) }'
	ok $? "$rate, $n ranks, depth $d: within 10 % of the emulated cluster's $measured ms ($(awk -v a="${got:-0}" -v b="$measured" 'BEGIN { printf "%+.1f %%", 100 * (a - b) / b }'))"
done <"$tmp/rows"
bw=125000000 lat=0.00001 rate=1gbit rate=1gbit

one=$(sim 4 2 core0 "$tmp/one" SHARDFLOW_SKIP=comm)
two=$(sim 4 2 core0,core1 "$tmp/two" SHARDFLOW_SKIP=comm)
[ -n "$one" ] && [ -n "$two" ] && awk -v a="$one" -v b="$two" 'BEGIN { exit !(a > 1.6 * b) }'
ok $? "compute only: 4 ranks sharing one core take over 1.6 times as long as on two ($two -> ${one:-none} ms)"
# refused CORES NAME PATTERN WHAT [ENV...]: a run of 2 ranks on CORES fails, its stderr
# matching PATTERN
refused() {
	_c=$1 _n=$2 _p=$3 _w=$4
	shift 4
	sim 2 2 "$_c" "$tmp/$_n" "$@" >/dev/null
	grep -q -- "$_p" "$tmp/$_n.err"
	if ! ok $? "$_w"; then
		diag_file "$tmp/$_n.err"
	fi
}
# grows BASE GOT LO HI WHAT ERR: GOT - BASE (ms) in [LO, HI)
grows() {
	[ -n "$1" ] && [ -n "$2" ] && awk -v a="$2" -v b="$1" -v lo="$3" -v hi="$4" 'BEGIN { d = a - b; exit !(d >= lo && d < hi) }'
	if ! ok $? "$5 ($1 -> ${2:-none} ms)"; then
		diag_file "$6"
	fi
}

# every rank's host missing: a rank that got one would wait for the other in MPI
# until the timeout (the simulation has no watchdog)
refused nosuch,nosuch2 bad 'SHARDFLOW_SIM_SHARED_CPUS="nosuch,nosuch2": the platform has no host "nosuch"' \
	"SHARDFLOW_SIM_SHARED_CPUS naming a host the platform lacks: refused by name"
refused "" bad2 'SHARDFLOW_SIM_COMM_CPU="1.5" needs SHARDFLOW_SIM_SHARED_CPUS' \
	"SHARDFLOW_SIM_COMM_CPU without a shared host: refused with the reason" SHARDFLOW_SIM_COMM_CPU=1.5

# on a 1 Gbit/s link the cores wait for the collectives much of a step: the main
# thread's charge comes before the step's tasks exist and adds itself; the charge
# beside the tasks mostly fills the wait. With the compute alone (no collectives) the
# latter shows.
base=$(sim 2 2 core0,core1 "$tmp/h0")
grows "$base" "$(sim 2 2 core0,core1 "$tmp/h1" SHARDFLOW_SIM_HOST_CPU=10)" 9.5 10.5 \
	"SHARDFLOW_SIM_HOST_CPU=10: the main thread's 10 ms added to the step" "$tmp/h1.err"
grows "$base" "$(sim 2 2 core0,core1 "$tmp/h2" SHARDFLOW_SIM_HOST_CPU=0,10)" 0 5 \
	"SHARDFLOW_SIM_HOST_CPU=0,10: 10 ms beside the tasks mostly hidden by the collectives' waits" "$tmp/h2.err"
base=$(sim 2 2 core0,core1 "$tmp/h3" SHARDFLOW_SKIP=comm)
grows "$base" "$(sim 2 2 core0,core1 "$tmp/h4" SHARDFLOW_SKIP=comm SHARDFLOW_SIM_HOST_CPU=0,10)" 0.5 10.5 \
	"SHARDFLOW_SIM_HOST_CPU=0,10, compute only: the 10 ms slow the busy cores' step, by no more" "$tmp/h4.err"
refused core0,core1 bad3 'SHARDFLOW_SIM_HOST_CPU="1,2,3" is invalid: accepted is MAIN_MS or MAIN_MS,BG_MS' \
	"SHARDFLOW_SIM_HOST_CPU=1,2,3: refused, saying what is accepted" SHARDFLOW_SIM_HOST_CPU=1,2,3
refused "" bad4 'SHARDFLOW_SIM_HOST_CPU="1" needs SHARDFLOW_SIM_SHARED_CPUS' \
	"SHARDFLOW_SIM_HOST_CPU without a shared host: refused with the reason" SHARDFLOW_SIM_HOST_CPU=1
finish
