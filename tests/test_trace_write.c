/*
 * test_trace_write.c — the trace library's escapers and error reporting (trace/write.h,
 * trace/report.h), byte for byte.
 *
 * Names reach the traces from users (layer types, prefixes, titles), so every string a
 * writer prints goes through _sf_json_string or _sf_xml_text: quotes, backslashes,
 * markup, control characters and bytes that are not UTF-8 must all come out as valid
 * JSON and XML. Errors are raised with SF_ERR into sf_last_error() (quietly here, as
 * the tool does), and name the file that could not be written.
 */
#include "common/error.h"
#include "tests/tap.h"
#include "trace/report.h"
#include "trace/write.h"

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
    {"fwd L3 linear", "\"fwd L3 linear\"", "a plain name is quoted"},
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
    {"fwd L3 linear", "fwd L3 linear", "a plain name is unchanged"},
    {NULL, "", "NULL writes nothing"},
    {"<a & 'b' \"c\">", "&lt;a &amp; &apos;b&apos; &quot;c&quot;&gt;", "markup characters escaped"},
    {"t\tn\nx\001\r", "t\tn\nx??", "tab and newline kept, other controls '?'"},
    {"caf\303\251", "caf\303\251", "UTF-8 passes unchanged"},
    {"cut\303", "cut&#xFFFD;", "a character cut at the end"},
    {"\357\277\276\357\277\277", "&#xFFFD;&#xFFFD;", "U+FFFE and U+FFFF"},
};

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
	ok(rc == SF_ERR_INVALID && strstr(sf_last_error(), "step 1 has no task on rank 0"),
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
	ok(rc == SF_OK && r.nlayers == 1 && r.layers[0] == 900000000 &&
	       r.layer_stall_max[0] == 1.0,
	   "a layer numbered 900000000: one layer, its stall (rc %d)", rc);
	if (rc == SF_OK)
		_sf_report_free(&r);
}

int main(void)
{
	_sf_err_quiet = true; /* the checks read sf_last_error() */
	plan(25);
	check_all(_sf_json_string, "json", json_cases, sizeof json_cases / sizeof json_cases[0]);
	check_all(_sf_xml_text, "xml", xml_cases, sizeof xml_cases / sizeof xml_cases[0]);
	error_cases();
	return done_testing();
}
