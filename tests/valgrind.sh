#!/bin/sh
# valgrind.sh — the 1-rank test programs under valgrind's memcheck (make check-valgrind).
#
# Proves there is no invalid access and no leak in shardflow's code: any memcheck
# error, or a definitely/indirectly lost block outside the Open MPI and StarPU
# internals listed in tests/valgrind.supp, fails the program's line. A program linked
# against the uninstalled shared library is a libtool wrapper script: valgrind runs
# under libtool's execute mode, which puts the real binary (and its library path) in
# the wrapper's place, so memcheck watches the program, not the shell; and a run's
# environment is set before valgrind, not through env(1), whose exec memcheck would
# not follow.
top_builddir=${top_builddir:-$(pwd)}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
export STARPU_SILENT=1

LT="$top_builddir/libtool"
[ -x "$LT" ] || { echo "Bail out! no $LT: configure the build first"; exit 99; }
VG="$LT --mode=execute valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
 --errors-for-leak-kinds=definite,indirect --num-callers=50 --error-exitcode=99 \
 --suppressions=$top_srcdir/tests/valgrind.supp"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sf-valgrind.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
# examples/gpt's text: lib.sh's fixed corpus (not the README, whose edits would change
# what the run reads); lib.sh is sourced in a subshell, which keeps its $tmp and traps
corpus=$tmp/corpus.txt
(. "$top_srcdir/tests/lib.sh" && sf_corpus "$corpus") || exit 99

set -- \
	"kernels|$top_builddir/tests/test_kernels_fd" \
	"api|$top_builddir/tests/test_api" \
	"idx|$top_builddir/tests/test_idx" \
	"text|$top_builddir/tests/test_text" \
	"pp order|$top_builddir/tests/test_pp_order" \
	"mlp sgd full|$top_builddir/tests/train_dump --model mlp --steps 3 --out $tmp/a.dump" \
	"residual adamw depth0 none-prefetch|env SHARDFLOW_PREFETCH_DEPTH=0 SHARDFLOW_BACKWARD_PREFETCH=none $top_builddir/tests/train_dump --model residual --optimizer adamw --steps 3 --out $tmp/b.dump" \
	"uneven sgd grad_op|env SHARDFLOW_SHARDING=grad_op $top_builddir/tests/train_dump --model uneven --steps 3 --out $tmp/c.dump" \
	"uneven adamw none|env SHARDFLOW_SHARDING=none $top_builddir/tests/train_dump --model uneven --optimizer adamw --steps 3 --out $tmp/d.dump" \
	"gpt (attention, pos_embedding) adamw|$top_builddir/tests/train_dump --model gpt --optimizer adamw --steps 2 --batch 3 --out $tmp/e.dump" \
	"nanogpt (sf_gpt_graph) adamw, safetensors export|$top_builddir/tests/train_dump --model nanogpt --optimizer adamw --steps 2 --batch 3 --export-init $tmp/w0.st --out $tmp/f.dump" \
	"llama-hf-tp (linear_col of named blocks, linear_row; K 1) clipped, export|$top_builddir/tests/train_dump --model llama-hf-tp --optimizer adamw --clip 0.5 --steps 2 --batch 3 --export $tmp/tp.st --out $tmp/t.dump" \
	"examples/gpt: train, evaluate, checkpoint (and retention), export, generate|$top_builddir/examples/gpt --layers 1 --heads 2 --embd 16 --context 16 --batch 2 --steps 3 --eval-every 2 --eval-batches 1 --text $corpus --checkpoint-dir $tmp/gck --checkpoint-every 1 --checkpoint-keep 1 --export $tmp/g.st --sample 1 --tokens 8" \
	"custom layer|$top_builddir/examples/custom_layer --steps 3" \
	"mlp_synthetic|$top_builddir/examples/mlp_synthetic --steps 2 --batch 8 --widths 32,16,10" \
	"mlp_synthetic traced|env SHARDFLOW_TRACE=$tmp/trace $top_builddir/examples/mlp_synthetic --steps 2 --batch 8 --widths 32,16,16,10"

# The programs run $SF_VALGRIND_JOBS at a time (default: the machine's cores): memcheck
# runs a process's threads one at a time, so one program keeps one core busy.
# scripts/lanes.sh runs them; each writes its output and exit status under $tmp, and
# the lines are printed in the list's order.
jobs=${SF_VALGRIND_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in '' | *[!0-9]* | 0*) echo "Bail out! SF_VALGRIND_JOBS=\"$jobs\" is invalid: expected a positive integer"; exit 99 ;; esac
echo "1..$#"
for t in "$@"; do echo "$t"; done >"$tmp/list"
# run_one I: the list's I-th program under memcheck
run_one() {
	t=$(sed -n "$1p" "$tmp/list")
	cmd=${t#*|}
	# "env A=1 B=2 PROGRAM ARGS": the assignments go before valgrind
	vars=
	case $cmd in
	"env "*)
		cmd=${cmd#env }
		while :; do
			w=${cmd%% *}
			case $w in *=*) vars="$vars $w"; cmd=${cmd#"$w" } ;; *) break ;; esac
		done
		;;
	esac
	# shellcheck disable=SC2086
	env $vars $VG $cmd >"$tmp/out.$1" 2>"$tmp/err.$1"
	echo $? >"$tmp/rc.$1"
}
. "$top_srcdir/scripts/lanes.sh"
lanes "$jobs" run_one $(seq 1 $#) || { echo "Bail out! no scratch folder for the lanes"; exit 99; }
n=0
failed=0
for t in "$@"; do
	n=$((n + 1))
	name=${t%%|*}
	rc=$(cat "$tmp/rc.$n" 2>/dev/null || echo "none")
	if [ "$rc" = 0 ]; then
		echo "ok $n - valgrind clean: $name"
	else
		echo "not ok $n - valgrind: $name (exit $rc)"
		sed 's/^/# /' "$tmp/err.$n" | head -60
		failed=$((failed + 1))
	fi
done
[ "$failed" -eq 0 ]
