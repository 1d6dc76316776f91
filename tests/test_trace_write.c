/*
 * test_trace_write.c — the trace library's escapers, task names and error reporting
 * (trace/write.h, trace/event.h, trace/report.h), byte for byte.
 *
 * Names reach the traces from users (nodes, units, layer types, prefixes, titles), so
 * every string a writer prints goes through _sf_json_string or _sf_xml_text: quotes,
 * backslashes, markup, control characters and bytes that are not UTF-8 must all come
 * out as valid JSON and XML. A task name's kind, index, name and type are read back
 * whatever the user's names hold (blanks, parentheses, "L3)"), and the overlap
 * report's stall rows carry the unit's name. Every writer numbers steps from 1, as the
 * programs' progress lines do (the events' steps count from 0). Errors are raised with SF_ERR into
 * sf_last_error() (quietly here, as the tool does), and name the file that could not
 * be written.
 */
#include "common/error.h"
#include "tests/tap.h"
#include "trace/report.h"
#include "trace/write.h"

#include <stdlib.h>
#include <string.h>

typedef void (*escaper)(FILE *, const char *);

/* What escape(s) writes. */
static char *escaped(escaper escape, const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	escape(f, s);
	fclose(f);
	return buf;
}

struct escape_case {
	const char *in, *want, *what;
};

static void check_all(escaper escape, const char *prefix, const struct escape_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *got = escaped(escape, c[i].in);
		if (!ok(got && strcmp(got, c[i].want) == 0, "%s: %s", prefix, c[i].what))
			diag("got [%s], want [%s]", got ? got : "(null)", c[i].want);
		free(got);
	}
}

static const struct escape_case json_cases[] = {
    {"fwd fc1 (linear L3)", "\"fwd fc1 (linear L3)\"", "a plain name is quoted"},
    {NULL, "\"\"", "NULL is the empty string"},
    {"a\"b\\c", "\"a\\\"b\\\\c\"", "quote and backslash escaped"},
    {"t\tn\nx\001", "\"t\\u0009n\\u000ax\\u0001\"", "control characters"},
    {"caf\303\251 \360\237\230\200", "\"caf\303\251 \360\237\230\200\"", "UTF-8 passes unchanged"},
    {"cut\303", "\"cut\\ufffd\"", "a character cut at the end"},
    {"\377x\200", "\"\\ufffdx\\ufffd\"", "stray bytes"},
    {"\300\257", "\"\\ufffd\\ufffd\"", "an overlong sequence"},
    {"\355\240\200", "\"\\ufffd\\ufffd\\ufffd\"", "a surrogate"},
    {"\364\220\200\200", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", "a code point above U+10FFFF"},
};

static const struct escape_case xml_cases[] = {
    {"fwd fc1 (linear L3)", "fwd fc1 (linear L3)", "a plain name is unchanged"},
    {NULL, "", "NULL writes nothing"},
    {"<a & 'b' \"c\">", "&lt;a &amp; &apos;b&apos; &quot;c&quot;&gt;", "markup characters escaped"},
    {"t\tn\nx\001\r", "t\tn\nx??", "tab and newline kept, other controls '?'"},
    {"caf\303\251", "caf\303\251", "UTF-8 passes unchanged"},
    {"cut\303", "cut&#xFFFD;", "a character cut at the end"},
    {"\357\277\276\357\277\277", "&#xFFFD;&#xFFFD;", "U+FFFE and U+FFFF"},
};

struct name_case {
	const char *name;
	int rc;
	enum _sf_ev_kind kind;
	int layer;
	const char *label, *type; /* NULL: none */
};

static const struct name_case name_cases[] = {
    {"gather fc1 (L2)", 0, SF_EV_GATHER, 2, "fc1", NULL},
    {"fwd fc1 (linear L2)", 0, SF_EV_FWD, 2, "fc1", "linear"},
    {"bwd transformer.h.3.attn.c_attn (linear L12)", 0, SF_EV_BWD, 12,
     "transformer.h.3.attn.c_attn", "linear"},
    {"recompute act (gelu L4)", 0, SF_EV_RECOMPUTE, 4, "act", "gelu"},
    {"cp_ring h.0.attn (attention L6)", 0, SF_EV_CP_RING, 6, "h.0.attn", "attention"},
    {"cp_pack h.0.attn (attention L6)", 0, SF_EV_FREE, 6, "h.0.attn", "attention"},
    {"rs block 3 (L5)", 0, SF_EV_RS, 5, "block 3", NULL},
    {"ar block3 (L5)", 0, SF_EV_RS, 5, "block3", NULL},
    {"opt b (L0)", 0, SF_EV_OPT, 0, "b", NULL},
    {"ag b (L1)", 0, SF_EV_AG, 1, "b", NULL},
    {"free b (L1)", 0, SF_EV_FREE, 1, "b", NULL},
    {"acc b (L1)", 0, SF_EV_GRAD, 1, "b", NULL},
    {"sqnorm b (L1)", 0, SF_EV_GRAD, 1, "b", NULL},
    {"loss", 0, SF_EV_LOSS, -1, NULL, NULL},
    {"loss allreduce", 0, SF_EV_LOSS_SUM, -1, NULL, NULL},
    {"grad norm", 0, SF_EV_NORM, -1, NULL, NULL},
    /* the user's names may look like the suffix: the index is the last one */
    {"gather x (L5) (L3)", 0, SF_EV_GATHER, 3, "x (L5)", NULL},
    {"fwd n (t L9) L3)", 0, SF_EV_FWD, 3, "n", "t L9)"},
    {"fwd my node (x) (linear L7)", 0, SF_EV_FWD, 7, "my node (x)", "linear"},
    {"fwd q\"\\ <&> (sc\"a\\le <&> \tx\303\251 L3)", 0, SF_EV_FWD, 3, "q\"\\ <&>",
     "sc\"a\\le <&> \tx\303\251"},
    {"gather g (L1000000000)", 0, SF_EV_GATHER, 1000000000, "g", NULL},
    /* malformed: shardflow's kind, not its form */
    {"gather L3", -2, 0, -1, NULL, NULL},
    {"fwd L3 linear", -2, 0, -1, NULL, NULL},
    {"gather fc1", -2, 0, -1, NULL, NULL},
    {"gather fc1 (Lx)", -2, 0, -1, NULL, NULL},
    {"gather fc1 (L)", -2, 0, -1, NULL, NULL},
    {"gather (L3)", -2, 0, -1, NULL, NULL},
    {"gather fc1 (linear L3)", -2, 0, -1, NULL, NULL},
    {"fwd fc1 (L3)", -2, 0, -1, NULL, NULL},
    {"fwd  (linear L3)", -2, 0, -1, NULL, NULL},
    {"fwd fc1 ( L3)", -2, 0, -1, NULL, NULL},
    {"gather g (L1000000001)", -2, 0, -1, NULL, NULL},
    {"gather g (L99999999999999999999)", -2, 0, -1, NULL, NULL},
    /* not shardflow's */
    {"_starpu_data_acquire_pre", -1, 0, -1, NULL, NULL},
    {"worker clock", -1, 0, -1, NULL, NULL},
    {"lossy", -1, 0, -1, NULL, NULL},
};

static bool span_is(const char *p, size_t n, const char *want)
{
	return want ? p && n == strlen(want) && memcmp(p, want, n) == 0 : p == NULL;
}

static void name_checks(void)
{
	for (size_t i = 0; i < sizeof name_cases / sizeof name_cases[0]; i++) {
		const struct name_case *c = &name_cases[i];
		struct _sf_ev_name nm;
		int rc = _sf_ev_parse_name(c->name, &nm);
		bool good = rc == c->rc && nm.layer == c->layer &&
		            span_is(nm.label, nm.label_len, c->label) &&
		            span_is(nm.type, nm.type_len, c->type) &&
		            (rc != 0 || nm.kind == c->kind);
		if (!ok(good, "task name [%s]: %d, L%d", c->name, c->rc, c->layer))
			diag("got %d, kind %d, L%d, label [%.*s], type [%.*s]", rc, (int)nm.kind,
			     nm.layer, nm.label ? (int)nm.label_len : 6,
			     nm.label ? nm.label : "(none)", nm.type ? (int)nm.type_len : 6,
			     nm.type ? nm.type : "(none)");
	}
}

/* What write(r, source, f) writes. */
static char *written(void (*write)(const struct _sf_report *, const char *, FILE *),
                     const struct _sf_report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	write(r, "test", f);
	fclose(f);
	return buf;
}

/* The stall rows name the unit, from its gather's task name, in the text and the JSON. */
static void stall_names(void)
{
	struct _sf_event ev[] = {
	    {.kind = SF_EV_GATHER,
	     .layer = 5,
	     .start = 0,
	     .end = 4000,
	     .name = "gather block\"3\" (L5)"},
	    {.kind = SF_EV_FWD,
	     .layer = 2,
	     .start = 0,
	     .end = 1000,
	     .name = "fwd emb (embedding L2)"},
	    {.kind = SF_EV_FWD,
	     .layer = 5,
	     .start = 4000,
	     .end = 6000,
	     .name = "fwd block\"3\".ln (layernorm L5)"},
	    {.kind = SF_EV_GATHER, .layer = 9, .start = 6000, .end = 7000, .name = "gather L9"},
	    {.kind = SF_EV_FWD,
	     .layer = 9,
	     .start = 7000,
	     .end = 8000,
	     .name = "fwd x (linear L9)"},
	};
	struct _sf_report r;
	int rc = _sf_report_build(ev, sizeof ev / sizeof ev[0], &r);
	ok(rc == SF_OK && r.nlayers == 2 && r.layer_unit[0] &&
	       !strcmp(r.layer_unit[0], "block\"3\"") && !r.layer_unit[1],
	   "the stall of L5 is unit block\"3\"'s, from its gather's name; L9's gather names none "
	   "(rc %d)",
	   rc);
	if (rc != SF_OK)
		return;
	char *text = written(_sf_report_write_text, &r), *json = written(_sf_report_write_json, &r);
	if (!ok(text && strstr(text, "\n  block\"3\" (L5) mean     3.000") &&
	            strstr(text, "\n  L9            mean     1.000"),
	        "the text report's rows read \"block\"3\" (L5)\" and \"L9\", aligned"))
		diag("%s", text && strstr(text, "forward") ? strstr(text, "forward") : "(none)");
	ok(json && strstr(json, "{\"layer\": 5, \"unit\": \"block\\\"3\\\"\", \"mean_ms\"") &&
	       strstr(json, "{\"layer\": 9, \"unit\": null, "),
	   "the JSON report names the unit, escaped (null when unknown)");
	free(text);
	free(json);
	_sf_report_free(&r);
}

static void error_cases(void)
{
	FILE *f = NULL;
	int rc = _sf_file_create("/nonexistent-dir/x.json", &f);
	ok_int_eq(rc, SF_ERR_IO, "a file that cannot be created: SF_ERR_IO");
	ok(strstr(sf_last_error(), "cannot write \"/nonexistent-dir/x.json\"") != NULL,
	   "its message names the file (%s)", sf_last_error());

	f = fopen("/dev/full", "w");
	if (f) {
		fputs("x", f);
		rc = _sf_file_close(f, "/dev/full");
		ok(rc == SF_ERR_IO && strstr(sf_last_error(), "cannot write \"/dev/full\""),
		   "a write that fails shows at close, named (%s)", sf_last_error());
	} else {
		ok(1, "a write that fails shows at close # SKIP no /dev/full");
	}

	struct _sf_event ev[2] = {
	    {.rank = 0, .step = 0, .kind = SF_EV_FWD, .layer = 1, .start = 0, .end = 1},
	    {.rank = 1, .step = 1, .kind = SF_EV_FWD, .layer = 1, .start = 0, .end = 1},
	};
	struct _sf_report r;
	rc = _sf_report_build(ev, 2, &r);
	ok(rc == SF_ERR_INVALID &&
	       strstr(sf_last_error(),
	              "step 2 has no task on rank 0 (ranks 0..1, steps 1..2 seen)"),
	   "a report of an incomplete trace: SF_ERR_INVALID and why (%s)", sf_last_error());
	ok_int_eq(_sf_timeline_write_svg(ev, 0, NULL, NULL, stdout), SF_ERR_INVALID,
	          "a timeline of no task: SF_ERR_INVALID");

	/* found by fuzz/fuzz_taskrec.c: MPIRank 2147483647 overflowed rank + 1, and a
	 * rank of 10^6 (or a layer of 10^9) sized arrays by the number, not the tasks */
	struct _sf_event far[1] = {
	    {.rank = 2147483647, .step = 0, .kind = SF_EV_FWD, .layer = 0, .start = 0, .end = 1}};
	rc = _sf_report_build(far, 1, &r);
	ok(rc == SF_ERR_INVALID && strstr(sf_last_error(), "rank 2147483647"),
	   "a task on rank 2147483647: SF_ERR_INVALID, no overflow (%s)", sf_last_error());
	far[0].rank = 1000000;
	rc = _sf_report_build(far, 1, &r);
	ok(rc == SF_ERR_INVALID && strstr(sf_last_error(), "rank 1000000"),
	   "a task on rank 10^6 among 1 task: SF_ERR_INVALID before any allocation by rank (%s)",
	   sf_last_error());
	struct _sf_event deep[2] = {
	    {.rank = 0, .step = 0, .kind = SF_EV_GATHER, .layer = 900000000, .start = 0, .end = 2},
	    {.rank = 0, .step = 0, .kind = SF_EV_FWD, .layer = 900000000, .start = 1, .end = 3},
	};
	rc = _sf_report_build(deep, 2, &r);
	ok(rc == SF_OK && r.nlayers == 1 && r.layers[0] == 900000000 && r.layer_stall_max[0] == 1.0,
	   "a layer numbered 900000000: one layer, its stall (rc %d)", rc);
	if (rc == SF_OK)
		_sf_report_free(&r);
}

/* Two steps of one rank (events' steps 0 and 1): the text, the JSON and the timeline
 * say "step 1" and "step 2", never "step 0", and the JSON says "step_base": 1. */
static void step_numbers(void)
{
	struct _sf_event ev[2] = {
	    {.name = "fwd a (linear L0)",
	     .rank = 0,
	     .step = 0,
	     .kind = SF_EV_FWD,
	     .start = 0,
	     .end = 1},
	    {.name = "fwd a (linear L0)",
	     .rank = 0,
	     .step = 1,
	     .kind = SF_EV_FWD,
	     .start = 2,
	     .end = 3},
	};
	struct _sf_report r;
	int rc = _sf_report_build(ev, 2, &r);
	char *txt = rc == SF_OK ? written(_sf_report_write_text, &r) : NULL;
	char *json = rc == SF_OK ? written(_sf_report_write_json, &r) : NULL;
	char *svg = NULL;
	size_t len = 0;
	FILE *f = rc == SF_OK ? open_memstream(&svg, &len) : NULL;
	if (f) {
		rc = _sf_timeline_write_svg(ev, 2, &r, "t", f);
		fclose(f);
	}
	ok(txt && strstr(txt, "\nrank 0 step 1 ") && strstr(txt, "\nrank 0 step 2 ") &&
	       !strstr(txt, "step 0"),
	   "the text report's rows are steps 1 and 2");
	ok(json && strstr(json, "\"step_base\": 1,") &&
	       strstr(json, "{\"rank\": 0, \"step\": 1, \"wall_ms\"") &&
	       strstr(json, "{\"rank\": 0, \"step\": 2, \"wall_ms\"") &&
	       !strstr(json, "\"step\": 0") && !strstr(json, "\"step\": -1"),
	   "the JSON's per-step rows are steps 1 and 2 (\"step_base\": 1), its totals have none");
	ok(rc == SF_OK && svg && strstr(svg, ">step 1<title>rank 0 step 1:") &&
	       strstr(svg, ">step 2<title>rank 0 step 2:") && strstr(svg, "step 1): ") &&
	       !strstr(svg, "step 0"),
	   "the timeline's step labels and task tooltips are steps 1 and 2");
	free(txt);
	free(json);
	free(svg);
	if (rc == SF_OK)
		_sf_report_free(&r);
}

/* A 2-stage pipeline of 2 micro-batches by hand (us): stage 0 (rank 0, node 1) runs
 * F0 [0, 10), F1 [10, 20), B0 [50, 70), B1 [70, 90); stage 1 (rank 1, node 3) F0
 * [10, 20), F1 [20, 30), B0 [30, 50), B1 [50, 70), then its optimizer [70, 80). The
 * pipeline's span is [0, 90): rank 0 computes 60 of it (its optimizer at [90, 100)
 * lies after the last pass: not in it), rank 1 60 + 10; a gather is not compute.
 * Bubbles 30 / 90 and 20 / 90; theory (S - 1) / (M + S - 1) = 1 / 3. A second step
 * repeats the first 1000 us later with rank 1's optimizer left out (30 / 90 each):
 * the medians are of 2 steps, (1/3 + 1/3) / 2 and (2/9 + 1/3) / 2. */
static void pipeline_bubble(void)
{
	static const struct {
		int rank, kind, layer;
		double a, b;
	} base[] = {
	    {0, SF_EV_FWD, 1, 0, 10},  {0, SF_EV_FWD, 1, 10, 20},  {0, SF_EV_BWD, 1, 50, 70},
	    {0, SF_EV_BWD, 1, 70, 90}, {0, SF_EV_OPT, 1, 90, 100}, {0, SF_EV_GATHER, 1, 30, 45},
	    {1, SF_EV_FWD, 3, 10, 20}, {1, SF_EV_FWD, 3, 20, 30},  {1, SF_EV_BWD, 3, 30, 50},
	    {1, SF_EV_BWD, 3, 50, 70}, {1, SF_EV_OPT, 3, 70, 80},
	};
	enum { NB = sizeof base / sizeof base[0] };
	struct _sf_event ev[2 * NB];
	size_t n = 0;
	for (int step = 0; step < 2; step++)
		for (int i = 0; i < NB; i++) {
			if (step == 1 && base[i].rank == 1 && base[i].kind == SF_EV_OPT)
				continue;
			ev[n] = (struct _sf_event){.rank = base[i].rank,
			                           .step = step,
			                           .kind = (enum _sf_ev_kind)base[i].kind,
			                           .layer = base[i].layer,
			                           .start = base[i].a + 1000 * step,
			                           .end = base[i].b + 1000 * step};
			snprintf(ev[n].name, sizeof ev[n].name, "x (L%d)", base[i].layer);
			n++;
		}
	struct _sf_report r;
	int rc = _sf_report_build(ev, n, &r);
	ok(rc == SF_OK && r.pp_stages == 2 && r.pp_micro == 2 && r.rank_stage[0] == 0 &&
	       r.rank_stage[1] == 1,
	   "2 ranks whose forwards cover nodes 1 and 3: a pipeline of 2 stages, 2 micro-batches "
	   "(rc %d, stages %d, M %d)",
	   rc, rc == SF_OK ? r.pp_stages : -1, rc == SF_OK ? r.pp_micro : -1);
	if (rc != SF_OK || r.pp_stages != 2)
		return;
	ok_close(r.pp_theory, 1.0 / 3.0, 1e-12, "theory (S-1)/(M+S-1) = 1/3");
	ok_close(r.pp_bubble[0], 30.0 / 90.0, 1e-12,
	         "stage 0, step 1: 30 of the pipeline's 90 us idle (its optimizer after the span)");
	ok_close(r.pp_bubble[1 * 2 + 0], 20.0 / 90.0, 1e-12,
	         "stage 1, step 1: 20 of 90 us idle (its warm-up wait and the drain count)");
	ok_close(r.pp_median[1], (20.0 / 90.0 + 30.0 / 90.0) / 2, 1e-12,
	         "stage 1's median over its 2 steps");
	char *text = written(_sf_report_write_text, &r), *json = written(_sf_report_write_json, &r);
	ok(text &&
	       strstr(text, "pipeline bubble: 2 stages, 2 micro-batches; theory "
	                    "(S-1)/(M+S-1) = 0.333") &&
	       strstr(text, "  stage 1 (ranks 1): bubble median 0.278  min 0.222  max 0.333 "
	                    "over 2 step(s)  theory 0.333"),
	   "the text report has the bubble line of each stage beside the theory");
	ok(json &&
	       strstr(json, "\"pipeline\": {\"stages\": 2, \"microbatches\": 2, \"chunks\": 1, "
	                    "\"theory\": 0.333333,") &&
	       strstr(json, "{\"stage\": 1, \"ranks\": [1], \"bubble_median\": 0.277778, "
	                    "\"bubble_per_step\": [0.222222, 0.333333], \"replayed_median\": "
	                    "0.000000, \"replayed_per_step\": [0.000000, 0.000000]}"),
	   "the JSON report has them too (replayed without transfers to wait for: no bubble)");
	if (text && !strstr(text, "stage 1 (ranks 1)"))
		diag("%s", text);
	free(text);
	free(json);
	_sf_report_free(&r);

	/* the same events with both ranks running both nodes: no pipeline */
	for (size_t i = 0; i < n; i++)
		ev[i].layer = 1 + (int)(i % 2) * 2;
	rc = _sf_report_build(ev, n, &r);
	json = rc == SF_OK ? written(_sf_report_write_json, &r) : NULL;
	ok(rc == SF_OK && r.pp_stages == 0 && json && strstr(json, "\"pipeline\": null"),
	   "ranks that run the same nodes: no pipeline, \"pipeline\": null");
	free(json);
	if (rc == SF_OK)
		_sf_report_free(&r);

	/* the interleaved schedule's chunks: rank 0 forwards nodes 1 and 5, rank 1 nodes 3
	 * and 7 (each node one stage's), each once a step: 2 stages of 2 chunks, M 1, theory
	 * 1 / (2 M + 1) (1 / (M + 1) without the chunks) */
	for (size_t i = 0; i < n; i++)
		ev[i].layer = (ev[i].rank ? 3 : 1) + (int)(i % 2) * 4;
	rc = _sf_report_build(ev, n, &r);
	ok(rc == SF_OK && r.pp_stages == 2 && r.pp_virtual == 2 && r.pp_micro == 1 &&
	       fabs(r.pp_theory - 1.0 / 3.0) < 1e-12,
	   "ranks whose forwards cover nodes 1, 5 and 3, 7: 2 stages of 2 chunks, theory "
	   "(S-1)/(V M+S-1) = 1/3 (stages %d, chunks %d, M %d)",
	   rc == SF_OK ? r.pp_stages : -1, rc == SF_OK ? r.pp_virtual : -1,
	   rc == SF_OK ? r.pp_micro : -1);
	if (rc == SF_OK)
		_sf_report_free(&r);
}

/* The bubble replayed at the measured task times: a 2-stage 1F1B step of 2
 * micro-batches by hand (us), forwards 10 and backwards 20 on both stages, with the
 * runtime's gaps and a slow transfer. Stage 0 (rank 0, node "a" L1): F0 [0, 10), F1
 * [12, 22), B0 [46, 66), B1 [81, 101); stage 1 (rank 1, node "b" L3): F0 [11.5, 21.5),
 * B0 [22, 42), F1 [43.5, 53.5), B1 [54, 74). Measured span [0, 101), 60 busy on each:
 * 41 / 101. Replayed, each pass as soon as its worker and its sender are done: stage 0
 * F0 [0, 10), F1 [10, 20); stage 1 F0 [10, 20) (after F0 of stage 0), B0 [20, 40), F1
 * [40, 50), B1 [50, 70); stage 0 B0 [40, 60) (after B0 of stage 1), B1 [70, 90): span
 * [0, 90), 30 / 90 = 1/3 each, the theory (balanced stages). The transfers' posts and
 * waits on the comm worker (worker 1) pair the k-th wait for a tensor with the
 * sender's k-th post of it; the sender's task is its last forward ("a" is a node it
 * forwards) or backward ("da" a gradient) to end before the post. */
static void pipeline_replay(void)
{
	static const struct {
		int rank, worker, kind, layer;
		double a, b;
		const char *name;
	} tr[] = {
	    {0, 0, SF_EV_FWD, 1, 0, 10, "fwd a (x L1)"},
	    {0, 1, SF_EV_PP, -1, 10.2, 10.3, "pp send a"},
	    {0, 0, SF_EV_FWD, 1, 12, 22, "fwd a (x L1)"},
	    {0, 1, SF_EV_PP, -1, 22.1, 22.2, "pp send a"},
	    {0, 1, SF_EV_PP, -1, 22.25, 22.3, "pp recv da"},
	    {0, 1, SF_EV_PP, -1, 22.3, 45, "pp wait recv da"},
	    {0, 0, SF_EV_BWD, 1, 46, 66, "bwd a (x L1)"},
	    {0, 1, SF_EV_PP, -1, 66.2, 80, "pp wait recv da"},
	    {0, 0, SF_EV_BWD, 1, 81, 101, "bwd a (x L1)"},
	    {1, 1, SF_EV_PP, -1, 0.5, 11, "pp wait recv a"},
	    {1, 0, SF_EV_FWD, 3, 11.5, 21.5, "fwd b (x L3)"},
	    {1, 0, SF_EV_BWD, 3, 22, 42, "bwd b (x L3)"},
	    {1, 1, SF_EV_PP, -1, 42.2, 42.3, "pp send da"},
	    {1, 1, SF_EV_PP, -1, 42.5, 43, "pp wait recv a"},
	    {1, 0, SF_EV_FWD, 3, 43.5, 53.5, "fwd b (x L3)"},
	    {1, 0, SF_EV_BWD, 3, 54, 74, "bwd b (x L3)"},
	    {1, 1, SF_EV_PP, -1, 74.2, 74.3, "pp send da"},
	};
	enum { N = sizeof tr / sizeof tr[0] };
	struct _sf_event ev[N];
	for (int i = 0; i < N; i++) {
		ev[i] = (struct _sf_event){.rank = tr[i].rank,
		                           .worker = tr[i].worker,
		                           .kind = (enum _sf_ev_kind)tr[i].kind,
		                           .layer = tr[i].layer,
		                           .start = tr[i].a,
		                           .end = tr[i].b};
		snprintf(ev[i].name, sizeof ev[i].name, "%s", tr[i].name);
	}
	struct _sf_report r;
	int rc = _sf_report_build(ev, N, &r);
	ok(rc == SF_OK && r.pp_stages == 2 && r.pp_micro == 2,
	   "a 2-stage 1F1B step with its transfers: a pipeline of 2 stages, 2 micro-batches");
	if (rc != SF_OK || r.pp_stages != 2)
		return;
	ok_close(r.pp_bubble[0], 41.0 / 101.0, 1e-12, "measured: stage 0 idle 41 of 101 us");
	ok_close(r.pp_replayed[0], 1.0 / 3.0, 1e-12,
	         "replayed: stage 0 idle 30 of 90 us, each pass after its sender's task");
	ok_close(r.pp_replayed[1], 1.0 / 3.0, 1e-12, "replayed: stage 1 idle 30 of 90 us too");
	char *text = written(_sf_report_write_text, &r), *json = written(_sf_report_write_json, &r);
	ok(text && strstr(text, "over 1 step(s)  theory 0.333  replayed 0.333\n") && json &&
	       strstr(json, "\"bubble_per_step\": [0.405941], \"replayed_median\": 0.333333, "
	                    "\"replayed_per_step\": [0.333333]}"),
	   "the text and JSON reports have the replayed bubble beside the measured one");
	free(text);
	free(json);
	_sf_report_free(&r);
}

int main(void)
{
	_sf_err_quiet = true; /* the checks read sf_last_error() */
	plan(25 + (int)(sizeof name_cases / sizeof name_cases[0]) + 3 + 3 + 9 + 5);
	check_all(_sf_json_string, "json", json_cases, sizeof json_cases / sizeof json_cases[0]);
	check_all(_sf_xml_text, "xml", xml_cases, sizeof xml_cases / sizeof xml_cases[0]);
	name_checks();
	stall_names();
	error_cases();
	step_numbers();
	pipeline_bubble();
	pipeline_replay();
	return done_testing();
}
