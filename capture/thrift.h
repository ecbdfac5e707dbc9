/* thrift.h — a growable byte buffer and a Thrift compact-protocol writer, just
 * enough to serialise Parquet's FileMetaData and PageHeader structs.
 * Allocation failures are sticky (buf->error = -ENOMEM) so encoders check once
 * at the end instead of after every field. Never prints, never does I/O. */
#ifndef JITTERSCOPE_THRIFT_H
#define JITTERSCOPE_THRIFT_H

#include <stddef.h>
#include <stdint.h>

struct thrift_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	int error; /* 0 or -ENOMEM; once set, further writes are ignored */
};

void thrift_buf_init(struct thrift_buf *b);
void thrift_buf_free(struct thrift_buf *b);
/* Makes room for n more bytes; returns a pointer to them (not yet counted in len) or NULL. */
uint8_t *thrift_buf_reserve(struct thrift_buf *b, size_t n);
void thrift_buf_put(struct thrift_buf *b, const void *p, size_t n);
void thrift_buf_put_byte(struct thrift_buf *b, uint8_t byte);

/* ULEB128 into dst (room for 10 bytes); returns the number of bytes written. */
size_t thrift_uvarint(uint8_t *dst, uint64_t v);
uint64_t thrift_zigzag64(int64_t v);
void thrift_buf_put_uvarint(struct thrift_buf *b, uint64_t v);

/* Compact-protocol type ids (the values that appear on the wire). */
enum thrift_type {
	THRIFT_BOOL_TRUE = 1,
	THRIFT_BOOL_FALSE = 2,
	THRIFT_I8 = 3,
	THRIFT_I16 = 4,
	THRIFT_I32 = 5,
	THRIFT_I64 = 6,
	THRIFT_DOUBLE = 7,
	THRIFT_BINARY = 8,
	THRIFT_LIST = 9,
	THRIFT_SET = 10,
	THRIFT_MAP = 11,
	THRIFT_STRUCT = 12,
};

#define THRIFT_MAX_DEPTH 16

/* Field ids are delta-encoded against the previous field of the same struct,
 * so the writer keeps one "last id" per open struct. */
struct thrift_writer {
	struct thrift_buf *buf;
	int depth;
	int16_t last_id[THRIFT_MAX_DEPTH];
};

void thrift_writer_init(struct thrift_writer *w, struct thrift_buf *buf);
void thrift_field_i32(struct thrift_writer *w, int16_t id, int32_t v);
void thrift_field_i64(struct thrift_writer *w, int16_t id, int64_t v);
void thrift_field_bool(struct thrift_writer *w, int16_t id, int v);
void thrift_field_binary(struct thrift_writer *w, int16_t id, const void *p, size_t n);
void thrift_field_string(struct thrift_writer *w, int16_t id, const char *s);
/* A struct-valued field: fields follow, then thrift_struct_end(). */
void thrift_field_struct_begin(struct thrift_writer *w, int16_t id);
/* A list-valued field; its size elements follow (thrift_list_* or thrift_struct_begin). */
void thrift_field_list_begin(struct thrift_writer *w, int16_t id, enum thrift_type elem, uint32_t size);
/* A struct that is a list element (or the top-level struct): no field header. */
void thrift_struct_begin(struct thrift_writer *w);
void thrift_struct_end(struct thrift_writer *w);
void thrift_list_i32(struct thrift_writer *w, int32_t v);
void thrift_list_string(struct thrift_writer *w, const char *s);

#endif
