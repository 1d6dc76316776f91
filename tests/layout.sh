#!/bin/sh
# layout.sh — the architecture of docs/architecture.md holds in the code.
#
# Every #include "..." of the library points one way:
#   common/ <- layers/ <- tasks/ <- scheduler/ <- io/;  common/ <- trace/ <- scheduler/;
#   common/ <- data/; models/ builds graphs with the public API alone; and every
#   folder may include the public shardflow.h.
# No header reaches itself through its includes (no include cycles), and no two of the
# library's files call each other, directly or through others: file A calls file B when
# A's object file needs (nm: U) a function that B's defines (T, W), so the circle is
# found in what the compiler emitted, not in what the includes declare. Only the MPI
# backend (tasks/comm_mpi.c, its simulated-time proxy tasks/comm_sim.c, tasks/mpi_wait.h)
# includes <mpi.h>, only the layer
# families' math files (layers/*_cpu.c) and the optimizer's math are free of StarPU,
# and shardflow-rdb2txt (tools/rdb.[ch], tools/shardflow-rdb2txt.c) includes nothing of
# the project but tools/rdb.h: scripts/install-deps.sh compiles it alone with cc -lz.
. "$(dirname "$0")/lib.sh"
cd "$top_srcdir" || bail_out "no source tree"

plan 6

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

# The call graph between the library's files, from the objects of this build
# ($top_builddir, in or out of the tree): libtool's PIC object (DIR/.libs/NAME.o) or a
# plain DIR/NAME.o, for each NAME.c or NAME.cu of the source tree (a stale object of a
# removed source is not read). Functions only: a table's address (a layer type in
# registry.c's list) is no call. Each circle is printed with the function of every edge.
NM=${NM:-nm}
: >"$tmp/objs"
for d in common layers tasks trace scheduler io data models; do
	for o in "$top_builddir/$d"/.libs/*.o "$top_builddir/$d"/*.o; do
		[ -f "$o" ] || continue
		b=$(basename "$o" .o)
		src=
		for ext in c cu; do
			[ -f "$d/$b.$ext" ] && src=$d/$b.$ext
		done
		[ -n "$src" ] || continue
		grep -q "^$src " "$tmp/objs" || echo "$src $o" >>"$tmp/objs"
	done
done
if ! command -v "$NM" >/dev/null 2>&1; then
	skip "no two of the library's files call each other" "no $NM to read the object files"
elif [ ! -s "$tmp/objs" ]; then
	skip "no two of the library's files call each other" "no object files under $top_builddir (build first)"
else
	while read -r src o; do
		if "$NM" -P "$o" >"$tmp/nm" 2>&1; then
			awk -v f="$src" '$2 == "U" { print "U", f, $1 }
				$2 == "T" || $2 == "W" { print "D", f, $1 }' "$tmp/nm"
		else
			echo "E $src $o"
		fi
	done <"$tmp/objs" >"$tmp/syms"
	circles=$(awk '
	$1 == "E" { print "(" $2 ": nm cannot read " $3 ")"; bad = 1; next }
	!($2 in seen) { seen[$2]; nodes[++nn] = $2 }
	$1 == "D" { if (!($3 in def)) def[$3] = $2; next }
	{ nu++; ufile[nu] = $2; usym[nu] = $3 }
	# depth-first: an edge back to a file still on the stack closes a circle
	function visit(v,   i, w, k, c) {
		state[v] = 1
		stack[++depth] = v
		for (i = 1; i <= nout[v]; i++) {
			w = out[v, i]
			if (state[w] == 1) {
				for (k = depth; stack[k] != w; k--)
					;
				c = w
				for (; k <= depth; k++)
					c = c " -> " (k < depth ? stack[k + 1] : w) " (" \
					    why[stack[k], k < depth ? stack[k + 1] : w] ")"
				print c
			} else if (!state[w])
				visit(w)
		}
		depth--
		state[v] = 2
	}
	END {
		for (i = 1; i <= nu; i++) {
			a = ufile[i]
			if (!(usym[i] in def) || def[usym[i]] == a)
				continue
			b = def[usym[i]]
			if ((a, b) in why)
				continue
			why[a, b] = usym[i]
			out[a, ++nout[a]] = b
		}
		for (i = 1; i <= nn; i++)
			if (!state[nodes[i]])
				visit(nodes[i])
		exit bad
	}' "$tmp/syms") || circles="${circles:-(nm failed)}"
	nfiles=$(wc -l <"$tmp/objs" | tr -d ' ')
	[ -z "$circles" ]
	ok $? "no two of the library's $nfiles files call each other, directly or through others (circles: $(echo "${circles:-none}" | sed '2,$s/^/; /' | tr -d '\n'))"
fi

mpi=$(grep -l '#include <mpi.h>' common/* layers/* tasks/* trace/* scheduler/* io/* data/* models/* 2>/dev/null |
	grep -v -e '^tasks/comm_mpi.c$' -e '^tasks/comm_sim.c$' -e '^tasks/mpi_wait.h$' | tr '\n' ' ')
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
