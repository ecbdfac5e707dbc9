/* --deepest-idle-state N: the idle states deeper than N disabled on the measured CPUs while the capture runs
 * (as rtla's --deepest-idle-state), shallower ones left as they are.  Each state's previous value is journaled
 * (fsync'd) before it is changed and put back on every exit path; a capture killed before it could restore is
 * repaired by the next capture (idlestate_repair), as a stale tracefs instance is.  Setup and cleanup only:
 * nothing here runs in the measuring loop. */
#ifndef JITTERSCOPE_IDLESTATE_H
#define JITTERSCOPE_IDLESTATE_H

#include <stdbool.h>

#include "config.h"

struct idlestate_change {
	char path[256];
	char before[8];
};

struct idlestate {
	char journal[512];           /* STATE_DIR/idle-PID.journal; "" when nothing is changed */
	struct idlestate_change *changes;
	int nchanged;
};

/* Journal and disable the states deeper than cfg->deepest_idle_state on cfg's CPUs (nothing when it is -1).
 * Returns 0, or -errno after one line on stderr (what failed, and the states already changed are put back). */
int idlestate_apply(struct idlestate *s, const struct config *cfg);

/* Put every changed state back and remove the journal; safe to call twice and when nothing was applied. */
void idlestate_restore(struct idlestate *s);

/* Put back the states journaled by captures that are no longer running; returns how many journals were
 * repaired.  Each repair is one line on stderr. */
int idlestate_repair(const struct config *cfg);

/* The number of states disabled now (for the metadata). */
int idlestate_disabled(const struct idlestate *s);

#endif
