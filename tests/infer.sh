#!/bin/sh
# infer.sh — sf_model_forward and sf_model_evaluate, no MPI in the caller, on 1, 2 and 3
# ranks (3: the batch of 12 splits 4/4/4, 2: 6/6; 29 samples are three passes, the
# last padded): tests/test_infer's checks (its header says what each proves) pass on
# each world size, and the worlds agree: the evaluation of 29 samples within 1e-8
# relative, a weighted sum of their forward outputs and the loss of a step with
# ignored labels (cross-entropy's ignore index) within 1e-6 of the 1-rank run.
. "$(dirname "$0")/lib.sh"
PROG="$top_builddir/tests/test_infer"
require_progs "$PROG"

plan 6

for np in 1 2 3; do
	sh "$RUN_MPI" "$np" "$PROG" </dev/null >"$tmp/n$np.out" 2>"$tmp/n$np.err"
	st=$?
	n=$(grep -c '^ok ' "$tmp/n$np.out")
	[ $st -eq 0 ] && [ "$n" -ge 10 ] && ! grep -q '^not ok' "$tmp/n$np.out"
	ok $? "$np rank(s): $n checks pass" || { diag_file "$tmp/n$np.out"; diag_file "$tmp/n$np.err"; }
done
close() { # close KEY TOL: every world's KEY within TOL (relative) of 1 rank's
	awk -v k="$1" -v tol="$2" '$1 == k { v[FILENAME] = $2; if (FILENAME ~ /n1.out$/) ref = $2 }
		END { worst = 0; for (f in v) { d = v[f] - ref; if (d < 0) d = -d; d /= (ref < 0 ? -ref : ref)
		      if (d > worst) worst = d }
		      printf "%.1e\n", worst; exit !(length(v) == 3 && worst <= tol) }' \
		"$tmp/n1.out" "$tmp/n2.out" "$tmp/n3.out"
}
w=$(close eval 1e-8)
ok $? "evaluate of 29 samples: 2 and 3 ranks = 1 rank within 1e-8 (worst relative $w)"
w=$(close fwd 1e-6)
ok $? "forward of 29 samples: 2 and 3 ranks = 1 rank (worst relative $w)"
w=$(close ign 1e-6)
ok $? "a step with ignored labels: 2 and 3 ranks' loss = 1 rank's (worst relative $w)"
finish
