/* parquet.h — minimal Parquet file writer: required (non-null) fixed-width INT32/INT64
 * columns, PLAIN or DELTA_BINARY_PACKED, uncompressed or SNAPPY per column (snappy.c),
 * key-value metadata.
 * The only file that knows the Parquet format. After pq_open() and after every
 * successful pq_append_row_group()/pq_rewrite_footer() the file on disk is a valid
 * Parquet file: each append writes the new row group after the previous footer,
 * then a new footer, in ONE write() (so a kill between flushes never leaves a
 * broken file). Never prints; returns 0 or -errno. Not thread-safe: one writer
 * belongs to one thread. */
#ifndef JITTERSCOPE_PARQUET_H
#define JITTERSCOPE_PARQUET_H

#include <stddef.h>
#include <stdint.h>

enum pq_type { PQ_INT32, PQ_INT64 };
enum pq_encoding { PQ_PLAIN, PQ_DELTA_BINARY_PACKED };
/* Each page's encoded values compressed (the trace's repetitive event rows shrink 3x) or not (the samples:
 * their delta-packed bits do not compress). */
enum pq_codec { PQ_UNCOMPRESSED, PQ_SNAPPY };
struct pq_column_def { const char *name; enum pq_type type; enum pq_encoding encoding; enum pq_codec codec; };
struct pq_kv { const char *key; const char *value; };   /* value: a JSON document */
struct pq_writer;

/* Takes an open, empty, writable, seekable fd (not closed by pq_*). Writes "PAR1" and a
 * footer with zero row groups and the given key-value metadata: a valid empty file.
 * -EINVAL for no columns, an empty or duplicate name, an unknown type or encoding, or a
 * NULL key/value; -ENOTEMPTY when the file is not empty. Names and metadata are copied. */
int pq_open(struct pq_writer **out, int fd, const struct pq_column_def *cols, size_t ncols,
            const struct pq_kv *kv, size_t nkv);
/* columns[i] points to nrows values of int32_t or int64_t per cols[i].type. nrows may be 0
 * (then only the footer is rewritten). kv replaces the file's key-value metadata; nkv == 0
 * keeps the previous metadata. On a short or failed write (ENOSPC, EIO, EFBIG) the file is
 * truncated back to its last valid length and the writer stays usable; returns -errno. */
int pq_append_row_group(struct pq_writer *w, const void *const *columns, size_t nrows,
                        const struct pq_kv *kv, size_t nkv);
/* Replaces the metadata: appends a new footer only (used for the final status). */
int pq_rewrite_footer(struct pq_writer *w, const struct pq_kv *kv, size_t nkv);
uint64_t pq_rows(const struct pq_writer *w);
uint64_t pq_data_bytes(const struct pq_writer *w);        /* bytes of row-group data written */
uint64_t pq_dead_footer_bytes(const struct pq_writer *w); /* bytes of superseded footers in the file */
uint64_t pq_file_bytes(const struct pq_writer *w);        /* current valid length of the file */
void pq_close(struct pq_writer *w);  /* frees memory; the file stays valid; does not close fd */

/* The part builder: row groups kept in memory, the bytes handed to the caller, who
 * decides where they go (the capture's twin files, container.c).  pq_part_add() appends
 * one page per column to the open row group (so a flush costs only its own rows'
 * encoding); pq_part_seal() freezes the open group where it lies; pq_part_image() returns
 * the file's bytes from offset `from` (0, or the end of a sealed group still held; use
 * pq_part_sealed_end() of an earlier image) to the end: the sealed groups after `from`,
 * the open group as one row group, and a footer with kv (nkv == 0 keeps the previous
 * kv).  The image stays valid until the next pq_part_* call.  pq_part_release() frees
 * the held bytes of sealed groups below `upto` (every copy of the file has them). */
struct pq_part;
int pq_part_new(struct pq_part **out, const struct pq_column_def *cols, size_t ncols);
int pq_part_add(struct pq_part *p, const void *const *columns, size_t nrows);
int pq_part_seal(struct pq_part *p);
int pq_part_image(struct pq_part *p, uint64_t from, const struct pq_kv *kv, size_t nkv, const uint8_t **data,
                  size_t *len);
void pq_part_release(struct pq_part *p, uint64_t upto);
uint64_t pq_part_rows(const struct pq_part *p);        /* sealed and open */
uint64_t pq_part_open_rows(const struct pq_part *p);
uint64_t pq_part_sealed_end(const struct pq_part *p);
size_t pq_part_groups(const struct pq_part *p);        /* row groups in the next image */
uint64_t pq_part_data_bytes(const struct pq_part *p);  /* column chunk bytes, open group included */
uint64_t pq_part_footer_bytes(const struct pq_part *p); /* footer of the last image, length and magic included */
void pq_part_free(struct pq_part *p);

/* Values per data page: 128 Ki, so a PLAIN INT64 page is 1 MiB and a reader never
 * has to hold a whole (possibly large) column chunk to decode one page. */
#define PQ_PAGE_VALUES 131072u

/* DELTA_BINARY_PACKED on its own (exposed for tests and benchmarks): block size 128,
 * 4 miniblocks of 32. pq_delta_bound() is an upper bound of the encoded size of n values;
 * pq_delta_encode() writes the encoding of values[0..n) (int32_t or int64_t per type)
 * into out and returns its length. INT32 deltas wrap in 32 bits as the spec requires
 * (bit widths never exceed 32), INT64 deltas in 64 bits. */
size_t pq_delta_bound(size_t n);
size_t pq_delta_encode(uint8_t *out, const void *values, size_t n, enum pq_type type);

#endif
