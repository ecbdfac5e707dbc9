/* test_parquet.c — unit tests of thrift.c and parquet.c, and a driver for the Python
 * tests and benchmarks (not part of the capture binary: CMake skips test_*.c).
 *
 *   test_parquet                      unit tests; prints "N passed, M failed"
 *   test_parquet OUTDIR               unit tests, then file cases written to OUTDIR, listed
 *                                     in OUTDIR/manifest.tsv for tests/capture/test_parquet_encoder.py
 *   test_parquet delta IN.bin OUT.bin int32|int64
 *                                     DELTA_BINARY_PACKED stream of the raw little-endian values
 *   test_parquet encode OUT.parquet ROWS_PER_GROUP NAME:int32|int64:plain|delta:IN.bin ...
 *                                     a Parquet file; prints "rows=R bytes=B seconds=S" (S: encode
 *                                     and write only, inputs already in memory)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "parquet.h"
#include "thrift.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int passed, failed;

static uint64_t test_random(void);
static int64_t test_as_int64(uint64_t u);

#define CHECK(cond) test_check((cond), #cond, __LINE__)

static int test_check(int ok, const char *what, int line)
{
	if (ok) {
		passed++;
	} else {
		failed++;
		fprintf(stderr, "test_parquet.c:%d: FAILED: %s\n", line, what);
	}
	return ok;
}

static void test_hex(const char *label, const uint8_t *p, size_t n)
{
	fprintf(stderr, "  %s (%zu bytes):", label, n);
	for (size_t i = 0; i < n && i < 64; i++)
		fprintf(stderr, " %02x", p[i]);
	fprintf(stderr, n > 64 ? " ...\n" : "\n");
}

#define CHECK_BYTES(got, got_n, ...) \
	test_check_bytes((got), (got_n), (const uint8_t[]){ __VA_ARGS__ }, \
			 sizeof((const uint8_t[]){ __VA_ARGS__ }), __LINE__)

static void test_check_bytes(const uint8_t *got, size_t got_n, const uint8_t *want, size_t want_n, int line)
{
	if (test_check(got_n == want_n && memcmp(got, want, want_n) == 0, "bytes as expected", line))
		return;
	test_hex("got ", got, got_n);
	test_hex("want", want, want_n);
}

/* ---- thrift compact protocol -------------------------------------------------------- */

static void test_varint_zigzag(void)
{
	uint8_t b[10];
	CHECK_BYTES(b, thrift_uvarint(b, 0), 0x00);
	CHECK_BYTES(b, thrift_uvarint(b, 127), 0x7f);
	CHECK_BYTES(b, thrift_uvarint(b, 128), 0x80, 0x01);
	CHECK_BYTES(b, thrift_uvarint(b, 300), 0xac, 0x02);
	CHECK_BYTES(b, thrift_uvarint(b, UINT64_MAX), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
	CHECK(thrift_zigzag64(0) == 0);
	CHECK(thrift_zigzag64(-1) == 1);
	CHECK(thrift_zigzag64(1) == 2);
	CHECK(thrift_zigzag64(-2) == 3);
	CHECK(thrift_zigzag64(INT32_MIN) == 0xffffffffu);
	CHECK(thrift_zigzag64(INT64_MAX) == UINT64_MAX - 1);
	CHECK(thrift_zigzag64(INT64_MIN) == UINT64_MAX);
}

static void test_thrift_fields(void)
{
	struct thrift_buf b;
	struct thrift_writer t;
	thrift_buf_init(&b);
	thrift_writer_init(&t, &b);
	thrift_struct_begin(&t);
	thrift_field_i32(&t, 1, 5);            /* delta 1, type 5: 0x15, zigzag 10 */
	thrift_field_i64(&t, 20, -1);          /* delta 19 > 15: long form 0x06, zigzag id 40 */
	thrift_field_string(&t, 21, "ab");     /* delta 1, binary: 0x18 */
	thrift_field_struct_begin(&t, 22);     /* 0x1c, nested ids restart at 0 */
	thrift_field_bool(&t, 1, 1);           /* 0x11 */
	thrift_field_bool(&t, 2, 0);           /* 0x12 */
	thrift_struct_end(&t);                 /* 0x00 */
	thrift_field_list_begin(&t, 23, THRIFT_I32, 3); /* outer last id is 22 again: 0x19, 0x35 */
	thrift_list_i32(&t, 1);
	thrift_list_i32(&t, -1);
	thrift_list_i32(&t, 64);               /* zigzag 128: 0x80 0x01 */
	thrift_field_list_begin(&t, 24, THRIFT_STRUCT, 15); /* size >= 15: 0xfc then varint 15 */
	thrift_field_i32(&t, 2, 0);            /* back from 24 to 2: long form */
	thrift_struct_end(&t);
	CHECK(b.error == 0);
	CHECK_BYTES(b.data, b.len, 0x15, 0x0a, 0x06, 0x28, 0x01, 0x18, 0x02, 'a', 'b', 0x1c, 0x11, 0x12, 0x00,
		    0x19, 0x35, 0x02, 0x01, 0x80, 0x01, 0x19, 0xfc, 0x0f, 0x05, 0x04, 0x00, 0x00);
	thrift_buf_free(&b);
}

/* ---- DELTA_BINARY_PACKED -------------------------------------------------------------- */

static size_t test_delta(uint8_t *out, const void *values, size_t n, enum pq_type type)
{
	size_t len = pq_delta_encode(out, values, n, type);
	CHECK(len <= pq_delta_bound(n));
	return len;
}

/* The spec's examples (Encodings.md), re-done with the real layout: block 128, 4 miniblocks. */
static void test_delta_spec_examples(void)
{
	uint8_t out[2048];
	const int64_t ex1[] = { 1, 2, 3, 4, 5 };
	/* header 128, 4, 5 values, first 1 (zigzag 2); min delta 1 (zigzag 2); widths all 0 */
	CHECK_BYTES(out, test_delta(out, ex1, 5, PQ_INT64), 0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0, 0, 0, 0);
	const int32_t ex2[] = { 7, 5, 3, 1, 2, 3, 4, 5 };
	/* deltas -2 -2 -2 1 1 1 1: min -2 (zigzag 3), relative 0 0 0 3 3 3 3 on 2 bits,
	 * padded to 32 values = 8 bytes: 0b11000000, 0b00111111 */
	CHECK_BYTES(out, test_delta(out, ex2, 8, PQ_INT32), 0x80, 0x01, 0x04, 0x08, 0x0e, 0x03, 0x02, 0, 0, 0,
		    0xc0, 0x3f, 0, 0, 0, 0, 0, 0);
	/* relative deltas 0..7 on 3 bits: the spec's bit-packing example 10001000 11000110 11111010 */
	const int64_t ramp[] = { 0, 0, 1, 3, 6, 10, 15, 21, 28 };
	CHECK_BYTES(out, test_delta(out, ramp, 9, PQ_INT64), 0x80, 0x01, 0x04, 0x09, 0x00, 0x00, 0x03, 0, 0, 0,
		    0x88, 0xc6, 0xfa, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	const int64_t one[] = { -3 };
	CHECK_BYTES(out, test_delta(out, one, 1, PQ_INT64), 0x80, 0x01, 0x04, 0x01, 0x05);
	CHECK_BYTES(out, test_delta(out, NULL, 0, PQ_INT64), 0x80, 0x01, 0x04, 0x00, 0x00);
}

static void test_delta_int64_extremes(void)
{
	uint8_t out[2048];
	/* MAX - MIN wraps to -1: min delta -1 (zigzag 1), width 0 */
	const int64_t a[] = { INT64_MIN, INT64_MAX };
	CHECK_BYTES(out, test_delta(out, a, 2, PQ_INT64), 0x80, 0x01, 0x04, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff,
		    0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0, 0, 0, 0);
	/* deltas MAX and -MAX: min -MAX (zigzag 2^64-3), relative 2^64-2 and 0: width 64 */
	const int64_t b[] = { 0, INT64_MAX, 0 };
	size_t len = test_delta(out, b, 3, PQ_INT64);
	CHECK(len == 5 + 10 + 4 + 32 * 8);
	CHECK_BYTES(out, 31, 0x80, 0x01, 0x04, 0x03, 0x00, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		    0x01, 64, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0);
	int zeros = 1;
	for (size_t i = 31; i < len; i++)
		zeros &= out[i] == 0;
	CHECK(zeros);
}

static void test_delta_int32_extremes(void)
{
	uint8_t out[2048];
	/* In 32 bits MAX - MIN wraps to -1 (64-bit arithmetic would give 2^32-1) */
	const int32_t a[] = { INT32_MIN, INT32_MAX };
	CHECK_BYTES(out, test_delta(out, a, 2, PQ_INT32), 0x80, 0x01, 0x04, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f,
		    0x01, 0, 0, 0, 0);
	/* deltas MAX and -MAX: min -MAX (zigzag 2^32-3), relative 2^32-2: width 32, never more */
	const int32_t b[] = { 0, INT32_MAX, 0 };
	size_t len = test_delta(out, b, 3, PQ_INT32);
	CHECK(len == 5 + 5 + 4 + 32 * 4);
	CHECK_BYTES(out, 21, 0x80, 0x01, 0x04, 0x03, 0x00, 0xfd, 0xff, 0xff, 0xff, 0x0f, 32, 0, 0, 0, 0xfe, 0xff,
		    0xff, 0xff, 0, 0, 0);
}

/* 129 values: 128 deltas fill exactly one block (4 miniblocks), no second block. */
static void test_delta_block_boundary(void)
{
	static int64_t v[258];
	static uint8_t out[8192];
	for (int i = 0; i < 258; i++)
		v[i] = (int64_t)i * 3;
	/* header 5 bytes (count 129 = 0x81 0x01), min 3 (zigzag 6), widths 0: 5+1+4 */
	CHECK_BYTES(out, test_delta(out, v, 129, PQ_INT64), 0x80, 0x01, 0x04, 0x81, 0x01, 0x00, 0x06, 0, 0, 0, 0);
	/* 130 values: a second block with one delta in one miniblock */
	CHECK(test_delta(out, v, 130, PQ_INT64) == 11 + 1 + 4);
	/* 257 values: two full blocks */
	CHECK(test_delta(out, v, 257, PQ_INT64) == 6 + 2 * 5);
}

/* A deliberately naive reference decoder (bit by bit) for the widths test. Returns the
 * number of values decoded; *max_width gets the widest miniblock seen. */
static uint64_t test_read_uvarint(const uint8_t **p)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		uint8_t byte = *(*p)++;
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
	}
}

static int64_t test_read_zigzag(const uint8_t **p)
{
	uint64_t u = test_read_uvarint(p);
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static size_t test_delta_decode(const uint8_t *p, uint64_t *out, uint64_t mask, unsigned *max_width)
{
	uint64_t block = test_read_uvarint(&p), minis = test_read_uvarint(&p), n = test_read_uvarint(&p);
	uint64_t per_mini = block / minis, value = (uint64_t)test_read_zigzag(&p) & mask;
	size_t got = 0;
	*max_width = 0;
	if (n)
		out[got++] = value;
	while (got < n) {
		uint64_t min = (uint64_t)test_read_zigzag(&p);
		const uint8_t *widths = p;
		p += minis;
		for (uint64_t m = 0; m < minis && got < n; m++) {
			*max_width = widths[m] > *max_width ? widths[m] : *max_width;
			for (uint64_t i = 0, bit = 0; i < per_mini; i++) {
				uint64_t rel = 0;
				for (unsigned b = 0; b < widths[m]; b++, bit++)
					rel |= (uint64_t)(p[bit / 8] >> (bit % 8) & 1) << b;
				if (got < n) {
					value = (value + min + rel) & mask;
					out[got++] = value;
				}
			}
			p += per_mini * widths[m] / 8;
		}
	}
	return got;
}

/* A delta for value i of a 129-value (one-block) sequence such that every miniblock's
 * frame of reference is exactly w bits wide: each miniblock holds one delta at the bottom
 * and one at the top of the range (at w == the type's width: its MIN and MAX). */
static uint64_t test_width_delta(size_t i, unsigned w, unsigned bits)
{
	uint64_t mask = w == 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1, low = 0, high = mask;
	if (w == bits) {
		low = UINT64_C(1) << (bits - 1);
		high = low - 1;
	}
	if (i % 32 == 1)
		return low;
	if (i % 32 == 2)
		return high;
	return w == bits ? test_random() : test_random() & mask;
}

static int test_widths_decode(const uint8_t *out, const uint64_t *want, uint64_t mask, unsigned w)
{
	static uint64_t decoded[129];
	unsigned width;
	int same = test_delta_decode(out, decoded, mask, &width) == 129 && width == w;
	for (size_t i = 0; same && i < 129; i++)
		same = decoded[i] == (want[i] & mask);
	return same;
}

/* Every bit width 0..64 (INT64) and 0..32 (INT32) occurs and decodes with the naive decoder. */
static void test_delta_all_widths(void)
{
	static int64_t v64[129];
	static int32_t v32[129];
	static uint64_t want[129];
	static uint8_t out[4096];
	for (unsigned w = 0; w <= 64; w++) {
		uint64_t acc = 0x0123456789abcdefu;
		for (size_t i = 0; i < 129; i++) {
			acc += i ? test_width_delta(i, w, 64) : 0;
			v64[i] = test_as_int64(acc);
			want[i] = acc;
		}
		/* header 5 + first value (zigzag 0x02468acf13579bde: 9 bytes) + min delta (0, or
		 * INT64_MIN at w = 64: 10 bytes) + 4 widths + 4 miniblocks of 4 * w bytes */
		size_t len = test_delta(out, v64, 129, PQ_INT64);
		if (!CHECK(test_widths_decode(out, want, UINT64_MAX, w) && len == 5 + 9 + (w == 64 ? 10 : 1) + 4 + 16 * w))
			fprintf(stderr, "  int64 width %u: length %zu\n", w, len);
		if (w > 32)
			continue;
		uint32_t acc32 = 0x89abcdefu;
		for (size_t i = 0; i < 129; i++) {
			acc32 += i ? (uint32_t)test_width_delta(i, w, 32) : 0;
			v32[i] = acc32 < 0x80000000u ? (int32_t)acc32 : (int32_t)(acc32 - 0x80000000u) + INT32_MIN;
			want[i] = acc32;
		}
		len = test_delta(out, v32, 129, PQ_INT32);
		if (!CHECK(test_widths_decode(out, want, UINT32_MAX, w)))
			fprintf(stderr, "  int32 width %u: length %zu\n", w, len);
	}
}

/* ---- helpers for files ----------------------------------------------------------------- */

static uint64_t test_rng = 0x9e3779b97f4a7c15u;

static uint64_t test_random(void)
{
	/* splitmix64: deterministic, so every run writes the same files */
	uint64_t z = (test_rng += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static int64_t test_as_int64(uint64_t u)
{
	int64_t v;
	memcpy(&v, &u, sizeof(v)); /* two's complement reinterpretation */
	return v;
}

static size_t test_width(enum pq_type type)
{
	return type == PQ_INT32 ? 4 : 8;
}

static const char *test_type_name(enum pq_type type)
{
	return type == PQ_INT32 ? "int32" : "int64";
}

static const char *test_encoding_name(enum pq_encoding encoding)
{
	return encoding == PQ_PLAIN ? "plain" : "delta";
}

static int test_write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -errno;
	size_t done = fwrite(p, 1, n, f);
	int rc = fclose(f);
	return done == n && rc == 0 ? 0 : -EIO;
}

static int test_copy_file(const char *from, const char *to)
{
	static char buf[1 << 16];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n = 0;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	int ok = in >= 0 && out >= 0 && n == 0;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok ? 0 : -EIO;
}

/* The layout invariant: PAR1 ... footer len PAR1, the footer being what remains of the
 * file after the first magic, the row-group data and the dead footers. */
static void test_check_layout(int fd, const struct pq_writer *w)
{
	struct stat st;
	uint8_t head[4], tail[8];
	CHECK(fstat(fd, &st) == 0 && (uint64_t)st.st_size == pq_file_bytes(w));
	CHECK(pread(fd, head, 4, 0) == 4 && memcmp(head, "PAR1", 4) == 0);
	CHECK(pread(fd, tail, 8, st.st_size - 8) == 8 && memcmp(tail + 4, "PAR1", 4) == 0);
	uint32_t footer = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
			  (uint32_t)tail[3] << 24;
	CHECK(footer + 8 + 4 + pq_data_bytes(w) + pq_dead_footer_bytes(w) == pq_file_bytes(w));
}

/* A file case: columns with all their values, appended in groups of the given sizes. */
struct test_case {
	const char *name;
	size_t ncols;
	struct pq_column_def defs[12];
	void *values[12];
	size_t ngroups;
	size_t groups[8]; /* rows per append; 0 = footer-only flush */
	int snapshots;    /* copy the file after open and after every append */
	const struct pq_kv *kv;
	size_t nkv;
};

static size_t test_case_rows(const struct test_case *tc)
{
	size_t rows = 0;
	for (size_t g = 0; g < tc->ngroups; g++)
		rows += tc->groups[g];
	return rows;
}

static void test_write_bins(const char *dir, const struct test_case *tc)
{
	char path[4096];
	size_t rows = test_case_rows(tc);
	for (size_t c = 0; c < tc->ncols; c++) {
		snprintf(path, sizeof(path), "%s/%s.%s.bin", dir, tc->name, tc->defs[c].name);
		CHECK(test_write_file(path, tc->values[c], rows * test_width(tc->defs[c].type)) == 0);
	}
}

/* manifest.tsv: file, rows, row-group sizes (comma-separated), columns as
 * name:type:encoding:values.bin separated by ';'. The .bin holds the case's values;
 * a snapshot holds its first `rows`. */
static void test_manifest(FILE *m, const char *file, const struct test_case *tc, size_t upto_group)
{
	size_t rows = 0;
	const char *sep = "";
	fprintf(m, "%s\t", file);
	for (size_t g = 0; g < upto_group; g++)
		rows += tc->groups[g];
	fprintf(m, "%zu\t", rows);
	for (size_t g = 0; g < upto_group; g++) {
		if (tc->groups[g] == 0)
			continue;
		fprintf(m, "%s%zu", sep, tc->groups[g]);
		sep = ",";
	}
	fprintf(m, "\t");
	for (size_t c = 0; c < tc->ncols; c++)
		fprintf(m, "%s%s:%s:%s:%s.%s.bin", c ? ";" : "", tc->defs[c].name, test_type_name(tc->defs[c].type),
			test_encoding_name(tc->defs[c].encoding), tc->name, tc->defs[c].name);
	fprintf(m, "\n");
}

static void test_snapshot(const char *dir, FILE *m, const struct test_case *tc, size_t upto_group)
{
	char from[4096], to[4096], file[512];
	snprintf(file, sizeof(file), "%s.step%zu.parquet", tc->name, upto_group);
	snprintf(from, sizeof(from), "%s/%s.parquet", dir, tc->name);
	snprintf(to, sizeof(to), "%s/%s", dir, file);
	CHECK(test_copy_file(from, to) == 0);
	test_manifest(m, file, tc, upto_group);
}

static void test_append_group(struct pq_writer *w, const struct test_case *tc, size_t first, size_t rows)
{
	const void *cols[12];
	for (size_t c = 0; c < tc->ncols; c++)
		cols[c] = (const uint8_t *)tc->values[c] + first * test_width(tc->defs[c].type);
	uint64_t before = pq_rows(w);
	CHECK(pq_append_row_group(w, cols, rows, tc->kv, tc->nkv) == 0);
	CHECK(pq_rows(w) == before + rows);
}

static void test_run_case(const char *dir, FILE *m, const struct test_case *tc)
{
	char path[4096], file[512];
	struct pq_writer *w = NULL;
	snprintf(file, sizeof(file), "%s.parquet", tc->name);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	/* The writer needs only a write-only fd, as the capture opens it; checks read through rfd. */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), rfd = open(path, O_RDONLY);
	if (!CHECK(fd >= 0 && rfd >= 0) || !CHECK(pq_open(&w, fd, tc->defs, tc->ncols, tc->kv, tc->nkv) == 0))
		return;
	test_check_layout(rfd, w);
	if (tc->snapshots)
		test_snapshot(dir, m, tc, 0);
	size_t first = 0;
	for (size_t g = 0; g < tc->ngroups; g++) {
		test_append_group(w, tc, first, tc->groups[g]);
		first += tc->groups[g];
		test_check_layout(rfd, w);
		if (tc->snapshots)
			test_snapshot(dir, m, tc, g + 1);
	}
	pq_close(w);
	close(fd);
	close(rfd);
	test_write_bins(dir, tc);
	test_manifest(m, file, tc, tc->ngroups);
}

static void *test_alloc_values(size_t rows, enum pq_type type)
{
	void *p = calloc(rows ? rows : 1, test_width(type));
	if (!p) {
		fprintf(stderr, "test_parquet: out of memory\n");
		exit(2);
	}
	return p;
}

static void test_add_column(struct test_case *tc, const char *name, enum pq_type type, enum pq_encoding enc)
{
	tc->defs[tc->ncols] = (struct pq_column_def){ name, type, enc, PQ_UNCOMPRESSED };
	tc->values[tc->ncols] = test_alloc_values(test_case_rows(tc), type);
	tc->ncols++;
}

static void test_free_case(struct test_case *tc)
{
	for (size_t c = 0; c < tc->ncols; c++)
		free(tc->values[c]);
}

/* ---- file cases ---------------------------------------------------------------------- */

/* Capture-like columns: 4 interleaved threads at 1 ms, a TSC that crosses 2^63 (so its
 * int64 view wraps from INT64_MAX to INT64_MIN), cumulative counters. */
static void test_fill_capture_like(struct test_case *tc)
{
	size_t rows = test_case_rows(tc);
	int32_t *cpu = tc->values[0], *thread = tc->values[1], *run_cpu = tc->values[6], *read_cycles = tc->values[7];
	int64_t *seq = tc->values[2], *expected = tc->values[3], *actual = tc->values[4], *tsc = tc->values[5];
	int64_t *aperf = tc->values[8], *mperf = tc->values[9];
	uint64_t tsc_now = (uint64_t)INT64_MAX - 2400000000u, aperf_now = 0, mperf_now = 0;
	for (size_t i = 0; i < rows; i++) {
		thread[i] = (int32_t)(i % 4);
		cpu[i] = thread[i] + 2;
		seq[i] = (int64_t)(i / 4);
		expected[i] = 5000000000 + seq[i] * 1000000;
		actual[i] = expected[i] + 2000 + (int64_t)(test_random() % 50000);
		tsc_now += 600000 + test_random() % 1000;
		tsc[i] = test_as_int64(tsc_now);
		run_cpu[i] = (test_random() % 1000) ? cpu[i] : cpu[i] + 1;
		read_cycles[i] = (int32_t)(100 + test_random() % 5000);
		aperf_now += test_random() % 2000000;
		mperf_now += 2000000;
		aperf[i] = test_as_int64(aperf_now);
		mperf[i] = test_as_int64(mperf_now);
	}
}

static void test_capture_columns(struct test_case *tc)
{
	test_add_column(tc, "cpu", PQ_INT32, PQ_PLAIN);
	test_add_column(tc, "thread", PQ_INT32, PQ_DELTA_BINARY_PACKED);
	test_add_column(tc, "seq", PQ_INT64, PQ_DELTA_BINARY_PACKED);
	test_add_column(tc, "expected_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED);
	test_add_column(tc, "actual_ns", PQ_INT64, PQ_DELTA_BINARY_PACKED);
	test_add_column(tc, "tsc", PQ_INT64, PQ_DELTA_BINARY_PACKED);
	test_add_column(tc, "run_cpu", PQ_INT32, PQ_DELTA_BINARY_PACKED);
	test_add_column(tc, "read_cycles", PQ_INT32, PQ_PLAIN);
	test_add_column(tc, "aperf", PQ_INT64, PQ_DELTA_BINARY_PACKED);
	test_add_column(tc, "mperf", PQ_INT64, PQ_PLAIN);
	test_fill_capture_like(tc);
}

static void test_case_capture(const char *dir, FILE *m, const char *name, const size_t *groups, size_t ngroups,
			      int snapshots)
{
	struct test_case tc = { .name = name, .ngroups = ngroups, .snapshots = snapshots };
	memcpy(tc.groups, groups, ngroups * sizeof(*groups));
	test_capture_columns(&tc);
	test_run_case(dir, m, &tc);
	test_free_case(&tc);
}

/* Values that break naive delta encoders: extremes next to each other, full-range random
 * jumps (every delta overflows half the time), a walk across the wrap point, constants. */
static int64_t test_extreme_value(size_t i, int64_t lo, int64_t hi, int64_t *walk)
{
	static const size_t pattern_len = 15;
	const int64_t pool[] = { lo, lo + 1, -1, 0, 1, hi - 1, hi };
	const int64_t pattern[] = { hi, lo, 0, -1, hi, hi, lo, lo, hi, -1, 0, lo, 1, hi - 1, lo + 1 };
	uint64_t span = (uint64_t)hi - (uint64_t)lo;
	if (i < pattern_len)
		return pattern[i];
	if (i < 300)
		return pool[test_random() % 7];
	if (i < 600) /* uniform over the whole type: lo + r mod (span + 1) */
		return test_as_int64((uint64_t)lo + (span == UINT64_MAX ? test_random() : test_random() % (span + 1)));
	if (i < 700)
		return hi;
	if (i == 700)
		*walk = hi - 150;
	else /* +1 steps in the type's arithmetic: hi + 1 wraps to lo */
		*walk = *walk == hi ? lo : *walk + 1;
	return *walk;
}

static void test_case_extremes(const char *dir, FILE *m, const char *name, enum pq_type type)
{
	struct test_case tc = { .name = name, .ngroups = 3, .groups = { 1000, 129, 1 } };
	test_add_column(&tc, "delta", type, PQ_DELTA_BINARY_PACKED);
	test_add_column(&tc, "plain", type, PQ_PLAIN);
	int64_t lo = type == PQ_INT32 ? INT32_MIN : INT64_MIN, hi = type == PQ_INT32 ? INT32_MAX : INT64_MAX, walk = 0;
	for (size_t i = 0; i < test_case_rows(&tc); i++) {
		int64_t v = test_extreme_value(i % 1000, lo, hi, &walk);
		if (type == PQ_INT32) {
			((int32_t *)tc.values[0])[i] = (int32_t)v;
			((int32_t *)tc.values[1])[i] = (int32_t)v;
		} else {
			((int64_t *)tc.values[0])[i] = v;
			((int64_t *)tc.values[1])[i] = v;
		}
	}
	test_run_case(dir, m, &tc);
	test_free_case(&tc);
}

/* Metadata with JSON and UTF-8; the final footer replaces it (pq_rewrite_footer). The
 * Python test knows these strings. */
static const struct pq_kv test_kv_running[] = {
	{ "jitterscope.schema_version", "1" },
	{ "jitterscope.kind", "\"capture\"" },
	{ "jitterscope.environment", "{\"hostname\": \"b\xc3\xbcro-\xcf\x80\", \"cpu_model\": "
				     "\"Intel\xc2\xae Core\xe2\x84\xa2 \\\"K\\\"\\n\", \"hz\": null}" },
	{ "jitterscope.status", "{\"state\": \"running\", \"reason\": \"\", \"flushes\": 1}" },
};
static const struct pq_kv test_kv_complete[] = {
	{ "jitterscope.schema_version", "1" },
	{ "jitterscope.kind", "\"capture\"" },
	{ "jitterscope.environment", "{\"hostname\": \"b\xc3\xbcro-\xcf\x80\", \"cpu_model\": "
				     "\"Intel\xc2\xae Core\xe2\x84\xa2 \\\"K\\\"\\n\", \"hz\": null}" },
	{ "jitterscope.status", "{\"state\": \"complete\", \"reason\": \"duration reached\", \"flushes\": 2}" },
};

static void test_case_kv(const char *dir, FILE *m)
{
	char path[4096];
	struct test_case tc = { .name = "kv", .ngroups = 1, .groups = { 10 }, .kv = test_kv_running, .nkv = 4 };
	test_add_column(&tc, "x", PQ_INT64, PQ_DELTA_BINARY_PACKED);
	for (size_t i = 0; i < 10; i++)
		((int64_t *)tc.values[0])[i] = (int64_t)(i * i) - 7;
	test_run_case(dir, m, &tc);
	/* The same rows again, then the final status through pq_rewrite_footer. */
	snprintf(path, sizeof(path), "%s/kv_final.parquet", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	struct pq_writer *w = NULL;
	const void *cols[1] = { tc.values[0] };
	CHECK(fd >= 0 && pq_open(&w, fd, tc.defs, 1, test_kv_running, 4) == 0);
	CHECK(w && pq_append_row_group(w, cols, 10, NULL, 0) == 0); /* nkv 0: keeps the metadata */
	uint64_t before = w ? pq_file_bytes(w) : 0;
	CHECK(w && pq_rewrite_footer(w, test_kv_complete, 4) == 0);
	CHECK(w && pq_rows(w) == 10 && pq_file_bytes(w) > before);
	if (w)
		test_check_layout(fd, w);
	pq_close(w);
	close(fd);
	tc.name = "kv_final";
	test_write_bins(dir, &tc);
	test_manifest(m, "kv_final.parquet", &tc, 1);
	test_free_case(&tc);
}

/* ---- a failed write ---------------------------------------------------------------------- */

static int test_set_fsize_limit(rlim_t limit)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) < 0)
		return -errno;
	rl.rlim_cur = limit == RLIM_INFINITY || limit > rl.rlim_max ? rl.rlim_max : limit;
	return setrlimit(RLIMIT_FSIZE, &rl) < 0 ? -errno : 0;
}

/* In a child process: RLIMIT_FSIZE just above the file makes the next append fail with
 * EFBIG after a partial write (SIGXFSZ ignored). The file must be cut back to its last
 * valid length; after lifting the limit the same writer appends again. Exit status is
 * the number of failed checks. */
static int test_failed_write_child(const char *dir, const struct test_case *tc)
{
	char path[4096], copy[4096];
	struct pq_writer *w = NULL;
	snprintf(path, sizeof(path), "%s/%s.parquet", dir, tc->name);
	snprintf(copy, sizeof(copy), "%s/%s.after_error.parquet", dir, tc->name);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	passed = failed = 0; /* count this process's checks only */
	signal(SIGXFSZ, SIG_IGN);
	if (!CHECK(fd >= 0) || !CHECK(pq_open(&w, fd, tc->defs, tc->ncols, NULL, 0) == 0))
		return failed;
	test_append_group(w, tc, 0, tc->groups[0]);
	uint64_t valid = pq_file_bytes(w), rows = pq_rows(w), dead = pq_dead_footer_bytes(w);
	CHECK(test_set_fsize_limit(valid + 3000) == 0);
	const void *cols[2] = { tc->values[0], tc->values[1] };
	CHECK(pq_append_row_group(w, cols, 5000, NULL, 0) == -EFBIG);
	CHECK(pq_file_bytes(w) == valid && pq_rows(w) == rows && pq_dead_footer_bytes(w) == dead);
	test_check_layout(fd, w);
	CHECK(test_copy_file(path, copy) == 0);
	/* a footer-only write that does not fit either */
	CHECK(test_set_fsize_limit(valid + 10) == 0);
	CHECK(pq_rewrite_footer(w, test_kv_running, 4) == -EFBIG);
	CHECK(pq_file_bytes(w) == valid && pq_dead_footer_bytes(w) == dead);
	test_check_layout(fd, w);
	CHECK(test_set_fsize_limit(RLIM_INFINITY) == 0);
	test_append_group(w, tc, tc->groups[0], tc->groups[1]);
	test_check_layout(fd, w);
	pq_close(w);
	close(fd);
	return failed;
}

static void test_case_failed_write(const char *dir, FILE *m)
{
	struct test_case tc = { .name = "failed_write", .ngroups = 2, .groups = { 1000, 500 } };
	test_add_column(&tc, "v", PQ_INT64, PQ_DELTA_BINARY_PACKED);
	test_add_column(&tc, "w", PQ_INT32, PQ_PLAIN);
	size_t n = 5000; /* the failing append reads this many rows from the start */
	free(tc.values[0]);
	free(tc.values[1]);
	tc.values[0] = test_alloc_values(n, PQ_INT64);
	tc.values[1] = test_alloc_values(n, PQ_INT32);
	for (size_t i = 0; i < n; i++) {
		((int64_t *)tc.values[0])[i] = test_as_int64(test_random());
		((int32_t *)tc.values[1])[i] = (int32_t)test_random();
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(test_failed_write_child(dir, &tc) ? 1 : 0);
	int status = 0;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	test_write_bins(dir, &tc);
	test_manifest(m, "failed_write.parquet", &tc, 2);
	struct test_case first = tc;
	first.ngroups = 1;
	test_manifest(m, "failed_write.after_error.parquet", &first, 1);
	test_free_case(&tc);
}

/* ---- API errors and the empty file ------------------------------------------------------- */

static void test_api_errors(const char *dir, FILE *m)
{
	char path[4096];
	struct pq_writer *w = (struct pq_writer *)1;
	const struct pq_column_def dup[] = { { "a", PQ_INT32, PQ_PLAIN, PQ_UNCOMPRESSED },
					     { "a", PQ_INT64, PQ_PLAIN, PQ_UNCOMPRESSED } };
	const struct pq_column_def empty_name[] = { { "", PQ_INT32, PQ_PLAIN, PQ_UNCOMPRESSED } };
	const struct pq_column_def bad_codec[] = { { "a", PQ_INT32, PQ_PLAIN, (enum pq_codec)7 } };
	const struct pq_kv null_value[] = { { "k", NULL } };
	snprintf(path, sizeof(path), "%s/empty.parquet", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(pq_open(&w, fd, dup, 0, NULL, 0) == -EINVAL && w == NULL);
	CHECK(pq_open(&w, fd, dup, 2, NULL, 0) == -EINVAL);
	CHECK(pq_open(&w, fd, empty_name, 1, NULL, 0) == -EINVAL);
	CHECK(pq_open(&w, fd, bad_codec, 1, NULL, 0) == -EINVAL);
	CHECK(pq_open(&w, fd, dup, 1, null_value, 1) == -EINVAL);
	CHECK(pq_open(&w, -1, dup, 1, NULL, 0) == -EBADF);
	/* the empty run: open and close, a valid file with 0 rows and the metadata */
	CHECK(pq_open(&w, fd, dup, 1, test_kv_running, 4) == 0);
	CHECK(w && pq_rows(w) == 0 && pq_data_bytes(w) == 0 && pq_dead_footer_bytes(w) == 0);
	if (w) {
		test_check_layout(fd, w);
		const void *none[1] = { NULL };
		CHECK(pq_append_row_group(w, none, 5, NULL, 0) == -EINVAL);
		CHECK(pq_append_row_group(w, NULL, 5, NULL, 0) == -EINVAL);
		test_check_layout(fd, w);
	}
	pq_close(w);
	struct pq_writer *again = NULL;
	CHECK(pq_open(&again, fd, dup, 1, NULL, 0) == -ENOTEMPTY && again == NULL);
	close(fd);
	/* ENOSPC: /dev/full refuses every write; the error comes back as -ENOSPC, no writer */
	int full = open("/dev/full", O_WRONLY);
	if (full >= 0) {
		again = (struct pq_writer *)1;
		CHECK(pq_open(&again, full, dup, 1, NULL, 0) == -ENOSPC && again == NULL);
		close(full);
	}
	struct test_case tc = { .name = "empty", .ncols = 1, .defs = { dup[0] } };
	test_manifest(m, "empty.parquet", &tc, 0);
	snprintf(path, sizeof(path), "%s/empty.a.bin", dir);
	CHECK(test_write_file(path, "", 0) == 0);
}

static int test_files(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/manifest.tsv", dir);
	FILE *m = fopen(path, "w");
	if (!m) {
		fprintf(stderr, "test_parquet: cannot create %s: %s\n", path, strerror(errno));
		return -1;
	}
	const size_t one[] = { 1 }, rows129[] = { 129 }, multi[] = { 1000, 0, 140000, 1, 77 };
	test_case_capture(dir, m, "one_row", one, 1, 0);
	test_case_capture(dir, m, "rows129", rows129, 1, 0);
	test_case_capture(dir, m, "multi", multi, 5, 1);
	test_case_extremes(dir, m, "int64_extremes", PQ_INT64);
	test_case_extremes(dir, m, "int32_extremes", PQ_INT32);
	test_case_kv(dir, m);
	test_case_failed_write(dir, m);
	test_api_errors(dir, m);
	return fclose(m) == 0 ? 0 : -1;
}

/* ---- driver modes ------------------------------------------------------------------------ */

static int test_parse_type(const char *s, enum pq_type *type)
{
	if (strcmp(s, "int32") == 0)
		*type = PQ_INT32;
	else if (strcmp(s, "int64") == 0)
		*type = PQ_INT64;
	else
		return -1;
	return 0;
}

static void *test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) < 0) {
		fprintf(stderr, "test_parquet: cannot read %s: %s\n", path, strerror(errno));
		exit(2);
	}
	long n = ftell(f);
	rewind(f);
	void *p = malloc(n > 0 ? (size_t)n : 1);
	if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "test_parquet: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static int test_mode_delta(int argc, char **argv)
{
	enum pq_type type;
	size_t len;
	if (argc != 5 || test_parse_type(argv[4], &type) < 0) {
		fprintf(stderr, "usage: test_parquet delta IN.bin OUT.bin int32|int64\n");
		return 2;
	}
	void *values = test_read_file(argv[2], &len);
	size_t n = len / test_width(type);
	uint8_t *out = malloc(pq_delta_bound(n));
	int rc = out ? test_write_file(argv[3], out, pq_delta_encode(out, values, n, type)) : -ENOMEM;
	free(values);
	free(out);
	return rc ? 1 : 0;
}

/* NAME:TYPE:ENCODING[+snappy]:FILE */
static int test_parse_colspec(char *spec, struct pq_column_def *def, char **file)
{
	char *name = strtok(spec, ":"), *type = strtok(NULL, ":"), *enc = strtok(NULL, ":");
	*file = strtok(NULL, "");
	if (!name || !type || !enc || !*file || test_parse_type(type, &def->type) < 0)
		return -1;
	def->name = name;
	char *codec = strchr(enc, '+');
	def->codec = PQ_UNCOMPRESSED;
	if (codec && strcmp(codec, "+snappy") != 0)
		return -1;
	if (codec) {
		*codec = '\0';
		def->codec = PQ_SNAPPY;
	}
	if (strcmp(enc, "plain") == 0)
		def->encoding = PQ_PLAIN;
	else if (strcmp(enc, "delta") == 0)
		def->encoding = PQ_DELTA_BINARY_PACKED;
	else
		return -1;
	return 0;
}

static double test_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int test_encode_all(int fd, const struct pq_column_def *defs, void **values, size_t ncols, size_t rows,
			   size_t per_group)
{
	struct pq_writer *w = NULL;
	const void *cols[64];
	int rc = pq_open(&w, fd, defs, ncols, NULL, 0);
	double start = test_now();
	for (size_t first = 0; !rc && first < rows; first += per_group) {
		size_t n = rows - first < per_group ? rows - first : per_group;
		for (size_t c = 0; c < ncols; c++)
			cols[c] = (const uint8_t *)values[c] + first * test_width(defs[c].type);
		rc = pq_append_row_group(w, cols, n, NULL, 0);
	}
	if (!rc)
		printf("rows=%zu bytes=%llu seconds=%.6f\n", rows, (unsigned long long)pq_file_bytes(w),
		       test_now() - start);
	else
		fprintf(stderr, "test_parquet: encode failed: %s\n", strerror(-rc));
	pq_close(w);
	return rc ? 1 : 0;
}

static int test_mode_encode(int argc, char **argv)
{
	struct pq_column_def defs[64];
	void *values[64];
	size_t ncols = (size_t)argc - 4, rows = 0, len;
	char *file, *end = "";
	unsigned long per_group = argc > 3 ? strtoul(argv[3], &end, 10) : 0;
	if (argc < 5 || ncols > 64 || per_group == 0 || *end) {
		fprintf(stderr, "usage: test_parquet encode OUT.parquet ROWS_PER_GROUP NAME:TYPE:ENC:IN.bin ...\n");
		return 2;
	}
	for (size_t c = 0; c < ncols; c++) {
		if (test_parse_colspec(argv[4 + c], &defs[c], &file) < 0) {
			fprintf(stderr, "test_parquet: bad column %s (NAME:int32|int64:plain|delta[+snappy]:FILE)\n", argv[4 + c]);
			return 2;
		}
		values[c] = test_read_file(file, &len);
		if (c > 0 && len / test_width(defs[c].type) != rows) {
			fprintf(stderr, "test_parquet: %s has %zu values, the first column %zu\n", file,
				len / test_width(defs[c].type), rows);
			return 2;
		}
		rows = len / test_width(defs[c].type);
	}
	int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "test_parquet: cannot create %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	int rc = test_encode_all(fd, defs, values, ncols, rows, per_group);
	close(fd);
	for (size_t c = 0; c < ncols; c++)
		free(values[c]);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "delta") == 0)
		return test_mode_delta(argc, argv);
	if (argc > 1 && strcmp(argv[1], "encode") == 0)
		return test_mode_encode(argc, argv);
	test_varint_zigzag();
	test_thrift_fields();
	test_delta_spec_examples();
	test_delta_int64_extremes();
	test_delta_int32_extremes();
	test_delta_block_boundary();
	test_delta_all_widths();
	if (argc > 1 && test_files(argv[1]) < 0)
		failed++;
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
