#!/bin/sh
# bad_config.sh — a malformed SHARDFLOW_* variable, or a malformed value of a StarPU
# variable the README documents, is a clear error, never a guess or an abort.
#
# Each invalid value (and a misspelt variable name) must make examples/mlp_synthetic
# fail with a non-zero status that is not a crash (1..123) and a stderr message that
# names the variable, the bad value (quoted) and "accepted values are" — or, for the
# unknown variable, "known variables are". Every accepted value runs to completion.
# On 2 ranks, a bad value makes each rank exit non-zero by itself, without a hang.
. "$(dirname "$0")/lib.sh"
require_progs "$MLP"

limit=${SF_TEST_TIMEOUT:-180}
small="--steps 1 --widths 16,8,4 --batch 8"

# run NAME VAR=VALUE: mlp_synthetic on 1 rank (no mpirun), under a time limit.
run() {
	# shellcheck disable=SC2086
	env "$2" timeout -k 5 "$limit" "$MLP" $small </dev/null >"$tmp/$1.out" 2>"$tmp/$1.err"
}

# invalid VAR VALUE PHRASE
invalid() {
	_var=$1 _val=$2 _phrase=$3
	run bad "$_var=$_val"
	_st=$?
	[ $_st -ge 1 ] && [ $_st -le 123 ]
	ok $? "$_var=\"$_val\": exits with an error status ($_st)"
	grep -F -e "$_var" "$tmp/bad.err" >/dev/null &&
		{ [ "$_phrase" = "known variables are" ] || grep -F -e "\"$_val\"" "$tmp/bad.err" >/dev/null; } &&
		grep -F -e "$_phrase" "$tmp/bad.err" >/dev/null
	_said=$?
	_what="the variable"
	[ "$_phrase" = "known variables are" ] || _what="the variable, the value"
	if ! ok $_said "$_var=\"$_val\": stderr names $_what and says \"$_phrase\""; then
		diag "stderr was:"
		diag_file "$tmp/bad.err"
	fi
}

# valid VAR VALUE
valid() {
	run good "$1=$2"
	_st=$?
	[ $_st -eq 0 ] && grep '^final_loss ' "$tmp/good.out" >/dev/null
	if ! ok $? "$1=$2 is accepted and the run completes (exit $_st)"; then
		diag_file "$tmp/good.err"
	fi
}

plan 163

accepted="accepted values are"
invalid SHARDFLOW_PREFETCH_DEPTH abc "$accepted"
invalid SHARDFLOW_PREFETCH_DEPTH -1 "$accepted"
invalid SHARDFLOW_PREFETCH_DEPTH 65 "$accepted"
invalid SHARDFLOW_PREFETCH_DEPTH 2x "$accepted"
invalid SHARDFLOW_PREFETCH_DEPTH "" "$accepted"
invalid SHARDFLOW_BACKWARD_PREFETCH later "$accepted"
invalid SHARDFLOW_SHARDING zero3 "$accepted"
invalid SHARDFLOW_LOG verbose "$accepted"
invalid SHARDFLOW_SKIP all "$accepted"
invalid SHARDFLOW_COMM_CHUNK 512 "$accepted"
invalid SHARDFLOW_COMM_CHUNK 64k "$accepted"
invalid SHARDFLOW_COMM_CHUNK 2147483648 "$accepted"
invalid SHARDFLOW_COMM_TIMEOUT -1 "$accepted"
invalid SHARDFLOW_COMM_TIMEOUT 10s "$accepted"
invalid SHARDFLOW_COMM gloo "$accepted"
invalid SHARDFLOW_OPTIMIZER_ON cpu "$accepted"
invalid SHARDFLOW_GPU_MATH fp16 "$accepted"
invalid SHARDFLOW_GRAD_ACCUM 0 "$accepted"
invalid SHARDFLOW_GRAD_ACCUM 4097 "$accepted"
invalid SHARDFLOW_GRAD_ACCUM four "$accepted"
invalid SHARDFLOW_ACCUM_MODE no_sync "$accepted"
invalid SHARDFLOW_RECOMPUTE all "$accepted"
invalid SHARDFLOW_PARAM_DTYPE fp16 "$accepted"
invalid SHARDFLOW_REDUCE_DTYPE bfloat16 "$accepted"
invalid SHARDFLOW_NODE_SIZE -2 "$accepted"
invalid SHARDFLOW_MEMORY_CHECK 1 "$accepted"
invalid SHARDFLOW_SPLIT_BACKWARD yes "$accepted"
invalid SHARDFLOW_VOCAB_PARALLEL yes "$accepted"
invalid SHARDFLOW_SEQUENCE_PARALLEL yes "$accepted"
invalid SHARDFLOW_CP 0 "$accepted"
invalid SHARDFLOW_CP 65 "$accepted"
invalid SHARDFLOW_CP two "$accepted"
invalid SHARDFLOW_ROUNDING up "$accepted"
invalid SHARDFLOW_SHARDING hybrid_shard "$accepted"
invalid SHARDFLOW_PREFETCH_DEPHT 2 "known variables are"
# a simulation build's variable, in a build that runs tasks (docs/scale.md)
invalid SHARDFLOW_SIM_DEVICE h100 "only a simulation build (configure --enable-simulation"
invalid SHARDFLOW_SIM_SHARED_CPUS cpus "only a simulation build (configure --enable-simulation"
invalid SHARDFLOW_SIM_CALIBRATION /tmp/h100.tsv "only a simulation build (configure --enable-simulation"
invalid SHARDFLOW_SIM_HOST_CPU 1.5,1 "only a simulation build (configure --enable-simulation"
# numbers are strict: no blanks, no sign
invalid SHARDFLOW_PREFETCH_DEPTH " 2" "$accepted"
invalid SHARDFLOW_PREFETCH_DEPTH "+2" "$accepted"
# StarPU's variables that the README documents: refused before starpu_init aborts
invalid STARPU_NCPU "" "$accepted"
invalid STARPU_NCPU 1 "$accepted"
invalid STARPU_NCPU four "$accepted"
invalid STARPU_SILENT yes "$accepted"
invalid STARPU_WORKERS_NOBIND true "$accepted"
invalid STARPU_WORKERS_GETBIND -1 "$accepted"
invalid STARPU_LAST_WORKER_AWAKE yes "$accepted"
invalid STARPU_WORKERS_CPUID x "$accepted"
invalid STARPU_WORKERS_CPUID "3-1" "$accepted"
invalid STARPU_MINIMUM_CLEAN_BUFFERS "5%" "integers from 0 to 100"
invalid STARPU_TARGET_CLEAN_BUFFERS 101 "integers from 0 to 100"

for v in 0 64; do valid SHARDFLOW_PREFETCH_DEPTH $v; done
for v in pre post none; do valid SHARDFLOW_BACKWARD_PREFETCH $v; done
for v in full grad_op none; do valid SHARDFLOW_SHARDING $v; done
for v in error warn info debug; do valid SHARDFLOW_LOG $v; done
for v in none comm compute; do valid SHARDFLOW_SKIP $v; done
for v in 0 1024 1073741824; do valid SHARDFLOW_COMM_CHUNK $v; done
valid STARPU_NCPU 2
for v in 0 86400; do valid SHARDFLOW_COMM_TIMEOUT $v; done
valid STARPU_SILENT 0
for v in 0 100; do valid STARPU_TARGET_CLEAN_BUFFERS $v; done
valid STARPU_LAST_WORKER_AWAKE 1
for v in mpi mpi-sync; do valid SHARDFLOW_COMM $v; done
for v in device host; do valid SHARDFLOW_OPTIMIZER_ON $v; done
for v in tf32 bf16; do valid SHARDFLOW_GPU_MATH $v; done # CPU workers: accepted, no effect
valid SHARDFLOW_GRAD_ACCUM 4096
for v in sharded local; do valid SHARDFLOW_ACCUM_MODE $v; done
for v in none units; do valid SHARDFLOW_RECOMPUTE $v; done
valid SHARDFLOW_PARAM_DTYPE bf16
valid SHARDFLOW_REDUCE_DTYPE bf16
valid SHARDFLOW_SHARDING hybrid
valid SHARDFLOW_NODE_SIZE 1
for v in on off; do valid SHARDFLOW_MEMORY_CHECK $v; done
for v in on off; do valid SHARDFLOW_SPLIT_BACKWARD $v; done
for v in auto on off; do valid SHARDFLOW_VOCAB_PARALLEL $v; done
valid SHARDFLOW_SEQUENCE_PARALLEL off # on: refused without SHARDFLOW_TP (tests/seqpar.sh)
valid SHARDFLOW_CP 1 # > 1 on one rank: K does not divide it (tests/cp.sh)
for v in nearest upward downward; do valid SHARDFLOW_ROUNDING $v; done

# SHARDFLOW_COMM=nccl on this machine: no GPU (and, in a CPU build, no NCCL) is a clear
# error at sf_init, not a crash or a hang
run nccl SHARDFLOW_COMM=nccl
st=$?
[ $st -ge 1 ] && [ $st -le 123 ]
ok $? "SHARDFLOW_COMM=nccl without a GPU: exits with an error status ($st)"
grep -F "SHARDFLOW_COMM=nccl" "$tmp/nccl.err" >/dev/null &&
	grep -E "built without NCCL|no CUDA device" "$tmp/nccl.err" >/dev/null
if ! ok $? "SHARDFLOW_COMM=nccl without a GPU: stderr says no NCCL in this build, or no CUDA device"; then
	diag_file "$tmp/nccl.err"
fi
valid STARPU_WORKERS_CPUID "0-"

# 2 ranks. Through a wrapper that records each rank's own exit status (mpirun alone
# would kill the second rank as soon as the first fails, hiding how it would exit).
# shellcheck disable=SC2016,SC2086
env SHARDFLOW_SHARDING=zero3 sh "$RUN_MPI" 2 sh -c \
	'"$@"; echo $? >"'"$tmp"'/rc.${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-x}}"' \
	sh "$MLP" $small </dev/null >"$tmp/np2.out" 2>"$tmp/np2.err"
st=$?
[ $st -ne 124 ]
ok $? "2 ranks, SHARDFLOW_SHARDING=zero3: finishes without a hang (exit $st)"
r0=$(cat "$tmp/rc.0" 2>/dev/null) r1=$(cat "$tmp/rc.1" 2>/dev/null)
[ -n "$r0" ] && [ -n "$r1" ] && [ "$r0" -ge 1 ] && [ "$r0" -le 123 ] &&
	[ "$r1" -ge 1 ] && [ "$r1" -le 123 ]
ok $? "2 ranks, SHARDFLOW_SHARDING=zero3: both ranks exit with an error status (${r0:-none}, ${r1:-none})"
# shellcheck disable=SC2086
env SHARDFLOW_SHARDING=zero3 sh "$RUN_MPI" 2 "$MLP" $small </dev/null >"$tmp/np2b.out" 2>"$tmp/np2b.err"
st=$?
n=$(grep -c -F 'SHARDFLOW_SHARDING="zero3"' "$tmp/np2b.err")
[ "$n" -eq 1 ] && [ $st -ne 0 ] && [ $st -ne 124 ]
if ! ok $? "2 ranks under mpirun: non-zero exit ($st), no hang, the message on stderr once ($n times: the launcher's rank 0 says it)"; then
	diag_file "$tmp/np2b.err"
fi
# The one refusal that depends on a rank's machine, a trace directory missing on its
# host, is said by each rank it fails on (through the wrapper: each rank runs to its
# own failure).
# shellcheck disable=SC2016,SC2086
env SHARDFLOW_TRACE="$tmp/missing/t" sh "$RUN_MPI" 2 sh -c '"$@"; true' sh "$MLP" $small \
	</dev/null >"$tmp/np2c.out" 2>"$tmp/np2c.err"
n=$(grep -c 'does not exist' "$tmp/np2c.err")
[ "$n" -eq 2 ]
ok $? "2 ranks, a trace directory missing: each rank says it ($n times)" || diag_file "$tmp/np2c.err"
finish
