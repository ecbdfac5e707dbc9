/* parquet.c — the minimal Parquet writer of parquet.h: the only file that knows the format
 * (github.com/apache/parquet-format: parquet.thrift, Encodings.md).
 * Layout after n flushes: "PAR1" [row group 1][footer 1] ... [row group n][footer n],
 * each footer = FileMetaData (Thrift compact) + its 4-byte little-endian length + "PAR1".
 * Readers only read the last footer; the earlier ones are dead bytes (pq_open & co., used
 * by the unit tests). The capture uses the part builder (pq_part_*), which hands the
 * bytes of a whole file image to container.c and never leaves a dead byte. Never prints; runs in the writer thread, never in the
 * measuring loop, so it may allocate. */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L /* pwrite, ftruncate under -std=c11 */
#endif
#include "parquet.h"

#include "config.h" /* CONFIG_VERSION, for created_by */
#include "snappy.h"
#include "thrift.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "parquet.c copies values as PLAIN (little-endian) bytes: a little-endian host is required"
#endif

#define PQ_CREATED_BY "jitterscope-capture " CONFIG_VERSION

/* Enum values from parquet.thrift. */
enum { PQ_THRIFT_INT32 = 1, PQ_THRIFT_INT64 = 2 };
enum { PQ_REQUIRED = 0 };
enum { PQ_ENC_PLAIN = 0, PQ_ENC_RLE = 3, PQ_ENC_DELTA_BINARY_PACKED = 5 };
enum { PQ_CODEC_UNCOMPRESSED = 0, PQ_CODEC_SNAPPY = 1 };
enum { PQ_PAGE_DATA = 0 };

/* DELTA_BINARY_PACKED layout: the values arrow and parquet-java use. */
#define PQ_DELTA_BLOCK 128
#define PQ_DELTA_MINIBLOCKS 4
#define PQ_DELTA_MINI 32

static const char pq_magic[4] = { 'P', 'A', 'R', '1' };

struct pq_column {
	char *name;
	enum pq_type type;
	enum pq_encoding encoding;
	enum pq_codec codec;
};

struct pq_owned_kv {
	char *key;
	char *value;
};

/* What the footer needs to know about one column chunk of one row group. */
struct pq_chunk {
	uint64_t offset; /* of its first page header */
	uint64_t bytes;  /* page headers + page data */
	uint64_t raw;    /* the same with the page data uncompressed */
	int64_t min, max;
};

struct pq_writer {
	int fd;
	size_t ncols;
	struct pq_column *cols;
	struct pq_owned_kv *kv;
	size_t nkv;
	uint64_t *group_rows;    /* [ngroups] */
	struct pq_chunk *chunks; /* [ngroups * ncols], row group major */
	size_t ngroups, groups_cap;
	uint64_t rows, data_bytes, dead_footer_bytes, file_bytes;
	uint64_t footer_bytes; /* the current footer, length word and magic included */
	struct thrift_buf out;  /* what the next write() writes */
	struct thrift_buf page; /* one page's encoded values */
	struct thrift_buf zpage; /* ... compressed */
	uint16_t *ztable;        /* the compressor's hash table */
	uint64_t page_raw;       /* bytes the last pq_put_page added, with its data uncompressed */
};

/* ---- DELTA_BINARY_PACKED ---------------------------------------------------- */

size_t pq_delta_bound(size_t n)
{
	size_t blocks = n > 1 ? (n - 2) / PQ_DELTA_BLOCK + 1 : 0;
	/* header: 4 varints; block: min delta varint, widths, 4 miniblocks of 32 x 64 bits */
	return 4 * 10 + blocks * (10 + PQ_DELTA_MINIBLOCKS + PQ_DELTA_BLOCK * 8);
}

static unsigned pq_bit_width(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

static void pq_store_le(uint8_t *out, uint64_t v, unsigned nbytes)
{
	for (unsigned i = 0; i < nbytes; i++)
		out[i] = (uint8_t)(v >> (8 * i));
}

/* Packs 32 values of `width` bits, least significant bit first, into width * 4 bytes.
 * A 64-bit accumulator is flushed a word at a time: no per-bit or per-byte loop. */
static uint8_t *pq_pack32(uint8_t *out, const uint64_t *v, unsigned width)
{
	uint64_t acc = 0;
	unsigned nbits = 0;
	if (width == 0)
		return out;
	for (int i = 0; i < PQ_DELTA_MINI; i++) {
		acc |= v[i] << nbits;
		if (nbits + width < 64) {
			nbits += width;
			continue;
		}
		pq_store_le(out, acc, 8);
		out += 8;
		unsigned used = 64 - nbits; /* bits of v[i] that fitted */
		acc = used < 64 ? v[i] >> used : 0;
		nbits = nbits + width - 64;
	}
	/* 32 * width bits leave 0 or 32 bits after the whole words. */
	pq_store_le(out, acc, nbits / 8);
	return out + nbits / 8;
}

/* One block: min delta, 4 bit widths, the miniblocks that hold values. */
static uint8_t *pq_delta_block(uint8_t *out, const int64_t *deltas, size_t count)
{
	int64_t min = deltas[0];
	for (size_t i = 1; i < count; i++)
		min = deltas[i] < min ? deltas[i] : min;
	out += thrift_uvarint(out, thrift_zigzag64(min));
	uint8_t *widths = out;
	out += PQ_DELTA_MINIBLOCKS;
	for (size_t m = 0; m < PQ_DELTA_MINIBLOCKS; m++) {
		size_t start = m * PQ_DELTA_MINI;
		uint64_t rel[PQ_DELTA_MINI], any = 0;
		widths[m] = 0;
		if (start >= count)
			continue; /* unused miniblocks of the last block: width 0, no bytes */
		for (size_t i = 0; i < PQ_DELTA_MINI; i++) {
			/* Unsigned subtraction: wraps instead of overflowing; padding is 0. */
			rel[i] = start + i < count ? (uint64_t)deltas[start + i] - (uint64_t)min : 0;
			any |= rel[i];
		}
		widths[m] = (uint8_t)pq_bit_width(any);
		out = pq_pack32(out, rel, widths[m]);
	}
	return out;
}

/* deltas[k] = values[first + k] - values[first + k - 1], wrapped to the physical type's
 * width and sign-extended, so INT32 deltas (and their frame of reference) stay in 32 bits. */
static void pq_deltas(int64_t *deltas, const void *values, enum pq_type type, size_t first, size_t count)
{
	if (type == PQ_INT32) {
		const int32_t *v = values;
		for (size_t k = 0; k < count; k++) {
			uint32_t d = (uint32_t)v[first + k] - (uint32_t)v[first + k - 1];
			deltas[k] = d < 0x80000000u ? (int64_t)d : (int64_t)d - 0x100000000;
		}
	} else {
		const int64_t *v = values;
		for (size_t k = 0; k < count; k++) {
			uint64_t d = (uint64_t)v[first + k] - (uint64_t)v[first + k - 1];
			deltas[k] = d <= INT64_MAX ? (int64_t)d : -(int64_t)(~d) - 1;
		}
	}
}

static int64_t pq_value(const void *values, enum pq_type type, size_t i)
{
	return type == PQ_INT32 ? ((const int32_t *)values)[i] : ((const int64_t *)values)[i];
}

size_t pq_delta_encode(uint8_t *out, const void *values, size_t n, enum pq_type type)
{
	uint8_t *p = out;
	int64_t deltas[PQ_DELTA_BLOCK];
	p += thrift_uvarint(p, PQ_DELTA_BLOCK);
	p += thrift_uvarint(p, PQ_DELTA_MINIBLOCKS);
	p += thrift_uvarint(p, n);
	p += thrift_uvarint(p, thrift_zigzag64(n ? pq_value(values, type, 0) : 0));
	for (size_t i = 1; i < n; i += PQ_DELTA_BLOCK) {
		size_t count = n - i < PQ_DELTA_BLOCK ? n - i : PQ_DELTA_BLOCK;
		pq_deltas(deltas, values, type, i, count);
		p = pq_delta_block(p, deltas, count);
	}
	return (size_t)(p - out);
}

/* ---- pages and column chunks -------------------------------------------------- */

static size_t pq_width(enum pq_type type)
{
	return type == PQ_INT32 ? 4 : 8;
}

static int pq_encoding_id(enum pq_encoding encoding)
{
	return encoding == PQ_PLAIN ? PQ_ENC_PLAIN : PQ_ENC_DELTA_BINARY_PACKED;
}

static void pq_encode_delta_page(struct thrift_buf *page, const struct pq_column *col, const void *values, size_t n)
{
	page->len = 0;
	uint8_t *dst = thrift_buf_reserve(page, pq_delta_bound(n));
	if (dst)
		page->len += pq_delta_encode(dst, values, n, col->type);
}

/* PageHeader { type DATA_PAGE, sizes, DataPageHeader { num_values, encoding, RLE, RLE } }.
 * Required, non-nested columns have no level data, so the page is just the values. */
static void pq_put_page_header(struct thrift_buf *out, const struct pq_column *col, size_t n, size_t raw,
			       size_t bytes)
{
	struct thrift_writer t;
	thrift_writer_init(&t, out);
	thrift_struct_begin(&t);
	thrift_field_i32(&t, 1, PQ_PAGE_DATA);
	thrift_field_i32(&t, 2, (int32_t)raw);
	thrift_field_i32(&t, 3, (int32_t)bytes);
	thrift_field_struct_begin(&t, 5);
	thrift_field_i32(&t, 1, (int32_t)n);
	thrift_field_i32(&t, 2, pq_encoding_id(col->encoding));
	thrift_field_i32(&t, 3, PQ_ENC_RLE);
	thrift_field_i32(&t, 4, PQ_ENC_RLE);
	thrift_struct_end(&t);
	thrift_struct_end(&t);
}

/* One loop per type so the compiler can vectorise it. */
static void pq_min_max(const void *values, enum pq_type type, size_t n, int64_t *min, int64_t *max)
{
	int64_t lo = pq_value(values, type, 0), hi = lo;
	if (type == PQ_INT32) {
		const int32_t *v = values;
		int32_t lo32 = v[0], hi32 = v[0];
		for (size_t i = 1; i < n; i++) {
			lo32 = v[i] < lo32 ? v[i] : lo32;
			hi32 = v[i] > hi32 ? v[i] : hi32;
		}
		lo = lo32;
		hi = hi32;
	} else {
		const int64_t *v = values;
		for (size_t i = 1; i < n; i++) {
			lo = v[i] < lo ? v[i] : lo;
			hi = v[i] > hi ? v[i] : hi;
		}
	}
	*min = lo;
	*max = hi;
}

/* The page data, compressed with the column's codec where it has one, after its header. */
static void pq_put_page_data(struct pq_writer *w, const struct pq_column *col, const void *data, size_t len,
			     size_t n, struct thrift_buf *out)
{
	size_t start = out->len;
	if (col->codec == PQ_UNCOMPRESSED) {
		pq_put_page_header(out, col, n, len, len);
		thrift_buf_put(out, data, len);
		w->page_raw = out->len - start;
		return;
	}
	if (!w->ztable && !(w->ztable = malloc(SNAPPY_TABLE * sizeof(*w->ztable)))) {
		out->error = -ENOMEM;
		return;
	}
	w->zpage.len = 0;
	w->zpage.error = 0; /* scratch: a failure is the page's (out), not sticky here */
	uint8_t *dst = thrift_buf_reserve(&w->zpage, snappy_bound(len));
	if (!dst) {
		out->error = w->zpage.error;
		return;
	}
	w->zpage.len = snappy_compress(dst, data, len, w->ztable);
	pq_put_page_header(out, col, n, len, w->zpage.len);
	thrift_buf_put(out, w->zpage.data, w->zpage.len);
	w->page_raw = out->len - start - w->zpage.len + len;
}

/* One page: its header, then its values, appended to out. A DELTA page is encoded first to learn its size. */
static void pq_put_page(struct pq_writer *w, const struct pq_column *col, const void *values, size_t n,
			struct thrift_buf *out)
{
	if (col->encoding == PQ_PLAIN) {
		pq_put_page_data(w, col, values, n * pq_width(col->type), n, out);
		return;
	}
	pq_encode_delta_page(&w->page, col, values, n);
	if (w->page.error) {
		out->error = w->page.error;
		return;
	}
	pq_put_page_data(w, col, w->page.data, w->page.len, n, out);
}

/* Appends one column chunk (pages of at most PQ_PAGE_VALUES values) to w->out. */
static void pq_put_chunk(struct pq_writer *w, size_t col_index, const void *values, size_t nrows,
			 struct pq_chunk *chunk)
{
	const struct pq_column *col = &w->cols[col_index];
	size_t start = w->out.len, width = pq_width(col->type);
	chunk->offset = w->file_bytes + start;
	chunk->raw = 0;
	for (size_t first = 0; first < nrows; first += PQ_PAGE_VALUES) {
		size_t n = nrows - first < PQ_PAGE_VALUES ? nrows - first : PQ_PAGE_VALUES;
		pq_put_page(w, col, (const uint8_t *)values + first * width, n, &w->out);
		chunk->raw += w->page_raw;
	}
	chunk->bytes = w->out.len - start;
	pq_min_max(values, col->type, nrows, &chunk->min, &chunk->max);
}

/* ---- footer (FileMetaData) ------------------------------------------------------ */

static void pq_put_schema(struct thrift_writer *t, const struct pq_writer *w)
{
	thrift_field_list_begin(t, 2, THRIFT_STRUCT, (uint32_t)w->ncols + 1);
	thrift_struct_begin(t); /* the root group */
	thrift_field_string(t, 4, "schema");
	thrift_field_i32(t, 5, (int32_t)w->ncols);
	thrift_struct_end(t);
	for (size_t c = 0; c < w->ncols; c++) {
		thrift_struct_begin(t);
		thrift_field_i32(t, 1, w->cols[c].type == PQ_INT32 ? PQ_THRIFT_INT32 : PQ_THRIFT_INT64);
		thrift_field_i32(t, 3, PQ_REQUIRED);
		thrift_field_string(t, 4, w->cols[c].name);
		thrift_struct_end(t);
	}
}

/* Statistics: min/max as PLAIN bytes, both the deprecated fields (signed order, which
 * is right for INT32/INT64) and min_value/max_value (valid with TypeDefinedOrder). */
static void pq_put_statistics(struct thrift_writer *t, const struct pq_column *col, const struct pq_chunk *chunk)
{
	uint8_t min[8], max[8];
	unsigned width = (unsigned)pq_width(col->type);
	pq_store_le(min, (uint64_t)chunk->min, width);
	pq_store_le(max, (uint64_t)chunk->max, width);
	thrift_field_struct_begin(t, 12);
	thrift_field_binary(t, 1, max, width);
	thrift_field_binary(t, 2, min, width);
	thrift_field_i64(t, 3, 0);
	thrift_field_binary(t, 5, max, width);
	thrift_field_binary(t, 6, min, width);
	thrift_struct_end(t);
}

static void pq_put_column_chunk(struct thrift_writer *t, const struct pq_column *col, const struct pq_chunk *chunk,
				uint64_t rows)
{
	thrift_struct_begin(t);
	thrift_field_i64(t, 2, (int64_t)chunk->offset); /* deprecated file_offset: the chunk's start */
	thrift_field_struct_begin(t, 3);
	thrift_field_i32(t, 1, col->type == PQ_INT32 ? PQ_THRIFT_INT32 : PQ_THRIFT_INT64);
	thrift_field_list_begin(t, 2, THRIFT_I32, 1);
	thrift_list_i32(t, pq_encoding_id(col->encoding));
	thrift_field_list_begin(t, 3, THRIFT_BINARY, 1);
	thrift_list_string(t, col->name);
	thrift_field_i32(t, 4, col->codec == PQ_SNAPPY ? PQ_CODEC_SNAPPY : PQ_CODEC_UNCOMPRESSED);
	thrift_field_i64(t, 5, (int64_t)rows);
	thrift_field_i64(t, 6, (int64_t)chunk->raw);
	thrift_field_i64(t, 7, (int64_t)chunk->bytes);
	thrift_field_i64(t, 9, (int64_t)chunk->offset);
	pq_put_statistics(t, col, chunk);
	thrift_struct_end(t);
	thrift_struct_end(t);
}

static void pq_put_row_group(struct thrift_writer *t, const struct pq_writer *w, size_t g)
{
	const struct pq_chunk *chunks = &w->chunks[g * w->ncols];
	uint64_t bytes = 0, raw = 0;
	thrift_struct_begin(t);
	thrift_field_list_begin(t, 1, THRIFT_STRUCT, (uint32_t)w->ncols);
	for (size_t c = 0; c < w->ncols; c++) {
		pq_put_column_chunk(t, &w->cols[c], &chunks[c], w->group_rows[g]);
		bytes += chunks[c].bytes;
		raw += chunks[c].raw;
	}
	thrift_field_i64(t, 2, (int64_t)raw); /* total_byte_size: uncompressed */
	thrift_field_i64(t, 3, (int64_t)w->group_rows[g]);
	thrift_field_i64(t, 5, (int64_t)chunks[0].offset);
	thrift_field_i64(t, 6, (int64_t)bytes); /* total_compressed_size */
	thrift_struct_end(t);
}

static void pq_put_kv(struct thrift_writer *t, const struct pq_owned_kv *kv, size_t nkv)
{
	if (!nkv)
		return;
	thrift_field_list_begin(t, 5, THRIFT_STRUCT, (uint32_t)nkv);
	for (size_t i = 0; i < nkv; i++) {
		thrift_struct_begin(t);
		thrift_field_string(t, 1, kv[i].key);
		thrift_field_string(t, 2, kv[i].value);
		thrift_struct_end(t);
	}
}

/* TypeDefinedOrder for every column: tells readers min_value/max_value are signed. */
static void pq_put_column_orders(struct thrift_writer *t, size_t ncols)
{
	thrift_field_list_begin(t, 7, THRIFT_STRUCT, (uint32_t)ncols);
	for (size_t c = 0; c < ncols; c++) {
		thrift_struct_begin(t);
		thrift_field_struct_begin(t, 1);
		thrift_struct_end(t);
		thrift_struct_end(t);
	}
}

/* FileMetaData for the first ngroups row groups, then its length and the magic. */
static void pq_put_footer(struct pq_writer *w, size_t ngroups, uint64_t rows, const struct pq_owned_kv *kv,
			  size_t nkv)
{
	struct thrift_writer t;
	size_t start = w->out.len;
	uint8_t len[4];
	thrift_writer_init(&t, &w->out);
	thrift_struct_begin(&t);
	thrift_field_i32(&t, 1, 2); /* version 2: DELTA_BINARY_PACKED is a format 2.x encoding */
	pq_put_schema(&t, w);
	thrift_field_i64(&t, 3, (int64_t)rows);
	thrift_field_list_begin(&t, 4, THRIFT_STRUCT, (uint32_t)ngroups);
	for (size_t g = 0; g < ngroups; g++)
		pq_put_row_group(&t, w, g);
	pq_put_kv(&t, kv, nkv);
	thrift_field_string(&t, 6, PQ_CREATED_BY);
	pq_put_column_orders(&t, w->ncols);
	thrift_struct_end(&t);
	pq_store_le(len, w->out.len - start, 4);
	thrift_buf_put(&w->out, len, 4);
	thrift_buf_put(&w->out, pq_magic, 4);
}

/* ---- writing ---------------------------------------------------------------------- */

/* Writes all of p at offset off; on failure cuts the file back to off (dropping any
 * partial write) so the previous footer is again the file's last bytes. */
static int pq_write_at(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k = pwrite(fd, p + done, n - done, (off_t)(off + done));
		if (k > 0) {
			done += (size_t)k;
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		int rc = k < 0 ? -errno : -EIO;
		if (ftruncate(fd, (off_t)off) < 0) {
			/* nothing more can be done: the caller reports rc */
		}
		return rc;
	}
	return 0;
}

static char *pq_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *copy = malloc(n);
	if (copy)
		memcpy(copy, s, n);
	return copy;
}

static void pq_free_kv(struct pq_owned_kv *kv, size_t nkv)
{
	for (size_t i = 0; kv && i < nkv; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

static int pq_copy_kv(struct pq_owned_kv **out, const struct pq_kv *kv, size_t nkv)
{
	*out = NULL;
	if (!nkv)
		return 0;
	if (!kv)
		return -EINVAL;
	for (size_t i = 0; i < nkv; i++)
		if (!kv[i].key || !kv[i].value)
			return -EINVAL;
	struct pq_owned_kv *copy = calloc(nkv, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < nkv; i++) {
		copy[i].key = pq_strdup(kv[i].key);
		copy[i].value = pq_strdup(kv[i].value);
		if (!copy[i].key || !copy[i].value) {
			pq_free_kv(copy, nkv);
			return -ENOMEM;
		}
	}
	*out = copy;
	return 0;
}

static int pq_reserve_group(struct pq_writer *w)
{
	if (w->ngroups < w->groups_cap)
		return 0;
	size_t cap = w->groups_cap ? w->groups_cap * 2 : 16;
	uint64_t *rows = realloc(w->group_rows, cap * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	w->group_rows = rows;
	struct pq_chunk *chunks = realloc(w->chunks, cap * w->ncols * sizeof(*chunks));
	if (!chunks)
		return -ENOMEM;
	w->chunks = chunks;
	w->groups_cap = cap;
	return 0;
}

/* Builds [magic if the file is new][row group if nrows][footer] and writes it in one go;
 * the writer's state changes only once the write succeeded. */
static int pq_write_tail(struct pq_writer *w, const void *const *columns, size_t nrows,
			 struct pq_owned_kv *kv, size_t nkv)
{
	size_t head = w->file_bytes == 0 ? sizeof(pq_magic) : 0, data_end;
	size_t ngroups = w->ngroups + (nrows > 0);
	int rc = pq_reserve_group(w);
	if (rc)
		return rc;
	w->out.len = 0;
	w->out.error = 0;
	w->page.error = 0;
	thrift_buf_put(&w->out, pq_magic, head);
	if (nrows) {
		w->group_rows[w->ngroups] = nrows;
		for (size_t c = 0; c < w->ncols; c++)
			pq_put_chunk(w, c, columns[c], nrows, &w->chunks[w->ngroups * w->ncols + c]);
	}
	data_end = w->out.len;
	pq_put_footer(w, ngroups, w->rows + nrows, kv ? kv : w->kv, kv ? nkv : w->nkv);
	rc = w->out.error ? w->out.error : pq_write_at(w->fd, w->out.data, w->out.len, w->file_bytes);
	if (rc)
		return rc;
	w->ngroups = ngroups;
	w->rows += nrows;
	w->data_bytes += data_end - head;
	w->dead_footer_bytes += w->footer_bytes;
	w->footer_bytes = w->out.len - data_end;
	w->file_bytes += w->out.len;
	if (kv) {
		pq_free_kv(w->kv, w->nkv);
		w->kv = kv;
		w->nkv = nkv;
	}
	return 0;
}

static int pq_flush(struct pq_writer *w, const void *const *columns, size_t nrows, const struct pq_kv *kv,
		    size_t nkv)
{
	struct pq_owned_kv *copy;
	if (!w || (nrows && !columns))
		return -EINVAL;
	for (size_t c = 0; c < w->ncols && nrows; c++)
		if (!columns[c])
			return -EINVAL;
	int rc = pq_copy_kv(&copy, kv, nkv);
	if (rc)
		return rc;
	rc = pq_write_tail(w, columns, nrows, copy, nkv);
	if (rc)
		pq_free_kv(copy, nkv);
	return rc;
}

int pq_append_row_group(struct pq_writer *w, const void *const *columns, size_t nrows,
			const struct pq_kv *kv, size_t nkv)
{
	return pq_flush(w, columns, nrows, kv, nkv);
}

int pq_rewrite_footer(struct pq_writer *w, const struct pq_kv *kv, size_t nkv)
{
	return pq_flush(w, NULL, 0, kv, nkv);
}

/* ---- lifetime ------------------------------------------------------------------- */

static int pq_check_columns(const struct pq_column_def *cols, size_t ncols)
{
	if (!cols || ncols == 0 || ncols > INT32_MAX)
		return -EINVAL;
	for (size_t c = 0; c < ncols; c++) {
		if (!cols[c].name || !cols[c].name[0])
			return -EINVAL;
		if (cols[c].type != PQ_INT32 && cols[c].type != PQ_INT64)
			return -EINVAL;
		if (cols[c].encoding != PQ_PLAIN && cols[c].encoding != PQ_DELTA_BINARY_PACKED)
			return -EINVAL;
		if (cols[c].codec != PQ_UNCOMPRESSED && cols[c].codec != PQ_SNAPPY)
			return -EINVAL;
		for (size_t d = 0; d < c; d++)
			if (strcmp(cols[c].name, cols[d].name) == 0)
				return -EINVAL;
	}
	return 0;
}

static int pq_check_fd(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode) && st.st_size != 0)
		return -ENOTEMPTY;
	return 0;
}

static int pq_copy_columns(struct pq_writer *w, const struct pq_column_def *cols, size_t ncols)
{
	w->cols = calloc(ncols, sizeof(*w->cols));
	if (!w->cols)
		return -ENOMEM;
	w->ncols = ncols;
	for (size_t c = 0; c < ncols; c++) {
		w->cols[c].name = pq_strdup(cols[c].name);
		if (!w->cols[c].name)
			return -ENOMEM;
		w->cols[c].type = cols[c].type;
		w->cols[c].encoding = cols[c].encoding;
		w->cols[c].codec = cols[c].codec;
	}
	return 0;
}

int pq_open(struct pq_writer **out, int fd, const struct pq_column_def *cols, size_t ncols,
	    const struct pq_kv *kv, size_t nkv)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	int rc = pq_check_columns(cols, ncols);
	if (rc)
		return rc;
	rc = pq_check_fd(fd);
	if (rc)
		return rc;
	struct pq_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = fd;
	thrift_buf_init(&w->out);
	thrift_buf_init(&w->page);
	thrift_buf_init(&w->zpage);
	rc = pq_copy_columns(w, cols, ncols);
	if (!rc)
		rc = pq_flush(w, NULL, 0, kv, nkv);
	if (rc) {
		pq_close(w);
		return rc;
	}
	*out = w;
	return 0;
}

uint64_t pq_rows(const struct pq_writer *w)
{
	return w->rows;
}

uint64_t pq_data_bytes(const struct pq_writer *w)
{
	return w->data_bytes;
}

uint64_t pq_dead_footer_bytes(const struct pq_writer *w)
{
	return w->dead_footer_bytes;
}

uint64_t pq_file_bytes(const struct pq_writer *w)
{
	return w->file_bytes;
}

void pq_close(struct pq_writer *w)
{
	if (!w)
		return;
	for (size_t c = 0; w->cols && c < w->ncols; c++)
		free(w->cols[c].name);
	free(w->cols);
	pq_free_kv(w->kv, w->nkv);
	free(w->group_rows);
	free(w->chunks);
	thrift_buf_free(&w->out);
	thrift_buf_free(&w->page);
	thrift_buf_free(&w->zpage);
	free(w->ztable);
	free(w);
}

/* ---- part builder (pq_part_*): row groups in memory, the caller writes the bytes ------ */

struct pq_part {
	struct pq_writer w;        /* columns, sealed groups, kv, scratch buffers; w.fd unused */
	struct thrift_buf *open;   /* [ncols]: the pages of the open row group, per column */
	int64_t *open_min, *open_max;
	uint64_t *open_raw;        /* [ncols]: the open pages' bytes with their data uncompressed */
	uint64_t open_rows;
	uint64_t sealed_end;       /* offset just after the last sealed group (4: the magic only) */
	struct thrift_buf pending; /* file bytes [pending_from, sealed_end): sealed, not yet released */
	uint64_t pending_from;
	uint64_t footer_bytes;     /* of the last image */
};

int pq_part_new(struct pq_part **out, const struct pq_column_def *cols, size_t ncols)
{
	*out = NULL;
	int rc = pq_check_columns(cols, ncols);
	if (rc)
		return rc;
	struct pq_part *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->w.fd = -1;
	thrift_buf_init(&p->w.out);
	thrift_buf_init(&p->w.page);
	thrift_buf_init(&p->w.zpage);
	thrift_buf_init(&p->pending);
	p->open = calloc(ncols, sizeof(*p->open));
	p->open_min = calloc(ncols, sizeof(*p->open_min));
	p->open_max = calloc(ncols, sizeof(*p->open_max));
	p->open_raw = calloc(ncols, sizeof(*p->open_raw));
	rc = p->open && p->open_min && p->open_max && p->open_raw ? pq_copy_columns(&p->w, cols, ncols) : -ENOMEM;
	for (size_t c = 0; p->open && c < ncols; c++)
		thrift_buf_init(&p->open[c]);
	p->sealed_end = p->pending_from = sizeof(pq_magic);
	if (rc) {
		pq_part_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* Appends pages with nrows more values of every column to the open row group. */
int pq_part_add(struct pq_part *p, const void *const *columns, size_t nrows)
{
	struct pq_writer *w = &p->w;
	for (size_t c = 0; c < w->ncols && nrows; c++) {
		const struct pq_column *col = &w->cols[c];
		size_t width = pq_width(col->type);
		int64_t lo, hi;
		for (size_t first = 0; first < nrows; first += PQ_PAGE_VALUES) {
			size_t n = nrows - first < PQ_PAGE_VALUES ? nrows - first : PQ_PAGE_VALUES;
			pq_put_page(w, col, (const uint8_t *)columns[c] + first * width, n, &p->open[c]);
			p->open_raw[c] += w->page_raw;
		}
		if (p->open[c].error)
			return p->open[c].error;
		pq_min_max(columns[c], col->type, nrows, &lo, &hi);
		p->open_min[c] = p->open_rows == 0 || lo < p->open_min[c] ? lo : p->open_min[c];
		p->open_max[c] = p->open_rows == 0 || hi > p->open_max[c] ? hi : p->open_max[c];
	}
	p->open_rows += nrows;
	return 0;
}

/* The open group's chunks as they lie from sealed_end, into the slot after the sealed groups. */
static void pq_part_place_open(struct pq_part *p)
{
	struct pq_writer *w = &p->w;
	uint64_t offset = p->sealed_end;
	w->group_rows[w->ngroups] = p->open_rows;
	for (size_t c = 0; c < w->ncols; c++) {
		struct pq_chunk *chunk = &w->chunks[w->ngroups * w->ncols + c];
		*chunk = (struct pq_chunk){offset, p->open[c].len, p->open_raw[c], p->open_min[c], p->open_max[c]};
		offset += p->open[c].len;
	}
}

int pq_part_seal(struct pq_part *p)
{
	struct pq_writer *w = &p->w;
	if (p->open_rows == 0)
		return 0;
	int rc = pq_reserve_group(w);
	if (rc)
		return rc;
	pq_part_place_open(p);
	for (size_t c = 0; c < w->ncols; c++) {
		thrift_buf_put(&p->pending, p->open[c].data, p->open[c].len);
		w->data_bytes += p->open[c].len;
		p->sealed_end += p->open[c].len;
		p->open[c].len = 0;
		p->open_raw[c] = 0;
	}
	if (p->pending.error)
		return p->pending.error;
	w->ngroups++;
	w->rows += p->open_rows;
	p->open_rows = 0;
	return 0;
}

int pq_part_image(struct pq_part *p, uint64_t from, const struct pq_kv *kv, size_t nkv, const uint8_t **data,
		  size_t *len)
{
	struct pq_writer *w = &p->w;
	uint64_t start = from ? from : sizeof(pq_magic);
	if (start < p->pending_from || start > p->sealed_end)
		return -EINVAL;
	struct pq_owned_kv *copy;
	int rc = pq_copy_kv(&copy, kv, nkv);
	if (!rc && (rc = pq_reserve_group(w)))
		pq_free_kv(copy, nkv);
	if (rc)
		return rc;
	if (nkv) {
		pq_free_kv(w->kv, w->nkv);
		w->kv = copy;
		w->nkv = nkv;
	}
	w->out.len = 0;
	w->out.error = 0;
	thrift_buf_put(&w->out, pq_magic, from ? 0 : sizeof(pq_magic));
	thrift_buf_put(&w->out, p->pending.data + (start - p->pending_from), p->sealed_end - start);
	pq_part_place_open(p);
	for (size_t c = 0; c < w->ncols; c++)
		thrift_buf_put(&w->out, p->open[c].data, p->open[c].len);
	size_t footer_start = w->out.len;
	pq_put_footer(w, w->ngroups + (p->open_rows > 0), w->rows + p->open_rows, w->kv, w->nkv);
	if (w->out.error)
		return w->out.error;
	p->footer_bytes = w->out.len - footer_start;
	*data = w->out.data;
	*len = w->out.len;
	return 0;
}

void pq_part_release(struct pq_part *p, uint64_t upto)
{
	if (upto <= p->pending_from || upto > p->sealed_end)
		return;
	size_t drop = upto - p->pending_from;
	memmove(p->pending.data, p->pending.data + drop, p->pending.len - drop);
	p->pending.len -= drop;
	p->pending_from = upto;
}

uint64_t pq_part_rows(const struct pq_part *p) { return p->w.rows + p->open_rows; }
uint64_t pq_part_open_rows(const struct pq_part *p) { return p->open_rows; }
uint64_t pq_part_sealed_end(const struct pq_part *p) { return p->sealed_end; }
size_t pq_part_groups(const struct pq_part *p) { return p->w.ngroups + (p->open_rows > 0); }
uint64_t pq_part_footer_bytes(const struct pq_part *p) { return p->footer_bytes; }

uint64_t pq_part_data_bytes(const struct pq_part *p)
{
	uint64_t open = 0;
	for (size_t c = 0; c < p->w.ncols; c++)
		open += p->open[c].len;
	return p->w.data_bytes + open;
}

void pq_part_free(struct pq_part *p)
{
	if (!p)
		return;
	for (size_t c = 0; p->open && c < p->w.ncols; c++)
		thrift_buf_free(&p->open[c]);
	free(p->open);
	free(p->open_min);
	free(p->open_max);
	free(p->open_raw);
	thrift_buf_free(&p->pending);
	for (size_t c = 0; p->w.cols && c < p->w.ncols; c++)
		free(p->w.cols[c].name);
	free(p->w.cols);
	pq_free_kv(p->w.kv, p->w.nkv);
	free(p->w.group_rows);
	free(p->w.chunks);
	thrift_buf_free(&p->w.out);
	thrift_buf_free(&p->w.page);
	thrift_buf_free(&p->w.zpage);
	free(p->w.ztable);
	free(p);
}
