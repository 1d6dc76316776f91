/*
 * write.c — escaping for JSON and XML, and files whose errors name them (write.h).
 */
#include "trace/write.h"
#include "common/error.h"

#include <errno.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s (1 to 4 bytes), 0 when the bytes there
 * are not one (a stray continuation byte, a cut or overlong sequence, a surrogate, a
 * code point above U+10FFFF). s[0] is not NUL. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

void _sf_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	fputc('"', f);
	while (*p) {
		size_t n = utf8_len(p);
		if (n == 0) {
			fputs("\\ufffd", f);
			p++;
		} else if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p++);
		} else if (*p < 0x20) {
			fprintf(f, "\\u%04x", *p++);
		} else {
			fwrite(p, 1, n, f);
			p += n;
		}
	}
	fputc('"', f);
}

void _sf_xml_text(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	while (*p) {
		size_t n = utf8_len(p);
		/* U+FFFE and U+FFFF are not XML characters either */
		if (n == 0 || (n == 3 && p[0] == 0xef && p[1] == 0xbf && p[2] >= 0xbe)) {
			fputs("&#xFFFD;", f);
			p += n ? n : 1;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if (*p < 0x20 && *p != '\t' && *p != '\n')
				fputc('?', f);
			else
				fwrite(p, 1, n, f);
			break;
		}
		p += n;
	}
}

int _sf_file_create(const char *path, FILE **out)
{
	*out = fopen(path, "w");
	if (!*out)
		return SF_ERR(SF_ERR_IO, "cannot write \"%s\": %s", path, strerror(errno));
	return SF_OK;
}

int _sf_file_close(FILE *f, const char *path)
{
	int bad = ferror(f), why = errno;
	if (fclose(f) != 0 && !bad) {
		bad = 1;
		why = errno;
	}
	if (bad)
		return SF_ERR(SF_ERR_IO, "cannot write \"%s\": %s", path,
		              why ? strerror(why) : "write error");
	return SF_OK;
}

void _sf_svg_begin(FILE *f, double width, double height, double x, int title_size,
                   const char *title)
{
	fprintf(f,
	        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
	        "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
	        "font-size=\"12\">\n",
	        width, height, width, height);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%.1f\" y=\"24\" font-size=\"%d\" font-weight=\"bold\">", x,
	        title_size);
	_sf_xml_text(f, title);
	fprintf(f, "</text>\n");
}
