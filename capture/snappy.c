/* snappy.c — see snappy.h.  The format: the uncompressed length as a varint, then elements, each a literal
 * (tag 00: its length - 1 in the tag's upper 6 bits, or in 1-4 bytes after it) or a copy of earlier output
 * (tag 01: length 4-11 and an 11-bit offset; tag 10: length 1-64 and a 16-bit offset).  Copies never reach
 * back past the start of their 64 KiB block, so 16-bit offsets always suffice; a copy may overlap its own
 * output (offset < length), which the format allows (a run of repeated bytes). */
#include "snappy.h"

#include <string.h>

#define SNAPPY_BLOCK 65536u
#define SNAPPY_MIN_BLOCK 15u /* shorter blocks are one literal */

size_t snappy_bound(size_t n)
{
	return 32 + n + n / 6;
}

static uint32_t snappy_load32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static unsigned snappy_hash(uint32_t v)
{
	return (v * 0x1e35a7bdu) >> (32 - 14); /* 14 bits: SNAPPY_TABLE */
}

static uint8_t *snappy_literal(uint8_t *out, const uint8_t *from, size_t len)
{
	size_t n = len - 1;
	if (n < 60) {
		*out++ = (uint8_t)(n << 2);
	} else {
		unsigned bytes = n < 0x100 ? 1 : n < 0x10000 ? 2 : n < 0x1000000 ? 3 : 4;
		*out++ = (uint8_t)((59 + bytes) << 2);
		for (unsigned i = 0; i < bytes; i++)
			*out++ = (uint8_t)(n >> (8 * i));
	}
	memcpy(out, from, len);
	return out + len;
}

static uint8_t *snappy_copy_one(uint8_t *out, size_t offset, size_t len)
{
	if (len < 12 && offset < 2048) { /* tag 01: 2 bytes */
		*out++ = (uint8_t)(1 | ((len - 4) << 2) | ((offset >> 8) << 5));
		*out++ = (uint8_t)offset;
	} else { /* tag 10: 3 bytes */
		*out++ = (uint8_t)(2 | ((len - 1) << 2));
		*out++ = (uint8_t)offset;
		*out++ = (uint8_t)(offset >> 8);
	}
	return out;
}

/* A copy of any length >= 4, as copies of at most 64 bytes (none shorter than 4). */
static uint8_t *snappy_copy(uint8_t *out, size_t offset, size_t len)
{
	while (len >= 68) {
		out = snappy_copy_one(out, offset, 64);
		len -= 64;
	}
	if (len > 64) {
		out = snappy_copy_one(out, offset, 60);
		len -= 60;
	}
	return snappy_copy_one(out, offset, len);
}

/* One block: greedy matching of 4-byte sequences; after a match every position it covered is not hashed
 * (speed), but the one before its end is, so back-to-back repeats chain. */
static uint8_t *snappy_block(uint8_t *out, const uint8_t *base, size_t n, uint16_t *table)
{
	if (n < SNAPPY_MIN_BLOCK)
		return snappy_literal(out, base, n);
	memset(table, 0, SNAPPY_TABLE * sizeof(*table));
	const uint8_t *ip = base + 1, *emit = base, *end = base + n, *last = end - 4;
	unsigned skip = 32; /* incompressible data: the step grows after 32 misses */
	while (ip <= last) {
		uint32_t v = snappy_load32(ip);
		unsigned h = snappy_hash(v);
		const uint8_t *cand = base + table[h];
		table[h] = (uint16_t)(ip - base);
		if (cand >= ip || snappy_load32(cand) != v) {
			ip += skip++ >> 5;
			continue;
		}
		skip = 32;
		if (ip > emit)
			out = snappy_literal(out, emit, (size_t)(ip - emit));
		size_t len = 4;
		while (ip + len < end && cand[len] == ip[len])
			len++;
		out = snappy_copy(out, (size_t)(ip - cand), len);
		ip += len;
		emit = ip;
		if (ip - 1 <= last)
			table[snappy_hash(snappy_load32(ip - 1))] = (uint16_t)(ip - 1 - base);
	}
	return emit < end ? snappy_literal(out, emit, (size_t)(end - emit)) : out;
}

size_t snappy_compress(uint8_t *out, const uint8_t *in, size_t n, uint16_t table[SNAPPY_TABLE])
{
	uint8_t *p = out;
	size_t v = n;
	while (v >= 0x80) { /* the uncompressed length: little-endian base 128 */
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	for (size_t at = 0; at < n; at += SNAPPY_BLOCK)
		p = snappy_block(p, in + at, n - at < SNAPPY_BLOCK ? n - at : SNAPPY_BLOCK, table);
	return (size_t)(p - out);
}
