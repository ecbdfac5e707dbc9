/* The dataset directory on disk (docs/dataset-format.md, "Container"): hourly
 * part files of large row groups, each flush committed by ONE rename.  The
 * current part has two twin inodes under hidden names; a flush rewrites the
 * twin that is not visible (only its bytes after the sealed row groups it
 * already holds), fdatasyncs it, links it to part-NNNNN.parquet with a rename
 * over the visible name, and fsyncs the directory.  A visible part is never
 * written to, so every part-*.parquet is complete at every instant.  Writer
 * thread only; never prints; returns 0 or -errno. */
#ifndef JITTERSCOPE_CONTAINER_H
#define JITTERSCOPE_CONTAINER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "parquet.h"

struct container {
	int dir_fd;                 /* -1: nothing written, bytes only counted (writer benchmark) */
	const struct config *cfg;   /* sync, flush interval, row group and part limits */
	const struct pq_column_def *columns;
	size_t ncolumns;
	bool chown_parts;
	uid_t owner_uid;
	gid_t owner_gid;
	int part;                   /* index of the current part */
	struct pq_part *pq;         /* its row groups; NULL before its first flush */
	int twin_fd[2];
	uint64_t twin_end[2];       /* sealed bytes each twin holds (0: nothing valid) */
	int next_twin;              /* the twin the next flush writes */
	uint64_t part_flushes, group_flushes;
	uint64_t pending_rows;      /* rows container_add() put in the open group since the last flush */
	/* committed totals, for the error line and the benchmark */
	uint64_t rows;              /* rows on disk as of the last commit */
	uint64_t rows_closed, data_closed, footer_closed, groups_closed;
	int parts_closed;
	uint64_t bytes_written, syncs;
};

/* Sets up an empty container (no file yet). */
void container_init(struct container *ct, const struct config *cfg, int dir_fd, const struct pq_column_def *columns,
		    size_t ncolumns);
/* Adds rows (one page per column; columns as pq_part_add) and commits the part
 * with kv as its metadata.  The part may then close (its last flush) and the
 * next flush starts part+1.  On failure the visible files are as before. */
int container_flush(struct container *ct, const void *const *columns, size_t rows, const struct pq_kv *kv,
		    size_t nkv);
/* Adds rows to the open row group without committing (the trace's full stage between
 * flushes); the next container_flush() commits them and counts as a flush with data. */
int container_add(struct container *ct, const void *const *columns, size_t rows);
/* Removes the hidden twins of the current part (its visible file stays) and frees. */
void container_close(struct container *ct);
/* Totals over every part, the current one as of its last image. */
void container_sizes(const struct container *ct, uint64_t *data, uint64_t *footers, uint64_t *groups, int *parts);

#endif
