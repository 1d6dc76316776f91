#!/bin/sh
# recipe.sh — docs/architecture.md's recipes hold: a new op and a new optimizer are
# their own files plus the lines the recipe names, and nothing else.
#
# In a scratch copy of the source tree (scripts/copy-tree.sh: committed or not), made
# a git repository of its own so that every touched file shows, it adds:
#   an op "twice" (y = 2x) as the element-wise recipe says: layers/twice.h,
#     layers/twice.c (one SF_UNARY_TYPE line), layers/twice_math.h,
#     layers/twice_cpu.c, its line in SF_BUILTIN_TYPES (layers/registry.c) and its
#     finite-difference check in tests/test_kernels_fd.c;
#   an optimizer "signsgd" (p -= lr sign(g + wd p)... with a momentum of one state
#     vector): tasks/optimizers/signsgd.h, its value in enum sf_optimizer
#     (include/shardflow.h), a double reference in tests/test_kernels_fd.c and its
#     name in tests/test_api.c's named_enums;
# runs ./autogen.sh, configure and make as the README does, then checks:
#   1. the build succeeds (no list of the Makefile was edited);
#   2. the finite-difference test passes, the new op's and optimizer's points among
#      its results (the optimizer's lanes = element point comes from the list alone);
#   3. test_api passes (the new name both ways);
#   4. the library knows the op: sf_graph_layer builds a "twice" node, and its
#      forward doubles (a program of its own against the scratch build);
#   5. the optimizer trains: tests/train_dump --optimizer signsgd runs 3 steps;
#   6. git status of the scratch lists only the files the recipes name.
# Slow (a whole build): CI's "recipes" stage runs it, with ccache; `make check` does
# not. Needs git and the configure options of this build (SF_RECIPE_CONFIGURE,
# default: this build's --with-starpu).
. "$(dirname "$0")/lib.sh"

plan 6

command -v git >/dev/null 2>&1 || bail_out "git is needed"
[ -d "$top_srcdir/.git" ] || git -C "$top_srcdir" rev-parse >/dev/null 2>&1 ||
	bail_out "$top_srcdir is not a git checkout"
# (config.status --recheck adds --no-create --no-recursion: not the build's own options)
cfg=${SF_RECIPE_CONFIGURE:-$(sed -n "s/^  \$ .*configure \(.*\)$/\1/p" "$top_builddir/config.log" |
	head -1 | sed -e 's/ *--no-create//' -e 's/ *--no-recursion//')}

s=$tmp/src
mkdir -p "$s"
bash "$top_srcdir/scripts/copy-tree.sh" "$top_srcdir" "$s" || bail_out "cannot copy the tree"
cd "$s" || bail_out "no scratch tree"
git init -q . && git add -A && git -c user.name=recipe -c user.email=recipe@localhost \
	commit -qm base || bail_out "cannot make the scratch a repository"

# --- the op -------------------------------------------------------------------
cat >layers/twice.h <<'EOF'
/* twice.h — y = 2x, element-wise (the recipe test's op) */
#ifndef SF_LAYERS_TWICE_H
#define SF_LAYERS_TWICE_H
#include "shardflow.h"
extern const struct sf_layer_type _sf_twice_type;
void _sf_twice_fwd(size_t n, const float *x, float *y);
void _sf_twice_bwd(size_t n, const float *x, const float *dy, float *dx, int acc);
#endif
EOF
cat >layers/twice_math.h <<'EOF'
/* twice_math.h — the element of y = 2x and of its derivative */
#ifndef SF_LAYERS_TWICE_MATH_H
#define SF_LAYERS_TWICE_MATH_H
#include "common/hd.h"
SF_HD float sf_twice_f(float x) { return 2.0f * x; }
SF_HD float sf_twice_d(float x, float dy) { (void)x; return 2.0f * dy; }
#endif
EOF
cat >layers/twice_cpu.c <<'EOF'
/* twice_cpu.c — y = 2x on plain pointers */
#include "layers/twice.h"
#include "layers/add_math.h"
#include "layers/elementwise.h"
#include "layers/twice_math.h"
SF_UNARY_CPU(twice)
EOF
cat >layers/twice.c <<'EOF'
/* twice.c — the twice layer type */
#include "config.h"
#include "layers/twice.h"
#include "layers/unary_type.h"
SF_UNARY_TYPE(twice, 1)
EOF
# the registry's one line, first in the list (the list's last line has no backslash)
awk '{ print } /^#define SF_BUILTIN_TYPES\(X\)/ { print "\tX(twice) \\" }' layers/registry.c \
	>layers/registry.c.new && mv layers/registry.c.new layers/registry.c
sed -i 's|^#include "layers/silu.h"$|#include "layers/silu.h"\n#include "layers/twice.h"|' tests/test_kernels_fd.c
sed -i 's|^\ttest_silu_values();$|\ttest_silu_values();\n\ttest_unary("twice", _sf_twice_fwd, _sf_twice_bwd, 97, 6.0f, 0.0f, exact_e, NULL);|' \
	tests/test_kernels_fd.c

# --- the optimizer --------------------------------------------------------------
cat >tasks/optimizers/signsgd.h <<'EOF'
/* signsgd.h — signSGD with momentum (the recipe test's optimizer):
 *   m = mu m + g;  p -= lr (sign(m) + wd p)
 * One state vector. Flops a parameter: 2 + 1 + 3, and g x s: 7. */
SF_HD void sf_signsgd_elem(float *p, float g, float *m, float *unused,
                           const struct _sf_opt_hyper *h)
{
	(void)unused;
	*m = h->mu * *m + g;
	float sgn = *m > 0.0f ? 1.0f : *m < 0.0f ? -1.0f : 0.0f;
	*p -= h->lr * (sgn + h->wd * *p);
}
#ifdef SF_OPTIM_CPU
static size_t signsgd_lanes(size_t n, float *p, const float *g, float *m, float *unused, float s,
                            const struct _sf_opt_hyper *h)
{
	(void)n, (void)p, (void)g, (void)m, (void)unused, (void)s, (void)h;
	return 0;
}
#endif
SF_OPTIMIZER(signsgd, 1, 7)
EOF
sed -i 's/^\tSF_OPT_LION,$/\tSF_OPT_LION,\n\tSF_OPT_SIGNSGD,/' include/shardflow.h
sed -i 's/\.names = {"sgd", "adamw", "lion"}}/.names = {"sgd", "adamw", "lion", "signsgd"}}/' tests/test_api.c
sed -i 's|^\treturn done_testing();$|\t{ /* recipe: signsgd, 2 steps against double */\
\t\tfloat p[3] = {1.0f, -1.0f, 0.5f}, m[3] = {0}, g[3] = {0.5f, 0.25f, -2.0f};\
\t\tdouble rp[3] = {1.0, -1.0, 0.5}, rm[3] = {0}, worst = 0;\
\t\tstruct _sf_opt_hyper h = hyper(0.1f, 0.01f, 0.9f, 0, 0, 0, 1);\
\t\tfor (int t = 0; t < 2; t++) {\
\t\t\t_sf_opt_cpu_signsgd(3, p, g, m, NULL, \&h, 0.5f, (const double[2]){0, 1});\
\t\t\tfor (int i = 0; i < 3; i++) {\
\t\t\t\trm[i] = 0.9 * rm[i] + 0.5 * g[i];\
\t\t\t\trp[i] -= (double)0.1f * ((rm[i] > 0) - (rm[i] < 0) + (double)0.01f * rp[i]);\
\t\t\t\tworst = fmax(worst, fabs(p[i] - rp[i]));\
\t\t\t}\
\t\t}\
\t\tok(worst <= 1e-6, "signsgd: 2 steps against double (max %.2e)", worst);\
\t}\
\treturn done_testing();|' tests/test_kernels_fd.c

git add -A >/dev/null 2>&1
touched=$(git status --porcelain | awk '{print $2}' | LC_ALL=C sort | tr '\n' ' ')
want="include/shardflow.h layers/registry.c layers/twice.c layers/twice.h layers/twice_cpu.c layers/twice_math.h tasks/optimizers/signsgd.h tests/test_api.c tests/test_kernels_fd.c "

log=$tmp/build.log
eval "set -- $cfg"
if { ./autogen.sh && ./configure "$@" && make -j2 && make -j2 tests/test_kernels_fd tests/test_api tests/train_dump; } >"$log" 2>&1; then
	ok 0 "the scratch copy with the new op and optimizer builds (configure $cfg)"
else
	tail -30 "$log" | sed 's/^/# /'
	ok 1 "the scratch copy with the new op and optimizer builds (configure $cfg)"
fi

./tests/test_kernels_fd >"$tmp/fd.out" 2>&1
rc=$?
n_new=$(grep -c '^ok .*\(twice\|signsgd\)' "$tmp/fd.out")
[ $rc -eq 0 ] && [ "$n_new" -ge 4 ]
ok $? "test_kernels_fd passes, with $n_new points of twice and signsgd (FD, lanes, double)"
[ $rc -eq 0 ] || grep '^not ok' "$tmp/fd.out" | head -5 | sed 's/^/# /'

STARPU_SILENT=1 ./tests/test_api >"$tmp/api.out" 2>&1
ok $? "test_api passes with signsgd among the optimizers' names"

cat >"$tmp/twice_use.c" <<'EOF'
#include "shardflow.h"
#include <stdio.h>
int main(void)
{
	sf_graph *g = NULL;
	int x, y;
	if (sf_graph_create("recipe", &g) || sf_graph_input(g, "x", 3, &x) ||
	    sf_graph_layer(g, "twice", &x, 1, NULL, 0, "tw", &y)) {
		fprintf(stderr, "twice: %s\n", sf_last_error());
		return 1;
	}
	printf("twice node %d\n", y);
	sf_graph_destroy(g);
	return 0;
}
EOF
ok_use=1
if ${CC:-cc} -I"$s/include" "$tmp/twice_use.c" -o "$tmp/twice_use" "$s/.libs/libshardflow.so" \
	-Wl,-rpath,"$s/.libs" >"$tmp/use.log" 2>&1; then
	"$tmp/twice_use" >>"$tmp/use.log" 2>&1 && ok_use=0
fi
[ $ok_use -eq 0 ] || sed 's/^/# /' "$tmp/use.log" | head -10
ok $ok_use "sf_graph_layer builds a \"twice\" node from the registry's one line"

STARPU_SILENT=1 ./tests/train_dump --optimizer signsgd --steps 3 --out "$tmp/s.dump" >"$tmp/s.out" 2>&1
ok $? "train_dump trains 3 steps with --optimizer signsgd (its codelet from the file)"

[ "$touched" = "$want" ]
ok $? "only the recipes' files are touched (${touched})"
finish
