#!/bin/sh
# layout.sh — the architecture of docs/architecture.md holds in the code.
#
# Every #include "..." of the library points one way (docs/architecture.md's table):
#   common/ <- layers/ <- tasks/ <- comm/ <- sim/ <- scheduler/ <- io/;
#   common/ <- trace/ <- scheduler/;  common/ <- data/;  models/ builds graphs with the
#   public API alone; and every folder may include the public shardflow.h.
# No header reaches itself through its includes (no include cycles).
# The uses, read from what the compiler emitted in this build's objects (C and CUDA):
# file A uses file B when A's object needs (nm: U) a symbol that B's defines, a
# function (T, W) or data (D, B, R, V: a backend's table, a hook's pointer). Every
# use between folders points down, as the includes do, data included (a table's
# address is a dependence too); and no two files call each other, directly or through
# others (a circle of function calls; a table listing its entries while they call its
# helpers, as the layer registry and the backends' table do, is no circle). Run in
# every variant's build tree, CI's default, CUDA and simulation builds alike: the
# simulation's and the CUDA kernels' objects are read there; with no object to read
# it fails (build first). Only the MPI backend (comm/comm_mpi.c, comm/mpi_wait.h) and
# its simulated-time proxy (sim/comm_sim.c)
# include <mpi.h>; only comm/comm_nccl.c includes <nccl.h>; CUDA's headers only
# common/'s CUDA helpers, tasks/worker.c and the NCCL backend; the layer families' math
# files (layers/*_cpu.c), the optimizer's and gradient's math, common/ and libsftrace
# are free of StarPU; and
# shardflow-rdb2txt (tools/rdb.[ch], tools/shardflow-rdb2txt.c) includes nothing of
# the project but tools/rdb.h and the libc-only command line tools/cli.h (which
# shardflow-run, libc and jansson (a job file's checkpoint directory), shares):
# scripts/install-deps.sh compiles it alone
# with cc -lz.
# Last, io/ reads and writes a model only through scheduler/model_access.h: no file of
# io/ reaches scheduler/model.h (struct sf_model) through its includes, directly or
# through another header, so the compiler keeps the struct opaque there.
. "$(dirname "$0")/lib.sh"
cd "$top_srcdir" || bail_out "no source tree"

plan 10

FOLDERS="common layers tasks comm sim trace scheduler io data models"
allowed() { # folder -> the folders its files may include and use
	case $1 in
	common) echo "common" ;;
	layers) echo "common layers" ;;
	tasks) echo "common layers tasks" ;;
	comm) echo "common layers tasks comm" ;;
	sim) echo "common layers tasks comm sim" ;;
	trace) echo "common trace" ;;
	scheduler) echo "common layers tasks comm sim trace scheduler" ;;
	io) echo "common layers tasks comm sim scheduler io" ;;
	data) echo "common data" ;;
	models) echo "models" ;;
	esac
}

bad=
for d in $FOLDERS; do
	for f in "$d"/*.c "$d"/*.h "$d"/*.cu "$d"/*.cuh; do
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

# reach FILE: every #include "..." met on the way from FILE through the files it
# includes, directly or through others (each file followed once), as "INCLUDED VIA"
# (VIA: the file whose #include names it)
reach() {
	seen= todo=$1
	while [ -n "$todo" ]; do
		set -- $todo
		cur=$1
		shift
		todo=$*
		for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$cur"); do
			[ -f "$inc" ] || continue
			echo "$inc $cur"
			case " $seen " in *" $inc "*) continue ;; esac
			seen="$seen $inc"
			todo="$todo $inc"
		done
	done
}

# a header that reaches itself is a cycle
cycles=
for h in common/*.h layers/*.h tasks/*.h comm/*.h sim/*.h trace/*.h scheduler/*.h io/*.h data/*.h; do
	[ -f "$h" ] || continue
	reach "$h" | grep -q "^$h " && cycles="$cycles $h"
done
[ -z "$cycles" ]
ok $? "no header includes itself through others (cycles:${cycles:- none})"

# The use graph between the library's files, from the objects of this build
# ($top_builddir, in or out of the tree): libtool's PIC object (DIR/.libs/NAME.o, nvcc's
# too) or a plain DIR/NAME.o, for each NAME.c or NAME.cu of the source tree (a stale
# object of a removed source is not read). Each circle and each upward use is printed
# with the symbol of its edge.
NM=${NM:-nm}
: >"$tmp/objs"
for d in $FOLDERS; do
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
	ok 1 "no two of the library's files call each other (no $NM to read the objects)"
	ok 1 "every use between folders points down (no $NM to read the objects)"
elif [ ! -s "$tmp/objs" ]; then
	ok 1 "no two of the library's files call each other (no object files under $top_builddir: build first)"
	ok 1 "every use between folders points down (no object files under $top_builddir: build first)"
else
	while read -r src o; do
		if "$NM" -P "$o" >"$tmp/nm" 2>&1; then
			awk -v f="$src" '$2 == "U" { print "U", f, $1 }
				$2 ~ /^[TW]$/ { print "D", f, $1, "f" }
				$2 ~ /^[DBRV]$/ { print "D", f, $1, "d" }' "$tmp/nm"
		else
			echo "E $src $o"
		fi
	done <"$tmp/objs" >"$tmp/syms"
	# the edges: "e", user file, used file, the symbol, f (a call) or d (data)
	awk '
	$1 == "E" { print "E", $2, $3; next }
	$1 == "D" { if (!($3 in def)) { def[$3] = $2; kind[$3] = $4 }; next }
	{ nu++; ufile[nu] = $2; usym[nu] = $3 }
	END {
		for (i = 1; i <= nu; i++) {
			a = ufile[i]
			if (!(usym[i] in def) || def[usym[i]] == a)
				continue
			b = def[usym[i]]
			k = kind[usym[i]]
			if ((a, b, k) in seen)
				continue
			seen[a, b, k]
			print "e", a, b, usym[i], k
		}
	}' "$tmp/syms" >"$tmp/edges"
	# circles of calls: a table that lists its entries (the layer registry, the
	# backends' table) while they call its helpers is the one-table pattern, no circle
	circles=$(awk '
	$1 == "E" { print "(" $2 ": nm cannot read " $3 ")"; bad = 1; next }
	$5 != "f" { next }
	{
		for (k = 2; k <= 3; k++)
			if (!($k in node)) { node[$k]; nodes[++nn] = $k }
		out[$2, ++nout[$2]] = $3
		why[$2, $3] = $4
	}
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
		for (i = 1; i <= nn; i++)
			if (!state[nodes[i]])
				visit(nodes[i])
		exit bad
	}' "$tmp/edges") || circles="${circles:-(nm failed)}"
	nfiles=$(wc -l <"$tmp/objs" | tr -d ' ')
	[ -z "$circles" ]
	ok $? "no two of the library's $nfiles files (C and CUDA objects) call each other, directly or through others (circles: $(echo "${circles:-none}" | sed '2,$s/^/; /' | tr -d '\n'))"
	# models/ builds graphs with the public API (sf_*) alone, wherever it is defined
	up=
	while read -r e a b sym k; do
		[ "$e" = e ] || continue
		fa=${a%%/*} fb=${b%%/*}
		[ "$fa" = models ] && case $sym in sf_*) continue ;; esac
		case " $(allowed "$fa") " in
		*" $fb "*) ;;
		*) up="$up $a->$b($sym)" ;;
		esac
	done <"$tmp/edges"
	[ -z "$up" ]
	ok $? "every use between folders points down, functions and data alike (upward:${up:- none})"
fi

lib_files=$(for d in $FOLDERS; do ls "$d"/* 2>/dev/null; done)
mpi=$(grep -l '#include <mpi.h>' $lib_files 2>/dev/null |
	grep -v -e '^comm/comm_mpi.c$' -e '^sim/comm_sim.c$' -e '^comm/mpi_wait.h$' | tr '\n' ' ')
[ -z "$mpi" ]
ok $? "only the MPI backend includes <mpi.h> (others: ${mpi:-none})"

nccl=$(grep -l '#include <nccl.h>' $lib_files 2>/dev/null | grep -v -e '^comm/comm_nccl.c$' | tr '\n' ' ')
[ -z "$nccl" ]
ok $? "only the NCCL backend includes <nccl.h> (others: ${nccl:-none})"

# CUDA's own headers: the launch checks, cuBLAS's row-major wrappers and the tensor
# cores' types (common/cuda_util.h, cublas_rm.h, cuda_mma.cuh), the
# rank's device and its handles (tasks/worker.c) and the NCCL backend; the .cu files
# reach them through common/cuda_util.h. The scheduler asks StarPU and tasks/ instead.
cuda=$(grep -l -E '#include <(cuda|cublas|cudnn|nccl|mma)[a-zA-Z0-9_]*\.h>' $lib_files 2>/dev/null |
	grep -v -e '^common/cuda_util.h$' -e '^common/cublas_rm.h$' -e '^common/cuda_mma.cuh$' \
		-e '^tasks/worker.c$' -e '^comm/comm_nccl.c$' | tr '\n' ' ')
[ -z "$cuda" ]
ok $? "only common/'s CUDA helpers, tasks/worker.c and the NCCL backend include CUDA's headers (others: ${cuda:-none})"

# libsftrace (trace/ but the recorder, which the library's task callbacks feed) is
# shared with tools/shardflow-overlap, which links no StarPU
starpu=$(grep -l '#include <starpu.h>' layers/*_cpu.c tasks/optim_cpu.c tasks/grad_cpu.c common/*.c \
	$(ls trace/*.c | grep -v '^trace/recorder.c$') 2>/dev/null | tr '\n' ' ')
[ -z "$starpu" ]
ok $? "the ops' math, the optimizer's and the gradient's math, common/ and libsftrace include no <starpu.h> (${starpu:-none does})"

standalone=
for f in tools/rdb.h tools/rdb.c tools/shardflow-rdb2txt.c tools/cli.h tools/shardflow-run.c; do
	for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		case $f:$inc in
		tools/rdb.[ch]:tools/rdb.h | tools/shardflow-rdb2txt.c:tools/rdb.h) ;;
		tools/shardflow-rdb2txt.c:tools/cli.h | tools/shardflow-run.c:tools/cli.h) ;;
		*) standalone="$standalone $f->$inc" ;;
		esac
	done
	deps=$(grep -E '^#include <(starpu|mpi|jansson|cblas|zlib)\.h>' "$f")
	case $f in
	tools/rdb.c) deps= ;;
	tools/shardflow-run.c) deps=$(echo "$deps" | grep -v -x '#include <jansson.h>') ;;
	esac
	[ -n "$deps" ] && standalone="$standalone $f->(a dependency)"
done
[ -z "$standalone" ]
ok $? "shardflow-rdb2txt needs only libc and zlib, the command line it shares with shardflow-run (tools/cli.h) only libc, shardflow-run libc and jansson (a job file's checkpoint directory) (violations:${standalone:- none})"

# io/'s view of a model: the transitive includes of each io/ file stop short of
# scheduler/model.h
model_struct=
for f in io/*.c io/*.h; do
	[ -f "$f" ] || continue
	via=$(reach "$f" | sed -n 's|^scheduler/model\.h ||p' | head -1)
	[ -n "$via" ] && model_struct="$model_struct $f(via $via)"
done
[ -z "$model_struct" ]
ok $? "io/ sees a model only through scheduler/model_access.h, never scheduler/model.h (violations:${model_struct:- none})"
finish
