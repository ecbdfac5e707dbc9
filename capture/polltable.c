/* See polltable.h. */
#include "polltable.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void polltable_init(struct polltable *p)
{
	p->dir_fd = -1;
	for (int c = 0; c < WCOL_FIXED; c++)
		p->columns[c] = (struct pq_column_def){SCHEMA_POLL_WINDOW_COLUMNS[c].name, SCHEMA_POLL_WINDOW_COLUMNS[c].type,
							SCHEMA_POLL_WINDOW_COLUMNS[c].encoding, PQ_UNCOMPRESSED};
	for (int k = 0; k < POLL_BUCKETS; k++) {
		snprintf(p->names[k], sizeof(p->names[k]), "h%02d", k);
		/* counts of a bucket change little from second to second: deltas pack small */
		p->columns[WCOL_FIXED + k] = (struct pq_column_def){p->names[k], PQ_INT64, PQ_DELTA_BINARY_PACKED,
								      PQ_UNCOMPRESSED};
	}
}

int polltable_open(struct polltable *p, const struct config *cfg, int out_dir_fd, uid_t uid, gid_t gid, bool chown_parts)
{
	if (mkdirat(out_dir_fd, POLLTABLE_DIR_NAME, 0755) && errno != EEXIST)
		return -errno;
	p->dir_fd = openat(out_dir_fd, POLLTABLE_DIR_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (p->dir_fd < 0)
		return -errno;
	if (chown_parts && fchown(p->dir_fd, uid, gid))
		return -errno;
	if (cfg->sync == SYNC_DATA && fsync(out_dir_fd)) /* the _poll entry itself, before any part in it */
		return -errno;
	container_init(&p->ct, cfg, p->dir_fd, p->columns, POLLTABLE_NCOLUMNS);
	p->ct.chown_parts = chown_parts;
	p->ct.owner_uid = uid;
	p->ct.owner_gid = gid;
	p->has_container = true;
	return 0;
}

static int polltable_reserve(struct polltable *p)
{
	if (p->nstaged < p->cap)
		return 0;
	size_t cap = p->cap ? p->cap * 2 : 64;
	for (int c = 0; c < POLLTABLE_NCOLUMNS; c++) {
		size_t width = p->columns[c].type == PQ_INT32 ? 4 : 8;
		void *grown = realloc(p->buffers[c], cap * width);
		if (!grown)
			return -ENOMEM;
		p->buffers[c] = grown;
	}
	p->cap = cap;
	return 0;
}

int polltable_stage(struct polltable *p, int cpu, int thread, const struct poll_window *w)
{
	if (polltable_reserve(p))
		return -ENOMEM;
	size_t i = p->nstaged++;
	((int32_t *)p->buffers[WCOL_CPU])[i] = cpu;
	((int32_t *)p->buffers[WCOL_THREAD])[i] = thread;
	((int64_t *)p->buffers[WCOL_START_NS])[i] = w->start_ns;
	((int64_t *)p->buffers[WCOL_WINDOW_NS])[i] = w->window_ns;
	((int64_t *)p->buffers[WCOL_ITERATIONS])[i] = (int64_t)w->iterations;
	((int64_t *)p->buffers[WCOL_NOISE_NS])[i] = w->noise_ns;
	((int64_t *)p->buffers[WCOL_INTERRUPTIONS])[i] = (int64_t)w->interruptions;
	((int64_t *)p->buffers[WCOL_MAX_GAP_NS])[i] = w->max_gap_ns;
	for (int k = 0; k < POLL_BUCKETS; k++)
		((int64_t *)p->buffers[WCOL_FIXED + k])[i] = (int64_t)w->hist[k];
	return 0;
}

int polltable_flush(struct polltable *p, const struct pq_kv *kv, size_t nkv)
{
	if (!p->has_container) {
		p->nstaged = 0;
		return 0;
	}
	if (polltable_reserve(p)) /* a flush of no rows still needs valid column pointers */
		return -ENOMEM;
	int err = container_flush(&p->ct, (const void *const *)p->buffers, p->nstaged, kv, nkv);
	if (!err) {
		p->rows += p->nstaged;
		p->nstaged = 0;
	}
	return err;
}

void polltable_close(struct polltable *p)
{
	if (p->has_container)
		container_close(&p->ct);
	if (p->dir_fd >= 0)
		close(p->dir_fd);
	for (int c = 0; c < POLLTABLE_NCOLUMNS; c++)
		free(p->buffers[c]);
}
