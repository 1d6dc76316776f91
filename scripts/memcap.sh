#!/bin/sh
# memcap.sh — runs a command under a hard memory limit of its own: a fresh memory
# cgroup (v2 memory.max, or v1 memory.limit_in_bytes) below this process's, holding
# the command alone, with no swap. Over the limit the kernel reclaims, then kills the
# command (the OOM killer), as on a device that is full. One per MPI rank gives every
# rank its own cap:
#
#   mpirun -np 4 scripts/memcap.sh 400 examples/gpt ...
#   scripts/memcap.sh --check          (exit 0 when a cap can be made here, else 1 and why)
#
# After the command, prints to stderr
#   memcap: limit <L> MiB, peak <P> MiB, failcnt <F>, oom_kill <K>
# (the cgroup's peak usage and how often it hit the limit; "-" where the kernel does not
# say) and exits with the command's status. Needs root (or a delegated cgroup).
set -u

me=memcap
die() { echo "$me: $*" >&2; exit 1; }

# the cgroup to create under: "v1 DIR" or "v2 DIR"
find_parent() {
	v1=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}:\(.*\)$/\3/p' /proc/self/cgroup)
	if [ -n "$v1" ] && [ -d /sys/fs/cgroup/memory ]; then
		d=/sys/fs/cgroup/memory${v1%/}
		[ -w "$d" ] && [ -f "$d/memory.limit_in_bytes" ] && { echo "v1 $d"; return 0; }
	fi
	v2=$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup)
	for mnt in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		d=$mnt${v2%/}
		[ -n "$v2" ] && [ -f "$d/cgroup.controllers" ] && [ -w "$d" ] || continue
		grep -qw memory "$d/cgroup.subtree_control" 2>/dev/null ||
			echo +memory >"$d/cgroup.subtree_control" 2>/dev/null || continue
		echo "v2 $d"
		return 0
	done
	return 1
}

parent=$(find_parent) || {
	echo "$me: no writable memory cgroup here (cgroup v1's memory controller or a v2" \
		"cgroup with memory in its subtree_control; run as root)" >&2
	exit 1
}
if [ "${1:-}" = --check ]; then
	# a cap that holds a process: make one, move a shell in and out
	dir=${parent#v? }/sf-memcap-check-$$
	mkdir "$dir" 2>/dev/null || die "cannot create a cgroup under ${parent#v? }"
	sh -c "echo \$\$ >'$dir/cgroup.procs'" 2>/dev/null
	ok=$?
	rmdir "$dir" 2>/dev/null
	[ $ok -eq 0 ] || die "cannot move a process into a new cgroup under ${parent#v? }"
	echo "$me: ${parent%% *} cgroups under ${parent#v? }"
	exit 0
fi
[ $# -ge 2 ] || die "usage: memcap.sh MIB CMD [ARGS...] | memcap.sh --check"
case $1 in '' | *[!0-9]*) die "the limit \"$1\" is invalid: expected MiB, a positive integer" ;; esac
[ "$1" -gt 0 ] || die "the limit must be > 0 MiB"
mib=$1
shift
ver=${parent%% *}
base=${parent#v? }
dir=$base/sf-memcap-$$
mkdir "$dir" || die "cannot create $dir"
bytes=$((mib * 1024 * 1024))
if [ "$ver" = v1 ]; then
	echo "$bytes" >"$dir/memory.limit_in_bytes" || die "cannot set $dir/memory.limit_in_bytes"
	[ -f "$dir/memory.memsw.limit_in_bytes" ] && echo "$bytes" >"$dir/memory.memsw.limit_in_bytes"
else
	echo "$bytes" >"$dir/memory.max" || die "cannot set $dir/memory.max"
	[ -f "$dir/memory.swap.max" ] && echo 0 >"$dir/memory.swap.max"
fi
# this shell goes in (the command inherits it), and out again after it
echo $$ >"$dir/cgroup.procs" || die "cannot move into $dir"
"$@"
status=$?
echo $$ >"$base/cgroup.procs"
if [ "$ver" = v1 ]; then
	peak=$(cat "$dir/memory.max_usage_in_bytes")
	fails=$(cat "$dir/memory.failcnt")
	kills=$(sed -n 's/^oom_kill //p' "$dir/memory.oom_control")
else
	peak=$(cat "$dir/memory.peak" 2>/dev/null)
	fails=$(sed -n 's/^max //p' "$dir/memory.events")
	kills=$(sed -n 's/^oom_kill //p' "$dir/memory.events")
fi
rmdir "$dir" 2>/dev/null
awk -v l="$mib" -v p="${peak:-}" -v f="${fails:--}" -v k="${kills:--}" 'BEGIN {
	printf "memcap: limit %d MiB, peak %s MiB, failcnt %s, oom_kill %s\n", l,
		p == "" ? "-" : sprintf("%.1f", p / 1048576), f, k == "" ? "-" : k }' >&2
exit $status
