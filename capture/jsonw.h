/* A tiny JSON builder into a growable buffer, with string escaping.
 * Used at setup and by the writer for metadata; never in the measuring loop.
 * Keys are NULL inside arrays.  An allocation failure sets err and later
 * calls do nothing, so callers check once at the end. */
#ifndef JITTERSCOPE_JSONW_H
#define JITTERSCOPE_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONW_MAX_DEPTH 32

struct jsonw {
	char *buf;
	size_t len, cap;
	int err;                       /* -ENOMEM once anything failed */
	int depth;
	bool first[JSONW_MAX_DEPTH];   /* no element written yet at this depth */
};

void jsonw_init(struct jsonw *w);
void jsonw_free(struct jsonw *w);
/* Hands the NUL-terminated text to the caller (free() it); NULL after an error. */
char *jsonw_take(struct jsonw *w);

void jsonw_object_begin(struct jsonw *w, const char *key);
void jsonw_object_end(struct jsonw *w);
void jsonw_array_begin(struct jsonw *w, const char *key);
void jsonw_array_end(struct jsonw *w);
void jsonw_string(struct jsonw *w, const char *key, const char *value); /* NULL value -> null */
void jsonw_int(struct jsonw *w, const char *key, int64_t value);
void jsonw_uint(struct jsonw *w, const char *key, uint64_t value);
void jsonw_double(struct jsonw *w, const char *key, double value);    /* non-finite -> null */
void jsonw_bool(struct jsonw *w, const char *key, bool value);
void jsonw_null(struct jsonw *w, const char *key);
void jsonw_raw(struct jsonw *w, const char *key, const char *json);   /* already-valid JSON */

#endif
