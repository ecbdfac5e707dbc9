/* snappy.h — the Snappy compressor (raw format, github.com/google/snappy: format_description.txt), as Parquet's
 * SNAPPY codec wants it: libc only, no decompressor (readers bring their own).  Greedy LZ77 over 64 KiB blocks
 * with a hash table of 4-byte sequences, the layout Google's compressor writes, so any Snappy reader decodes it.
 * Never allocates: the caller gives the hash table and an output of snappy_bound(n) bytes. */
#ifndef JITTERSCOPE_SNAPPY_H
#define JITTERSCOPE_SNAPPY_H

#include <stddef.h>
#include <stdint.h>

#define SNAPPY_TABLE 16384 /* hash table entries (uint16_t each): the caller's scratch */

/* The most bytes snappy_compress can write for n input bytes. */
size_t snappy_bound(size_t n);
/* Compresses in[0..n) into out (snappy_bound(n) bytes) and returns the compressed length. */
size_t snappy_compress(uint8_t *out, const uint8_t *in, size_t n, uint16_t table[SNAPPY_TABLE]);

#endif
