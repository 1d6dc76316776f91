# cli.sh — what the benchmark scripts share on their command line; sourced after the
# script sets prog (its name) and usage_end (the last line of its header comment,
# which is its usage text).
usage() {
	sed -n "2,${usage_end}p" "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}
die() {
	echo "$prog: error: $*" >&2
	exit 1
}
# posint OPTION VALUE: usage and status 2 unless VALUE is a positive integer
posint() {
	case $2 in '' | *[!0-9]* | 0*) echo "$prog: $1 \"$2\" is invalid: expected a positive integer" >&2; usage 2 ;; esac
}

# bench_cluster_up CLUSTER RATE LOG: scripts/cluster.sh's 2 emulated nodes with RATE
# links, taken down again when the script exits (root); dies with the log's end when
# they cannot be made. Sets CLUSTER_MASTER, the first node's address.
bench_cluster_up() {
	[ "$(id -u)" -eq 0 ] || die "the emulated cluster needs root (network namespaces)"
	BENCH_CLUSTER=$1
	"$BENCH_CLUSTER" down >/dev/null 2>&1
	trap 'bench_cluster_down' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	"$BENCH_CLUSTER" up --nodes 2 --rate "$2" >"$3" 2>&1 ||
		die "scripts/cluster.sh up failed: $(tail -3 "$3")"
	CLUSTER_MASTER=10.213.0.1
}
bench_cluster_down() {
	"$BENCH_CLUSTER" down >/dev/null 2>&1 || echo "$prog: warning: scripts/cluster.sh down failed" >&2
	return 0
}

# progress_rates LOG: examples/gpt's progress lines ("step K/N loss ... tokens/s R ...")
# as "K N R", one a line: R is the mean tokens/s since the start, after step K of N. The
# rate is the value after "tokens/s", wherever it stands (--grad-clip puts "grad_norm x"
# before it); the one reading of that line for every benchmark.
progress_rates() {
	awk '$1 == "step" && $2 ~ /^[0-9]+\/[0-9]+$/ && $3 == "loss" {
		for (i = 4; i < NF; i++)
			if ($i == "tokens/s") { split($2, s, "/"); print s[1], s[2], $(i + 1); next } }' "$1"
}
