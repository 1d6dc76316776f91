#!/bin/bash
# cluster.sh — emulate a small cluster with slow links on this one machine.
#
# Overlapping communication with compute only shows when communication takes real
# time, and ranks on one machine talk through shared memory in microseconds. This
# script builds K "nodes" as network namespaces (sfnode0, sfnode1, ...), each with
# one interface (sf0, 10.213.0.<i+1>/24) plugged into a Linux bridge that lives in a
# namespace of its own (sfswitch), and shapes every link with tc: netem (rate and
# delay) when the kernel has it, else tbf (rate only). Nothing is created in the
# host's own network namespace and the nodes have no route out: traffic only ever
# goes between these namespaces. `run` starts Open MPI's mpirun inside sfnode0 with
# an rsh agent that, instead of ssh, enters the target node's namespace, so every
# byte between ranks crosses the shaped links over TCP. See docs/cluster.md.
#
#   cluster.sh up [--nodes K] [--rate R] [--delay D] [--shaper auto|netem|tbf]
#   cluster.sh run [-np N] [--per-node P] [--timeout S] PROGRAM [ARGS...]
#   cluster.sh run [-np N] [--per-node P] [--timeout S] [MPIRUN-ARGS...] -- PROGRAM [ARGS...]
#   cluster.sh bench [--bytes N] [--pings N]
#   cluster.sh status
#   cluster.sh down
#
# Needs root, iproute2 (ip, tc), util-linux (unshare) and, for run, Open MPI.
# Exit status: 0 on success, 1 on failure, 2 on bad usage; run exits with mpirun's
# status (124 on timeout).
set -u

prog=cluster.sh
NODE_PREFIX=sfnode
SWITCH_NS=sfswitch
BRIDGE=br0
NODE_IF=sf0
NET=10.213.0
CIDR=$NET.0/24
STATE=${SF_CLUSTER_STATE:-/run/shardflow-cluster}
# ip netns exec bind-mounts /etc/netns/<ns>/<file> over /etc/<file>: each node gets
# an /etc/hosts naming every node, and nothing outside the namespaces sees it.
NETNS_ETC=/etc/netns

usage() {
	cat <<EOF
usage: $prog up [--nodes K] [--rate R] [--delay D] [--shaper auto|netem|tbf]
       $prog run [-np N] [--per-node P] [--timeout S] PROGRAM [ARGS...]
       $prog run [-np N] [--timeout S] [MPIRUN-ARGS...] -- PROGRAM [ARGS...]
       $prog bench [--bytes N] [--pings N]
       $prog status
       $prog down

Emulates a cluster of K nodes with slow links on this machine (needs root):
network namespaces ${NODE_PREFIX}0..${NODE_PREFIX}K-1 at $NET.1.., joined by a
bridge in namespace $SWITCH_NS, each link shaped with tc.

up      create the nodes. --nodes K: 1 to 64 (default 2). --rate R: link rate
        in tc units, e.g. 100mbit, 1gbit (default 1gbit), on both directions of
        every node's link. --delay D: one-way delay added when a node sends,
        e.g. 0.2ms, 50us, 0 (default 0.2ms), so node-to-node rtt is 2 x D.
        --shaper: netem (rate and delay; fails if the kernel lacks sch_netem),
        tbf (rate only), auto (netem if available, else tbf with a warning;
        the default). Fails if the cluster is already up.
run     mpirun across the nodes over TCP, one rank per node, rank i on node i
        bound to core i mod nproc; -np N (default: all nodes, at most K);
        --per-node P puts P consecutive ranks on each node (rank i on node i / P;
        they reach each other over the node's loopback, not its link), for
        hybrid sharding (oversubscribed: the nodes share this machine's cores);
        --timeout S kills the run after S seconds (exit 124). Arguments before
        '--' go to mpirun. SHARDFLOW_* and STARPU_* variables are exported.
bench   TCP round trips and a bulk transfer from node 0 to node 1 (perl):
        --pings N (default 200), --bytes N (default 8000000).
status  what is up, with the shaping.
down    kill processes left in the nodes, remove the namespaces, links and
        state ($STATE); works after a partial up or a failed run; idempotent.

Environment: SF_CLUSTER_STATE (state directory, default /run/shardflow-cluster).
EOF
}

say() {
	echo "$prog: $*"
}

err() {
	echo "$prog: error: $*" >&2
}

# Print a command, then run it.
v() {
	echo "+ $*"
	"$@"
}

bad_usage() {
	err "$*"
	usage >&2
	exit 2
}

need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		err "must run as root (network namespaces and tc need CAP_NET_ADMIN)"
		exit 1
	fi
}

# need_progs PROG:PACKAGE...
need_progs() {
	_missing=
	for _pp in "$@"; do
		command -v "${_pp%%:*}" >/dev/null 2>&1 || _missing="$_missing ${_pp%%:*} (${_pp#*:})"
	done
	if [ -n "$_missing" ]; then
		err "missing:$_missing; install them (apt-get install iproute2 util-linux openmpi-bin)"
		exit 1
	fi
}

# Our namespaces that exist now, one a line (nodes, then the switch).
our_namespaces() {
	ip netns list 2>/dev/null | awk -v p="$NODE_PREFIX" -v s="$SWITCH_NS" '
		$1 ~ ("^" p "[0-9]+$") { print $1 } $1 == s { sw = 1 }
		END { if (sw) print s }' | sort -V
}

# rate in tc units -> bits per second (integer); empty if malformed
rate_bps() {
	echo "$1" | awk '{
		if (!match($0, /^[0-9]+(\.[0-9]+)?/)) exit
		n = substr($0, 1, RLENGTH); u = substr($0, RLENGTH + 1)
		m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9; m["tbit"] = 1e12
		m["bps"] = 8; m["kbps"] = 8e3; m["mbps"] = 8e6; m["gbps"] = 8e9
		u = tolower(u)
		if (!(u in m) || n * m[u] < 8000) exit
		printf "%.0f\n", n * m[u] }'
}

# ---------------------------------------------------------------------------- up
created_ns=
up_done=0

# On any failure during up, remove what this up created (and only that).
up_cleanup() {
	[ "$up_done" -eq 1 ] && return
	[ -z "$created_ns" ] && [ ! -d "$STATE.partial" ] && return
	err "up failed; removing what it created"
	for _ns in $created_ns; do
		echo "+ ip netns delete $_ns"
		ip netns delete "$_ns" 2>/dev/null
		rm -rf "${NETNS_ETC:?}/$_ns"
	done
	[ -f "$STATE.partial/etc_netns_created" ] && rmdir "$NETNS_ETC" 2>/dev/null
	rm -rf "$STATE.partial"
}

# shape NS DEV DELAY: the egress qdisc of DEV in NS ("0" = no delay)
shape() {
	_ns=$1
	_dev=$2
	_delay=$3
	if [ "$shaper" = netem ]; then
		if [ "$_delay" = 0 ]; then
			v tc -n "$_ns" qdisc replace dev "$_dev" root netem rate "$rate" limit 10000
		else
			v tc -n "$_ns" qdisc replace dev "$_dev" root netem delay "$_delay" rate "$rate" limit 10000
		fi
	else
		# burst: 1 ms worth of traffic, at least 16 KiB (tbf needs more than one
		# MTU, and veth hands it GSO packets of up to 64 KiB, which it splits).
		_burst=$((bps / 8000))
		[ "$_burst" -lt 16384 ] && _burst=16384
		v tc -n "$_ns" qdisc replace dev "$_dev" root tbf rate "$rate" burst "$_burst" latency 50ms
	fi
}

cmd_up() {
	nodes=2
	rate=1gbit
	delay=0.2ms
	shaper=auto
	while [ $# -gt 0 ]; do
		case $1 in
		--nodes | --rate | --delay | --shaper)
			[ $# -ge 2 ] || bad_usage "$1 needs a value"
			case $1 in
			--nodes) nodes=$2 ;;
			--rate) rate=$2 ;;
			--delay) delay=$2 ;;
			--shaper) shaper=$2 ;;
			esac
			shift 2
			;;
		--nodes=*) nodes=${1#*=}; shift ;;
		--rate=*) rate=${1#*=}; shift ;;
		--delay=*) delay=${1#*=}; shift ;;
		--shaper=*) shaper=${1#*=}; shift ;;
		-h | --help) usage; exit 0 ;;
		*) bad_usage "up: unknown option \"$1\"" ;;
		esac
	done
	case $nodes in
	'' | *[!0-9]* | 0*) bad_usage "--nodes \"$nodes\" is invalid: accepted values are integers from 1 to 64" ;;
	esac
	[ "$nodes" -le 64 ] || bad_usage "--nodes \"$nodes\" is invalid: accepted values are integers from 1 to 64"
	bps=$(rate_bps "$rate")
	[ -n "$bps" ] || bad_usage "--rate \"$rate\" is invalid: accepted values are a number and a unit among bit, kbit, mbit, gbit, tbit, bps, kbps, mbps, gbps (at least 8kbit), e.g. 100mbit"
	case $delay in
	0) ;;
	*) echo "$delay" | grep -Eq '^[0-9]+(\.[0-9]+)?(us|ms|s)$' ||
		bad_usage "--delay \"$delay\" is invalid: accepted values are 0 or a number and a unit among us, ms, s, e.g. 0.2ms" ;;
	esac
	case $shaper in
	auto | netem | tbf) ;;
	*) bad_usage "--shaper \"$shaper\" is invalid: accepted values are auto, netem, tbf" ;;
	esac

	need_root
	need_progs ip:iproute2 tc:iproute2 unshare:util-linux
	if [ -e "$STATE" ] || [ -n "$(our_namespaces)" ]; then
		err "a cluster is already up (state $STATE; namespaces: $(our_namespaces | tr '\n' ' ')); run '$prog down' first"
		exit 1
	fi
	rm -rf "$STATE.partial"
	mkdir -p "$STATE.partial" || exit 1
	# down removes /etc/netns only if up created it
	[ -d "$NETNS_ETC" ] || : >"$STATE.partial/etc_netns_created"

	trap up_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	set -e

	say "up: $nodes nodes, rate $rate, delay $delay, shaper $shaper, state $STATE"
	v ip netns add "$SWITCH_NS"
	created_ns="$SWITCH_NS"
	v ip -n "$SWITCH_NS" link set lo up
	# Nothing routes in the switch and the nodes have only their /24: no IPv6
	# chatter (router solicitations, DAD) on the shaped links either.
	ip netns exec "$SWITCH_NS" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
	ip netns exec "$SWITCH_NS" sysctl -q -w net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
	v ip -n "$SWITCH_NS" link add "$BRIDGE" type bridge forward_delay 0 stp_state 0
	v ip -n "$SWITCH_NS" link set "$BRIDGE" up

	: >"$STATE.partial/hosts"
	i=0
	while [ "$i" -lt "$nodes" ]; do
		echo "$NET.$((i + 1)) $NODE_PREFIX$i" >>"$STATE.partial/hosts"
		i=$((i + 1))
	done

	i=0
	while [ "$i" -lt "$nodes" ]; do
		ns=$NODE_PREFIX$i
		addr=$NET.$((i + 1))
		v ip netns add "$ns"
		created_ns="$created_ns $ns"
		mkdir -p "$NETNS_ETC/$ns"
		{
			echo "127.0.0.1 localhost"
			cat "$STATE.partial/hosts"
		} >"$NETNS_ETC/$ns/hosts"
		ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
		ip netns exec "$ns" sysctl -q -w net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
		v ip -n "$ns" link set lo up
		# The veth pair is created from inside the switch namespace with its other
		# end sent straight into the node: it never exists in the host's namespace.
		v ip -n "$SWITCH_NS" link add "p$i" type veth peer name "$NODE_IF" netns "$ns"
		v ip -n "$SWITCH_NS" link set "p$i" master "$BRIDGE"
		v ip -n "$SWITCH_NS" link set "p$i" up
		v ip -n "$ns" addr add "$addr/24" dev "$NODE_IF"
		v ip -n "$ns" link set "$NODE_IF" up
		if [ "$shaper" = auto ]; then
			if tc -n "$ns" qdisc add dev "$NODE_IF" root netem delay 1ms 2>/dev/null; then
				tc -n "$ns" qdisc del dev "$NODE_IF" root
				shaper=netem
			else
				shaper=tbf
				if [ "$delay" != 0 ]; then
					echo "$prog: warning: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM): delay $delay is NOT emulated, links are shaped to $rate by tbf only" >&2
				fi
			fi
			say "shaper: $shaper"
		elif [ "$shaper" = tbf ] && [ "$delay" != 0 ] && [ "$i" -eq 0 ]; then
			echo "$prog: warning: --shaper tbf shapes the rate only: delay $delay is NOT emulated" >&2
		fi
		if [ "$shaper" = netem ] && [ "$i" -eq 0 ] &&
			! tc -n "$ns" qdisc add dev "$NODE_IF" root netem delay 1ms 2>/dev/null; then
			err "--shaper netem: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM); use --shaper tbf (rate only)"
			exit 1
		fi
		# node -> switch: rate and delay; switch -> node: rate (a NIC's receive side)
		shape "$ns" "$NODE_IF" "$delay"
		shape "$SWITCH_NS" "p$i" 0
		i=$((i + 1))
	done

	# The rsh agent Open MPI calls instead of ssh: "agent [options] HOST COMMAND...".
	# It runs COMMAND as ssh would (words joined, one sh -c) inside HOST's network
	# namespace and a UTS namespace whose hostname is the node's name, so every
	# daemon knows itself by the name the hostfile gives it.
	cat >"$STATE.partial/agent" <<EOF
#!/bin/sh
# Written by scripts/cluster.sh up: Open MPI's plm_rsh_agent for the emulated cluster.
while [ \$# -gt 0 ]; do
	case \$1 in
	-*) shift ;;
	*) break ;;
	esac
done
[ \$# -ge 2 ] || { echo "cluster agent: usage: agent HOST COMMAND..." >&2; exit 255; }
host=\$1
shift
ns=\$(awk -v h="\$host" '\$1 == h || \$2 == h { print \$2; exit }' "$STATE/hosts")
[ -n "\$ns" ] || { echo "cluster agent: \$host is not a node of the cluster ($STATE/hosts)" >&2; exit 255; }
exec ip netns exec "\$ns" unshare --uts sh -c 'hostname "\$1" && shift && exec sh -c "\$*"' agent "\$ns" "\$@"
EOF
	chmod 755 "$STATE.partial/agent"
	{
		echo "nodes=$nodes"
		echo "rate=$rate"
		echo "delay=$delay"
		echo "shaper=$shaper"
	} >"$STATE.partial/config"
	[ "$shaper" = tbf ] && echo "delay_emulated=no" >>"$STATE.partial/config"
	mv "$STATE.partial" "$STATE"
	set +e
	up_done=1
	trap - EXIT
	say "up: $nodes nodes at $NET.1-$NET.$nodes ($NODE_PREFIX*, bridge $BRIDGE in $SWITCH_NS), $rate per direction, $(effective_delay) one-way delay ($shaper); state in $STATE"
}

effective_delay() {
	if [ "$shaper" = tbf ]; then echo "no"; else echo "$delay"; fi
}

load_state() {
	if [ ! -f "$STATE/config" ]; then
		err "the cluster is not up ($STATE/config missing); run '$prog up' first"
		exit 1
	fi
	# shellcheck disable=SC1091
	. "$STATE/config"
}

# ---------------------------------------------------------------------------- run
cmd_run() {
	need_root
	need_progs ip:iproute2 unshare:util-linux mpirun:openmpi-bin timeout:coreutils
	load_state
	np=$nodes
	per=1
	limit=
	mpiargs=()
	have_sep=0
	for a in "$@"; do [ "$a" = -- ] && have_sep=1; done
	while [ $# -gt 0 ]; do
		case $1 in
		-np | -n | --np | --timeout | --per-node)
			[ $# -ge 2 ] || bad_usage "run: $1 needs a value"
			case $1 in
			--timeout) limit=$2 ;;
			--per-node) per=$2 ;;
			*) np=$2 ;;
			esac
			shift 2
			;;
		--) shift; break ;;
		-h | --help) usage; exit 0 ;;
		-*)
			[ "$have_sep" -eq 1 ] || bad_usage "run: \"$1\": mpirun options go before '--' and the program after it"
			mpiargs+=("$1")
			shift
			;;
		*)
			if [ "$have_sep" -eq 1 ]; then
				mpiargs+=("$1")
				shift
			else
				break
			fi
			;;
		esac
	done
	[ $# -ge 1 ] || bad_usage "run: no program given"
	case $np in
	'' | *[!0-9]* | 0*) bad_usage "run: -np \"$np\" is invalid: accepted values are integers from 1 to $nodes (the nodes)" ;;
	esac
	case $per in
	'' | *[!0-9]* | 0*) bad_usage "run: --per-node \"$per\" is invalid: expected a positive number of ranks" ;;
	esac
	[ "$np" -le $((nodes * per)) ] || bad_usage "run: -np \"$np\" is invalid: accepted values are integers from 1 to $((nodes * per)) ($nodes nodes x --per-node $per)"
	case $limit in
	'') ;;
	*[!0-9]* | 0*) bad_usage "run: --timeout \"$limit\" is invalid: expected a positive number of seconds" ;;
	esac

	cores=$(nproc 2>/dev/null || echo 1)
	session=$(mktemp -d "$STATE/run.XXXXXX") || exit 1
	i=0
	: >"$session/hostfile"
	: >"$session/rankfile"
	while [ "$i" -lt "$np" ]; do # ranks i*per .. on node i: consecutive ranks a node
		[ $((i % per)) -eq 0 ] && echo "$NODE_PREFIX$((i / per)) slots=$per" >>"$session/hostfile"
		echo "rank $i=$NODE_PREFIX$((i / per)) slot=$((i % cores))" >>"$session/rankfile"
		i=$((i + 1))
	done
	root=()
	[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
	exports=()
	for var in $(env | sed -n -e 's/^\(SHARDFLOW_[A-Za-z0-9_]*\)=.*/\1/p' \
		-e 's/^\(STARPU_[A-Za-z0-9_]*\)=.*/\1/p'); do
		exports+=(-x "$var")
	done
	# pml ob1 + btl tcp,self: a UCX pml or the vader btl would find the ranks share
	# a machine and use shared memory, bypassing the links. No tree spawn: mpirun
	# starts every daemon itself through the agent. Each run has its own session
	# directory (all nodes share /tmp, see docs/cluster.md).
	# shellcheck disable=SC2054 # the commas are Open MPI's (btl tcp,self)
	cmd=(mpirun -np "$np" --hostfile "$session/hostfile" --rankfile "$session/rankfile"
		"${root[@]}"
		--mca plm_rsh_agent "$STATE/agent" --mca plm_rsh_no_tree_spawn 1
		--mca pml ob1 --mca btl tcp,self
		--mca btl_tcp_if_include "$CIDR" --mca oob_tcp_if_include "$CIDR"
		--mca orte_tmpdir_base "$session"
		"${exports[@]}" "${mpiargs[@]}" "$@")
	tmo=()
	[ -n "$limit" ] && tmo=(timeout -k 10 "$limit")
	echo "+ ${tmo[*]} ip netns exec ${NODE_PREFIX}0 unshare --uts ... ${cmd[*]}" >&2
	# shellcheck disable=SC2016 # $1 and $@ are the inner shell's
	"${tmo[@]}" ip netns exec "${NODE_PREFIX}0" unshare --uts \
		sh -c 'hostname "$1" && shift && exec "$@"' run "${NODE_PREFIX}0" "${cmd[@]}" </dev/null
	rc=$?
	rm -rf "$session"
	if [ -n "$limit" ] && { [ $rc -eq 124 ] || [ $rc -eq 137 ]; }; then
		err "TIMEOUT: '$*' on $np nodes did not finish within $limit s (processes may be left in the nodes: '$prog down' kills them)"
		return 124
	fi
	return $rc
}

# -------------------------------------------------------------------------- bench
# Server (node 1): echo PINGS single bytes, then read an 8-byte length and that many
# bytes and answer one byte. Client (node 0): time both.
# shellcheck disable=SC2016 # perl code
BENCH_SERVER='
use strict; use IO::Socket::INET; use Socket qw(IPPROTO_TCP TCP_NODELAY);
my ($addr, $port, $pings) = @ARGV; alarm 120;
my $s = IO::Socket::INET->new(LocalAddr => $addr, LocalPort => $port, Listen => 1, ReuseAddr => 1) or die "listen: $!";
print "ready\n"; close STDOUT;
my $c = $s->accept or die "accept: $!"; setsockopt($c, IPPROTO_TCP, TCP_NODELAY, 1);
for (1 .. $pings) { sysread($c, my $b, 1) == 1 or die "ping read"; syswrite($c, $b) == 1 or die "ping write" }
my $h = ""; while (length($h) < 8) { sysread($c, $h, 8 - length($h), length($h)) > 0 or die "length" }
my $left = unpack("Q>", $h); my $buf;
while ($left > 0) { my $n = sysread($c, $buf, 1 << 20); $n > 0 or die "short"; $left -= $n }
syswrite($c, "k");
'
# shellcheck disable=SC2016 # perl code
BENCH_CLIENT='
use strict; use IO::Socket::INET; use Socket qw(IPPROTO_TCP TCP_NODELAY); use Time::HiRes qw(time);
my ($addr, $port, $pings, $bytes) = @ARGV; alarm 120; my $c;
for (1 .. 100) { $c = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => $port) and last; select(undef, undef, undef, 0.05) }
$c or die "connect $addr:$port: $!"; setsockopt($c, IPPROTO_TCP, TCP_NODELAY, 1);
my @r;
for (1 .. $pings) { my $t = time; syswrite($c, "p"); sysread($c, my $b, 1) == 1 or die "pong"; push @r, (time - $t) * 1e3 }
@r = sort { $a <=> $b } @r;
printf "rtt %d round trips of 1 byte over TCP: min %.3f ms, median %.3f ms, max %.3f ms\n", $pings, $r[0], $r[$#r / 2], $r[-1];
my $chunk = "x" x (1 << 16); my $t = time; my $left = $bytes;
syswrite($c, pack("Q>", $bytes));
while ($left > 0) { my $n = syswrite($c, $chunk, $left < 65536 ? $left : 65536); defined $n or die "write: $!"; $left -= $n }
sysread($c, my $k, 1) == 1 or die "ack"; my $dt = time - $t;
printf "bandwidth %d bytes in %.3f s: %.1f Mbit/s\n", $bytes, $dt, $bytes * 8 / $dt / 1e6;
'

cmd_bench() {
	pings=200
	bytes=8000000
	while [ $# -gt 0 ]; do
		case $1 in
		--pings | --bytes)
			[ $# -ge 2 ] || bad_usage "bench: $1 needs a value"
			case $2 in
			'' | *[!0-9]* | 0*) bad_usage "bench: $1 \"$2\" is invalid: expected a positive integer" ;;
			esac
			if [ "$1" = --pings ]; then pings=$2; else bytes=$2; fi
			shift 2
			;;
		-h | --help) usage; exit 0 ;;
		*) bad_usage "bench: unknown option \"$1\"" ;;
		esac
	done
	need_root
	need_progs ip:iproute2 perl:perl
	perl -MTime::HiRes -e 1 2>/dev/null || { err "perl's Time::HiRes is missing (apt-get install perl)"; exit 1; }
	load_state
	[ "$nodes" -ge 2 ] || { err "bench needs at least 2 nodes (up has $nodes)"; exit 1; }
	say "bench: ${NODE_PREFIX}0 -> ${NODE_PREFIX}1 ($NET.2), link $rate, delay $delay ($shaper)"
	port=5201
	ip netns exec "${NODE_PREFIX}1" perl -e "$BENCH_SERVER" "$NET.2" "$port" "$pings" >"$STATE/bench.ready" &
	srv=$!
	ip netns exec "${NODE_PREFIX}0" perl -e "$BENCH_CLIENT" "$NET.2" "$port" "$pings" "$bytes"
	rc=$?
	wait "$srv" || rc=1
	rm -f "$STATE/bench.ready"
	return $rc
}

# ------------------------------------------------------------------------- status
cmd_status() {
	need_progs ip:iproute2 tc:iproute2
	nss=$(our_namespaces)
	if [ -f "$STATE/config" ]; then
		# shellcheck disable=SC1091
		. "$STATE/config"
		say "up: $nodes nodes, rate $rate, delay $delay, shaper $shaper$([ "$shaper" = tbf ] && echo " (delay not emulated)"), state $STATE"
	elif [ -n "$nss" ]; then
		say "partly up: namespaces without state ($STATE missing); run '$prog down'"
	else
		say "down"
		return 0
	fi
	for ns in $nss; do
		if [ "$ns" = "$SWITCH_NS" ]; then
			echo "$ns: bridge $BRIDGE, ports: $(ip -n "$ns" -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); printf "%s ", $2 }')"
			tc -n "$ns" qdisc show 2>/dev/null | grep -E ' dev p[0-9]+ root' | sed 's/^/    /'
		else
			echo "$ns: $(ip -n "$ns" -4 -o addr show dev "$NODE_IF" 2>/dev/null | awk '{ print $4 }') on $NODE_IF, processes: $(ip netns pids "$ns" 2>/dev/null | wc -l)"
			tc -n "$ns" qdisc show dev "$NODE_IF" 2>/dev/null | sed 's/^/    /'
		fi
	done
}

# --------------------------------------------------------------------------- down
cmd_down() {
	need_root
	need_progs ip:iproute2
	nss=$(our_namespaces)
	removed=0
	# Processes still in a node (ranks or daemons of a failed run): TERM, then KILL.
	for sig in TERM KILL; do
		pids=
		for ns in $nss; do
			pids="$pids $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
		done
		pids=$(echo "$pids" | xargs)
		[ -z "$pids" ] && break
		say "down: kill -$sig $pids (left in the nodes)"
		# shellcheck disable=SC2086
		kill -"$sig" $pids 2>/dev/null
		removed=$((removed + 1))
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			left=
			for ns in $nss; do left="$left$(ip netns pids "$ns" 2>/dev/null)"; done
			[ -z "$left" ] && break
			sleep 0.2
		done
	done
	# Deleting a namespace deletes the veth ends and the bridge in it.
	for ns in $nss; do
		v ip netns delete "$ns" || true
		removed=$((removed + 1))
	done
	for d in "$NETNS_ETC/$SWITCH_NS" "$NETNS_ETC/$NODE_PREFIX"[0-9]*; do
		[ -e "$d" ] || continue
		v rm -rf "$d"
		removed=$((removed + 1))
	done
	if [ -f "$STATE/etc_netns_created" ] || [ -f "$STATE.partial/etc_netns_created" ]; then
		rmdir "$NETNS_ETC" 2>/dev/null && echo "+ rmdir $NETNS_ETC"
	fi
	for d in "$STATE" "$STATE.partial"; do
		[ -e "$d" ] || continue
		v rm -rf "$d"
		removed=$((removed + 1))
	done
	left=$(our_namespaces)
	if [ -n "$left" ]; then
		err "down: namespaces remain: $left"
		exit 1
	fi
	if [ "$removed" -eq 0 ]; then
		say "down: nothing to remove"
	else
		say "down: done"
	fi
}

# ---------------------------------------------------------------------------- main
[ $# -ge 1 ] || bad_usage "no command given"
c=$1
shift
case $c in
up) cmd_up "$@" ;;
run) cmd_run "$@" ;;
bench) cmd_bench "$@" ;;
status) cmd_status "$@" ;;
down) cmd_down "$@" ;;
-h | --help | help) usage ;;
*) bad_usage "unknown command \"$c\"" ;;
esac
