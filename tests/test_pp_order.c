/*
 * test_pp_order.c — proves that the interleaved schedule's agreed order
 * (scheduler/pipeline_order.c, _sf_pp_order) cannot hang on a backend whose transfers
 * wait for their other end (NCCL, SHARDFLOW_COMM=mpi-sync). One process, no MPI.
 *
 * For S = 2, 3, 4, 8 stages, V = 2, 3, 4 chunks and M = S, 2 S, 4 S micro-batches,
 * every stage's program is run by a machine written here from the rules alone: a stage
 * runs its entries one at a time, in order; a pass runs once what it reads has come
 * (the chunk before's activations or the chunk after's gradient, received; the last
 * virtual stage's backward, its own forward) and, for a forward taking a set back
 * (micro-batch k >= sets), once the set's last backward has run and the set's
 * activations have been sent; a transfer runs only when the other end's next entry is
 * the same transfer, its producer's pass has run, and, for a gradient entering a set,
 * that set's last backward has run. The machine must end with every pass and every
 * transfer (2 M (S V - 1)) run on both ends, each stage's passes its schedule in order,
 * every transfer between the stages its virtual stages say (virtual stage j S + s
 * to the one after), and it must stop (a hang) on programs that have no agreed order:
 * each stage's transfers right beside its passes (receive, pass, send), as a stage
 * with no knowledge of the others would order them.
 */
#include "scheduler/pipeline_order.h"
#include "tests/tap.h"

#include <stdlib.h>
#include <string.h>

#define MAXS 8
#define MAXN (2 * 4 * 8 * 4) /* 2 M V at M 32, V 4 */

struct prog {
	int S, M, V, n[MAXS];
	struct _sf_pp_item it[MAXS][3 * MAXN];
	struct _sf_pp_op ops[MAXS][MAXN];
};

/* done[s][bwd][k][j]: stage s's pass has run; sent[s][k][j]: its chunk j's activations
 * of k have left; got[s][grad][k][j]: its chunk j received them (or their gradient) */
struct state {
	bool done[MAXS][2][32][4], sent[MAXS][32][4], got[MAXS][2][32][4];
	int at[MAXS], transfers;
};

static int sets_of(const struct _sf_pp_op *ops, int n)
{
	int held[4] = {0}, most = 1;
	for (int i = 0; i < n; i++) {
		held[ops[i].chunk] += ops[i].bwd ? -1 : 1;
		if (held[ops[i].chunk] > most)
			most = held[ops[i].chunk];
	}
	return most;
}

/* The stage at the other end of stage s's transfer t, and that end's chunk */
static int peer_of(const struct prog *P, int s, struct _sf_pp_item t, int *chunk)
{
	int S = P->S, v = t.chunk * S + s;
	/* an activation leaves for v + 1 or comes from v - 1; a gradient the other way */
	int u = (t.send != t.grad) ? v + 1 : v - 1;
	*chunk = u / S;
	return u % S;
}

/* Whether stage s can run its entry t now */
static bool ready(const struct prog *P, const struct state *st, int s, struct _sf_pp_item t,
                  const int *sets)
{
	int S = P->S, V = P->V;
	if (t.pass >= 0) {
		struct _sf_pp_op op = P->ops[s][t.pass];
		int v = op.chunk * S + s, k = op.mb, j = op.chunk;
		if (!op.bwd) {
			if (v > 0 && !st->got[s][0][k][j])
				return false;
			if (k >= sets[s] && (!st->done[s][1][k - sets[s]][j] ||
			                     (v < S * V - 1 && !st->sent[s][k - sets[s]][j])))
				return false;
			return true;
		}
		return v == S * V - 1 ? st->done[s][0][k][j] : st->got[s][1][k][j];
	}
	int pc = 0, p = peer_of(P, s, t, &pc);
	if (st->at[p] >= P->n[p])
		return false;
	struct _sf_pp_item o = P->it[p][st->at[p]];
	if (o.pass >= 0 || o.mb != t.mb || o.grad != t.grad || o.send == t.send || o.chunk != pc)
		return false;
	int snd = t.send ? s : p, sj = t.send ? t.chunk : pc;
	int rcv = t.send ? p : s, rj = t.send ? pc : t.chunk;
	if (!st->done[snd][t.grad][t.mb][sj])
		return false; /* its producer's pass */
	return !t.grad || t.mb < sets[rcv] || st->done[rcv][1][t.mb - sets[rcv]][rj];
}

/* Runs the programs; returns whether they all ended, every pass and transfer run */
static bool run(const struct prog *P, struct state *st)
{
	int sets[MAXS];
	memset(st, 0, sizeof *st);
	for (int s = 0; s < P->S; s++)
		sets[s] = sets_of(P->ops[s], 2 * P->M * P->V);
	for (bool moved = true; moved;) {
		moved = false;
		for (int s = 0; s < P->S; s++) {
			if (st->at[s] >= P->n[s])
				continue;
			struct _sf_pp_item t = P->it[s][st->at[s]];
			if (!ready(P, st, s, t, sets))
				continue;
			moved = true;
			st->at[s]++;
			if (t.pass >= 0) {
				struct _sf_pp_op op = P->ops[s][t.pass];
				st->done[s][op.bwd][op.mb][op.chunk] = true;
				continue;
			}
			int pc = 0, p = peer_of(P, s, t, &pc);
			st->at[p]++;
			st->transfers++;
			int snd = t.send ? s : p, sj = t.send ? t.chunk : pc;
			int rcv = t.send ? p : s, rj = t.send ? pc : t.chunk;
			if (!t.grad)
				st->sent[snd][t.mb][sj] = true;
			st->got[rcv][t.grad][t.mb][rj] = true;
		}
	}
	for (int s = 0; s < P->S; s++)
		if (st->at[s] < P->n[s])
			return false;
	return st->transfers == 2 * P->M * (P->S * P->V - 1);
}

/* Each stage's passes in order, the transfers beside them: a hang without agreement */
static void beside(struct prog *P)
{
	int S = P->S, V = P->V;
	for (int s = 0; s < S; s++) {
		int c = 0;
		for (int i = 0; i < 2 * P->M * V; i++) {
			struct _sf_pp_op op = P->ops[s][i];
			int v = op.chunk * S + s;
			bool in = op.bwd ? v < S * V - 1 : v > 0,
			     out = op.bwd ? v > 0 : v < S * V - 1;
			if (in)
				P->it[s][c++] =
				    (struct _sf_pp_item){-1, op.mb, op.chunk, op.bwd, false};
			P->it[s][c++] = (struct _sf_pp_item){i, 0, 0, false, false};
			if (out)
				P->it[s][c++] =
				    (struct _sf_pp_item){-1, op.mb, op.chunk, op.bwd, true};
		}
		P->n[s] = c;
	}
}

int main(void)
{
	static const int Ss[] = {2, 3, 4, 8}, Vs[] = {2, 3, 4}, Ms[] = {1, 2, 4};
	static struct prog P;
	static struct state st;
	plan(4 * 3 * 3 * 2 + 2);
	int hangs = 0, tried = 0;
	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 3; b++)
			for (int c = 0; c < 3; c++) {
				int S = Ss[a], V = Vs[b], M = Ms[c] * S;
				P.S = S, P.M = M, P.V = V;
				bool made = true, passes = true;
				for (int s = 0; s < S; s++) {
					int n = _sf_pp_schedule(SF_PP_INTERLEAVED, S, s, M, V,
					                        P.ops[s]);
					P.n[s] = _sf_pp_order(S, s, M, V, P.it[s]);
					int want =
					    n; /* the passes, and a transfer in and out of each */
					for (int i = 0; i < n; i++) {
						int v = P.ops[s][i].chunk * S + s;
						want += (v > 0) + (v < S * V - 1);
					}
					made = made && n == 2 * M * V && P.n[s] == want;
					for (int i = 0, next = 0; made && i < P.n[s]; i++)
						if (P.it[s][i].pass >= 0)
							passes =
							    passes && P.it[s][i].pass == next++;
				}
				ok(made && passes,
				   "S %d V %d M %d: every stage's program has its passes in "
				   "its schedule's order",
				   S, V, M);
				bool ended = made && run(&P, &st);
				ok(ended,
				   "S %d V %d M %d: the agreed order runs to its end (%d transfers "
				   "of %d)",
				   S, V, M, st.transfers, 2 * M * (S * V - 1));
				if (!ended)
					for (int s = 0; s < S; s++)
						diag("stage %d stopped at entry %d of %d", s,
						     st.at[s], P.n[s]);
				beside(&P);
				tried++;
				hangs += !run(&P, &st);
			}
	ok(hangs > 0,
	   "the machine sees a hang: %d of %d layouts hang with each stage's "
	   "transfers beside its passes",
	   hangs, tried);
	ok(_sf_pp_order(1, 0, 4, 2, P.it[0]) < 0 && _sf_pp_order(2, 2, 4, 2, P.it[0]) < 0 &&
	       _sf_pp_order(2, 0, 4, SF_MAX_PP_VIRTUAL + 1, P.it[0]) < 0,
	   "a stage, a count or chunks out of range: refused");
	return done_testing();
}
