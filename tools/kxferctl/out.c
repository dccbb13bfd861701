// SPDX-License-Identifier: GPL-2.0
/*
 * kxferctl: the one print path for text and JSON output.
 *
 * Callers describe what they print (objects, arrays, key/value pairs) and
 * this file renders it either as iproute2-like text:
 *
 *	pool kv size 256M owner 0 ...
 *	    dev rxe0 map 1.05ms
 *
 * where every top-level object is one record ending with a newline and
 * every nested object starts an indented continuation line (or continues
 * the same line in one-line mode, used by the monitor), or as JSON:
 * compact by default, indented with -p.  A "show" prints a JSON array of
 * objects; a top-level object outside such a list (a monitor event) is
 * printed on its own line.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kxferctl.h"

#define OUT_MAX_DEPTH	16
#define OUT_INDENT	"    "

enum out_ctx {
	OUT_CTX_OBJ,
	OUT_CTX_ARRAY,
};

static struct {
	bool json;
	bool pretty;
	bool details;
	bool oneline;

	/* open containers, JSON and text alike */
	unsigned int depth;
	enum out_ctx ctx[OUT_MAX_DEPTH];
	unsigned int count[OUT_MAX_DEPTH];	/* members printed so far */
	unsigned int objs;			/* open objects */

	/* the top-level list of a "show" */
	bool list_pending;
	bool list_open;

	/* text: something printed on the current line / new line wanted */
	bool text_mid;
	bool text_nl;
} out;

void out_init(bool json, bool pretty, bool details)
{
	memset(&out, 0, sizeof(out));
	out.json = json;
	out.pretty = json && pretty;
	out.details = details;
}

bool out_is_json(void)
{
	return out.json;
}

void out_set_oneline(bool oneline)
{
	out.oneline = oneline;
}

void out_flush(void)
{
	fflush(stdout);
}

/* ---- JSON ------------------------------------------------------------- */

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '"':
			fputs("\\\"", stdout);
			break;
		case '\\':
			fputs("\\\\", stdout);
			break;
		case '\n':
			fputs("\\n", stdout);
			break;
		case '\r':
			fputs("\\r", stdout);
			break;
		case '\t':
			fputs("\\t", stdout);
			break;
		default:
			if (c < 0x20 || c == 0x7f)
				printf("\\u%04x", c);
			else
				putchar(c);
		}
	}
	putchar('"');
}

static void json_indent(void)
{
	for (unsigned int i = 0; i < out.depth; i++)
		fputs(OUT_INDENT, stdout);
}

/* Separator, indentation and key before a member of the current container. */
static void json_member(const char *key)
{
	if (!out.depth)
		return;

	if (out.count[out.depth - 1]++)
		putchar(',');
	if (out.pretty) {
		putchar('\n');
		json_indent();
	}
	if (out.ctx[out.depth - 1] == OUT_CTX_OBJ) {
		json_string(key ? key : "");
		fputs(out.pretty ? ": " : ":", stdout);
	}
}

static void json_open(const char *key, enum out_ctx ctx)
{
	json_member(key);
	putchar(ctx == OUT_CTX_OBJ ? '{' : '[');
}

static void json_close(enum out_ctx ctx, unsigned int members)
{
	if (out.pretty && members) {
		putchar('\n');
		json_indent();
	}
	putchar(ctx == OUT_CTX_OBJ ? '}' : ']');
	if (!out.depth)
		putchar('\n');
}

/* ---- text ------------------------------------------------------------- */

/* Start one item of a text record: a separator or a continuation line. */
static void text_item(void)
{
	if (out.text_nl) {
		putchar('\n');
		fputs(OUT_INDENT, stdout);
		out.text_nl = false;
	} else if (out.text_mid) {
		putchar(' ');
	}
	out.text_mid = true;
}

/* Strings from the kernel are printed as they are, minus control bytes. */
static void text_string(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		putchar(c < 0x20 || c == 0x7f ? '?' : c);
	}
}

static void text_end_record(void)
{
	if (out.text_mid)
		putchar('\n');
	out.text_mid = false;
	out.text_nl = false;
}

/* ---- containers ------------------------------------------------------- */

static void push(enum out_ctx ctx)
{
	if (out.depth >= OUT_MAX_DEPTH) {
		/* a programming error; keep the output balanced anyway */
		fprintf(stderr, "kxferctl: output nested too deeply\n");
		return;
	}
	out.ctx[out.depth] = ctx;
	out.count[out.depth] = 0;
	out.depth++;
}

static unsigned int pop(void)
{
	if (!out.depth)
		return 0;
	out.depth--;
	return out.count[out.depth];
}

/**
 * out_list_begin - the objects that follow form the answer to a "show"
 *
 * The JSON array is opened with its first object, so that a request that
 * fails before anything was printed prints no JSON at all.
 */
void out_list_begin(void)
{
	out.list_pending = true;
	out.list_open = false;
}

/**
 * out_list_end - end the answer to a "show"
 * @ok: the request succeeded; an empty answer is then printed as "[]"
 */
void out_list_end(bool ok)
{
	if (out.list_open) {
		unsigned int members = pop();

		if (out.json)
			json_close(OUT_CTX_ARRAY, members);
	} else if (out.json && ok) {
		fputs("[]\n", stdout);
	}
	out.list_pending = false;
	out.list_open = false;
}

void out_start_obj(const char *key)
{
	if (!out.depth && out.list_pending && !out.list_open) {
		out.list_open = true;
		if (out.json)
			json_open(NULL, OUT_CTX_ARRAY);
		push(OUT_CTX_ARRAY);
	}

	if (out.json)
		json_open(key, OUT_CTX_OBJ);
	else if (out.objs && !out.oneline)
		out.text_nl = true;	/* nested: a continuation line */
	push(OUT_CTX_OBJ);
	out.objs++;
}

void out_end_obj(void)
{
	unsigned int members = pop();

	if (out.objs)
		out.objs--;
	if (out.json)
		json_close(OUT_CTX_OBJ, members);
	else if (!out.objs)
		text_end_record();
}

void out_start_array(const char *key)
{
	if (out.json)
		json_open(key, OUT_CTX_ARRAY);
	push(OUT_CTX_ARRAY);
}

void out_end_array(void)
{
	unsigned int members = pop();

	if (out.json)
		json_close(OUT_CTX_ARRAY, members);
}

/* Text: the items that follow go on an indented continuation line. */
void out_nest_line(void)
{
	if (!out.json && !out.oneline && out.text_mid)
		out.text_nl = true;
}

/* ---- values ----------------------------------------------------------- */

/* A monitor event: "[pool-add]" in text, "event":"pool-add" in JSON. */
void out_event(const char *event)
{
	if (out.json) {
		json_member("event");
		json_string(event);
		return;
	}
	text_item();
	printf("[%s]", event);
}

/* An object's name: "LABEL NAME" in text, "name":"NAME" in JSON. */
void out_name(const char *label, const char *name)
{
	if (out.json) {
		json_member("name");
		json_string(name);
		return;
	}
	text_item();
	printf("%s ", label);
	text_string(name);
}

/* "KEY VALUE" in text, "KEY":"VALUE" in JSON; a NULL key prints the value. */
void out_str(const char *key, const char *val)
{
	if (out.json) {
		json_member(key);
		json_string(val);
		return;
	}
	text_item();
	if (key)
		printf("%s ", key);
	text_string(val);
}

void out_u64(const char *key, uint64_t val)
{
	if (out.json) {
		json_member(key);
		printf("%" PRIu64, val);
		return;
	}
	text_item();
	if (key)
		printf("%s ", key);
	printf("%" PRIu64, val);
}

void out_s64(const char *key, int64_t val)
{
	if (out.json) {
		json_member(key);
		printf("%" PRId64, val);
		return;
	}
	text_item();
	if (key)
		printf("%s ", key);
	printf("%" PRId64, val);
}

/**
 * out_fmt_bytes - a byte count for text output
 *
 * With the largest of the suffixes the tool accepts (K, M, G, T, binary)
 * that divides it exactly, so that the text can be typed back in; as a
 * plain number otherwise, and always with -d.
 */
size_t out_fmt_bytes(char *buf, size_t len, uint64_t val)
{
	static const char suffix[] = "TGMK";
	int n;

	for (unsigned int i = 0; !out.details && val && i < 4; i++) {
		unsigned int shift = 40 - 10 * i;

		if (val & ((1ULL << shift) - 1))
			continue;
		n = snprintf(buf, len, "%" PRIu64 "%c", val >> shift, suffix[i]);
		return n > 0 ? (size_t)n : 0;
	}
	n = snprintf(buf, len, "%" PRIu64, val);
	return n > 0 ? (size_t)n : 0;
}

/* A byte count: a number in JSON, "256M" in text (exact bytes with -d). */
void out_bytes(const char *key, uint64_t val)
{
	char buf[32];

	if (out.json) {
		out_u64(key, val);
		return;
	}
	out_fmt_bytes(buf, sizeof(buf), val);
	out_str(key, buf);
}

/*
 * A duration in nanoseconds: "JSON_KEY NS" in JSON and, with -d, in text;
 * otherwise "TEXT_KEY 1.25ms" with three significant digits.
 */
void out_ns(const char *text_key, const char *json_key, uint64_t ns)
{
	const char *unit = "ns";
	double div = 1.0, v;
	char buf[32];

	if (out.json || out.details) {
		out_u64(json_key, ns);
		return;
	}

	/* the thresholds keep "%.3g" away from 1e+03 */
	if (ns >= 999500000ULL) {
		unit = "s";
		div = 1e9;
	} else if (ns >= 999500ULL) {
		unit = "ms";
		div = 1e6;
	} else if (ns >= 1000ULL) {
		unit = "us";
		div = 1e3;
	}

	if (div == 1.0) {
		snprintf(buf, sizeof(buf), "%" PRIu64 "ns", ns);
	} else {
		v = (double)ns / div;
		snprintf(buf, sizeof(buf), v >= 999.5 ? "%.0f%s" : "%.3g%s",
			 v, unit);
	}
	out_str(text_key, buf);
}

/* An enumerated value: its name if known, "unknown(N)" otherwise. */
void out_enum(const char *key, const char *const *names, size_t n,
	      uint32_t val)
{
	char buf[32];

	if (val < n && names[val]) {
		out_str(key, names[val]);
		return;
	}
	snprintf(buf, sizeof(buf), "unknown(%" PRIu32 ")", val);
	out_str(key, buf);
}

/* KXFER_ACCESS_* bits: text "access read,write"; JSON "access":["read","write"]. */
void out_access(uint32_t access)
{
	char buf[64];
	char *word, *save = NULL;

	kx_format_access(buf, sizeof(buf), access);
	if (!out.json) {
		out_str("access", buf);
		return;
	}

	out_start_array("access");
	if (access)
		for (word = strtok_r(buf, ",", &save); word;
		     word = strtok_r(NULL, ",", &save))
			out_str(NULL, word);
	out_end_array();
}

/* Text only: a new item, formatted; nothing in JSON. */
void out_text(const char *fmt, ...)
{
	va_list ap;

	if (out.json)
		return;
	text_item();
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

/* Text only: more of the current item, with no separator before it. */
void out_text_cont(const char *fmt, ...)
{
	va_list ap;

	if (out.json)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}
