/*
 * files.c — the files of a traced run's report: <prefix>.overlap.txt and
 * <prefix>.overlap.json (report.c's writers) and <prefix>.timeline.svg (svg.c), see
 * _sf_report_write_files in report.h. It sits above both writers, so that neither the
 * report nor the timeline calls the other.
 */
#include "trace/report.h"
#include "common/error.h"
#include "trace/write.h"

#include <stdlib.h>
#include <string.h>

enum out_kind { OUT_TEXT, OUT_JSON, OUT_SVG };

/* Writes <prefix>.<the kind's suffix>. */
static int write_file(const char *prefix, enum out_kind kind, const struct _sf_event *ev, size_t n,
                      const struct _sf_report *r, const char *source, const char *title)
{
	static const char *const suffix[] = {"overlap.txt", "overlap.json", "timeline.svg"};
	int rc = SF_OK;
	FILE *f;
	size_t len = strlen(prefix) + 16;
	char *path = malloc(len);
	if (!path)
		return SF_ERR(SF_ERR_NOMEM, "out of memory");
	snprintf(path, len, "%s.%s", prefix, suffix[kind]);
	SF_CHECK_GOTO(_sf_file_create(path, &f), out);
	if (kind == OUT_TEXT)
		_sf_report_write_text(r, source, f);
	else if (kind == OUT_JSON)
		_sf_report_write_json(r, source, f);
	else
		rc = _sf_timeline_write_svg(ev, n, r, title, f);
	if (rc == SF_OK)
		rc = _sf_file_close(f, path);
	else
		fclose(f); /* the error is raised: a second one would hide it */
out:
	free(path);
	return rc;
}

int _sf_report_write_files(const char *prefix, const struct _sf_event *ev, size_t n,
                           const struct _sf_report *r, const char *source, const char *title)
{
	int rc = SF_OK;
	for (int k = OUT_TEXT; k <= OUT_SVG && rc == SF_OK; k++)
		rc = write_file(prefix, (enum out_kind)k, ev, n, r, source, title);
	return rc;
}
