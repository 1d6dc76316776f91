/*
 * test_plot.c — the metrics picture's scaling and the metrics file's continuation
 * (trace/plot.h, trace/metrics.c), against values worked out by hand.
 *
 * The picture: 900 px wide, plot area x 80..870; the loss panel's y 290 (bottom) .. 70
 * (top), the tokens/s panel's 620 .. 400. Steps 1..3 (span 2: tick 0.5, raised to 1
 * for steps) map 1 -> 80, 2 -> 475, 3 -> 870. Losses 4.0, 3.2, 2.9 and a validation
 * loss 3.5 span 2.9..4.0 (1.1: tick 0.2), rounded out to 2.8..4.0: 4.0 -> 70,
 * 3.2 -> 290 - 0.4/1.2*220 = 216.67, 2.9 -> 271.67, 3.5 -> 161.67. Tokens/s 100, 200,
 * 300 (span 200: tick 50) -> 620, 510, 400. A non-finite loss is left out of the line
 * and counted in the legend; no point at all still makes a picture that says so.
 * The continuation keeps whole lines of steps up to the resumed one and drops the rest,
 * a torn last line included; a malformed line is named by its number.
 */
#include "common/error.h"
#include "tests/tap.h"
#include "tests/tmpfiles.h"
#include "trace/plot.h"

#include <string.h>

/* What _sf_plot_write_svg writes for d. */
static char *picture(const struct _sf_plot_data *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		bail_out("open_memstream");
	_sf_plot_write_svg(d, "t", f);
	fclose(f);
	return buf;
}

/* The points="..." of the element with id `id` in svg, in out (n bytes); false if none. */
static bool points_of(const char *svg, const char *id, char *out, size_t n)
{
	char key[64];
	snprintf(key, sizeof key, "id=\"%s\"", id);
	const char *p = strstr(svg, key), *q, *e;
	if (!p || !(q = strstr(p, "points=\"")) || !(e = strchr(q + 8, '"')))
		return false;
	snprintf(out, n, "%.*s", (int)(e - q - 8), q + 8);
	return true;
}

static void check_points(const char *svg, const char *id, const char *want)
{
	char got[512] = "";
	if (!ok(points_of(svg, id, got, sizeof got) && strcmp(got, want) == 0, "%s: points %s", id,
	        want))
		diag("got [%s]", got);
}

static void test_axes(void)
{
	struct _sf_plot_axis a = {.px_lo = 290, .px_hi = 70};
	double loss[] = {4.0, NAN, 3.2, INFINITY, 2.9};
	ok_int_eq(_sf_plot_axis_fit(&a, loss, 5, false), 3, "fit counts the finite values");
	ok_close(a.tick, 0.2, 1e-12, "span 1.1: tick 0.2");
	ok_close(a.lo, 2.8, 1e-12, "2.9 rounded down to a tick: 2.8");
	ok_close(a.hi, 4.0, 1e-12, "4.0 on a tick stays 4.0");
	ok_close(_sf_plot_px(&a, 3.2), 290 - 0.4 / 1.2 * 220, 1e-9, "3.2 -> 216.67 (y grows down)");
	ok_close(_sf_plot_px(&a, 4.0), 70, 1e-9, "the top value at the top");

	double one = 5;
	_sf_plot_axis_fit(&a, &one, 1, false);
	ok_close(a.lo, 4.7, 1e-9, "one value 5: 4.75 rounded down to 4.7");
	ok_close(a.hi, 5.3, 1e-9, "... and 5.25 up to 5.3 (tick 0.1)");
	double step = 7;
	_sf_plot_axis_fit(&a, &step, 1, true);
	ok_true(a.lo == 6 && a.hi == 8 && a.tick == 1, "one step 7: 6..8, tick 1");
	ok_int_eq(_sf_plot_axis_fit(&a, NULL, 0, false), 0, "no value: none counted");
	ok_true(a.lo == 0 && a.hi == 1, "no value: 0..1");
}

static void test_picture(void)
{
	double ts[] = {1, 2, 3}, tl[] = {4.0, 3.2, 2.9}, tr[] = {100, 200, 300};
	double es[] = {3}, el[] = {3.5};
	struct _sf_plot_data d = {3, ts, tl, tr, 1, es, el};
	char *svg = picture(&d);
	check_points(svg, "train-loss", "80.00,70.00 475.00,216.67 870.00,271.67");
	check_points(svg, "val-loss", "870.00,161.67");
	check_points(svg, "tokens-per-s", "80.00,620.00 475.00,510.00 870.00,400.00");
	ok_true(strstr(svg, "training loss: 3 points</text>"), "the legend counts the points");
	free(svg);

	double bad[] = {4.0, NAN, 2.9};
	d.train_loss = bad;
	svg = picture(&d);
	check_points(svg, "train-loss", "80.00,70.00 870.00,271.67");
	ok_true(strstr(svg, "training loss: 2 points, 1 non-finite skipped"),
	        "a non-finite loss is skipped and said");
	free(svg);

	struct _sf_plot_data none = {0};
	svg = picture(&none);
	ok_true(strstr(svg, "no step in the metrics yet") && strstr(svg, "</svg>"),
	        "no point: a whole picture saying so");
	free(svg);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		bail_out("cannot write a test file");
}

static char *read_file(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

static void test_continue(void)
{
	const char *path = tpath("m.jsonl"), *svg = tpath("m.svg");
	const char *head = "{\"step\": 1, \"loss\": 5}\n"
	                   "{\"step\": 2, \"loss\": 4}\n"
	                   "{\"kind\": \"eval\", \"step\": 2, \"val_loss\": 4.5}\n";
	char all[512];
	snprintf(all, sizeof all, "%s{\"step\": 3, \"loss\": 3}\n{\"step\": 4, \"lo", head);
	write_file(path, all);
	ok_int_eq(sf_metrics_continue(path, 2), SF_OK, "continue from step 2");
	if (!ok(strcmp(read_file(path), head) == 0, "steps 1, 2 and step 2's evaluation kept; "
	                                            "step 3 and the torn line dropped"))
		diag("got [%s]", read_file(path));
	write_file(path, all);
	ok_int_eq(sf_metrics_continue(path, 9), SF_OK, "continue from step 9");
	ok_true(strlen(read_file(path)) == strlen(all) - strlen("{\"step\": 4, \"lo"),
	        "every whole line kept, the torn one dropped");
	ok_int_eq(sf_metrics_continue(path, 0), SF_OK, "continue from step 0");
	ok_true(read_file(path)[0] == '\0', "a fresh run empties the file");

	write_file(path, all);
	ok_int_eq(sf_metrics_plot(path, svg), SF_OK, "a torn last line is left out of the plot");
	write_file(path, "{\"step\": 1, \"loss\": 5}\n{\"step\": 2}\n");
	ok_true(sf_metrics_plot(path, svg) == SF_ERR_INVALID &&
	            strstr(sf_last_error(), "line 2: no \"loss\""),
	        "a line without its loss is named by number");
	diag("%s", sf_last_error());
	write_file(path, "{\"step\": 1, \"loss\": 5}\nnot json\n");
	ok_true(sf_metrics_plot(path, svg) == SF_ERR_INVALID &&
	            strstr(sf_last_error(), "line 2: not JSON"),
	        "a line that is not JSON is named by number");
}

int main(void)
{
	_sf_err_quiet = true;
	tmpdir_create("sf-test-plot");
	plan(27);
	test_axes();
	test_picture();
	test_continue();
	cleanup();
	return done_testing();
}
