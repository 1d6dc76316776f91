#!/bin/sh
# cluster_smoke.sh — scripts/cluster.sh builds a 2-node emulated cluster, trains on
# it across the shaped links and removes every trace of itself.
#
# Proves: `up --nodes 2` succeeds and a second `up` fails clearly; a 2-rank, 3-step
# training through `run` (one rank per node namespace, MPI over TCP) exits 0 and
# prints final_loss; rank 1 really runs in sfnode1; the links are shaped (a bulk TCP
# transfer at --rate 100mbit is between 50 and 105 Mbit/s; with netem, the round
# trip is at least 2 x delay); `down` after a run killed by its time limit removes
# the processes left in the nodes; and after `down` no node or switch namespace,
# /etc/netns entry or state directory is left. Skipped unless root with iproute2
# and working network namespaces. Not part of `make check` (it needs root and
# changes the machine's namespaces): `make cluster-smoke`.
. "$(dirname "$0")/lib.sh"

limit=${SF_TEST_TIMEOUT:-180}
CLUSTER="$top_srcdir/scripts/cluster.sh"
# A state directory of our own, so that a cluster someone left up is not ours to
# remove... but the namespace names are fixed: refuse to run over one.
SF_CLUSTER_STATE="$tmp/cluster-state"
export SF_CLUSTER_STATE

[ "$(id -u)" -eq 0 ] || skip_all "needs root (network namespaces and tc)"
for p in ip tc unshare mpirun timeout; do
	command -v "$p" >/dev/null 2>&1 || skip_all "$p not found (iproute2, util-linux, openmpi-bin, coreutils)"
done
probe="sfprobe$$"
ip netns add "$probe" >/dev/null 2>&1 || skip_all "cannot create a network namespace (ip netns add failed)"
ip netns delete "$probe"
if ip netns list | grep -Eq '^(sfnode[0-9]+|sfswitch)( |$)'; then
	skip_all "a cluster is already up (ip netns list shows sfnode*/sfswitch): run scripts/cluster.sh down first"
fi
require_progs "$MLP"

cluster() {
	timeout -k 5 "$limit" bash "$CLUSTER" "$@" </dev/null
}

# nothing_left: no namespace, /etc/netns entry, state or process of ours
nothing_left() {
	_ns=$(ip netns list | grep -E '^(sfnode[0-9]+|sfswitch)( |$)')
	_etc=$(ls -d /etc/netns/sfnode* /etc/netns/sfswitch 2>/dev/null)
	if [ -n "$_ns" ] || [ -n "$_etc" ] || [ -e "$SF_CLUSTER_STATE" ] || [ -e "$SF_CLUSTER_STATE.partial" ]; then
		diag "left behind: namespaces [$_ns] /etc/netns [$_etc] state [$(ls -d "$SF_CLUSTER_STATE"* 2>/dev/null)]"
		return 1
	fi
	return 0
}

# However the test ends, the machine is left as it was.
trap 'bash "$CLUSTER" down >/dev/null 2>&1; rm -rf "$tmp"' EXIT

plan 11

cluster up --nodes 2 --rate 100mbit --delay 1ms >"$tmp/up.out" 2>&1
st=$?
ok $st "up --nodes 2 --rate 100mbit --delay 1ms (exit $st)" || diag_file "$tmp/up.out"
[ $st -eq 0 ] || bail_out "the cluster did not come up"
shaper=$(sed -n 's/^shaper=//p' "$SF_CLUSTER_STATE/config")
diag "shaper: $shaper"

cluster up --nodes 2 >"$tmp/up2.out" 2>&1
st=$?
[ $st -eq 1 ] && grep -q 'already up' "$tmp/up2.out"
ok $? "a second up fails naming the cluster that is up (exit $st)" || diag_file "$tmp/up2.out"

cluster run --timeout 120 -np 2 "$MLP" --steps 3 --widths 64,32,10 --batch 16 \
	>"$tmp/run.out" 2>"$tmp/run.err"
st=$?
ok $st "2-node, 3-step training through run (exit $st)" || diag_file "$tmp/run.err"
grep -Eq '^final_loss [0-9.e+-]+$' "$tmp/run.out"
ok $? "its stdout has final_loss ($(grep final_loss "$tmp/run.out"))" || diag_file "$tmp/run.out"

# shellcheck disable=SC2016 # expanded by the ranks' shell
cluster run --timeout 60 --tag-output -- sh -c 'echo "$(hostname) $(ip -4 -o addr show sf0)"' \
	>"$tmp/where.out" 2>"$tmp/where.err"
grep -Eq '^\[[0-9]+,0\]<stdout>:sfnode0 .* inet 10\.213\.0\.1/' "$tmp/where.out" &&
	grep -Eq '^\[[0-9]+,1\]<stdout>:sfnode1 .* inet 10\.213\.0\.2/' "$tmp/where.out"
ok $? "rank 0 runs in sfnode0 (10.213.0.1), rank 1 in sfnode1 (10.213.0.2)" ||
	{ diag_file "$tmp/where.out"; diag_file "$tmp/where.err"; }

if command -v perl >/dev/null 2>&1 && perl -MTime::HiRes -e 1 2>/dev/null; then
	cluster bench --bytes 4000000 --pings 50 >"$tmp/bench.out" 2>&1
	st=$?
	diag_file "$tmp/bench.out"
	mbit=$(sed -n 's/^bandwidth .*: \([0-9.]*\) Mbit\/s$/\1/p' "$tmp/bench.out")
	[ $st -eq 0 ] && [ -n "$mbit" ] && awk -v m="$mbit" 'BEGIN { exit !(m >= 50 && m <= 105) }'
	ok $? "the link is shaped: bulk transfer at ${mbit:-?} Mbit/s, in [50, 105] for 100mbit"
	if [ "$shaper" = netem ]; then
		rtt=$(sed -n 's/^rtt .* min \([0-9.]*\) ms.*/\1/p' "$tmp/bench.out")
		[ -n "$rtt" ] && awk -v r="$rtt" 'BEGIN { exit !(r >= 2.0) }'
		ok $? "round trip ${rtt:-?} ms >= 2 x delay (1 ms)"
	else
		skip "round trip >= 2 x delay" "no netem qdisc in this kernel: delay not emulated"
	fi
else
	skip "the link is shaped (bulk transfer)" "perl with Time::HiRes not found"
	skip "round trip >= 2 x delay" "perl with Time::HiRes not found"
fi

check "down" bash "$CLUSTER" down
nothing_left
ok $? "nothing left after down: namespaces, /etc/netns entries, state directory"

# A run killed by its time limit leaves processes in the nodes; down still cleans.
cluster up --nodes 2 >"$tmp/up3.out" 2>&1 || diag_file "$tmp/up3.out"
cluster run --timeout 3 -np 2 -- sleep 300 >"$tmp/hang.out" 2>&1
st=$?
[ $st -eq 124 ] || diag_file "$tmp/hang.out"
check "down after a run that timed out (run exit $st)" bash "$CLUSTER" down
nothing_left && [ -z "$(pgrep -f 'sleep 300$' 2>/dev/null | while read -r p; do
	[ "$(readlink "/proc/$p/ns/net")" != "$(readlink /proc/self/ns/net)" ] && echo "$p"
done)" ]
ok $? "nothing left after that down either (no namespace, no state, no process of the run)"

finish
