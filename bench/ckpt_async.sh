#!/bin/sh
# ckpt_async.sh — what a checkpoint costs the steps, written synchronously
# (sf_checkpoint_save) and asynchronously (--checkpoint-async: the shards copied to host
# buffers at the step, written by a thread while the next steps run).
#
#   bench/ckpt_async.sh [--np N] [--steps N] [--every K] [--runs R] [--preset NAME]
#                       [--tiny] [--out DIR] [--build DIR] [-- GPT_ARGS...]
#
# examples/gpt --preset gpt2 (GPT-2 124M on install-deps.sh's Austen tokens, context
# 128, batch 8) on --np ranks (default 2) for --steps steps (default 30), a checkpoint
# every --every steps (default 5), with and without --checkpoint-async; the runs are
# interleaved (round r runs sync then async) and each figure is the median of --runs
# rounds (default 5), with min and max:
#   step ms     the mean step time of the run, from its last progress line's tokens/s
#               (the mean since the start, checkpoints included): tokens a step / rate
#   run s       the run's wall time, start to exit (the final save included)
#   held ms     the mean of what the saves held the steps: a synchronous save's whole
#               time, an asynchronous one's snapshot ("asynchronous: X s at the step")
# Results: DIR/results.md (a markdown table) and DIR/raw.tsv, the logs in DIR
# (default ckpt-async-bench). The checkpoints go to DIR/ck-*, removed after each run.
#
#   --preset NAME  gpt2 (default) or llama-100m
#   --tiny         a 2-layer, embd 32 model on a small text instead of the preset:
#                  checks that the script runs (its figures mean nothing)
#   --build DIR    a configured and built shardflow tree (default: this checkout)
#   -- GPT_ARGS    more examples/gpt options, for both modes
#
# Time it on a machine nobody else is using: the figures are wall-clock.
set -u

prog=ckpt_async.sh
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$here/.." && pwd)
np=2 steps=30 every=5 runs=5 preset=gpt2 tiny=0 out=ckpt-async-bench

die() {
	echo "$prog: $*" >&2
	exit 2
}
# positive NAME VALUE: VALUE is a positive integer, or the usage error naming NAME
positive() {
	case $2 in '' | *[!0-9]* | 0*) die "$1 \"$2\": expected a positive integer" ;; esac
}
while [ $# -gt 0 ]; do
	case $1 in
	--np | --steps | --every | --runs | --preset | --out | --build)
		[ $# -ge 2 ] || die "$1 needs a value"
		case $1 in
		--np) positive "$1" "$2"; np=$2 ;;
		--steps) positive "$1" "$2"; steps=$2 ;;
		--every) positive "$1" "$2"; every=$2 ;;
		--runs) positive "$1" "$2"; runs=$2 ;;
		--preset) preset=$2 ;;
		--out) out=$2 ;;
		--build) build=$2 ;;
		esac
		shift 2
		;;
	--tiny) tiny=1; shift ;;
	--) shift; break ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option \"$1\" (see --help)" ;;
	esac
done
case $preset in gpt2 | llama-100m) ;; *) die "--preset \"$preset\": expected gpt2 or llama-100m" ;; esac
[ "$every" -le "$steps" ] || die "--every $every exceeds --steps $steps: no checkpoint but the last"
gpt=$build/examples/gpt
[ -x "$gpt" ] || die "$gpt is missing: build first (or --build DIR)"
run_mpi=$here/../tests/run-mpi.sh
mkdir -p "$out" || die "cannot create $out"

if [ "$tiny" -eq 1 ]; then
	text=$out/tiny.txt
	i=0
	: >"$text"
	while [ $i -lt 400 ]; do
		echo "the quick brown fox $i jumps over the lazy dog near the river bank." >>"$text"
		i=$((i + 1))
	done
	context=32 batch=8
	model="--layers 2 --heads 2 --embd 32 --context $context --batch $batch --text $text"
else
	context=128 batch=8
	model="--preset $preset --context $context --batch $batch"
fi
tokens=$((context * batch))

# one MODE ROUND [GPT_ARGS...]: one run, its figures appended to raw.tsv
one() {
	mode=$1
	round=$2
	shift 2
	log=$out/$mode-$round
	ck=$out/ck-$mode
	rm -rf "$ck"
	extra=
	[ "$mode" = async ] && extra=--checkpoint-async
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	SF_TEST_TIMEOUT=3600 sh "$run_mpi" "$np" "$gpt" $model --steps "$steps" --sample 0 \
		--eval-every "$steps" --eval-batches 1 --progress-every "$steps" \
		--checkpoint-dir "$ck" --checkpoint-every "$every" $extra "$@" \
		</dev/null >"$log.out" 2>"$log.err" || {
		echo "$prog: the $mode run of round $round failed; its stderr: $log.err" >&2
		exit 1
	}
	t1=$(date +%s.%N)
	rm -rf "$ck"
	rate=$(sed -n 's/^step [0-9]*\/[0-9]* .* tokens\/s \([0-9.]*\) .*/\1/p' "$log.out" | tail -1)
	[ -n "$rate" ] || { echo "$prog: no progress line in $log.out" >&2; exit 1; }
	# a save's hold: the async snapshot, else the save's whole time
	held=$(sed -n -e 's/.*(.* MiB, [0-9.]* s, asynchronous: \([0-9.]*\) s at the step).*/\1/p' \
		-e 's/.*saved in .* (.* MiB, \([0-9.]*\) s).*/\1/p' "$log.err" |
		awk '{ s += $1; n++ } END { if (n) printf "%.1f", 1000 * s / n; else print "nan" }')
	awk -v m="$mode" -v r="$round" -v t="$tokens" -v rate="$rate" -v a="$t0" -v b="$t1" -v h="$held" \
		'BEGIN { printf "%s\t%s\t%.2f\t%.2f\t%s\n", m, r, 1000 * t / rate, b - a, h }' \
		>>"$out/raw.tsv"
}

printf 'mode\tround\tstep_ms\trun_s\theld_ms\n' >"$out/raw.tsv"
r=1
while [ "$r" -le "$runs" ]; do
	one sync "$r" "$@"
	one async "$r" "$@"
	echo "$prog: round $r of $runs done" >&2
	r=$((r + 1))
done

# median (min..max) of column C of MODE's rows
stat() {
	awk -F'\t' -v m="$1" -v c="$2" 'NR > 1 && $1 == m { print $c }' "$out/raw.tsv" | sort -g |
		awk '{ v[NR] = $1 } END { md = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.2f (%.2f..%.2f)", md, v[1], v[NR] }'
}
{
	echo "examples/gpt $( [ "$tiny" -eq 1 ] && echo "tiny model" || echo "--preset $preset"), $np ranks, $steps steps, a checkpoint every $every; median (min..max) of $runs interleaved rounds"
	echo
	echo "| save | step ms | run s | held ms a save |"
	echo "| --- | --- | --- | --- |"
	for m in sync async; do
		echo "| $m | $(stat $m 3) | $(stat $m 4) | $(stat $m 5) |"
	done
} >"$out/results.md"
cat "$out/results.md"
