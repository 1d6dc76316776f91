/*
 * shardflow-plot — a training run's metrics file drawn as SVG, on demand.
 *
 *   examples/gpt --metrics run.jsonl ...     # one JSON object a step
 *   shardflow-plot run.jsonl                 # run.jsonl.svg: loss and tokens/s
 *   shardflow-plot run.jsonl -o curves.svg
 *
 * The trainer draws the same picture at its checkpoints and at the end; this is for a
 * run still going, or a file copied elsewhere. Reading and drawing are the library's
 * sf_metrics_plot (trace/metrics.c, trace/plot.c), linked from libsftrace; errors are
 * kept quiet there and printed here as one line: a malformed line of the file names
 * its number (exit 1); a bad command line prints the usage (exit 2).
 */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const usage_text =
    "usage: shardflow-plot METRICS.jsonl [-o OUT.svg]\n"
    "\n"
    "Draws the training and validation loss and the tokens/s of a metrics file (the\n"
    "JSON lines examples/gpt --metrics writes) against the step, as SVG.\n"
    "\n"
    "options:\n"
    "  -o OUT.svg  where to write the picture (default METRICS.jsonl.svg)\n"
    "  --help      print this help and exit\n";

static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "shardflow-plot: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage_text);
	return 2;
}

int main(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	char *def = NULL;
	_sf_err_quiet = true; /* main prints the error, after its own prefix */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage_text, stdout);
			return 0;
		} else if (strcmp(argv[i], "-o") == 0) {
			if (i + 1 == argc)
				return usage_error("-o needs a file name");
			out = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return usage_error("unknown option \"%s\"", argv[i]);
		} else if (in) {
			return usage_error("one metrics file, not \"%s\" too", argv[i]);
		} else {
			in = argv[i];
		}
	}
	if (!in)
		return usage_error("no metrics file");
	if (!out) {
		size_t n = strlen(in) + 5;
		if (!(def = malloc(n))) {
			fprintf(stderr, "shardflow-plot: error: out of memory\n");
			return 1;
		}
		snprintf(def, n, "%s.svg", in);
		out = def;
	}
	int status = 0;
	if (sf_metrics_plot(in, out) < 0) {
		fprintf(stderr, "shardflow-plot: error: %s\n", sf_last_error());
		status = 1;
	}
	free(def);
	return status;
}
