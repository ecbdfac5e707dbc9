/* Parses lines of an instance's trace_pipe (the kernel's default text output)
 * into rows of the events table, and keeps the string dictionary (comms, irq
 * names, marker texts) that goes into the file's key-value metadata.  Reader
 * thread only; never prints.  A line:
 *     <comm>-<pid> [<cpu>] <flags> <sec>.<usec>: <event>: <fields>
 * or "CPU:<n> [LOST <k> EVENTS]" where the ring buffer overwrote events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static uint64_t trace_hash(const char *text, size_t len)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)text[i]) * 1099511628211ULL;
	return h;
}

static int trace_strings_grow(struct trace_strings *s)
{
	size_t nslots = s->nslots ? s->nslots * 2 : 1024;
	uint32_t *slot = calloc(nslots, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		size_t k = trace_hash(s->text[i], strlen(s->text[i])) & (nslots - 1);
		while (slot[k])
			k = (k + 1) & (nslots - 1);
		slot[k] = (uint32_t)(i + 1);
	}
	free(s->slot);
	s->slot = slot;
	s->nslots = nslots;
	return 0;
}

int32_t trace_string_id(struct trace_strings *s, const char *text, size_t len)
{
	if ((s->n + 1) * 2 > s->nslots && trace_strings_grow(s))
		return -ENOMEM;
	size_t k = trace_hash(text, len) & (s->nslots - 1);
	for (; s->slot[k]; k = (k + 1) & (s->nslots - 1)) {
		const char *have = s->text[s->slot[k] - 1];
		if (strncmp(have, text, len) == 0 && have[len] == '\0')
			return (int32_t)(s->slot[k] - 1);
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		char **grown = realloc(s->text, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		s->text = grown;
		s->cap = cap;
	}
	char *copy = strndup(text, len);
	if (!copy)
		return -ENOMEM;
	s->text[s->n] = copy;
	s->slot[k] = (uint32_t)(s->n + 1);
	return (int32_t)s->n++;
}

void trace_strings_free(struct trace_strings *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->text[i]);
	free(s->text);
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

/* The integer after key in fields, or fallback. */
static long long trace_int_field(const char *fields, const char *key, long long fallback)
{
	const char *at = strstr(fields, key);
	if (!at)
		return fallback;
	char *end;
	long long v = strtoll(at + strlen(key), &end, 10);
	return end == at + strlen(key) ? fallback : v;
}

/* The id of the text between key and the next occurrence of until (or the end). */
static int32_t trace_text_field(struct trace *t, const char *fields, const char *key, const char *until)
{
	const char *at = strstr(fields, key);
	if (!at)
		return -1;
	at += strlen(key);
	const char *end = until ? strstr(at, until) : NULL;
	size_t len = end ? (size_t)(end - at) : strlen(at);
	return trace_string_id(&t->strings, at, len);
}

static void trace_fill_irq(struct trace *t, struct trace_row *r, const char *event, const char *fields)
{
	if (strcmp(event, "irq_handler_entry") == 0) {
		r->event = TRACE_EV_IRQ_ENTRY;
		r->number = (int32_t)trace_int_field(fields, "irq=", -1);
		r->name = trace_text_field(t, fields, "name=", NULL);
	} else if (strcmp(event, "irq_handler_exit") == 0) {
		r->event = TRACE_EV_IRQ_EXIT;
		r->number = (int32_t)trace_int_field(fields, "irq=", -1);
	} else if (strncmp(event, "softirq_", 8) == 0) {
		r->event = strcmp(event + 8, "entry") == 0 ? TRACE_EV_SOFTIRQ_ENTRY
			   : strcmp(event + 8, "exit") == 0 ? TRACE_EV_SOFTIRQ_EXIT : TRACE_EV_SOFTIRQ_RAISE;
		r->number = (int32_t)trace_int_field(fields, "vec=", -1);
		r->name = trace_text_field(t, fields, "[action=", "]");
	}
}

static void trace_fill_sched(struct trace *t, struct trace_row *r, const char *event, const char *fields)
{
	if (strcmp(event, "sched_switch") == 0) {
		r->event = TRACE_EV_SWITCH;
		r->pid = (int32_t)trace_int_field(fields, "prev_pid=", r->pid);
		r->comm = trace_text_field(t, fields, "prev_comm=", " prev_pid=");
		r->prio = (int32_t)trace_int_field(fields, "prev_prio=", -1);
		const char *state = strstr(fields, "prev_state=");
		r->value = state && state[11] == 'R';
		r->other_pid = (int32_t)trace_int_field(fields, "next_pid=", -1);
		r->other_prio = (int32_t)trace_int_field(fields, "next_prio=", -1);
		r->other_comm = trace_text_field(t, fields, "next_comm=", " next_pid=");
	} else if (strcmp(event, "sched_wakeup") == 0 || strcmp(event, "sched_waking") == 0) {
		r->event = event[10] == 'u' ? TRACE_EV_WAKEUP : TRACE_EV_WAKING;
		r->other_comm = trace_text_field(t, fields, "comm=", " pid=");
		r->other_pid = (int32_t)trace_int_field(fields, " pid=", -1);
		r->other_prio = (int32_t)trace_int_field(fields, "prio=", -1);
		r->number = (int32_t)trace_int_field(fields, "target_cpu=", -1);
	}
}

/* Event-specific columns; an event we do not model keeps its name only. */
static void trace_fill(struct trace *t, struct trace_row *r, const char *event, const char *fields)
{
	size_t len = strlen(event);
	trace_fill_irq(t, r, event, fields);
	trace_fill_sched(t, r, event, fields);
	if (r->event != TRACE_EV_OTHER)
		return;
	if (strstr(fields, "vector=") && len > 6 && (strcmp(event + len - 6, "_entry") == 0 ||
						     strcmp(event + len - 5, "_exit") == 0)) {
		bool entry = strcmp(event + len - 6, "_entry") == 0;
		r->event = entry ? TRACE_EV_VECTOR_ENTRY : TRACE_EV_VECTOR_EXIT;
		r->number = (int32_t)trace_int_field(fields, "vector=", -1);
		r->name = trace_string_id(&t->strings, event, len - (entry ? 6 : 5));
	} else if (strcmp(event, "nmi_handler") == 0) {
		r->event = TRACE_EV_NMI;
		r->name = trace_text_field(t, fields, "handler=", " ");
		r->value = trace_int_field(fields, "delta_ns=", 0);
	} else if (strcmp(event, "hrtimer_expire_entry") == 0) {
		r->event = TRACE_EV_HRTIMER;
		r->name = trace_text_field(t, fields, "function=", " ");
	} else if (strcmp(event, "tracing_mark_write") == 0) {
		r->event = TRACE_EV_MARKER;
		r->name = trace_string_id(&t->strings, fields, strlen(fields));
	} else {
		r->name = trace_string_id(&t->strings, event, len);
	}
}

/* "CPU:3 [LOST 120 EVENTS]": the loss lies between cpu's previous event and its next one. */
static int trace_parse_lost(struct trace *t, const char *line)
{
	char *end;
	long cpu = strtol(line + 4, &end, 10);
	if (end == line + 4 || cpu < 0 || cpu >= CONFIG_MAX_CPUS)
		return t->unparsed++, 0;
	const char *lost = strstr(end, "[LOST ");
	long long count = lost ? strtoll(lost + 6, NULL, 10) : -1; /* "[LOST EVENTS]": count unknown */
	struct trace_row r = {.ts_ns = t->last_ts[cpu], .cpu = (int32_t)cpu, .event = TRACE_EV_LOST, .pid = -1,
			      .comm = -1, .number = -1, .name = -1, .other_pid = -1, .other_prio = -1,
			      .other_comm = -1, .prio = -1, .value = count};
	t->lost_reported += count > 0 ? (uint64_t)count : 0;
	return trace_stage(t, &r);
}

/* The "comm-pid [cpu] flags sec.usec: " context; returns the event name, or NULL. */
static char *trace_parse_context(struct trace *t, char *line, struct trace_row *r)
{
	char *open = strstr(line, " [");
	while (open && !(open[2] >= '0' && open[2] <= '9'))
		open = strstr(open + 1, " [");
	if (!open)
		return NULL;
	char *dash = open;
	while (dash > line && *dash != '-')
		dash--;
	char *comm = line;
	while (*comm == ' ')
		comm++;
	if (*dash != '-' || dash < comm)
		return NULL;
	r->pid = (int32_t)strtol(dash + 1, NULL, 10);
	r->comm = trace_string_id(&t->strings, comm, (size_t)(dash - comm));
	char *end;
	r->cpu = (int32_t)strtol(open + 2, &end, 10);
	if (*end != ']' || r->cpu < 0 || r->cpu >= CONFIG_MAX_CPUS)
		return NULL;
	char *p = end + 1;
	while (*p == ' ')
		p++;
	if (!(*p >= '0' && *p <= '9')) /* the irq-info flags ("d.h1."), when shown */
		p = strchr(p, ' ');
	long long sec = p ? strtoll(p, &end, 10) : 0;
	if (!p || *end != '.')
		return NULL;
	char *frac = end + 1;
	long long usec = strtoll(frac, &end, 10);
	if (*end != ':' || end - frac != 6) /* mono prints microseconds: sec.usec */
		return NULL;
	r->ts_ns = sec * 1000000000LL + usec * 1000;
	return end + 2;
}

int trace_parse_line(struct trace *t, char *line)
{
	if (strncmp(line, "CPU:", 4) == 0)
		return trace_parse_lost(t, line);
	struct trace_row r = {.number = -1, .name = -1, .other_pid = -1, .other_prio = -1, .other_comm = -1,
			      .prio = -1, .event = TRACE_EV_OTHER};
	char *event = trace_parse_context(t, line, &r);
	char *colon = event ? strstr(event, ": ") : NULL;
	if (!colon) {
		t->unparsed++;
		return 0;
	}
	*colon = '\0';
	trace_fill(t, &r, event, colon + 2);
	if (r.comm < -1 || r.name < -1 || r.other_comm < -1) /* trace_string_id: -ENOMEM */
		return -ENOMEM;
	t->last_ts[r.cpu] = r.ts_ns;
	t->marker_rows += r.event == TRACE_EV_MARKER;
	return trace_stage(t, &r);
}
