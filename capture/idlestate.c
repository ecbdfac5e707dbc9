/* Idle states disabled while measuring, journaled and put back; see idlestate.h. */
#include "idlestate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "jitterscope-capture"
#define IDLESTATE_PREFIX "idle-"
#define IDLESTATE_SUFFIX ".journal"
#define IDLESTATE_MAX_STATES 64

static int idlestate_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	int err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int idlestate_write(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, value, strlen(value));
	int err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

static int idlestate_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = fsync(fd) ? -errno : 0;
	close(fd);
	return err;
}

/* The numbers of cpu's idle states, ascending; how many (0 when it has none). */
static int idlestate_states(const struct config *cfg, int cpu, int *states)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/cpu%d/cpuidle", cfg->cpu_sysfs, cpu);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < IDLESTATE_MAX_STATES) {
		char *end;
		if (strncmp(e->d_name, "state", 5) != 0)
			continue;
		long k = strtol(e->d_name + 5, &end, 10);
		if (*end == '\0' && end != e->d_name + 5 && k >= 0 && k < IDLESTATE_MAX_STATES)
			states[n++] = (int)k;
	}
	closedir(d);
	for (int i = 1; i < n; i++) /* insertion sort: a handful of states */
		for (int j = i; j > 0 && states[j - 1] > states[j]; j--) {
			int t = states[j];
			states[j] = states[j - 1];
			states[j - 1] = t;
		}
	return n;
}

/* The journal: one "path<TAB>before" line per state, written and fsync'd before any state changes. */
static int idlestate_journal(struct idlestate *s, const struct config *cfg)
{
	if (mkdir(cfg->state_dir, 0700) && errno != EEXIST) {
		int err = -errno;
		fprintf(stderr, PROG ": cannot create %s for the idle-state journal: %s\n", cfg->state_dir, strerror(-err));
		return err;
	}
	snprintf(s->journal, sizeof(s->journal), "%s/" IDLESTATE_PREFIX "%ld" IDLESTATE_SUFFIX, cfg->state_dir,
		 (long)getpid());
	int fd = open(s->journal, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	int err = fd < 0 ? -errno : 0;
	for (int i = 0; !err && i < s->nchanged; i++) {
		char line[300];
		int len = snprintf(line, sizeof(line), "%s\t%s\n", s->changes[i].path, s->changes[i].before);
		if (write(fd, line, (size_t)len) != len)
			err = -EIO;
	}
	if (!err && fsync(fd))
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (!err)
		err = idlestate_fsync_dir(cfg->state_dir);
	if (err) {
		fprintf(stderr, PROG ": cannot write the idle-state journal %s: %s\n", s->journal, strerror(-err));
		unlink(s->journal);
		s->journal[0] = '\0';
	}
	return err;
}

/* Record every state deeper than the limit that is enabled now; -errno after one line. */
static int idlestate_collect(struct idlestate *s, const struct config *cfg)
{
	s->changes = calloc((size_t)cfg->ncpus * IDLESTATE_MAX_STATES, sizeof(*s->changes));
	if (!s->changes)
		return -ENOMEM;
	for (int i = 0; i < cfg->ncpus; i++) {
		int states[IDLESTATE_MAX_STATES];
		int n = idlestate_states(cfg, cfg->cpus[i], states);
		if (n == 0) {
			fprintf(stderr, PROG ": --deepest-idle-state: CPU %d has no idle states (%s/cpu%d/cpuidle is "
				"missing: no cpuidle driver)\n", cfg->cpus[i], cfg->cpu_sysfs, cfg->cpus[i]);
			return -ENOENT;
		}
		for (int k = 0; k < n; k++) {
			if (states[k] <= cfg->deepest_idle_state)
				continue;
			struct idlestate_change *c = &s->changes[s->nchanged];
			snprintf(c->path, sizeof(c->path), "%s/cpu%d/cpuidle/state%d/disable", cfg->cpu_sysfs, cfg->cpus[i],
				 states[k]);
			int err = idlestate_read(c->path, c->before, sizeof(c->before));
			if (err) {
				fprintf(stderr, PROG ": cannot read %s: %s\n", c->path, strerror(-err));
				return err;
			}
			if (strcmp(c->before, "0") == 0)
				s->nchanged++; /* already disabled ones stay as they are: nothing to put back */
		}
	}
	return 0;
}

int idlestate_apply(struct idlestate *s, const struct config *cfg)
{
	memset(s, 0, sizeof(*s));
	if (cfg->deepest_idle_state < 0)
		return 0;
	int err = idlestate_collect(s, cfg);
	if (!err && s->nchanged)
		err = idlestate_journal(s, cfg);
	for (int i = 0; !err && i < s->nchanged; i++) {
		err = idlestate_write(s->changes[i].path, "1");
		if (err)
			fprintf(stderr, PROG ": cannot disable %s: %s (run as root)\n", s->changes[i].path, strerror(-err));
	}
	if (err)
		idlestate_restore(s);
	return err;
}

void idlestate_restore(struct idlestate *s)
{
	int failed = 0;
	for (int i = 0; i < s->nchanged; i++) {
		char now[8];
		if (idlestate_read(s->changes[i].path, now, sizeof(now)) == 0 && strcmp(now, s->changes[i].before) == 0)
			continue;
		int err = idlestate_write(s->changes[i].path, s->changes[i].before);
		if (err) {
			failed++;
			fprintf(stderr, PROG ": cannot put back %s to %s: %s (the journal %s keeps it for the next capture)\n",
				s->changes[i].path, s->changes[i].before, strerror(-err), s->journal);
		}
	}
	if (!failed && s->journal[0])
		unlink(s->journal);
	s->journal[0] = '\0';
	s->nchanged = 0;
	free(s->changes);
	s->changes = NULL;
}

int idlestate_disabled(const struct idlestate *s)
{
	return s->nchanged;
}

/* Whether pid is a live jitterscope-capture (a reused pid is another program). */
static int idlestate_owner_alive(long pid)
{
	char path[64], comm[64];
	if (kill((pid_t)pid, 0) && errno == ESRCH)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	return idlestate_read(path, comm, sizeof(comm)) == 0 && strncmp(comm, "jitterscope-cap", 15) == 0;
}

/* Put back every complete line of one journal; 0 when all went back. */
static int idlestate_repair_one(const char *journal)
{
	FILE *f = fopen(journal, "re");
	if (!f)
		return -errno;
	char line[400];
	int failed = 0;
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		if (len == 0 || line[len - 1] != '\n')
			break; /* a torn last line: its state was not yet changed */
		line[len - 1] = '\0';
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = '\0';
		char now[8];
		if (idlestate_read(line, now, sizeof(now)) == 0 && strcmp(now, tab + 1) == 0)
			continue;
		if (idlestate_write(line, tab + 1)) {
			failed++;
			fprintf(stderr, PROG ": warning: cannot put back %s to %s: %s\n", line, tab + 1, strerror(errno));
		}
	}
	fclose(f);
	return failed ? -EIO : 0;
}

int idlestate_repair(const struct config *cfg)
{
	DIR *d = opendir(cfg->state_dir);
	if (!d)
		return 0;
	int repaired = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, IDLESTATE_PREFIX, strlen(IDLESTATE_PREFIX)) != 0 || len <= strlen(IDLESTATE_SUFFIX) ||
		    strcmp(e->d_name + len - strlen(IDLESTATE_SUFFIX), IDLESTATE_SUFFIX) != 0)
			continue;
		long pid = strtol(e->d_name + strlen(IDLESTATE_PREFIX), &end, 10);
		if (end == e->d_name + strlen(IDLESTATE_PREFIX) || strcmp(end, IDLESTATE_SUFFIX) != 0 || pid <= 0 ||
		    pid == (long)getpid() || idlestate_owner_alive(pid))
			continue;
		char path[600];
		snprintf(path, sizeof(path), "%s/%s", cfg->state_dir, e->d_name);
		if (idlestate_repair_one(path) == 0) {
			unlink(path);
			repaired++;
			fprintf(stderr, PROG ": put back the idle states a killed capture (pid %ld) left disabled\n", pid);
		}
	}
	closedir(d);
	return repaired;
}
