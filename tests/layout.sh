#!/bin/sh
# layout.sh — the architecture of docs/architecture.md holds in the code.
#
# Every #include "..." of the library points one way:
#   common/ <- layers/ <- tasks/ <- scheduler/ <- io/;  common/ <- trace/ <- scheduler/;
#   common/ <- data/; models/ builds graphs with the public API alone; and every
#   folder may include the public shardflow.h.
# No header reaches itself through its includes (no include cycles), only the MPI
# backend (tasks/comm_mpi.c, tasks/mpi_wait.h) includes <mpi.h>, only the layer
# families' math files (layers/*_cpu.c) and the optimizer's math are free of StarPU,
# and shardflow-rdb2txt (tools/rdb.[ch], tools/shardflow-rdb2txt.c) includes nothing of
# the project but tools/rdb.h: scripts/install-deps.sh compiles it alone with cc -lz.
. "$(dirname "$0")/lib.sh"
cd "$top_srcdir" || bail_out "no source tree"

plan 5

allowed() { # folder -> the folders its files may include
	case $1 in
	common) echo "common" ;;
	layers) echo "common layers" ;;
	tasks) echo "common layers tasks" ;;
	trace) echo "common trace" ;;
	scheduler) echo "common layers tasks trace scheduler" ;;
	io) echo "common layers tasks scheduler io" ;;
	data) echo "common data" ;;
	models) echo "models" ;;
	esac
}

bad=
for d in common layers tasks trace scheduler io data models; do
	for f in "$d"/*.c "$d"/*.h; do
		[ -f "$f" ] || continue
		for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
			case $inc in shardflow.h | config.h) continue ;; esac
			top=${inc%%/*}
			case " $(allowed "$d") " in
			*" $top "*) ;;
			*) bad="$bad $f->$inc" ;;
			esac
		done
	done
done
[ -z "$bad" ]
ok $? "includes point one way (violations:${bad:- none})"

# transitive includes of each header; a header that reaches itself is a cycle
cycles=
for h in common/*.h layers/*.h tasks/*.h trace/*.h scheduler/*.h io/*.h data/*.h; do
	[ -f "$h" ] || continue
	seen= todo=$h
	while [ -n "$todo" ]; do
		set -- $todo
		cur=$1
		shift
		todo=$*
		for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$cur"); do
			[ -f "$inc" ] || continue
			[ "$inc" = "$h" ] && cycles="$cycles $h"
			case " $seen " in *" $inc "*) continue ;; esac
			seen="$seen $inc"
			todo="$todo $inc"
		done
	done
done
[ -z "$cycles" ]
ok $? "no header includes itself through others (cycles:${cycles:- none})"

mpi=$(grep -l '#include <mpi.h>' common/* layers/* tasks/* trace/* scheduler/* io/* data/* models/* 2>/dev/null |
	grep -v -e '^tasks/comm_mpi.c$' -e '^tasks/mpi_wait.h$' | tr '\n' ' ')
[ -z "$mpi" ]
ok $? "only the MPI backend includes <mpi.h> (others: ${mpi:-none})"

starpu=$(grep -l '#include <starpu.h>' layers/*_cpu.c tasks/optim_cpu.c common/*.c trace/report.c \
	trace/svg.c 2>/dev/null | tr '\n' ' ')
[ -z "$starpu" ]
ok $? "the ops' math, the optimizer's math, common/ and the report include no <starpu.h> (${starpu:-none does})"

standalone=
for f in tools/rdb.h tools/rdb.c tools/shardflow-rdb2txt.c; do
	for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		[ "$inc" = tools/rdb.h ] || standalone="$standalone $f->$inc"
	done
	grep -q -E '^#include <(starpu|mpi|jansson|cblas)\.h>' "$f" && standalone="$standalone $f->(a dependency)"
done
[ -z "$standalone" ]
ok $? "shardflow-rdb2txt needs only libc and zlib (violations:${standalone:- none})"
finish
