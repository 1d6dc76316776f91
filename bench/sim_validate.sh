#!/bin/bash
# sim_validate.sh — how far the simulation (docs/scale.md) is from the real thing:
# the emulated cluster's measured step times against the simulator's prediction.
#
#   bench/sim_validate.sh --sim-build DIR [--build DIR] [--rates 1gbit,10gbit]
#                         [--ranks 2,4] [--depths 0,1,2,3] [--models mlp,gpt]
#                         [--runs N] [--steps N] [--out DIR] [--predict-only]
#
# For every link rate, scripts/cluster.sh brings up one node per rank (needs root),
# and for every model and rank count:
#  1. calibration, as StarPU's own: one run with STARPU_CALIBRATE=1 records the
#     compute codelets' history models (STARPU_HOSTNAME=simnode, the models under
#     OUT/models/RATE-MODEL-npN). With more ranks than cores, two ranks on a core
#     preempt each other's longer tasks and the recorded times count both; so the
#     layers' tasks are calibrated again by a run on as many ranks as cores with the
#     same rows per rank (a smaller global batch), whose times replace those of the
#     same sizes. The host's: the calibration run's own line of what a step cost rank
#     0's host (mlp_synthetic's comm_stats, gpt's host line): the CPU its collectives
#     took a byte sent (copies, TCP, polls), the main thread's CPU a step (the batch,
#     the submission) and the comm worker's outside the collectives; with the
#     kernel's softirq time over the run (/proc/stat) a byte sent. The network's:
#     bench/ring_bw times a plain MPI ring exchange of the MLP's step (11.7 MB a rank
#     on 2 ranks) in the library's pieces on that many ranks (the link's bandwidth as
#     a long ring sees it), and a TCP ping gives the latency;
#  2. measurement: --runs rounds of every depth, interleaved, each --steps steps;
#     a run's step time is the median of its steps after the first 3, a row's the
#     median of its runs (min-max printed);
#  3. prediction: the same program, built by --sim-build (configure
#     --enable-simulation), on the same steps in StarPU's simulated time with SMPI
#     on a platform of N hosts, each linked to a switch at the calibrated rate, and
#     the ranks' compute tasks on one host of one core per core of this machine, as
#     scripts/cluster.sh binds rank i to core i mod nproc (SHARDFLOW_SIM_SHARED_CPUS:
#     two ranks on a core share it), where the collectives burn the calibrated CPU
#     per byte (SHARDFLOW_SIM_COMM_CPU) and every step the host's calibrated CPU
#     outside tasks (SHARDFLOW_SIM_HOST_CPU).
# Nothing of the measured runs' step times goes into the prediction. --predict-only
# redoes step 3 alone with OUT's calibration and measurements (no root needed).
#
# The models: mlp is examples/mlp_synthetic (--widths 784,1024,1024,1024,10, batch
# 256), gpt is examples/gpt's default model (842k parameters, context 128, batch 32),
# global batches the same on 2 and 4 ranks.
#
# Writes OUT/table.md (the table docs/scale.md shows), OUT/raw.tsv, OUT/network.tsv,
# OUT/host.tsv (the calibrations) and the logs.
# Options: --build DIR the normal build (default: this tree), --sim-build DIR the
# simulation build (required), --rates (tc rates, default 1gbit,10gbit), --ranks
# (default 2,4), --depths (SHARDFLOW_PREFETCH_DEPTH values, default 0,1,2,3),
# --models (default mlp,gpt), --runs (default 5), --steps (default 13),
# --out (default sim-validate-out).
set -u

prog=sim_validate.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
usage_end=49
. "$here/cli.sh"

build=$top
sim_build=
rates=1gbit,10gbit
ranks=2,4
depths=0,1,2,3
models=mlp,gpt
runs=5
steps=13
out=sim-validate-out
predict_only=0
WARMUP=3

# list OPTION VALUE PATTERN WHAT: usage and status 2 unless VALUE is a comma list of PATTERN
list() {
	local v
	for v in ${2//,/ }; do
		[[ $v =~ ^($3)$ ]] || { echo "$prog: $1 \"$2\" is invalid: $4" >&2; usage 2; }
	done
	[ -n "$2" ] || { echo "$prog: $1 is empty: $4" >&2; usage 2; }
}

while [ $# -gt 0 ]; do
	case $1 in
	--build) [ $# -ge 2 ] || usage; build=$(cd "$2" && pwd) || die "--build $2: no such directory"; shift 2 ;;
	--sim-build) [ $# -ge 2 ] || usage; sim_build=$(cd "$2" && pwd) || die "--sim-build $2: no such directory"; shift 2 ;;
	--rates) [ $# -ge 2 ] || usage; list "$1" "$2" '[0-9]+(\.[0-9]+)?[kmg]bit' "expected tc rates such as 1gbit,100mbit"; rates=$2; shift 2 ;;
	--ranks) [ $# -ge 2 ] || usage; list "$1" "$2" '[2-9]|[1-5][0-9]|6[0-4]' "expected rank counts from 2 to 64"; ranks=$2; shift 2 ;;
	--depths) [ $# -ge 2 ] || usage; list "$1" "$2" '[0-9]' "expected prefetch depths from 0 to 9"; depths=$2; shift 2 ;;
	--models) [ $# -ge 2 ] || usage; list "$1" "$2" 'mlp|gpt' "accepted: mlp, gpt"; models=$2; shift 2 ;;
	--runs) [ $# -ge 2 ] || usage; posint "$1" "$2"; runs=$2; shift 2 ;;
	--steps) [ $# -ge 2 ] || usage; posint "$1" "$2"; steps=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	--predict-only) predict_only=1; shift ;;
	-h | --help) usage 0 ;;
	*) echo "$prog: unknown option \"$1\"" >&2; usage 2 ;;
	esac
done
[ -n "$sim_build" ] || { echo "$prog: --sim-build DIR is required (a build configured with --enable-simulation)" >&2; usage 2; }
[ "$steps" -gt $WARMUP ] || die "--steps must be more than the $WARMUP warm-up steps"
[ "$(id -u)" -eq 0 ] || [ $predict_only = 1 ] || die "the emulated cluster needs root (network namespaces)"
grep -q '^#define SF_SIMULATED 1' "$sim_build/config.h" 2>/dev/null ||
	die "$sim_build is not a simulation build (configure --enable-simulation)"
[ -x "$build/examples/mlp_synthetic" ] && [ -x "$build/examples/gpt" ] ||
	die "$build/examples/{mlp_synthetic,gpt} not found: build shardflow first"
[ -x "$sim_build/examples/mlp_synthetic" ] && [ -x "$sim_build/examples/gpt" ] ||
	die "$sim_build/examples/{mlp_synthetic,gpt} not found: make in the simulation build first"
mkvar() { sed -n "s/^$1 = //p" "$2/Makefile" | head -1; }
SMPIRUN=$(mkvar STARPU_BINDIR "$sim_build")/starpu_smpirun
[ -x "$SMPIRUN" ] || SMPIRUN=$(sed -n 's/^STARPU_BINDIR=//p' "$sim_build/tests/config.sh" | tr -d "'\"")/starpu_smpirun
[ -x "$SMPIRUN" ] || die "starpu_smpirun not found next to the simulation build's StarPU"
command -v xsltproc >/dev/null || die "starpu_smpirun needs xsltproc (apt-get install xsltproc)"

mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
if [ $predict_only = 1 ]; then
	[ -f "$out/raw.tsv" ] && [ -f "$out/network.tsv" ] && [ -f "$out/host.tsv" ] ||
		die "--predict-only: $out has no raw.tsv, network.tsv and host.tsv of an earlier run"
fi
logs=$out/logs
mkdir -p "$logs" "$out/models" "$out/bin"
CLUSTER=$top/scripts/cluster.sh
mpicc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$top" -o "$out/bin/ring_bw" "$here/ring_bw.c" ||
	die "cannot build bench/ring_bw.c"
ncores=$(nproc)
cores=$(seq 0 $((ncores - 1)) | sed 's/^/core/' | paste -sd, -)
maxnp=0
for n in ${ranks//,/ }; do [ "$n" -gt $maxnp ] && maxnp=$n; done

cleanup() { "$CLUSTER" down >/dev/null 2>&1; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# args MODEL [BATCH]: the program's arguments
batch_of() { case $1 in mlp) echo 256 ;; gpt) echo 32 ;; esac; }
args() {
	local b=${2:-$(batch_of "$1")}
	case $1 in
	mlp) echo "--steps $steps --warmup $WARMUP --batch $b --widths 784,1024,1024,1024,10" ;;
	gpt) echo "--steps $steps --batch $b --progress-every 1 --eval-every 1000000 --sample 0" ;;
	esac
}

# merge FROM INTO: FROM's history entries replace INTO's of the same footprint
merge() {
	awk 'function entry() { return NF == 8 && length($1) == 8 && $1 ~ /^[0-9a-f]+$/ }
	     FNR == NR { if (entry()) e[$1] = $0; next }
	     entry() && ($1 in e) { print e[$1]; next } { print }' \
		"$1" "$2" >"$2.tmp" && mv "$2.tmp" "$2"
}
prog_of() { case $1 in mlp) echo examples/mlp_synthetic ;; gpt) echo examples/gpt ;; esac; }

# softirq_ms: the machine's softirq time so far (/proc/stat, ms)
softirq_ms() { awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.0f", $8 * 1000 / hz }' /proc/stat; }

# host_costs MODEL LOG: what a step cost rank 0's host, from the run's own line:
# "COMM_CPU_NS_PER_BYTE MAIN_MS COMM_OTHER_MS MB_SENT"
host_costs() {
	case $1 in
	mlp) awk '$1 == "comm_stats" { for (i = 2; i < NF; i++) v[$i] = $(i + 1)
		if (v["comm_mb"] > 0) printf "%.3f %.3f %.3f %.3f\n", v["comm_cpu_ms"] / v["comm_mb"],
			v["main_thread_cpu_ms"], v["comm_worker_cpu_ms"] - v["comm_cpu_ms"], v["comm_mb"] }' "$2" ;;
	gpt) sed -n 's/.*host: rank 0, .*main thread \([0-9.]*\) ms CPU; comm worker \([0-9.]*\) ms CPU in [0-9.]* ms of collectives, \([0-9.]*\) ms CPU outside them; \([0-9.]*\) MB sent.*/\1 \2 \3 \4/p' "$2" |
		awk '$4 > 0 { printf "%.3f %.3f %.3f %.3f\n", $2 / $4, $1, $3, $4 }' ;;
	esac | tail -1
}

# step_ms MODEL LOG: the median step time (ms) of the steps after the warm-up, or NA.
# mlp prints each step's ms; gpt prints the mean tokens/s since the start after every
# step, so step k ends at k * tokens / rate_k.
step_ms() {
	case $1 in
	mlp) awk -v w=$WARMUP '$1 == "step" && $2 > w && $5 == "ms" { print $6 }' "$2" ;;
	gpt) progress_rates "$2" | awk -v w=$WARMUP '{
		t = $1 * 32 * 128 / $3; if ($1 > w && prev != "") print 1000 * (t - prev); prev = t }' ;;
	esac | sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "NA"; else if (NR % 2) print v[(NR + 1) / 2];
		else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# platform N BPS LAT: N hosts node0.. linked to one switch (full duplex), and this
# machine's cores as hosts core0.. of one core each
platform() {
	cat >"$out/platform.xml" <<EOF
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM 'http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd'>
<platform version="4">
<AS id="AS0" routing="Full">
  <cluster id="emulated" prefix="node" suffix="" radical="0-$(($1 - 1))" speed="1Gf"
           bw="$2Bps" lat="$3s" bb_bw="1000GBps" bb_lat="0s" sharing_policy="SPLITDUPLEX"/>
  <AS id="cores" routing="None">
$(for c in ${cores//,/ }; do echo "    <host id=\"$c\" speed=\"1Gf\"/>"; done)
  </AS>
</AS>
</platform>
EOF
	seq 0 $(($1 - 1)) | sed 's/^/node/' >"$out/hosts"
}

# Does a thread's CPU time leave out the softirq work done in its context? Only with
# the kernel's CONFIG_IRQ_TIME_ACCOUNTING; with tick accounting, a tick that lands in
# a softirq counts for /proc/stat's softirq and for the interrupted thread both, so
# the collectives' CPU (and the compute tasks' calibrated times) hold it already.
irq_apart=0
{ grep -qx 'CONFIG_IRQ_TIME_ACCOUNTING=y' "/boot/config-$(uname -r)" 2>/dev/null ||
	zcat /proc/config.gz 2>/dev/null | grep -qx 'CONFIG_IRQ_TIME_ACCOUNTING=y'; } && irq_apart=1
RAW=$out/raw.tsv
NET=$out/network.tsv
HOST=$out/host.tsv
if [ $predict_only = 1 ]; then
	# the predictions redone: those of --rates and --models
	awk -F'\t' -v r=",$rates," -v m=",$models," '!($5 == "simulated" && index(r, "," $1 ",") &&
		index(m, "," $2 ",")) { print }' "$RAW" >"$RAW.tmp" && mv "$RAW.tmp" "$RAW"
else
	printf 'rate\tmodel\tranks\tdepth\twhat\trun\tms\n' >"$RAW"
	printf 'rate\tranks\tring_mbit\tline_mbit\trtt_ms\tcpu_ns_per_byte\n' >"$NET"
	printf 'rate\tmodel\tranks\tcomm_cpu_ns_per_byte\tsoftirq_ns_per_byte\tmain_ms\tcomm_other_ms\tmb_per_step\n' >"$HOST"
fi
t0=$(date +%s)
for rate in ${rates//,/ }; do
	[ $predict_only = 1 ] && rtt=$(awk -v r="$rate" '$1 == r { print $5; exit }' "$NET")
	[ $predict_only = 1 ] || {
	"$CLUSTER" down >/dev/null 2>&1
	"$CLUSTER" up --nodes "$maxnp" --rate "$rate" >"$logs/cluster-$rate.log" 2>&1 ||
		die "scripts/cluster.sh up --rate $rate failed: $(tail -3 "$logs/cluster-$rate.log")"
	"$CLUSTER" bench --pings 400 >"$logs/net-$rate.log" 2>&1 || die "scripts/cluster.sh bench failed, see $logs/net-$rate.log"
	rtt=$(sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' "$logs/net-$rate.log" | head -1)
	line_mbit=$(awk -v r="$rate" 'BEGIN { n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u);
		print n * (u == "gbit" ? 1000 : u == "mbit" ? 1 : 0.001) }')
	for np in ${ranks//,/ }; do
		"$CLUSTER" run -np "$np" --timeout 300 "$out/bin/ring_bw" --reps 15 \
			--rate-mbit "$line_mbit" >"$logs/ring_bw-$rate-np$np.log" 2>&1
		# the pieces' rate a direction, and their CPU ms a step over the MB a rank sends
		set -- $(awk -F'|' '/MB sent per rank and step/ { split($0, w, " "); for (i = 1; i < length(w); i++) if (w[i + 1] == "MB") mb = w[i] }
			$2 ~ /pieces, polled/ { gsub(/ /, "", $4); gsub(/ /, "", $6); if (mb > 0) printf "%s %.3f", $4, $6 / mb }' \
			"$logs/ring_bw-$rate-np$np.log")
		[ $# -eq 2 ] || die "bench/ring_bw failed on $np ranks, see $logs/ring_bw-$rate-np$np.log"
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rate" "$np" "$1" "$line_mbit" "$rtt" "$2" >>"$NET"
		echo "$prog: $rate, $np ranks: a ring exchange gets $1 Mbit/s a direction, $2 ns of CPU a byte sent, TCP rtt $rtt ms" >&2
	done
	for model in ${models//,/ }; do
		for np in ${ranks//,/ }; do
			mdir=$out/models/$rate-$model-np$np
			rm -rf "$mdir"
			mkdir -p "$mdir"
			# calibration
			irq0=$(softirq_ms)
			# shellcheck disable=SC2046
			STARPU_HOSTNAME=simnode STARPU_PERF_MODEL_DIR=$mdir STARPU_CALIBRATE=1 \
				"$CLUSTER" run -np "$np" --timeout 300 "$build/$(prog_of $model)" $(args $model) \
				>"$logs/calibrate-$rate-$model-np$np.log" 2>&1 ||
				die "the calibration run failed, see $logs/calibrate-$rate-$model-np$np.log"
			irq1=$(softirq_ms)
			# shellcheck disable=SC2046
			set -- $(host_costs $model "$logs/calibrate-$rate-$model-np$np.log")
			[ $# -eq 4 ] || die "the calibration run printed no host costs, see $logs/calibrate-$rate-$model-np$np.log"
			# the kernel's softirq work (TCP receive) over the run, a byte a rank sent
			irq=$(awk -v a="$irq0" -v b="$irq1" -v n="$np" -v s="$steps" -v mb="$4" \
				'BEGIN { printf "%.3f", (mb > 0 ? (b - a) / (n * s * mb) : 0) }')
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rate" "$model" "$np" "$1" "$irq" "$2" "$3" "$4" >>"$HOST"
			if [ "$np" -gt "$ncores" ]; then
				b=$(($(batch_of $model) * ncores / np))
				# shellcheck disable=SC2046
				STARPU_HOSTNAME=simnode STARPU_PERF_MODEL_DIR=$mdir.alone STARPU_CALIBRATE=1 \
					"$CLUSTER" run -np "$ncores" --timeout 300 "$build/$(prog_of $model)" \
					$(args $model $b) >"$logs/calibrate-$rate-$model-np$np-alone.log" 2>&1 ||
					die "the calibration run failed, see $logs/calibrate-$rate-$model-np$np-alone.log"
				for f in "$mdir.alone"/codelets/*/*; do
					g=$mdir/codelets/${f#"$mdir.alone/codelets/"}
					[ -f "$g" ] && merge "$f" "$g"
				done
				rm -rf "$mdir.alone"
			fi
			# the simulation's node: the rank's two workers, one memory node
			rm -rf "$mdir/bus"
			cp -r "$top/tests/sim/bus" "$mdir/bus"
			echo "$prog: $rate, $model, $np ranks: calibrated ($(($(date +%s) - t0)) s)" >&2
		done
	done
	# measurement: the depths interleaved, round after round
	for r in $(seq 1 "$runs"); do
		for model in ${models//,/ }; do
			for np in ${ranks//,/ }; do
				for d in ${depths//,/ }; do
					log=$logs/run-$rate-$model-np$np-d$d-$r.log
					# shellcheck disable=SC2046
					STARPU_HOSTNAME=simnode STARPU_PERF_MODEL_DIR=$out/models/$rate-$model-np$np \
						SHARDFLOW_PREFETCH_DEPTH=$d "$CLUSTER" run -np "$np" --timeout 300 \
						"$build/$(prog_of $model)" $(args $model) >"$log" 2>&1
					ms=$(step_ms $model "$log")
					[ "$ms" = NA ] && echo "$prog: warning: run failed, see $log" >&2
					printf '%s\t%s\t%s\t%s\tmeasured\t%s\t%s\n' "$rate" "$model" "$np" "$d" "$r" "$ms" >>"$RAW"
				done
			done
		done
		echo "$prog: $rate: round $r/$runs measured ($(($(date +%s) - t0)) s)" >&2
	done
	"$CLUSTER" down >/dev/null 2>&1
	}
	# prediction
	for model in ${models//,/ }; do
		for np in ${ranks//,/ }; do
			mbit=$(awk -v r="$rate" -v n="$np" '$1 == r && $2 == n { print $3 }' "$NET")
			# the CPU a byte sent costs: the collectives' own, and the kernel's softirq
			# where the threads' times leave it out (irq_apart)
			cpu=$(awk -F'\t' -v r="$rate" -v m="$model" -v n="$np" -v i="$irq_apart" \
				'$1 == r && $2 == m && $3 == n { printf "%.3f", $4 + i * $5 }' "$HOST")
			hostcpu=$(awk -F'\t' -v r="$rate" -v m="$model" -v n="$np" '$1 == r && $2 == m && $3 == n { print $6 "," $7 }' "$HOST")
			[ -n "$cpu" ] && [ -n "$hostcpu" ] || die "$HOST has no calibration of $rate, $model, $np ranks"
			platform "$np" "$(awk -v m="$mbit" 'BEGIN { printf "%.0f", m * 1e6 / 8 }')" \
				"$(awk -v t="$rtt" 'BEGIN { printf "%.9f", t / 4000 }')"
			for d in ${depths//,/ }; do
				log=$logs/sim-$rate-$model-np$np-d$d.log
				# shellcheck disable=SC2046
				STARPU_HOSTNAME=simnode STARPU_PERF_MODEL_DIR=$out/models/$rate-$model-np$np \
					SHARDFLOW_SIM_SHARED_CPUS=$cores SHARDFLOW_SIM_COMM_CPU=$cpu SHARDFLOW_SIM_HOST_CPU=$hostcpu STARPU_NCPU=2 STARPU_SILENT=1 SHARDFLOW_PREFETCH_DEPTH=$d \
					timeout 600 "$SMPIRUN" -platform "$out/platform.xml" -hostfile "$out/hosts" \
					-np "$np" "$sim_build/$(prog_of $model)" $(args $model) \
					--cfg=smpi/send-is-detached-thresh:0 --cfg=smpi/test:0 \
					--cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1 \
					--cfg=smpi/auto-shared-malloc-thresh:1048576 >"$log" 2>&1
				ms=$(step_ms $model "$log")
				[ "$ms" = NA ] && echo "$prog: warning: simulation failed, see $log" >&2
				printf '%s\t%s\t%s\t%s\tsimulated\t1\t%s\n' "$rate" "$model" "$np" "$d" "$ms" >>"$RAW"
			done
		done
	done
	echo "$prog: $rate: simulated ($(($(date +%s) - t0)) s)" >&2
done

# the table
{
	echo "Emulated cluster (scripts/cluster.sh, tc $(sed -n 's/.*(\(tbf\|netem\)).*/\1/p' "$logs"/cluster-*.log | head -1), one rank per node, this machine's $(nproc) cores shared) against the simulation; $runs runs x $steps steps a row, median step time of steps > $WARMUP."
	echo
	echo "| link | model | ranks | depth | measured ms (min-max) | simulated ms | error |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	awk -F'\t' 'NR > 1 { k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
		if (!(k in seen)) { seen[k] = 1; order[++n] = k }
		if ($5 == "simulated") sim[k] = $7
		else if ($7 != "NA") { m[k] = m[k] " " $7 } }
		END { for (i = 1; i <= n; i++) { k = order[i]; split(k, f, SUBSEP)
			c = split(substr(m[k], 2), v, " ")
			for (a = 1; a <= c; a++) for (b = a + 1; b <= c; b++) if (v[b] + 0 < v[a] + 0) { t = v[a]; v[a] = v[b]; v[b] = t }
			med = c ? (c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2) : "NA"
			s = (k in sim) ? sim[k] : "NA"
			err = (med != "NA" && s != "NA" && med > 0) ? sprintf("%+.1f %%", 100 * (s - med) / med) : "NA"
			meas = c ? sprintf("%.1f (%.1f-%.1f)", med, v[1], v[c]) : "NA"
			printf "| %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], f[4], meas, s == "NA" ? s : sprintf("%.1f", s), err } }' "$RAW"
	echo
	echo "Network calibration (bench/ring_bw, a plain MPI ring exchange of the MLP's step in 61440-byte pieces, its CPU on the busiest rank, for comparison; TCP rtt from scripts/cluster.sh bench):"
	echo
	echo "| link | ranks | ring Mbit/s a direction | line Mbit/s | rtt ms | ring_bw's CPU ns a byte sent |"
	echo "| --- | --- | --- | --- | --- | --- |"
	awk -F'\t' 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6 }' "$NET"
	echo
	echo "Host calibration (the calibration run's own line, rank 0, a step; softirq from /proc/stat over the run, a rank): SHARDFLOW_SIM_COMM_CPU is the collectives' CPU a byte$([ $irq_apart = 1 ] && echo " + softirq (this kernel accounts it apart: CONFIG_IRQ_TIME_ACCOUNTING)" || echo " (softirq not added: this kernel's tick accounting charges it to the interrupted threads too)"), SHARDFLOW_SIM_HOST_CPU the main thread's and the comm worker's outside collectives."
	echo
	echo "| link | model | ranks | collectives' CPU ns a byte | softirq ns a byte | main thread ms | comm worker outside ms | MB sent |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
	awk -F'\t' 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$HOST"
	echo
	echo "Command: bench/sim_validate.sh --sim-build $sim_build --rates $rates --ranks $ranks --depths $depths --models $models --runs $runs --steps $steps$([ $predict_only = 1 ] && echo " --predict-only") ($(($(date +%s) - t0)) s)"
} >"$out/table.md"
cat "$out/table.md"
