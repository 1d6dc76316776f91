# lanes.sh — sourced (POSIX sh): run a function on each of a list of words, a few at a
# time, for scripts whose items are each one process on one core (tests/valgrind.sh's
# programs under memcheck, scripts/fuzz.sh's builds and fuzzers).
#
#   lanes JOBS FUNCTION WORD...
#
# Starts min(JOBS, number of words) lanes in the background; each walks the words in
# order and runs FUNCTION WORD on every one no other lane has claimed (a claim is a
# mkdir, atomic: one lane wins each), then waits for them all. FUNCTION runs in a lane's
# subshell: what it reports goes to files, which the caller reads afterwards in the
# list's order. Returns 1 when no scratch folder can be made.
lanes() {
	_lanes_jobs=$1 _lanes_fn=$2
	shift 2
	_lanes_claims=$(mktemp -d "${TMPDIR:-/tmp}/lanes.XXXXXX") || return 1
	_lanes_n=0
	while [ "$_lanes_n" -lt "$_lanes_jobs" ] && [ "$_lanes_n" -lt $# ]; do
		(
			_lanes_i=0
			for _lanes_w in "$@"; do
				_lanes_i=$((_lanes_i + 1))
				mkdir "$_lanes_claims/$_lanes_i" 2>/dev/null && "$_lanes_fn" "$_lanes_w"
			done
		) &
		_lanes_n=$((_lanes_n + 1))
	done
	wait
	rm -rf "$_lanes_claims"
}
