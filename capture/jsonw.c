/* JSON builder; see jsonw.h.  Output is compact, UTF-8 passed through,
 * control characters escaped as \u00XX. */
#include "jsonw.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jsonw_init(struct jsonw *w)
{
	memset(w, 0, sizeof(*w));
	w->first[0] = true;
}

void jsonw_free(struct jsonw *w)
{
	free(w->buf);
	w->buf = NULL;
}

char *jsonw_take(struct jsonw *w)
{
	if (w->err || !w->buf) {
		jsonw_free(w);
		return NULL;
	}
	char *out = w->buf;
	w->buf = NULL;
	return out;
}

static void jsonw_put(struct jsonw *w, const char *text, size_t n)
{
	if (w->err)
		return;
	if (w->len + n + 1 > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n + 1)
			cap *= 2;
		char *grown = realloc(w->buf, cap);
		if (!grown) {
			w->err = -ENOMEM;
			return;
		}
		w->buf = grown;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, text, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void jsonw_puts(struct jsonw *w, const char *text)
{
	jsonw_put(w, text, strlen(text));
}

static void jsonw_escaped(struct jsonw *w, const char *s)
{
	jsonw_put(w, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char esc[8];
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			jsonw_put(w, esc, 2);
		} else if (*p < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			jsonw_put(w, esc, 6);
		} else {
			jsonw_put(w, (const char *)p, 1);
		}
	}
	jsonw_put(w, "\"", 1);
}

/* Comma and key before a value at the current depth. */
static void jsonw_prefix(struct jsonw *w, const char *key)
{
	if (!w->first[w->depth])
		jsonw_put(w, ",", 1);
	w->first[w->depth] = false;
	if (key) {
		jsonw_escaped(w, key);
		jsonw_put(w, ":", 1);
	}
}

static void jsonw_open(struct jsonw *w, const char *key, const char *bracket)
{
	jsonw_prefix(w, key);
	jsonw_puts(w, bracket);
	if (w->depth + 1 >= JSONW_MAX_DEPTH) {
		w->err = -E2BIG;
		return;
	}
	w->first[++w->depth] = true;
}

static void jsonw_close(struct jsonw *w, const char *bracket)
{
	if (w->depth > 0)
		w->depth--;
	jsonw_puts(w, bracket);
}

void jsonw_object_begin(struct jsonw *w, const char *key) { jsonw_open(w, key, "{"); }
void jsonw_object_end(struct jsonw *w) { jsonw_close(w, "}"); }
void jsonw_array_begin(struct jsonw *w, const char *key) { jsonw_open(w, key, "["); }
void jsonw_array_end(struct jsonw *w) { jsonw_close(w, "]"); }

void jsonw_string(struct jsonw *w, const char *key, const char *value)
{
	jsonw_prefix(w, key);
	if (value)
		jsonw_escaped(w, value);
	else
		jsonw_puts(w, "null");
}

void jsonw_int(struct jsonw *w, const char *key, int64_t value)
{
	char text[32];
	snprintf(text, sizeof(text), "%" PRId64, value);
	jsonw_prefix(w, key);
	jsonw_puts(w, text);
}

void jsonw_uint(struct jsonw *w, const char *key, uint64_t value)
{
	char text[32];
	snprintf(text, sizeof(text), "%" PRIu64, value);
	jsonw_prefix(w, key);
	jsonw_puts(w, text);
}

void jsonw_double(struct jsonw *w, const char *key, double value)
{
	char text[40];
	if (!isfinite(value)) {
		jsonw_null(w, key);
		return;
	}
	snprintf(text, sizeof(text), "%.17g", value);
	/* JSON wants a digit before any exponent and no bare "inf": %.17g gives that for finite values */
	jsonw_prefix(w, key);
	jsonw_puts(w, text);
}

void jsonw_bool(struct jsonw *w, const char *key, bool value)
{
	jsonw_prefix(w, key);
	jsonw_puts(w, value ? "true" : "false");
}

void jsonw_null(struct jsonw *w, const char *key)
{
	jsonw_prefix(w, key);
	jsonw_puts(w, "null");
}

void jsonw_raw(struct jsonw *w, const char *key, const char *json)
{
	jsonw_prefix(w, key);
	jsonw_puts(w, json ? json : "null");
}
