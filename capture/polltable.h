/* Poll mode's per-second table, DIR/_poll/part-NNNNN.parquet: one row per
 * thread per window (pollwin.h), in a container of its own with the samples'
 * rules (container.h), flushed by the writer together with the rows.  Writer
 * thread only; never prints; returns 0 or -errno. */
#ifndef JITTERSCOPE_POLLTABLE_H
#define JITTERSCOPE_POLLTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "container.h"
#include "pollwin.h"
#include "schema.h"

#define POLLTABLE_DIR_NAME "_poll"
#define POLLTABLE_NCOLUMNS (WCOL_FIXED + POLL_BUCKETS)

struct polltable {
	bool has_container;
	int dir_fd;
	struct container ct;
	struct pq_column_def columns[POLLTABLE_NCOLUMNS];
	char names[POLL_BUCKETS][8];
	void *buffers[POLLTABLE_NCOLUMNS];
	size_t nstaged, cap;
	uint64_t rows;          /* rows on disk as of the last flush */
};

/* Column definitions (no files): the fixed columns, then h00..h140. */
void polltable_init(struct polltable *p);
/* Creates DIR/_poll (fsynced into DIR) and its container. */
int polltable_open(struct polltable *p, const struct config *cfg, int out_dir_fd, uid_t uid, gid_t gid, bool chown_parts);
/* Stages one window of a thread. -ENOMEM */
int polltable_stage(struct polltable *p, int cpu, int thread, const struct poll_window *w);
/* Commits the staged windows with kv as the part's metadata. */
int polltable_flush(struct polltable *p, const struct pq_kv *kv, size_t nkv);
void polltable_close(struct polltable *p);

#endif
