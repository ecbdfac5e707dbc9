/* The twin-file container; see container.h and docs/dataset-format.md.
 * The order of a flush is the durability argument: the twin's bytes are
 * written and fdatasync'd before any name points at them, and the directory
 * is fsync'd after the rename, so the rename is on disk before the next
 * flush starts overwriting the twin that was visible until then. */
#include "container.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"

void container_init(struct container *ct, const struct config *cfg, int dir_fd, const struct pq_column_def *columns,
		    size_t ncolumns)
{
	memset(ct, 0, sizeof(*ct));
	ct->cfg = cfg;
	ct->dir_fd = dir_fd;
	ct->columns = columns;
	ct->ncolumns = ncolumns;
	ct->twin_fd[0] = ct->twin_fd[1] = -1;
}

static void container_twin_name(const struct container *ct, int twin, char *name, size_t len)
{
	if (twin < 0)
		snprintf(name, len, ".part-%05d.new", ct->part);
	else
		snprintf(name, len, ".part-%05d.%d", ct->part, twin);
}

/* The current part's builder and its two (hidden, empty) twins. */
static int container_start_part(struct container *ct)
{
	int err = pq_part_new(&ct->pq, ct->columns, ct->ncolumns);
	for (int twin = 0; twin < 2 && !err && ct->dir_fd >= 0; twin++) {
		char name[64];
		container_twin_name(ct, twin, name, sizeof(name));
		ct->twin_fd[twin] = openat(ct->dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (ct->twin_fd[twin] < 0)
			err = -errno;
		else if (ct->chown_parts && fchown(ct->twin_fd[twin], ct->owner_uid, ct->owner_gid)) {
			/* best effort: root keeps the file; the directory was handed over already */
		}
	}
	ct->twin_end[0] = ct->twin_end[1] = 0;
	ct->next_twin = 0;
	return err;
}

static int container_pwrite(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	for (size_t done = 0; done < n;) {
		ssize_t k = pwrite(fd, p + done, n - done, (off_t)(off + done));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		done += (size_t)k;
	}
	return 0;
}

/* Writes the image into the hidden twin at from and cuts what an older, longer image left. */
static int container_write(struct container *ct, int fd, uint64_t from, const uint8_t *data, size_t len, int kinds)
{
	int err = fault_at(kinds, "write");
	size_t half = len / 2;
	if (!err)
		err = container_pwrite(fd, data, half, from);
	if (!err)
		err = fault_at(kinds, "write-half");
	if (!err)
		err = container_pwrite(fd, data + half, len - half, from + half);
	if (!err && ftruncate(fd, (off_t)(from + len)))
		err = -errno;
	ct->bytes_written += len;
	return err;
}

static int container_sync(struct container *ct, int fd, int kinds, const char *step)
{
	int err = fault_at(kinds, step);
	if (err || ct->cfg->sync == SYNC_NONE)
		return err;
	ct->syncs++;
	return (strcmp(step, "sync") == 0 ? fdatasync(fd) : fsync(fd)) ? -errno : 0;
}

/* The one commit point: the twin gets the visible name with a rename over it. */
static int container_publish(struct container *ct, int twin, int kinds)
{
	char hidden[64], linked[64], visible[64];
	container_twin_name(ct, twin, hidden, sizeof(hidden));
	container_twin_name(ct, -1, linked, sizeof(linked));
	snprintf(visible, sizeof(visible), "part-%05d.parquet", ct->part);
	int err = fault_at(kinds, "link");
	if (!err && unlinkat(ct->dir_fd, linked, 0) && errno != ENOENT)
		err = -errno;
	if (!err && linkat(ct->dir_fd, hidden, ct->dir_fd, linked, 0))
		err = -errno;
	if (!err)
		err = fault_at(kinds, "rename");
	if (!err && renameat(ct->dir_fd, linked, ct->dir_fd, visible))
		err = -errno;
	return err ? err : container_sync(ct, ct->dir_fd, kinds, "dirsync");
}

/* Writes, syncs and publishes the part as it now stands into the twin not visible. */
static int container_commit(struct container *ct, const struct pq_kv *kv, size_t nkv, int kinds)
{
	int twin = ct->next_twin;
	uint64_t from = ct->twin_end[twin];
	const uint8_t *data;
	size_t len;
	int err = pq_part_image(ct->pq, from, kv, nkv, &data, &len);
	if (err)
		return err;
	ct->twin_end[twin] = 0; /* garbage until the write below is complete */
	if (ct->dir_fd < 0) {
		ct->bytes_written += len;
	} else {
		int fd = ct->twin_fd[twin];
		err = container_write(ct, fd, from, data, len, kinds);
		if (!err)
			err = container_sync(ct, fd, kinds, "sync");
		if (!err)
			err = container_publish(ct, twin, kinds);
		if (err)
			return err;
	}
	ct->twin_end[twin] = pq_part_sealed_end(ct->pq);
	ct->next_twin = 1 - twin;
	uint64_t both = ct->twin_end[0] < ct->twin_end[1] ? ct->twin_end[0] : ct->twin_end[1];
	pq_part_release(ct->pq, both);
	return 0;
}

static void container_account_closed(struct container *ct)
{
	ct->rows_closed += pq_part_rows(ct->pq);
	ct->data_closed += pq_part_data_bytes(ct->pq);
	ct->footer_closed += pq_part_footer_bytes(ct->pq);
	ct->groups_closed += pq_part_groups(ct->pq);
	ct->parts_closed++;
}

/* Drops the twins' hidden names (the visible name keeps the last image) and the builder. */
static int container_drop_part(struct container *ct, int kinds)
{
	int err = 0;
	for (int twin = 0; twin < 2; twin++) {
		char name[64], step[16];
		container_twin_name(ct, twin, name, sizeof(name));
		snprintf(step, sizeof(step), "unlink%d", twin);
		if (ct->dir_fd >= 0 && !err && !(err = fault_at(kinds, step)) && unlinkat(ct->dir_fd, name, 0) &&
		    errno != ENOENT)
			err = -errno;
		if (ct->twin_fd[twin] >= 0)
			close(ct->twin_fd[twin]);
		ct->twin_fd[twin] = -1;
	}
	char linked[64]; /* left by a flush that failed between its link and its rename */
	container_twin_name(ct, -1, linked, sizeof(linked));
	if (ct->dir_fd >= 0 && unlinkat(ct->dir_fd, linked, 0) && errno != ENOENT && !err)
		err = -errno;
	if (!err && ct->dir_fd >= 0)
		err = container_sync(ct, ct->dir_fd, kinds, "dirsync");
	pq_part_free(ct->pq);
	ct->pq = NULL;
	return err;
}

static bool container_group_full(const struct container *ct)
{
	const struct config *cfg = ct->cfg;
	return pq_part_open_rows(ct->pq) >= cfg->group_rows ||
	       (int64_t)ct->group_flushes * cfg->flush_interval_ns >= cfg->group_ns;
}

int container_add(struct container *ct, const void *const *columns, size_t rows)
{
	int err = 0;
	if (!ct->pq && (err = container_start_part(ct)))
		return err;
	if (rows && !(err = pq_part_add(ct->pq, columns, rows)))
		ct->pending_rows += rows;
	return err;
}

int container_flush(struct container *ct, const void *const *columns, size_t rows, const struct pq_kv *kv,
		    size_t nkv)
{
	int kinds = FAULT_FLUSH, err = 0;
	if (!ct->pq) {
		kinds |= FAULT_NEWPART;
		if ((err = container_start_part(ct)))
			return err;
	}
	if (rows && (err = pq_part_add(ct->pq, columns, rows)))
		return err;
	bool data = rows > 0 || ct->pending_rows > 0;
	ct->pending_rows = 0;
	ct->group_flushes += data; /* time with data: the empty first flush does not count */
	ct->part_flushes += data;
	bool last = (int64_t)ct->part_flushes * ct->cfg->flush_interval_ns >= ct->cfg->part_ns;
	if (pq_part_open_rows(ct->pq) && (last || container_group_full(ct))) {
		kinds |= FAULT_SEAL;
		ct->group_flushes = 0;
		if ((err = pq_part_seal(ct->pq)))
			return err;
	}
	if ((err = container_commit(ct, kv, nkv, kinds)))
		return err;
	ct->rows = ct->rows_closed + pq_part_rows(ct->pq);
	if (!last)
		return 0;
	container_account_closed(ct);
	err = container_drop_part(ct, FAULT_ROTATE);
	ct->part++;
	ct->part_flushes = ct->group_flushes = 0;
	return err;
}

void container_close(struct container *ct)
{
	if (ct->pq)
		container_drop_part(ct, 0);
}

void container_sizes(const struct container *ct, uint64_t *data, uint64_t *footers, uint64_t *groups, int *parts)
{
	*data = ct->data_closed;
	*footers = ct->footer_closed;
	*groups = ct->groups_closed;
	*parts = ct->parts_closed;
	if (ct->pq) {
		*data += pq_part_data_bytes(ct->pq);
		*footers += pq_part_footer_bytes(ct->pq);
		*groups += pq_part_groups(ct->pq);
		*parts += 1;
	}
}
