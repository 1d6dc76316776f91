#!/bin/sh
# install.sh — a new user's program builds and runs against an installed shardflow.
#
# Installs the library into a prefix under $tmp (make install, every installation
# directory given), then proves:
#  - the prefix holds the header, libshardflow.so.0 and a shardflow.pc pointing there,
#    and its bin/ the tools (shardflow-run, shardflow-train, shardflow-overlap,
#    shardflow-rdb2txt, shardflow-plot, shardflow-ckpt), which
#    run from there;
#  - `pkg-config --cflags` and `--libs shardflow` work with shardflow.pc alone on the
#    search path (no starpu-1.3.pc, zlib.pc, jansson.pc: the public header needs none)
#    and give only -I, -L and -lshardflow; `--static --libs` adds the private
#    dependencies a static libshardflow.a needs;
#  - examples/hello_shardflow.c, copied out of the tree, compiles with $MPICC and
#    those flags alone (strict C11, no warning) plus the run path the README gives,
#    and loads the installed libshardflow.so.0;
#  - it runs on 1 rank and on 2 (tests/run-mpi.sh): exit 0, its 20 steps printed
#    once, a falling loss, the same losses on both; built without the run path, it
#    runs with LD_LIBRARY_PATH (the README's other way); the installed shardflow-run
#    runs it on 2 ranks (its mpirun, no restart);
#  - examples/custom_layer.c, a layer type of the user's own (its kernels, a config,
#    sf_kernel_buffers_create for its finite-difference check), builds the same way,
#    with pkg-config's flags and its own -lm alone (no StarPU header: the layer API is
#    shardflow.h's), passes its --check and trains on 1 rank (tests/run-mpi.sh);
#  - the README quotes the program as the file has it;
#  - make uninstall removes every file it installed.
# It writes only under $tmp (removed on exit), so it also runs under make distcheck.
. "$(dirname "$0")/lib.sh"

src=$top_srcdir/examples/hello_shardflow.c
[ -f "$src" ] || bail_out "$src is missing"
[ -f "$top_builddir/libshardflow.la" ] || bail_out "libshardflow.la is not built (run make)"
limit=${SF_TEST_TIMEOUT:-180}
prefix=$tmp/prefix
pcdir=$prefix/lib/pkgconfig

plan 20

# make_prefix TARGET: make TARGET (install, uninstall) with every installation
# directory under $prefix. An outer make's MAKEFLAGS (make check TESTS=..., its
# jobserver) is not passed on.
make_prefix() {
	(
		unset MAKEFLAGS MFLAGS MAKELEVEL
		"${MAKE:-make}" -C "$top_builddir" "$1" DESTDIR= prefix="$prefix" \
			exec_prefix="$prefix" bindir="$prefix/bin" libdir="$prefix/lib" \
			includedir="$prefix/include" datarootdir="$prefix/share"
	) </dev/null >"$tmp/make-$1.out" 2>&1
}

make_prefix install
st=$?
ok $st "make install into $prefix (exit $st)" || diag_file "$tmp/make-install.out"

[ -f "$prefix/include/shardflow.h" ] && [ -e "$prefix/lib/libshardflow.so.0" ] &&
	grep -qxF "prefix=$prefix" "$pcdir/shardflow.pc"
ok $? "the prefix holds shardflow.h, libshardflow.so.0 and a shardflow.pc whose prefix is it"

missing=
for t in shardflow-run shardflow-train shardflow-overlap shardflow-rdb2txt shardflow-plot shardflow-ckpt; do
	[ -x "$prefix/bin/$t" ] || missing="$missing $t"
done
"$prefix/bin/shardflow-run" --help >"$tmp/run-help.out" 2>&1
st=$?
[ -z "$missing" ] && [ $st -eq 0 ] && grep -q '^usage: shardflow-run ' "$tmp/run-help.out"
ok $? "the prefix's bin holds the tools${missing:+ (missing:$missing)}; shardflow-run --help runs there (exit $st)" ||
	diag_file "$tmp/run-help.out"

# pkg-config with shardflow.pc alone on its path; the output on one line, words
# separated by one blank (split on purpose)
alone() {
	_pc=$(PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_PATH= "$PKG_CONFIG" "$@" shardflow 2>"$tmp/pc.err")
	_st=$?
	# shellcheck disable=SC2086
	echo $_pc
	return $_st
}
cflags=$(alone --cflags)
st=$?
[ $st -eq 0 ] && [ "$cflags" = "-I$prefix/include" ]
ok $? "pkg-config --cflags with shardflow.pc alone on the path: '$cflags' (exit $st)" ||
	diag_file "$tmp/pc.err"
libs=$(alone --libs)
st=$?
[ $st -eq 0 ] && [ "$libs" = "-L$prefix/lib -lshardflow" ]
ok $? "pkg-config --libs with shardflow.pc alone: '$libs', no private dependency (exit $st)" ||
	diag_file "$tmp/pc.err"
static=$(alone --static --libs)
st=$?
missing=
for l in -lshardflow -lstarpu-1.3 -lz -ljansson -lopenblas -lm; do
	case " $static " in
	*" $l "*) ;;
	*) missing="$missing $l" ;;
	esac
done
[ $st -eq 0 ] && [ -z "$missing" ]
ok $? "pkg-config --static --libs lists the private dependencies${missing:+ (missing:$missing)}: $static" ||
	diag_file "$tmp/pc.err"

# hello_shardflow, built from a copy outside the tree with pkg-config's flags alone.
# $MPICC and $flags are split on purpose.
cp "$src" "$tmp/hello_shardflow.c" || bail_out "cannot copy $src"
flags=$(PKG_CONFIG_PATH=$pcdir "$PKG_CONFIG" --cflags --libs shardflow)
flags=$(echo $flags)
libdir=$(PKG_CONFIG_PATH=$pcdir "$PKG_CONFIG" --variable=libdir shardflow)
# build SOURCE OUTPUT EXTRA_FLAGS...: compile SOURCE (copied into $tmp) in $tmp,
# output in $tmp/cc.out
build() {
	_src=$1 _out=$2
	shift 2
	(
		cd "$tmp" || exit 1
		unset CPATH C_INCLUDE_PATH LIBRARY_PATH
		# shellcheck disable=SC2086
		$MPICC -std=c11 -pedantic -Wall -Wextra "$_src" -o "$_out" $flags "$@"
	) </dev/null >"$tmp/cc.out" 2>&1
}
build hello_shardflow.c hello -Wl,-rpath,"$libdir"
st=$?
[ $st -eq 0 ] && [ ! -s "$tmp/cc.out" ]
ok $? "$MPICC -std=c11 -pedantic -Wall -Wextra hello_shardflow.c $flags -Wl,-rpath,$libdir: no warning (exit $st)" ||
	diag_file "$tmp/cc.out"

ldd "$tmp/hello" >"$tmp/ldd.out" 2>&1
grep -qF "libshardflow.so.0 => $libdir/libshardflow.so.0 " "$tmp/ldd.out"
ok $? "the program loads the installed libshardflow.so.0 (run path $libdir)" ||
	diag_file "$tmp/ldd.out"

# steps_ok FILE: the 20 lines "step k loss x", in order, and nothing else
steps_ok() {
	[ "$(grep -c . "$1")" -eq 20 ] &&
		[ "$(sed -n 's/^step \([0-9]*\) loss [0-9]*\.[0-9]\{4\}$/\1/p' "$1" | tr '\n' ' ')" = \
			"$(seq 1 20 | tr '\n' ' ')" ]
}

(cd "$tmp" && timeout -k 5 "$limit" ./hello) </dev/null >"$tmp/np1.out" 2>"$tmp/np1.err"
st=$?
[ $st -eq 0 ] && steps_ok "$tmp/np1.out"
ok $? "1 rank: exit 0 (exit $st), 20 lines 'step k loss x'" ||
	{ diag_file "$tmp/np1.out"; diag_file "$tmp/np1.err"; }
means=$(awk '/^step /{ if ($2 <= 5) a += $4; if ($2 > 15) b += $4 }
	END { printf "%.4f %.4f", a / 5, b / 5 }' "$tmp/np1.out")
echo "$means" | awk '{ exit !($2 < 0.95 * $1) }'
ok $? "1 rank: the loss falls (mean of steps 1-5, 16-20: $means)"

(cd "$tmp" && run_mpi 2 ./hello) >"$tmp/np2.out" 2>"$tmp/np2.err"
st=$?
[ $st -eq 0 ] && steps_ok "$tmp/np2.out"
ok $? "2 ranks: exit 0 (exit $st), the 20 step lines printed once" ||
	{ diag_file "$tmp/np2.out"; diag_file "$tmp/np2.err"; }
# The same global batches on any world size: equal losses (to the 4 printed decimals,
# give or take the rounding of the last one).
paste -d ' ' "$tmp/np1.out" "$tmp/np2.out" | awk '{ d = $4 - $8; if (d < 0) d = -d
	if (d > m) m = d } END { printf "# largest difference %.4f\n", m; exit !(NR == 20 && m <= 2e-4) }'
ok $? "2 ranks print the losses of 1 rank"

# the installed launcher (mpirun under it, as tests/run-mpi.sh would run it)
(cd "$tmp" && timeout -k 10 "$limit" "$prefix/bin/shardflow-run" --np 2 \
	--mpirun-args "--oversubscribe --bind-to none" -- ./hello) </dev/null >"$tmp/run.out" 2>"$tmp/run.err"
st=$?
[ $st -eq 0 ] && steps_ok "$tmp/run.out" && ! grep -q '^shardflow-run: ' "$tmp/run.err"
ok $? "the installed shardflow-run runs it on 2 ranks: exit 0 (exit $st), the 20 step lines" ||
	{ diag_file "$tmp/run.out"; diag_file "$tmp/run.err"; }

# the installed trainer, from a job file (the README's quick start, small); its run
# path is the configured libdir, not this test's prefix: LD_LIBRARY_PATH (docs/api.md)
i=0
while [ $i -lt 100 ]; do
	echo "It is a truth universally acknowledged, that a single man in possession of a good fortune"
	i=$((i + 1))
done >"$tmp/train.txt"
cat >"$tmp/train.json" <<EOF
{"model": {"layers": 1, "heads": 2, "embd": 16, "context": 8},
 "training": {"batch": 4, "steps": 3}, "data": {"text": "$tmp/train.txt", "eval-batches": 1},
 "generation": {"sample": 0}}
EOF
(cd "$tmp" && LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	timeout -k 10 "$limit" "$prefix/bin/shardflow-train" --job train.json) \
	</dev/null >"$tmp/train.out" 2>"$tmp/train.err"
st=$?
[ $st -eq 0 ] && grep -q '^step 3/3 loss' "$tmp/train.out" && grep -q '^val_loss ' "$tmp/train.out"
ok $? "the installed shardflow-train trains from a job file: exit 0 (exit $st), 3 steps, val_loss" ||
	{ diag_file "$tmp/train.out"; diag_file "$tmp/train.err"; }

build hello_shardflow.c hello_norpath
st=$?
(cd "$tmp" && LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	timeout -k 5 "$limit" ./hello_norpath) </dev/null >"$tmp/ldpath.out" 2>"$tmp/ldpath.err"
st2=$?
[ $st -eq 0 ] && [ $st2 -eq 0 ] && steps_ok "$tmp/ldpath.out"
ok $? "without the run path, LD_LIBRARY_PATH=$libdir runs it (build exit $st, run exit $st2)" ||
	{ diag_file "$tmp/cc.out"; diag_file "$tmp/ldpath.err"; }

# examples/custom_layer.c, copied out of the tree: pkg-config's flags and -lm (its own
# sqrt) alone, no StarPU flags
cp "$top_srcdir/examples/custom_layer.c" "$tmp/custom_layer.c" || bail_out "cannot copy custom_layer.c"
build custom_layer.c custom_layer -lm -Wl,-rpath,"$libdir"
st=$?
[ $st -eq 0 ] && [ ! -s "$tmp/cc.out" ]
ok $? "$MPICC -std=c11 -pedantic -Wall -Wextra custom_layer.c $flags -lm: no warning (exit $st)" ||
	diag_file "$tmp/cc.out"
(cd "$tmp" && timeout -k 5 "$limit" ./custom_layer --check) </dev/null >"$tmp/cl-check.out" 2>&1
st=$?
planned=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tmp/cl-check.out")
[ $st -eq 0 ] && [ -n "$planned" ] && [ "$(grep -c '^ok ' "$tmp/cl-check.out")" -eq "$planned" ]
ok $? "custom_layer --check: its ${planned:-?} kernel checks pass on buffers of sf_kernel_buffers_create (exit $st)" ||
	diag_file "$tmp/cl-check.out"
(cd "$tmp" && run_mpi 1 ./custom_layer --steps 10) >"$tmp/cl.out" 2>"$tmp/cl.err"
st=$?
[ $st -eq 0 ] && [ "$(grep -c '^step ' "$tmp/cl.out")" -eq 10 ] && grep -q '^final_loss ' "$tmp/cl.out"
ok $? "custom_layer on 1 rank (mpirun): exit 0 (exit $st), 10 steps and a final_loss" ||
	{ diag_file "$tmp/cl.out"; diag_file "$tmp/cl.err"; }

# The README's copy: the ```c block that starts with the file's first line.
first=$(head -n 1 "$src")
awk -v first="$first" '/^```c$/ { inb = 1; n = 0; next }
	/^```$/ { if (inb && lines[1] == first) { for (i = 1; i <= n; i++) print lines[i]; exit }
		inb = 0; next }
	inb { lines[++n] = $0 }' "$top_srcdir/README.md" >"$tmp/readme.c"
[ -s "$tmp/readme.c" ] && diff -u "$src" "$tmp/readme.c" >"$tmp/readme.diff"
ok $? "README.md quotes examples/hello_shardflow.c as it is" || diag_file "$tmp/readme.diff"

make_prefix uninstall
st=$?
left=$(find "$prefix" ! -type d 2>/dev/null)
[ $st -eq 0 ] && [ -z "$left" ]
ok $? "make uninstall removes every installed file (exit $st)${left:+; left: $left}" ||
	diag_file "$tmp/make-uninstall.out"

finish
