/*
 * fuzz_taskrec.c — the tasks.rec reader (trace/taskrec.c, used by shardflow-overlap and
 * by sf_finalize's FxT report) and, on what it reads, the overlap report
 * (trace/report.c), its text and JSON writers and the SVG timeline (trace/svg.c), as the
 * tool runs them.
 *
 * Input: the bytes of a tasks.rec file (written to a private temporary file, which the
 * reader streams).
 */
#include "fuzz/common.h"
#include "trace/report.h"
#include "trace/taskrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	if (!null) {
		fuzz_quiet();
		null = fopen("/dev/null", "w");
		if (!null)
			abort();
	}
	const char *path = fuzz_path("tasks.rec");
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	struct _sf_taskrec rd = {.path = path};
	if (_sf_taskrec_load(&rd, NULL) == SF_OK && rd.n > 0) {
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
