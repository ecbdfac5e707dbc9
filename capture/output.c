/* Output directory creation; see output.h.  Setup only. */
#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "jitterscope-capture"

static bool output_id(const char *name, unsigned long *out)
{
	const char *text = getenv(name);
	char *end;
	if (!text || !*text)
		return false;
	errno = 0;
	*out = strtoul(text, &end, 10);
	return !errno && *end == '\0';
}

void output_owner(struct output_owner *owner)
{
	unsigned long uid, gid;
	owner->set = geteuid() == 0 && output_id("SUDO_UID", &uid) && output_id("SUDO_GID", &gid);
	if (owner->set) {
		owner->uid = (uid_t)uid;
		owner->gid = (gid_t)gid;
	}
}

/* The files a capture writes in one directory: parts, the hidden twins of a killed one
 * (.part-NNNNN.0/.1/.new) and, in _trace, the single events file of captures before the
 * events parts. */
static int output_clear_dir(int dir_fd)
{
	DIR *dir = fdopendir(dir_fd);
	if (!dir) {
		close(dir_fd);
		return -errno;
	}
	struct dirent *entry;
	int err = 0;
	while ((entry = readdir(dir))) {
		if (fnmatch("part-*.parquet", entry->d_name, 0) && fnmatch(".part-*", entry->d_name, 0) &&
		    strcmp(entry->d_name, "events.parquet"))
			continue;
		if (unlinkat(dirfd(dir), entry->d_name, 0) && !err)
			err = -errno;
	}
	closedir(dir);
	return err;
}

/* --force on a directory: remove what a previous capture left there and in its _trace directory
 * (emptied and removed: a trace of the old run must not stay beside the new samples). */
static int output_clear(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int trace_fd = openat(fd, "_trace", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int err = trace_fd >= 0 ? output_clear_dir(trace_fd) : 0;
	if (!err && trace_fd >= 0 && unlinkat(fd, "_trace", AT_REMOVEDIR))
		err = -errno;
	int parts = output_clear_dir(fd);
	return err ? err : parts;
}

static int output_refuse(const char *path, const char *why)
{
	fprintf(stderr, PROG ": output %s %s\n", path, why);
	return -EEXIST;
}

static int output_replace(const char *path, const struct stat *st)
{
	int err = S_ISDIR(st->st_mode) ? output_clear(path) : (unlink(path) ? -errno : 0);
	if (err)
		fprintf(stderr, PROG ": cannot replace %s: %s (remove it yourself or choose another -o)\n", path,
			strerror(-err));
	return err;
}

int output_create(const char *path, bool force, const struct output_owner *owner, bool *created)
{
	*created = false;
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return output_refuse(path, "is a symbolic link; refusing to write through it (give a real path)");
		if (!force)
			return output_refuse(path, "already exists; choose another name or pass --force to replace it");
		int err = output_replace(path, &st);
		if (err)
			return err;
	}
	if (mkdir(path, 0755) == 0) {
		*created = true;
	} else if (errno != EEXIST) {
		int err = errno;
		fprintf(stderr, PROG ": cannot create directory %s: %s (check the parent directory)\n", path,
			strerror(err));
		return -err;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		fprintf(stderr, PROG ": cannot open directory %s: %s (was it replaced by a symlink?)\n", path,
			strerror(err));
		return -err;
	}
	if (owner->set && fchown(fd, owner->uid, owner->gid)) {
		/* best effort: the capture still works, the user may need sudo to delete it */
	}
	return fd;
}

void output_remove_empty(const char *path)
{
	char trace[4096];
	if (snprintf(trace, sizeof(trace), "%s/_trace", path) < (int)sizeof(trace))
		rmdir(trace); /* fails, harmlessly, when absent or not empty */
	rmdir(path);
}
