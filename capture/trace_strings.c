/* The string dictionary of the events table (comms, irq handler names,
 * vector names, marker texts, event names): an index per distinct string,
 * written as a JSON list into the file's key-value metadata.  Reader thread
 * only; never prints. */
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

/* The same few names (the measuring thread, swapper, the timer vector) come with nearly every event: a
 * small direct-mapped memo of recent lookups skips the hash and the probe for them. */
static size_t trace_recent_slot(const char *text, size_t len)
{
	unsigned first = len ? (unsigned char)text[0] : 0, last = len ? (unsigned char)text[len - 1] : 0;
	return (len * 31u + first * 7u + last) & (TRACE_RECENT - 1);
}

int32_t trace_string_id(struct trace_strings *s, const char *text, size_t len)
{
	size_t r = trace_recent_slot(text, len);
	if (s->recent_id[r] > 0) {
		const char *have = s->text[s->recent_id[r] - 1];
		if (s->recent_len[r] == len && memcmp(have, text, len) == 0)
			return s->recent_id[r] - 1;
	}
	int32_t id = trace_string_lookup(s, text, len);
	if (id >= 0) {
		s->recent_id[r] = id + 1;
		s->recent_len[r] = (uint32_t)len;
	}
	return id;
}

int32_t trace_string_lookup(struct trace_strings *s, const char *text, size_t len)
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
