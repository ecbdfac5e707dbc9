/* Steal time of the measured CPUs from /proc/stat; see steal.h. */
#include "steal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STEAL_BUF_START 65536

static int64_t steal_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* "cpuN user nice system idle iowait irq softirq steal ...": the 8th number. */
static bool steal_line(const char *line, int *cpu, uint64_t *steal)
{
	unsigned long long v[8];
	int n = sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", cpu, &v[0], &v[1], &v[2], &v[3],
		       &v[4], &v[5], &v[6], &v[7]);
	if (n < 9) /* the "cpu " total line has no number; kernels before 2.6.11 have no steal */
		return false;
	*steal = v[7];
	return true;
}

bool steal_parse(const char *text, const int *cpus, int n, uint64_t *out)
{
	int found = 0;
	for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (strncmp(line, "cpu", 3) != 0)
			continue;
		int cpu;
		uint64_t steal;
		if (!steal_line(line, &cpu, &steal))
			continue;
		for (int i = 0; i < n; i++)
			if (cpus[i] == cpu) {
				out[i] = steal;
				found++;
			}
	}
	return found == n;
}

/* Reads the whole file into s->buf (grown until it fits); -errno. */
static int steal_read(struct steal *s)
{
	for (;;) {
		if (lseek(s->fd, 0, SEEK_SET) < 0)
			return -errno;
		size_t len = 0;
		ssize_t got;
		while (len + 1 < s->cap && (got = read(s->fd, s->buf + len, s->cap - 1 - len)) > 0)
			len += (size_t)got;
		if (len + 1 < s->cap) {
			s->buf[len] = '\0';
			return 0;
		}
		char *grown = realloc(s->buf, s->cap * 2); /* the file grew past the buffer: read it again */
		if (!grown)
			return -ENOMEM;
		s->buf = grown;
		s->cap *= 2;
	}
}

void steal_begin(struct steal *s, const int *cpus, int n, int64_t now_ns)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	long hz = sysconf(_SC_CLK_TCK);
	s->tick_ns = hz > 0 ? 1000000000 / hz : 10000000;
	s->period_ns = STEAL_PERIOD_NS;
	if (n <= 0 || n > STEAL_MAX_CPUS) {
		s->error = EINVAL;
		return;
	}
	s->cpus = malloc((size_t)n * sizeof(*s->cpus));
	s->last = calloc((size_t)n, sizeof(*s->last));
	s->now = calloc((size_t)n, sizeof(*s->now));
	s->total = calloc((size_t)n, sizeof(*s->total));
	s->rises = malloc(STEAL_MAX_RISES * sizeof(*s->rises));
	s->buf = malloc(STEAL_BUF_START);
	s->cap = STEAL_BUF_START;
	if (!s->cpus || !s->last || !s->now || !s->total || !s->rises || !s->buf) {
		s->error = ENOMEM;
		return;
	}
	memcpy(s->cpus, cpus, (size_t)n * sizeof(*cpus));
	s->ncpus = n;
	s->fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		s->error = errno;
		return;
	}
	int err = steal_read(s);
	if (err || !steal_parse(s->buf, s->cpus, n, s->last)) {
		s->error = err ? -err : ENOENT; /* a measured CPU without a steal field */
		return;
	}
	s->available = true;
	s->first_ns = s->last_ns = now_ns;
	s->samples = 1;
}

static void steal_rose(struct steal *s, int i, uint64_t ticks, int64_t now_ns)
{
	s->total[i] += ticks;
	/* the rise of the interval just before, on the same CPU, grows: a long steal is one entry */
	for (size_t k = s->nrises; k-- > 0 && s->rises[k].to_ns == s->last_ns;)
		if (s->rises[k].cpu == s->cpus[i]) {
			s->rises[k].to_ns = now_ns;
			s->rises[k].ticks += ticks;
			return;
		}
	if (s->nrises == STEAL_MAX_RISES) {
		s->left_out++;
		return;
	}
	s->rises[s->nrises++] = (struct steal_rise){s->cpus[i], s->last_ns, now_ns, ticks};
}

void steal_sample(struct steal *s, int64_t now_ns)
{
	if (!s->available || now_ns <= s->last_ns)
		return;
	int64_t began = steal_clock_ns();
	if (steal_read(s) || !steal_parse(s->buf, s->cpus, s->ncpus, s->now)) {
		s->failed++; /* the next sample's interval covers this one */
		return;
	}
	steal_take(s, s->now, now_ns);
	/* /proc/stat sums every interrupt over every CPU: on a large machine a read can take a millisecond;
	 * keep the writer's share of a CPU for it under 1 % */
	int64_t cost = steal_clock_ns() - began;
	s->period_ns = cost * 100 > STEAL_PERIOD_NS ? cost * 100 : STEAL_PERIOD_NS;
}

void steal_take(struct steal *s, const uint64_t *now, int64_t now_ns)
{
	if (!s->available || now_ns <= s->last_ns)
		return;
	for (int i = 0; i < s->ncpus; i++)
		if (now[i] > s->last[i]) /* a CPU taken offline restarts its count: a drop is no rise */
			steal_rose(s, i, now[i] - s->last[i], now_ns);
	memcpy(s->last, now, (size_t)s->ncpus * sizeof(*now));
	if (now_ns - s->last_ns > s->max_gap_ns)
		s->max_gap_ns = now_ns - s->last_ns;
	s->last_ns = now_ns;
	s->samples++;
}

void steal_free(struct steal *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
	free(s->cpus);
	free(s->last);
	free(s->now);
	free(s->total);
	free(s->rises);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

char *steal_json(const struct steal *s)
{
	struct jsonw j;
	char key[16];
	jsonw_init(&j);
	jsonw_object_begin(&j, NULL);
	jsonw_string(&j, "source", "/proc/stat");
	if (!s->available) {
		jsonw_string(&j, "error", strerror(s->error ? s->error : ENOENT));
		jsonw_object_end(&j);
		return jsonw_take(&j);
	}
	jsonw_int(&j, "tick_ns", s->tick_ns);
	jsonw_int(&j, "period_ns", STEAL_PERIOD_NS);
	jsonw_array_begin(&j, "cpus");
	for (int i = 0; i < s->ncpus; i++)
		jsonw_int(&j, NULL, s->cpus[i]);
	jsonw_array_end(&j);
	jsonw_uint(&j, "samples", s->samples);
	jsonw_uint(&j, "failed", s->failed);
	jsonw_int(&j, "first_ns", s->first_ns);
	jsonw_int(&j, "last_ns", s->last_ns);
	jsonw_int(&j, "max_gap_ns", s->max_gap_ns);
	jsonw_object_begin(&j, "total_ns");
	for (int i = 0; i < s->ncpus; i++) {
		snprintf(key, sizeof(key), "%d", s->cpus[i]);
		jsonw_uint(&j, key, s->total[i] * (uint64_t)s->tick_ns);
	}
	jsonw_object_end(&j);
	jsonw_array_begin(&j, "rises");
	for (size_t k = 0; k < s->nrises; k++) {
		const struct steal_rise *r = &s->rises[k];
		jsonw_array_begin(&j, NULL);
		jsonw_int(&j, NULL, r->cpu);
		jsonw_int(&j, NULL, r->from_ns);
		jsonw_int(&j, NULL, r->to_ns);
		jsonw_uint(&j, NULL, r->ticks * (uint64_t)s->tick_ns);
		jsonw_array_end(&j);
	}
	jsonw_array_end(&j);
	jsonw_uint(&j, "left_out", s->left_out);
	jsonw_object_end(&j);
	return jsonw_take(&j);
}
