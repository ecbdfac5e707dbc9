/* Counter probe, per-CPU handles and reads; see counters.h.
 * The probe runs at setup; counters_read() is the only function the measuring
 * loop calls: a pread/read per present counter, no allocation, no printing. */
#include "counters.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#if COUNTERS_HAVE_TSC
#include <cpuid.h>
#endif

#define MSR_SMI_COUNT 0x34
#define MSR_MPERF 0xE7
#define MSR_APERF 0xE8
#define MSR_PERF_STATUS 0x198
#define MSR_AMD_MPERF_RD_ONLY 0xC00000E7
#define MSR_AMD_APERF_RD_ONLY 0xC00000E8
#define PERF_MSR_PMU "/sys/bus/event_source/devices/msr"

const char *const counters_names[CTR_COUNT] = {"aperf", "mperf", "smi", "perf_status"};

const char *counters_source_name(enum counters_source s)
{
	static const char *const names[] = {"none", "msr", "file", "perf"};
	return names[s];
}

static void counters_vendor(char vendor[13])
{
	strcpy(vendor, "unknown");
#if COUNTERS_HAVE_TSC
	unsigned a, b, c, d;
	if (__get_cpuid(0, &a, &b, &c, &d)) {
		memcpy(vendor, &b, 4);
		memcpy(vendor + 4, &d, 4);
		memcpy(vendor + 8, &c, 4);
		vendor[12] = '\0';
	}
#endif
}

static void counters_msr_path(const struct config *cfg, int cpu, char *path, size_t len)
{
	snprintf(path, len, "%s/%d/msr", cfg->msr_dir ? cfg->msr_dir : "/dev/cpu", cpu);
}

static bool counters_pread(int fd, uint32_t address)
{
	uint64_t value;
	return pread(fd, &value, sizeof(value), address) == (ssize_t)sizeof(value);
}

/* Candidate addresses per counter, in order of preference for this vendor. */
static int counters_msr_candidates(const char *vendor, int ctr, uint32_t out[2])
{
	bool amd = strcmp(vendor, "AuthenticAMD") == 0 || strcmp(vendor, "HygonGenuine") == 0;
	switch (ctr) {
	case CTR_APERF:
		out[0] = amd ? MSR_AMD_APERF_RD_ONLY : MSR_APERF;
		out[1] = MSR_APERF;
		return amd ? 2 : 1;
	case CTR_MPERF:
		out[0] = amd ? MSR_AMD_MPERF_RD_ONLY : MSR_MPERF;
		out[1] = MSR_MPERF;
		return amd ? 2 : 1;
	case CTR_SMI: out[0] = MSR_SMI_COUNT; return 1;
	default: out[0] = MSR_PERF_STATUS; return 1;
	}
}

/* A counter is present only if it reads on every measured CPU. */
static int counters_probe_msr(struct counters_probe *p, const struct config *cfg, char *why, size_t whylen)
{
	for (int ctr = 0; ctr < CTR_COUNT; ctr++)
		p->have[ctr] = true;
	for (int i = 0; i < cfg->ncpus; i++) {
		char path[4200];
		counters_msr_path(cfg, cfg->cpus[i], path, sizeof(path));
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			int err = errno;
			snprintf(why, whylen, "cannot open %.150s: %s", path, strerror(err));
			return -err;
		}
		for (int ctr = 0; ctr < CTR_COUNT; ctr++) {
			uint32_t cand[2];
			int n = counters_msr_candidates(p->vendor, ctr, cand), k = 0;
			while (k < n && !counters_pread(fd, cand[k]))
				k++;
			if (k == n && p->have[ctr]) {
				p->have[ctr] = false;
				snprintf(p->missing[ctr], sizeof(p->missing[ctr]), "MSR 0x%X not readable from %.150s",
					 cand[0], path);
			} else if (k < n && i > 0 && p->have[ctr] && p->msr_address[ctr] != cand[k]) {
				p->have[ctr] = false;
				snprintf(p->missing[ctr], sizeof(p->missing[ctr]), "MSR for %s differs between CPUs",
					 counters_names[ctr]);
			} else if (k < n) {
				p->msr_address[ctr] = cand[k];
			}
		}
		close(fd);
	}
	return 0;
}

static int counters_read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static long counters_perf_open(uint32_t type, uint64_t config, int cpu)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config = config;
	/* cpu-bound, all tasks: read by the thread pinned to that CPU, so the read stays local */
	return syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int counters_probe_perf(struct counters_probe *p, const struct config *cfg, char *why, size_t whylen)
{
	char text[256];
	int err = counters_read_text(PERF_MSR_PMU "/type", text, sizeof(text));
	if (err) {
		snprintf(why, whylen, "no msr PMU (%s/type: %s)", PERF_MSR_PMU, strerror(-err));
		return err;
	}
	p->perf_type = (uint32_t)strtoul(text, NULL, 10);
	int found = 0;
	for (int ctr = 0; ctr < CTR_COUNT; ctr++) {
		char path[256];
		unsigned long long config;
		snprintf(path, sizeof(path), PERF_MSR_PMU "/events/%s", counters_names[ctr]);
		p->have[ctr] = false;
		if (counters_read_text(path, text, sizeof(text)) || sscanf(text, "event=%llx", &config) != 1) {
			snprintf(p->missing[ctr], sizeof(p->missing[ctr]), "msr PMU has no '%s' event",
				 counters_names[ctr]);
			continue;
		}
		long fd = counters_perf_open(p->perf_type, config, cfg->cpus[0]);
		if (fd < 0) {
			snprintf(p->missing[ctr], sizeof(p->missing[ctr]), "perf_event_open(msr/%s/): %s",
				 counters_names[ctr], strerror(errno));
			continue;
		}
		close((int)fd);
		p->perf_config[ctr] = config;
		p->have[ctr] = true;
		found++;
	}
	if (!found)
		snprintf(why, whylen, "msr PMU has none of aperf, mperf, smi");
	return found ? 0 : -ENOENT;
}

/* missing[ctr] becomes "msr: <why>; perf: <why>" for every absent counter
 * (the perf part being the probe's own per-counter reason when it has one). */
static void counters_explain(struct counters_probe *p, const char *why_msr, const char *why_perf)
{
	for (int ctr = 0; ctr < CTR_COUNT; ctr++) {
		if (p->have[ctr])
			continue;
		char perf[200];
		snprintf(perf, sizeof(perf), "%s", p->missing[ctr][0] ? p->missing[ctr] : why_perf);
		snprintf(p->missing[ctr], sizeof(p->missing[ctr]), "%s%.90s%s%.90s", why_msr[0] ? "msr: " : "",
			 why_msr, perf[0] ? (why_msr[0] ? "; perf: " : "perf: ") : "", perf);
	}
}

int counters_probe(struct counters_probe *p, const struct config *cfg)
{
	char why_msr[256] = "", why_perf[256] = "";
	memset(p, 0, sizeof(*p));
	counters_vendor(p->vendor);
	if (cfg->counters == COUNTERS_NONE) {
		for (int ctr = 0; ctr < CTR_COUNT; ctr++)
			snprintf(p->missing[ctr], sizeof(p->missing[ctr]), "counters disabled (--counters none)");
		return 0;
	}
	if (cfg->counters != COUNTERS_PERF) {
		int err = counters_probe_msr(p, cfg, why_msr, sizeof(why_msr));
		if (!err) {
			p->source = cfg->msr_dir ? SOURCE_FILE : SOURCE_MSR;
			return 0;
		}
		memset(p->have, 0, sizeof(p->have));
		memset(p->missing, 0, sizeof(p->missing));
		if (cfg->counters == COUNTERS_MSR) {
			fprintf(stderr, "jitterscope-capture: %s (load the msr module, or use --counters perf|none)\n",
				why_msr);
			return err;
		}
	}
	int err = counters_probe_perf(p, cfg, why_perf, sizeof(why_perf));
	if (err && cfg->counters == COUNTERS_PERF) {
		fprintf(stderr, "jitterscope-capture: %s (use --counters msr|none)\n", why_perf);
		return err;
	}
	p->source = err ? SOURCE_NONE : SOURCE_PERF;
	if (err)
		memset(p->have, 0, sizeof(p->have));
	counters_explain(p, why_msr, why_perf);
	return 0;
}

int counters_open(struct counters_cpu *c, const struct counters_probe *p, const struct config *cfg, int cpu)
{
	memset(c, 0, sizeof(*c));
	c->source = p->source;
	c->msr_fd = -1;
	for (int ctr = 0; ctr < CTR_COUNT; ctr++) {
		c->perf_fd[ctr] = -1;
		c->have[ctr] = p->have[ctr];
		c->msr_address[ctr] = p->msr_address[ctr];
	}
	if (p->source == SOURCE_MSR || p->source == SOURCE_FILE) {
		char path[4200];
		counters_msr_path(cfg, cpu, path, sizeof(path));
		c->msr_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (c->msr_fd < 0) {
			int err = errno;
			fprintf(stderr, "jitterscope-capture: cannot open %s: %s (use --counters none)\n", path,
				strerror(err));
			return -err;
		}
	}
	for (int ctr = 0; p->source == SOURCE_PERF && ctr < CTR_COUNT; ctr++) {
		if (!p->have[ctr])
			continue;
		long fd = counters_perf_open(p->perf_type, p->perf_config[ctr], cpu);
		if (fd < 0) {
			int err = errno;
			fprintf(stderr, "jitterscope-capture: perf_event_open(msr/%s/) on CPU %d: %s (use --counters none)\n",
				counters_names[ctr], cpu, strerror(err));
			counters_close(c);
			return -err;
		}
		c->perf_fd[ctr] = (int)fd;
	}
	return 0;
}

void counters_close(struct counters_cpu *c)
{
	if (c->msr_fd >= 0)
		close(c->msr_fd);
	c->msr_fd = -1;
	for (int ctr = 0; ctr < CTR_COUNT; ctr++) {
		if (c->perf_fd[ctr] >= 0)
			close(c->perf_fd[ctr]);
		c->perf_fd[ctr] = -1;
	}
}

int counters_read(const struct counters_cpu *c, uint64_t values[CTR_COUNT])
{
	int failed = 0;
	for (int ctr = 0; ctr < CTR_COUNT; ctr++) {
		if (!c->have[ctr])
			continue;
		ssize_t n = c->source == SOURCE_PERF
				    ? read(c->perf_fd[ctr], &values[ctr], sizeof(values[ctr]))
				    : pread(c->msr_fd, &values[ctr], sizeof(values[ctr]), c->msr_address[ctr]);
		if (n != (ssize_t)sizeof(values[ctr])) {
			values[ctr] = 0;
			failed++;
		}
	}
	return failed;
}

static int64_t counters_raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A (raw ns, tsc) pair from the tightest of a few brackets, so preemption
 * between the two reads does not bias the calibration. */
static void counters_pair(int64_t *raw_ns, uint64_t *tsc)
{
	int64_t best = INT64_MAX;
	*raw_ns = 0;
	*tsc = 0;
	for (int i = 0; i < 20; i++) {
		int32_t cpu;
		int64_t before = counters_raw_ns();
		uint64_t t = counters_tsc(&cpu);
		int64_t after = counters_raw_ns();
		if (after - before < best) {
			best = after - before;
			*raw_ns = before + (after - before) / 2;
			*tsc = t;
		}
	}
}

static double counters_cpuid_15(void)
{
#if COUNTERS_HAVE_TSC
	unsigned max, a, b, c, d;
	if (!__get_cpuid(0, &max, &b, &c, &d) || max < 0x15)
		return 0;
	__cpuid_count(0x15, 0, a, b, c, d);
	if (a && b && c) /* crystal Hz * TSC/crystal ratio */
		return (double)c * b / a;
#endif
	return 0;
}

void counters_tsc_anchor(struct tsc_anchor *a)
{
	counters_pair(&a->raw_ns, &a->tsc);
}

double counters_tsc_hz_since(const struct tsc_anchor *a, int64_t min_span_ns, char *source, size_t n)
{
	if (!COUNTERS_HAVE_TSC) {
		snprintf(source, n, "no TSC on this architecture: tsc column is CLOCK_MONOTONIC_RAW in ns");
		return 1e9;
	}
	double hz = counters_cpuid_15();
	if (hz > 0) {
		snprintf(source, n, "cpuid 0x15 (crystal clock times TSC ratio)");
		return hz;
	}
	int64_t raw;
	uint64_t tsc;
	counters_pair(&raw, &tsc);
	if (raw - a->raw_ns < min_span_ns) {
		int64_t rest = min_span_ns - (raw - a->raw_ns);
		struct timespec pause = {rest / 1000000000, rest % 1000000000};
		while (nanosleep(&pause, &pause) && errno == EINTR)
			;
		counters_pair(&raw, &tsc);
	}
	double span_ns = (double)(raw - a->raw_ns);
	snprintf(source, n, "calibrated against CLOCK_MONOTONIC_RAW over %.3f s (cpuid 0x15 gives no crystal clock)",
		 span_ns / 1e9);
	return (double)(tsc - a->tsc) * 1e9 / span_ns;
}

double counters_tsc_hz(const char **source)
{
	static char text[160]; /* one calibration per process: --mode poll's, at setup */
	struct tsc_anchor a;
	counters_tsc_anchor(&a);
	double hz = counters_tsc_hz_since(&a, TSC_CALIBRATION_NS, text, sizeof(text));
	*source = text;
	return hz;
}
