/* thrift.c — growable buffer and Thrift compact-protocol writer (see thrift.h).
 * Reference: thrift/doc/specs/thrift-compact-protocol.md. Only the writer side,
 * only what Parquet metadata needs. Never prints, never does I/O. */
#include "thrift.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void thrift_buf_init(struct thrift_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void thrift_buf_free(struct thrift_buf *b)
{
	free(b->data);
	thrift_buf_init(b);
}

uint8_t *thrift_buf_reserve(struct thrift_buf *b, size_t n)
{
	if (b->error)
		return NULL;
	if (n > SIZE_MAX / 2 - b->len) {
		b->error = -ENOMEM;
		return NULL;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *data = realloc(b->data, cap);
		if (!data) {
			b->error = -ENOMEM;
			return NULL;
		}
		b->data = data;
		b->cap = cap;
	}
	return b->data + b->len;
}

void thrift_buf_put(struct thrift_buf *b, const void *p, size_t n)
{
	uint8_t *dst = thrift_buf_reserve(b, n);
	if (!dst)
		return;
	if (n)
		memcpy(dst, p, n);
	b->len += n;
}

void thrift_buf_put_byte(struct thrift_buf *b, uint8_t byte)
{
	thrift_buf_put(b, &byte, 1);
}

size_t thrift_uvarint(uint8_t *dst, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		dst[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	dst[n++] = (uint8_t)v;
	return n;
}

uint64_t thrift_zigzag64(int64_t v)
{
	/* (v << 1) ^ (v >> 63) without shifting a negative signed value. */
	return ((uint64_t)v << 1) ^ (v < 0 ? UINT64_MAX : 0);
}

void thrift_buf_put_uvarint(struct thrift_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	thrift_buf_put(b, tmp, thrift_uvarint(tmp, v));
}

void thrift_writer_init(struct thrift_writer *w, struct thrift_buf *buf)
{
	w->buf = buf;
	w->depth = 0;
	w->last_id[0] = 0;
}

static void thrift_field_header(struct thrift_writer *w, int16_t id, enum thrift_type type)
{
	int16_t *last = &w->last_id[w->depth];
	int delta = id - *last;
	if (delta > 0 && delta <= 15) {
		thrift_buf_put_byte(w->buf, (uint8_t)(delta << 4 | type));
	} else {
		thrift_buf_put_byte(w->buf, (uint8_t)type);
		thrift_buf_put_uvarint(w->buf, thrift_zigzag64(id));
	}
	*last = id;
}

void thrift_field_i32(struct thrift_writer *w, int16_t id, int32_t v)
{
	thrift_field_header(w, id, THRIFT_I32);
	thrift_buf_put_uvarint(w->buf, thrift_zigzag64(v));
}

void thrift_field_i64(struct thrift_writer *w, int16_t id, int64_t v)
{
	thrift_field_header(w, id, THRIFT_I64);
	thrift_buf_put_uvarint(w->buf, thrift_zigzag64(v));
}

void thrift_field_bool(struct thrift_writer *w, int16_t id, int v)
{
	/* Compact protocol folds a boolean field's value into its type nibble. */
	thrift_field_header(w, id, v ? THRIFT_BOOL_TRUE : THRIFT_BOOL_FALSE);
}

void thrift_field_binary(struct thrift_writer *w, int16_t id, const void *p, size_t n)
{
	thrift_field_header(w, id, THRIFT_BINARY);
	thrift_buf_put_uvarint(w->buf, n);
	thrift_buf_put(w->buf, p, n);
}

void thrift_field_string(struct thrift_writer *w, int16_t id, const char *s)
{
	thrift_field_binary(w, id, s, strlen(s));
}

void thrift_struct_begin(struct thrift_writer *w)
{
	if (w->depth + 1 >= THRIFT_MAX_DEPTH) {
		w->buf->error = -EINVAL;
		return;
	}
	w->last_id[++w->depth] = 0;
}

void thrift_field_struct_begin(struct thrift_writer *w, int16_t id)
{
	thrift_field_header(w, id, THRIFT_STRUCT);
	thrift_struct_begin(w);
}

void thrift_struct_end(struct thrift_writer *w)
{
	thrift_buf_put_byte(w->buf, 0); /* STOP */
	if (w->depth > 0)
		w->depth--;
}

void thrift_field_list_begin(struct thrift_writer *w, int16_t id, enum thrift_type elem, uint32_t size)
{
	thrift_field_header(w, id, THRIFT_LIST);
	if (size < 15) {
		thrift_buf_put_byte(w->buf, (uint8_t)(size << 4 | elem));
	} else {
		thrift_buf_put_byte(w->buf, (uint8_t)(0xF0 | elem));
		thrift_buf_put_uvarint(w->buf, size);
	}
}

void thrift_list_i32(struct thrift_writer *w, int32_t v)
{
	thrift_buf_put_uvarint(w->buf, thrift_zigzag64(v));
}

void thrift_list_string(struct thrift_writer *w, const char *s)
{
	size_t n = strlen(s);
	thrift_buf_put_uvarint(w->buf, n);
	thrift_buf_put(w->buf, s, n);
}
