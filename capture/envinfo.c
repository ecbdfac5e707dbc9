/* Environment snapshot as JSON; see envinfo.h.  Setup only: reads small text
 * files with stdio.  The kernel config is read from /boot/config-RELEASE
 * (plain text); /proc/config.gz would need gzip, which libc lacks, so then HZ
 * and NO_HZ are null and kernel_config_error says why. */
#include "envinfo.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "jsonw.h"

#define CPU_SYS "/sys/devices/system/cpu"

/* First line of a small file without its newline; false if unreadable. */
static bool envinfo_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static void envinfo_string_file(struct jsonw *w, const char *key, const char *path)
{
	char buf[4096];
	jsonw_string(w, key, envinfo_read_line(path, buf, sizeof(buf)) ? buf : NULL);
}

static void envinfo_int_file(struct jsonw *w, const char *key, const char *path)
{
	char buf[64], *end;
	if (envinfo_read_line(path, buf, sizeof(buf))) {
		long long v = strtoll(buf, &end, 10);
		if (end != buf && *end == '\0') {
			jsonw_int(w, key, v);
			return;
		}
	}
	jsonw_null(w, key);
}

/* Value of "key\t: value" in the first processor block of /proc/cpuinfo. */
static bool envinfo_cpuinfo(const char *key, char *out, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	size_t klen = strlen(key);
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) != 0 || (line[klen] != '\t' && line[klen] != ' ' && line[klen] != ':'))
			continue;
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		colon += 1 + (colon[1] == ' ');
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(out, len, "%s", colon);
		found = true;
	}
	fclose(f);
	return found;
}

struct envinfo_kconfig {
	char source[300];
	char error[512];
	int hz;                /* 0 = unknown */
	const char *no_hz;     /* idle|full|off|NULL */
	const char *preempt;   /* none|voluntary|full|rt|dynamic|NULL */
};

static void envinfo_kconfig_line(struct envinfo_kconfig *k, const char *line)
{
	if (sscanf(line, "CONFIG_HZ=%d", &k->hz) == 1)
		return;
	if (!strcmp(line, "CONFIG_NO_HZ_FULL=y"))
		k->no_hz = "full";
	else if (!strcmp(line, "CONFIG_NO_HZ_IDLE=y") && !k->no_hz)
		k->no_hz = "idle";
	else if (!strcmp(line, "CONFIG_HZ_PERIODIC=y") && !k->no_hz)
		k->no_hz = "off";
	else if (!strcmp(line, "CONFIG_PREEMPT_RT=y"))
		k->preempt = "rt";
	else if (!strcmp(line, "CONFIG_PREEMPT_DYNAMIC=y") && (!k->preempt || strcmp(k->preempt, "rt")))
		k->preempt = "dynamic";
	else if (!strcmp(line, "CONFIG_PREEMPT=y") && !k->preempt)
		k->preempt = "full";
	else if (!strcmp(line, "CONFIG_PREEMPT_VOLUNTARY=y") && !k->preempt)
		k->preempt = "voluntary";
	else if (!strcmp(line, "CONFIG_PREEMPT_NONE=y") && !k->preempt)
		k->preempt = "none";
}

static void envinfo_read_kconfig(struct envinfo_kconfig *k, const char *release)
{
	memset(k, 0, sizeof(*k));
	char path[300];
	snprintf(path, sizeof(path), "/boot/config-%.250s", release);
	FILE *f = fopen(path, "re");
	if (!f) {
		struct stat st;
		if (stat("/proc/config.gz", &st) == 0)
			snprintf(k->error, sizeof(k->error),
				 "%s missing and /proc/config.gz is gzip-compressed (not readable without zlib)", path);
		else
			snprintf(k->error, sizeof(k->error), "neither %s nor /proc/config.gz exists", path);
		return;
	}
	snprintf(k->source, sizeof(k->source), "%s", path);
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		envinfo_kconfig_line(k, line);
	}
	fclose(f);
}

/* CONFIG_HZ measured where the config cannot be read: the coarse clocks advance once a jiffy, and Linux gives
 * their resolution as one jiffy (LOW_RES_NSEC = TICK_NSEC = (10^9 + HZ/2) / HZ), so HZ = 10^9 / resolution,
 * accepted only within 0.5 % of a value Kconfig offers.  Exact, instant and readable by anyone.  (It replaces
 * jiffies against CLOCK_MONOTONIC in /proc/timer_list, which cannot tell HZ within a minute of the jiffies
 * wrap, five minutes after boot: a freshly booted CI machine measured nothing there.)  0 when not close. */
static int envinfo_hz_from_coarse_clock(void)
{
	static const int offered[] = {100, 250, 300, 1000, 24, 48, 64, 128, 200, 256, 500, 512, 1024};
	struct timespec res;
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) || res.tv_sec != 0 || res.tv_nsec <= 0)
		return 0;
	double hz = 1e9 / (double)res.tv_nsec;
	for (size_t i = 0; i < sizeof(offered) / sizeof(offered[0]); i++)
		if (hz > offered[i] * 0.995 && hz < offered[i] * 1.005)
			return offered[i];
	return 0;
}

/* PREEMPT flavour from uname -v ("... SMP PREEMPT_DYNAMIC ..."), else the config. */
static const char *envinfo_preempt(const char *version, const struct envinfo_kconfig *k)
{
	if (strstr(version, "PREEMPT_RT"))
		return "rt";
	if (strstr(version, "PREEMPT_DYNAMIC"))
		return "dynamic";
	if (strstr(version, "PREEMPT "))
		return "full";
	return k->preempt;
}

static void envinfo_kernel(struct jsonw *w)
{
	struct utsname u;
	struct envinfo_kconfig k;
	uname(&u);
	envinfo_read_kconfig(&k, u.release);
	jsonw_string(w, "hostname", u.nodename);
	jsonw_string(w, "kernel_release", u.release);
	jsonw_string(w, "kernel_version", u.version);
	jsonw_string(w, "machine", u.machine);
	envinfo_string_file(w, "cmdline", "/proc/cmdline");
	const char *preempt = envinfo_preempt(u.version, &k);
	jsonw_string(w, "preempt", preempt);
	jsonw_bool(w, "preempt_rt", preempt && !strcmp(preempt, "rt"));
	const char *hz_source = k.hz ? "kernel config" : NULL;
	if (!k.hz && (k.hz = envinfo_hz_from_coarse_clock()) != 0)
		hz_source = "measured: the resolution of CLOCK_MONOTONIC_COARSE (one jiffy)";
	if (k.hz)
		jsonw_int(w, "hz", k.hz);
	else
		jsonw_null(w, "hz");
	jsonw_string(w, "hz_source", hz_source);
	jsonw_string(w, "no_hz", k.no_hz);
	jsonw_string(w, "kernel_config_source", k.source[0] ? k.source : NULL);
	if (k.error[0])
		jsonw_string(w, "kernel_config_error", k.error);
}

static void envinfo_cpu(struct jsonw *w)
{
	char buf[512];
	jsonw_string(w, "cpu_model", envinfo_cpuinfo("model name", buf, sizeof(buf)) ? buf : NULL);
	jsonw_string(w, "cpu_vendor", envinfo_cpuinfo("vendor_id", buf, sizeof(buf)) ? buf : NULL);
	jsonw_string(w, "microcode", envinfo_cpuinfo("microcode", buf, sizeof(buf)) ? buf : NULL);
	envinfo_string_file(w, "clocksource", "/sys/devices/system/clocksource/clocksource0/current_clocksource");
	envinfo_string_file(w, "available_clocksources",
			    "/sys/devices/system/clocksource/clocksource0/available_clocksource");
	envinfo_string_file(w, "cpus_online", CPU_SYS "/online");
	envinfo_string_file(w, "isolated_cpus", CPU_SYS "/isolated");
	envinfo_string_file(w, "nohz_full_cpus", CPU_SYS "/nohz_full");
	envinfo_int_file(w, "rt_runtime_us", "/proc/sys/kernel/sched_rt_runtime_us");
	envinfo_int_file(w, "rt_period_us", "/proc/sys/kernel/sched_rt_period_us");
	envinfo_string_file(w, "intel_pstate_status", CPU_SYS "/intel_pstate/status");
}

/* Which CPUs share a core: thread_siblings_list of every online CPU ("0,4"),
 * so the analysis can name the siblings of the measured CPUs. */
static void envinfo_siblings(struct jsonw *w)
{
	envinfo_int_file(w, "smt_active", CPU_SYS "/smt/active");
	jsonw_object_begin(w, "cpu_siblings");
	for (int cpu = 0; cpu < 4096; cpu++) {
		char path[128], buf[256], key[16];
		struct stat st;
		snprintf(path, sizeof(path), CPU_SYS "/cpu%d", cpu);
		if (stat(path, &st))
			break;
		snprintf(path, sizeof(path), CPU_SYS "/cpu%d/topology/thread_siblings_list", cpu);
		if (!envinfo_read_line(path, buf, sizeof(buf)))
			continue; /* offline CPUs have no topology */
		snprintf(key, sizeof(key), "%d", cpu);
		jsonw_string(w, key, buf);
	}
	jsonw_object_end(w);
}

static void envinfo_cpufreq_one(struct jsonw *w, int cpu)
{
	static const char *const files[][2] = {
		{"driver", "scaling_driver"}, {"governor", "scaling_governor"},
		{"cur_khz", "scaling_cur_freq"}, {"min_khz", "scaling_min_freq"}, {"max_khz", "scaling_max_freq"},
	};
	char key[16], path[128];
	snprintf(key, sizeof(key), "%d", cpu);
	jsonw_object_begin(w, key);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), CPU_SYS "/cpu%d/cpufreq/%s", cpu, files[i][1]);
		if (i < 2)
			envinfo_string_file(w, files[i][0], path);
		else
			envinfo_int_file(w, files[i][0], path);
	}
	jsonw_object_end(w);
}

/* Per online CPU that has a cpufreq directory; {} when there is no cpufreq. */
static void envinfo_cpufreq(struct jsonw *w)
{
	jsonw_object_begin(w, "cpufreq");
	for (int cpu = 0; cpu < 4096; cpu++) {
		char path[128];
		struct stat st;
		snprintf(path, sizeof(path), CPU_SYS "/cpu%d", cpu);
		if (stat(path, &st))
			break;
		snprintf(path, sizeof(path), CPU_SYS "/cpu%d/cpufreq", cpu);
		if (stat(path, &st) == 0)
			envinfo_cpufreq_one(w, cpu);
	}
	jsonw_object_end(w);
}

static void envinfo_cpuidle(struct jsonw *w)
{
	char path[160], buf[256];
	jsonw_object_begin(w, "cpuidle");
	envinfo_string_file(w, "driver", CPU_SYS "/cpuidle/current_driver");
	if (envinfo_read_line(CPU_SYS "/cpuidle/current_governor", buf, sizeof(buf)) ||
	    envinfo_read_line(CPU_SYS "/cpuidle/current_governor_ro", buf, sizeof(buf)))
		jsonw_string(w, "governor", buf);
	else
		jsonw_null(w, "governor");
	jsonw_array_begin(w, "states");
	for (int state = 0; state < 64; state++) {
		snprintf(path, sizeof(path), CPU_SYS "/cpu0/cpuidle/state%d/name", state);
		if (!envinfo_read_line(path, buf, sizeof(buf)))
			break;
		jsonw_object_begin(w, NULL);
		jsonw_string(w, "name", buf);
		snprintf(path, sizeof(path), CPU_SYS "/cpu0/cpuidle/state%d/desc", state);
		envinfo_string_file(w, "desc", path);
		snprintf(path, sizeof(path), CPU_SYS "/cpu0/cpuidle/state%d/latency", state);
		envinfo_int_file(w, "exit_latency_us", path);
		snprintf(path, sizeof(path), CPU_SYS "/cpu0/cpuidle/state%d/disable", state);
		jsonw_bool(w, "disabled", envinfo_read_line(path, buf, sizeof(buf)) && strcmp(buf, "0") != 0);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_object_end(w);
}

char *envinfo_json(void)
{
	return envinfo_json_tracing(NULL);
}

char *envinfo_json_tracing(const char *tracing_json)
{
	struct jsonw w;
	jsonw_init(&w);
	jsonw_object_begin(&w, NULL);
	envinfo_kernel(&w);
	envinfo_cpu(&w);
	envinfo_siblings(&w);
	envinfo_cpufreq(&w);
	envinfo_cpuidle(&w);
	if (tracing_json)
		jsonw_raw(&w, "tracing", tracing_json);
	jsonw_object_end(&w);
	return jsonw_take(&w);
}
