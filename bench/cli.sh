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
