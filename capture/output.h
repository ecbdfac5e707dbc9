/* The output directory: created without following symlinks, refused when
 * it exists unless --force, handed back to the invoking user under sudo. */
#ifndef JITTERSCOPE_OUTPUT_H
#define JITTERSCOPE_OUTPUT_H

#include <stdbool.h>
#include <sys/types.h>

struct output_owner {
	bool set;   /* running under sudo: SUDO_UID/SUDO_GID were valid */
	uid_t uid;
	gid_t gid;
};

/* Reads SUDO_UID/SUDO_GID when we are root. */
void output_owner(struct output_owner *owner);
/* Creates the directory path (replacing our old parts with force) and returns
 * an O_DIRECTORY fd, or -errno after printing one line; *created says whether
 * the directory is new. */
int output_create(const char *path, bool force, const struct output_owner *owner, bool *created);
/* Removes the directory path and its _trace subdirectory if they are empty
 * (after a failed setup); anything with data in it stays. */
void output_remove_empty(const char *path);

#endif
