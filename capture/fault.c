/* Fault injection; see fault.h.  Writer thread only (and setup). */
#include "fault.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	bool armed;
	int kind;
	char step[16];
	unsigned long nth, seen;
	bool eio;
} fault;

static int fault_kind(const char *name)
{
	static const char *const names[] = {"flush", "newpart", "seal", "rotate"};
	for (int i = 0; i < 4; i++)
		if (strcmp(name, names[i]) == 0)
			return 1 << i;
	return 0;
}

static int fault_refuse(const char *spec)
{
	fprintf(stderr, "jitterscope-capture: invalid JITTERSCOPE_FAULT '%s': use KIND:STEP[:N[:kill|eio]], kinds "
		"flush, newpart, seal, rotate (see README)\n", spec);
	return -EINVAL;
}

int fault_init(void)
{
	const char *spec = getenv("JITTERSCOPE_FAULT");
	if (!spec || !*spec)
		return 0;
	char kind[16], action[8] = "kill";
	int used = 0;
	fault.nth = 1;
	int n = sscanf(spec, "%15[a-z]:%15[a-z0-9-]%n:%lu%n:%7[a-z]%n", kind, fault.step, &used, &fault.nth, &used,
		       action, &used);
	if (n < 2 || spec[used] != '\0' || !(fault.kind = fault_kind(kind)) || fault.nth < 1 ||
	    (strcmp(action, "kill") && strcmp(action, "eio")))
		return fault_refuse(spec);
	fault.eio = strcmp(action, "eio") == 0;
	fault.armed = true;
	return 0;
}

int fault_at(int kinds, const char *step)
{
	if (!fault.armed || !(kinds & fault.kind) || strcmp(step, fault.step) != 0)
		return 0;
	if (++fault.seen != fault.nth)
		return 0;
	fault.armed = false;
	if (fault.eio)
		return -EIO;
	raise(SIGKILL);
	return 0;
}
