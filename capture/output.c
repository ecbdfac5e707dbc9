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

/* --force on a directory: remove the part files a previous capture left, and
 * the hidden twins (.part-NNNNN.0/.1/.new) of one that was killed. */
static int output_clear(const char *path)
{
	DIR *dir = opendir(path);
	if (!dir)
		return -errno;
	struct dirent *entry;
	int err = 0;
	while ((entry = readdir(dir))) {
		if (fnmatch("part-*.parquet", entry->d_name, 0) && fnmatch(".part-*", entry->d_name, 0))
			continue;
		if (unlinkat(dirfd(dir), entry->d_name, 0) && !err)
			err = -errno;
	}
	closedir(dir);
	return err;
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

int output_create(const char *path, bool force, const struct output_owner *owner)
{
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
	if (mkdir(path, 0755) && errno != EEXIST) {
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
