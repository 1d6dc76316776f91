/*
 * write.h — what every writer of trace files needs: strings escaped for JSON and XML,
 * and files opened and closed with errors that name them.
 *
 * Names in a trace come from users (a node "fc1" of a type registered with
 * sf_layer_type_register becomes "fwd fc1 (<type name> L3)"; a trace prefix or a title
 * is a path or a command-line argument), so no writer prints one with a bare %s: the
 * Chrome traces and the report JSON go through _sf_json_string, the SVG through
 * _sf_xml_text. Part of libsftrace (no StarPU, no MPI).
 */
#ifndef SF_TRACE_WRITE_H
#define SF_TRACE_WRITE_H

#include <stdio.h>

/* Writes s (NULL: "") as a JSON string, quotes included: '"' and '\\' escaped,
 * control characters as \u00XX, and bytes that are not valid UTF-8 (a name cut inside
 * a character, say) as \ufffd, so that the file stays valid JSON. */
void _sf_json_string(FILE *f, const char *s);

/* Writes s (NULL: nothing) as XML character data or attribute text: &, <, >, " and '
 * escaped, control characters (invalid in XML 1.0) replaced by '?', and bytes that are
 * not valid UTF-8 (or U+FFFE, U+FFFF) by U+FFFD. */
void _sf_xml_text(FILE *f, const char *s);

/* An SVG picture's start: the XML declaration, the <svg> element of width x height
 * (sans-serif, 12 px), a white background and its title (escaped) in bold at (x, 24),
 * title_size px. The caller draws, then closes with "</svg>". */
void _sf_svg_begin(FILE *f, double width, double height, double x, int title_size,
                   const char *title);

/* fopen(path, "w"); SF_OK, or an SF_ERR_IO raised as "cannot write "<path>": <why>". */
int _sf_file_create(const char *path, FILE **out);
/* fclose(f); SF_OK, or an SF_ERR_IO raised as above when a write to f or the close
 * failed. The writers leave errors of their stream to this check, which knows the
 * file's name. */
int _sf_file_close(FILE *f, const char *path);

#endif
