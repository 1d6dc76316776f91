/*
 * fuzz_taskrec.c — shardflow-overlap's tasks.rec reader (tools/taskrec.c) and, on what
 * it reads, the overlap report (trace/report.c), its text and JSON writers and the SVG
 * timeline (trace/svg.c), exactly as the tool runs them.
 *
 * Input: the bytes of a tasks.rec file.
 */
#include "fuzz/common.h"
#include "tools/taskrec.h"
#include "trace/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	if (!null) {
		fuzz_quiet();
		null = fopen("/dev/null", "w");
		if (!null)
			abort();
	}
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0; /* glibc refuses a zero-length buffer */
	struct taskrec rd = {.path = "fuzz.tasks.rec", .notes = NULL};
	int rc = _sf_taskrec_read_stream(&rd, f);
	fclose(f);
	if (rc == SF_OK && rd.n > 0 && _sf_taskrec_assign_steps(&rd) == SF_OK) {
		struct _sf_report rep;
		if (_sf_report_build(rd.ev, rd.n, &rep) == SF_OK) {
			_sf_report_write_text(&rep, rd.path, null);
			_sf_report_write_json(&rep, rd.path, null);
			(void)_sf_timeline_write_svg(rd.ev, rd.n, &rep, "fuzz", null);
			_sf_report_free(&rep);
		}
	}
	_sf_taskrec_free(&rd);
	return 0;
}
