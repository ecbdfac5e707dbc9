/* The binary reader of --trace: each measured CPU's trace_pipe_raw (ring-buffer
 * pages, no text formatting in the kernel) decoded with the events' format
 * files into rows of the events table, at nanosecond resolution.  Reader
 * thread only (setup: main); never prints.
 *
 * A page: u64 timestamp, local_t commit (data size, RB_MISSED_EVENTS in bit
 * 31, RB_MISSED_STORED in bit 30 with the count after the data), then events,
 * each a u32 header (type_len:5, time_delta:27): 1..28 data of type_len * 4
 * bytes, 0 data whose length is in the next u32, 29 padding, 30 a time
 * extension, 31 an absolute time stamp (kernel/trace/ring_buffer.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

#define TRACEFS "/sys/kernel/tracing"
#define RAW_PAGE 4096
#define RAW_DATA 16              /* header_page: data at offset 16 on 64-bit kernels */
#define RAW_MISSED_EVENTS (1ULL << 31)
#define RAW_MISSED_STORED (1ULL << 30)
#define RAW_MAX_ID 8192
#define RAW_PIDS 4096            /* pid -> comm cache (open addressing) */

static const char *const trace_softirq_names[] = {"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL",
						  "TASKLET", "SCHED", "HRTIMER", "RCU"};

enum raw_field { RF_A, RF_B, RF_C, RF_D, RF_E, RF_F, RF_G, RF_COUNT = 8 };

struct trace_format {
	int code;                 /* TRACE_EV_* */
	int32_t name;             /* vector name / event name; -1 */
	int off[RF_COUNT], size[RF_COUNT];
};

struct trace_raw {
	int ncpus;
	int *fd;
	int *cpu;
	struct trace_format *by_id[RAW_MAX_ID];
	int32_t pid_key[RAW_PIDS], pid_comm[RAW_PIDS];
	uint8_t page[RAW_PAGE];
};

/* offset and size of field `name` in a format file's text, or -1. */
static void raw_field(const char *text, const char *name, int *off, int *size)
{
	*off = *size = -1;
	char key[80];
	for (const char *p = text; (p = strstr(p, "field:")); p++) {
		const char *semi = strchr(p, ';');
		if (!semi)
			return;
		const char *end = semi;
		if (end > p && end[-1] == ']') /* char prev_comm[16], char buf[] */
			while (end > p && *end != '[')
				end--;
		const char *start = end;
		while (start > p && start[-1] != ' ')
			start--;
		snprintf(key, sizeof(key), "%.*s", (int)(end - start), start);
		if (strcmp(key, name) == 0 && sscanf(semi, "; offset:%d; size:%d;", off, size) == 2)
			return;
	}
}

static bool raw_read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t used = 0;
	ssize_t n;
	while (used < len - 1 && (n = read(fd, buf + used, len - 1 - used)) > 0)
		used += (size_t)n;
	close(fd);
	buf[used] = '\0';
	return used > 0;
}

/* The fields each code decodes, in raw_field order A.. */
static const char *const *raw_field_names(int code)
{
	static const char *const irq[] = {"irq", "name", NULL};
	static const char *const softirq[] = {"vec", NULL};
	static const char *const vector[] = {"vector", NULL};
	static const char *const nmi[] = {"handler", "delta_ns", NULL};
	static const char *const sw[] = {"prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid",
					 "next_prio", NULL};
	static const char *const wake[] = {"comm", "pid", "prio", "target_cpu", NULL};
	static const char *const hrtimer[] = {"function", "now", NULL};
	static const char *const print[] = {"buf", NULL};
	static const char *const none[] = {NULL};
	switch (code) {
	case TRACE_EV_IRQ_ENTRY: case TRACE_EV_IRQ_EXIT: return irq;
	case TRACE_EV_SOFTIRQ_ENTRY: case TRACE_EV_SOFTIRQ_EXIT: case TRACE_EV_SOFTIRQ_RAISE: return softirq;
	case TRACE_EV_VECTOR_ENTRY: case TRACE_EV_VECTOR_EXIT: return vector;
	case TRACE_EV_NMI: return nmi;
	case TRACE_EV_SWITCH: return sw;
	case TRACE_EV_WAKEUP: case TRACE_EV_WAKING: return wake;
	case TRACE_EV_HRTIMER: return hrtimer;
	case TRACE_EV_MARKER: return print;
	default: return none;
	}
}

static int raw_code(const char *system, const char *event)
{
	size_t len = strlen(event);
	static const struct { const char *name; int code; } known[] = {
		{"irq_handler_entry", TRACE_EV_IRQ_ENTRY}, {"irq_handler_exit", TRACE_EV_IRQ_EXIT},
		{"softirq_entry", TRACE_EV_SOFTIRQ_ENTRY}, {"softirq_exit", TRACE_EV_SOFTIRQ_EXIT},
		{"softirq_raise", TRACE_EV_SOFTIRQ_RAISE}, {"nmi_handler", TRACE_EV_NMI},
		{"sched_switch", TRACE_EV_SWITCH}, {"sched_wakeup", TRACE_EV_WAKEUP}, {"sched_waking", TRACE_EV_WAKING},
		{"hrtimer_expire_entry", TRACE_EV_HRTIMER}, {"hrtimer_expire_exit", TRACE_EV_HRTIMER_EXIT},
		{"print", TRACE_EV_MARKER},
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(event, known[i].name) == 0)
			return known[i].code;
	if (strcmp(system, "irq_vectors") == 0 && len > 6 && strcmp(event + len - 6, "_entry") == 0)
		return TRACE_EV_VECTOR_ENTRY;
	if (strcmp(system, "irq_vectors") == 0 && len > 5 && strcmp(event + len - 5, "_exit") == 0)
		return TRACE_EV_VECTOR_EXIT;
	return TRACE_EV_OTHER;
}

/* Loads events/SYSTEM/EVENT/format of the instance; -errno. */
static int raw_load_format(struct trace *t, struct trace_raw *r, const char *system, const char *event)
{
	static char text[16384];
	char path[512];
	snprintf(path, sizeof(path), "%s/events/%s/%s/format", t->dir, system, event);
	if (!raw_read_text(path, text, sizeof(text)))
		return -errno ? -errno : -EIO;
	const char *id_at = strstr(text, "\nID: ");
	int id = id_at ? atoi(id_at + 5) : -1;
	if (id < 0 || id >= RAW_MAX_ID)
		return -ERANGE;
	struct trace_format *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->code = raw_code(system, event);
	size_t len = strlen(event);
	f->name = f->code == TRACE_EV_VECTOR_ENTRY || f->code == TRACE_EV_VECTOR_EXIT
		  ? trace_string_id(&t->strings, event, len - (f->code == TRACE_EV_VECTOR_ENTRY ? 6 : 5))
		  : f->code == TRACE_EV_OTHER ? trace_string_id(&t->strings, event, len) : -1;
	const char *const *names = raw_field_names(f->code);
	for (int k = 0; k < RF_COUNT; k++)
		f->off[k] = f->size[k] = -1;
	for (int k = 0; k < RF_COUNT && names[k]; k++)
		raw_field(text, names[k], &f->off[k], &f->size[k]);
	free(r->by_id[id]);
	r->by_id[id] = f;
	return 0;
}

/* Every event enabled in the instance (its set_event), plus ftrace/print for the markers. */
static int raw_load_formats(struct trace *t, struct trace_raw *r)
{
	char path[320], line[256];
	snprintf(path, sizeof(path), "%s/set_event", t->dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int err = 0;
	while (!err && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		err = raw_load_format(t, r, line, colon + 1);
	}
	fclose(f);
	return err ? err : raw_load_format(t, r, "ftrace", "print");
}

int trace_raw_open(struct trace *t)
{
	struct trace_raw *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	t->raw = r;
	r->ncpus = t->cfg->ncpus;
	r->fd = malloc(sizeof(int) * (size_t)r->ncpus);
	r->cpu = malloc(sizeof(int) * (size_t)r->ncpus);
	if (!r->fd || !r->cpu)
		return -ENOMEM;
	for (int i = 0; i < r->ncpus; i++)
		r->fd[i] = -1;
	int err = raw_load_formats(t, r);
	for (int i = 0; !err && i < r->ncpus; i++) {
		char path[320];
		r->cpu[i] = t->cfg->cpus[i];
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", t->dir, r->cpu[i]);
		if ((r->fd[i] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
			err = -errno;
	}
	return err;
}

void trace_raw_close(struct trace *t)
{
	struct trace_raw *r = t->raw;
	if (!r)
		return;
	for (int i = 0; r->fd && i < r->ncpus; i++)
		if (r->fd[i] >= 0)
			close(r->fd[i]);
	for (int id = 0; id < RAW_MAX_ID; id++)
		free(r->by_id[id]);
	free(r->fd);
	free(r->cpu);
	free(r);
	t->raw = NULL;
}

/* ---- decoding ------------------------------------------------------------------------ */

static int64_t raw_int(const uint8_t *data, size_t len, int off, int size)
{
	if (off < 0 || (size_t)(off + size) > len)
		return -1;
	if (size == 8) {
		int64_t v;
		memcpy(&v, data + off, 8);
		return v;
	}
	if (size == 4) {
		int32_t v;
		memcpy(&v, data + off, 4);
		return v;
	}
	if (size == 2) {
		uint16_t v;
		memcpy(&v, data + off, 2);
		return v;
	}
	return size == 1 ? data[off] : -1;
}

/* A char[N] field (NUL-padded) or, with dynamic, a __data_loc string (u32: offset | length << 16). */
static int32_t raw_string(struct trace *t, const uint8_t *data, size_t len, int off, int size, bool dynamic)
{
	if (off < 0 || (size_t)off > len)
		return -1;
	if (dynamic) {
		uint32_t loc = (uint32_t)raw_int(data, len, off, 4);
		size_t at = loc & 0xffff, n = loc >> 16;
		if (at + n > len)
			return -1;
		off = (int)at;
		size = (int)n;
	}
	size_t max = size > 0 ? (size_t)size : len - (size_t)off; /* char buf[]: to the end of the event */
	if ((size_t)off + max > len)
		max = len - (size_t)off;
	return trace_string_id(&t->strings, (const char *)data + off, strnlen((const char *)data + off, max));
}

static size_t raw_pid_slot(struct trace_raw *r, int32_t pid)
{
	size_t k = ((uint32_t)pid * 2654435761u) & (RAW_PIDS - 1);
	for (size_t probes = 0; probes < RAW_PIDS && r->pid_key[k] && r->pid_key[k] != pid + 1; probes++)
		k = (k + 1) & (RAW_PIDS - 1);
	return k;
}

/* The text output names a task from the kernel's saved cmdlines; here, from the last switch or wake-up seen. */
static void raw_remember(struct trace_raw *r, int32_t pid, int32_t comm)
{
	if (pid <= 0 || comm < 0)
		return;
	size_t k = raw_pid_slot(r, pid);
	r->pid_key[k] = pid + 1;
	r->pid_comm[k] = comm;
}

static int32_t raw_comm_of(struct trace_raw *r, int32_t pid)
{
	if (pid == 0)
		return -1;
	size_t k = raw_pid_slot(r, pid);
	return r->pid_key[k] == pid + 1 ? r->pid_comm[k] : -1;
}

static void raw_fill(struct trace *t, const struct trace_format *f, const uint8_t *d, size_t len,
		     struct trace_row *row)
{
	const int *o = f->off, *z = f->size;
	switch (f->code) {
	case TRACE_EV_IRQ_ENTRY: row->name = raw_string(t, d, len, o[RF_B], z[RF_B], true); /* fall through */
	case TRACE_EV_IRQ_EXIT: row->number = (int32_t)raw_int(d, len, o[RF_A], z[RF_A]); break;
	case TRACE_EV_SOFTIRQ_ENTRY: case TRACE_EV_SOFTIRQ_EXIT: case TRACE_EV_SOFTIRQ_RAISE:
		row->number = (int32_t)raw_int(d, len, o[RF_A], z[RF_A]);
		if (row->number >= 0 && row->number < 10)
			row->name = trace_string_id(&t->strings, trace_softirq_names[row->number],
						    strlen(trace_softirq_names[row->number]));
		break;
	case TRACE_EV_VECTOR_ENTRY: case TRACE_EV_VECTOR_EXIT: row->number = (int32_t)raw_int(d, len, o[RF_A], z[RF_A]); break;
	case TRACE_EV_NMI: case TRACE_EV_HRTIMER: {
		char sym[32];
		int n = snprintf(sym, sizeof(sym), "0x%llx", (unsigned long long)raw_int(d, len, o[RF_A], z[RF_A]));
		row->name = trace_string_id(&t->strings, sym, (size_t)n); /* an address; trace_finish names it */
		row->value = raw_int(d, len, o[RF_B], z[RF_B]); /* NMI: delta_ns */
		if (f->code == TRACE_EV_HRTIMER) /* the expiry's `now` as ns before this event: small numbers encode
		                                 * in a few bits, an absolute time in 44 (a quarter of a kept row) */
			row->value = o[RF_B] >= 0 ? row->ts_ns - row->value : 0;
		break;
	}
	case TRACE_EV_SWITCH:
		row->comm = raw_string(t, d, len, o[RF_A], z[RF_A], false);
		row->pid = (int32_t)raw_int(d, len, o[RF_B], z[RF_B]);
		row->prio = (int32_t)raw_int(d, len, o[RF_C], z[RF_C]);
		row->value = (raw_int(d, len, o[RF_D], z[RF_D]) & 0xff) == 0; /* no state bit (0x100 = preempted): R */
		row->other_comm = raw_string(t, d, len, o[RF_E], z[RF_E], false);
		row->other_pid = (int32_t)raw_int(d, len, o[RF_F], z[RF_F]);
		row->other_prio = (int32_t)raw_int(d, len, o[RF_G], z[RF_G]);
		break;
	case TRACE_EV_WAKEUP: case TRACE_EV_WAKING:
		row->other_comm = raw_string(t, d, len, o[RF_A], z[RF_A], false);
		row->other_pid = (int32_t)raw_int(d, len, o[RF_B], z[RF_B]);
		row->other_prio = (int32_t)raw_int(d, len, o[RF_C], z[RF_C]);
		row->number = (int32_t)raw_int(d, len, o[RF_D], z[RF_D]);
		break;
	case TRACE_EV_MARKER:
		if (o[RF_A] >= 0 && (size_t)o[RF_A] <= len) { /* the kernel ends a marker with a newline: not its text */
			const char *text = (const char *)d + o[RF_A];
			size_t n = strnlen(text, len - (size_t)o[RF_A]);
			while (n && text[n - 1] == '\n')
				n--;
			row->name = trace_string_id(&t->strings, text, n);
		}
		break;
	default: row->name = f->name; break;
	}
	if (f->code == TRACE_EV_VECTOR_ENTRY || f->code == TRACE_EV_VECTOR_EXIT)
		row->name = f->name;
}

static int raw_event(struct trace *t, int cpu, int64_t ts, const uint8_t *d, size_t len)
{
	struct trace_raw *r = t->raw;
	if (len < 8)
		return 0;
	int id = (int)raw_int(d, len, 0, 2);
	const struct trace_format *f = id < RAW_MAX_ID ? r->by_id[id] : NULL;
	if (!f) {
		t->unparsed++;
		return 0;
	}
	struct trace_row row = {.ts_ns = ts, .cpu = cpu, .event = f->code, .pid = (int32_t)raw_int(d, len, 4, 4),
				.comm = -1, .number = -1, .name = -1, .other_pid = -1, .other_prio = -1,
				.other_comm = -1, .prio = -1, .value = 0};
	raw_fill(t, f, d, len, &row);
	if (row.comm == -1)
		row.comm = raw_comm_of(r, row.pid);
	if (row.comm < -1 || row.name < -1 || row.other_comm < -1) /* trace_string_id: -ENOMEM */
		return -ENOMEM;
	raw_remember(r, row.pid, row.comm);
	raw_remember(r, row.other_pid, row.other_comm);
	t->last_ts[cpu] = ts;
	t->marker_rows += row.event == TRACE_EV_MARKER;
	return trace_keep_row(t, &row);
}

static int raw_lost(struct trace *t, int cpu, long long count)
{
	struct trace_row row = {.ts_ns = t->last_ts[cpu], .cpu = cpu, .event = TRACE_EV_LOST, .pid = -1, .comm = -1,
				.number = -1, .name = -1, .other_pid = -1, .other_prio = -1, .other_comm = -1,
				.prio = -1, .value = count};
	t->lost_reported += count > 0 ? (uint64_t)count : 0;
	return trace_keep_row(t, &row);
}

/* One page image as trace_pipe_raw returns it. */
static int raw_page(struct trace *t, int cpu, const uint8_t *page, size_t got)
{
	uint64_t ts, commit;
	memcpy(&ts, page, 8);
	memcpy(&commit, page + 8, 8);
	size_t size = (size_t)(commit & ~(RAW_MISSED_EVENTS | RAW_MISSED_STORED) & 0xffffffffULL);
	if (size > got - RAW_DATA)
		return t->unparsed++, 0;
	const uint8_t *data = page + RAW_DATA;
	int err = 0;
	if (commit & RAW_MISSED_EVENTS) {
		long long count = -1;
		if ((commit & RAW_MISSED_STORED) && RAW_DATA + size + 8 <= got)
			memcpy(&count, data + size, 8);
		err = raw_lost(t, cpu, count);
	}
	for (size_t p = 0; !err && p + 4 <= size;) {
		uint32_t head, array0 = 0;
		memcpy(&head, data + p, 4);
		uint32_t type_len = head & 31, delta = head >> 5;
		if (p + 8 <= size)
			memcpy(&array0, data + p + 4, 4);
		if (type_len == 29) { /* padding: the rest of the page, or array0 bytes */
			if (delta == 0)
				break;
			p += 4 + array0;
		} else if (type_len == 30) {
			ts += ((uint64_t)array0 << 27) | delta;
			p += 8;
		} else if (type_len == 31) {
			ts = ((uint64_t)array0 << 27) | delta | (ts & (0x1fULL << 59));
			p += 8;
		} else {
			ts += delta;
			size_t at = type_len ? p + 4 : p + 8, len = type_len ? type_len * 4u : (array0 >= 4 ? array0 - 4 : 0);
			if (at + len > size)
				break;
			err = raw_event(t, cpu, (int64_t)ts, data + at, len);
			p = at + len;
		}
	}
	return err;
}

int trace_raw_read(struct trace *t)
{
	struct trace_raw *r = t->raw;
	for (int i = 0; i < r->ncpus; i++) {
		for (;;) {
			ssize_t n = read(r->fd[i], r->page, RAW_PAGE);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			if (n < 0)
				return -errno;
			if (n <= RAW_DATA)
				break;
			int err = raw_page(t, r->cpu[i], r->page, (size_t)n);
			if (err)
				return err;
		}
	}
	return 0;
}

struct raw_addr {
	unsigned long long addr;
	size_t string;
};

static int raw_addr_cmp(const void *a, const void *b)
{
	const struct raw_addr *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* NMI handlers and hrtimer functions are addresses in the binary events: named from /proc/kallsyms.  The
 * addresses wanted are sorted once and each kallsyms line costs one strtoull and a binary search (the file has
 * ~200,000 lines: a sscanf and a scan of the dictionary per line cost 100 ms of CPU per capture). */
void trace_raw_symbolize(struct trace *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->strings.n; i++)
		n += strncmp(t->strings.text[i], "0x", 2) == 0;
	struct raw_addr *want = n ? calloc(n, sizeof(*want)) : NULL;
	FILE *f = want ? fopen("/proc/kallsyms", "re") : NULL;
	if (!f) {
		free(want);
		return;
	}
	n = 0;
	for (size_t i = 0; i < t->strings.n; i++)
		if (strncmp(t->strings.text[i], "0x", 2) == 0)
			want[n++] = (struct raw_addr){.addr = strtoull(t->strings.text[i] + 2, NULL, 16), .string = i};
	qsort(want, n, sizeof(*want), raw_addr_cmp);
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char *end;
		struct raw_addr key = {.addr = strtoull(line, &end, 16)};
		struct raw_addr *hit = key.addr ? bsearch(&key, want, n, sizeof(*want), raw_addr_cmp) : NULL;
		if (!hit || end[0] != ' ' || !end[1] || end[2] != ' ')
			continue;
		char *name = end + 3;
		name[strcspn(name, " \t\n")] = '\0';
		while (hit > want && hit[-1].addr == key.addr) /* the first of equal addresses */
			hit--;
		for (; hit < want + n && hit->addr == key.addr; hit++) {
			char *named = strncmp(t->strings.text[hit->string], "0x", 2) == 0 ? strdup(name) : NULL;
			if (named) { /* the first symbol of an address names it; the dictionary takes no lookups after */
				free(t->strings.text[hit->string]);
				t->strings.text[hit->string] = named;
			}
		}
	}
	fclose(f);
	free(want);
}
