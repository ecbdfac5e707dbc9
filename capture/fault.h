/* Fault injection for the crash tests: JITTERSCOPE_FAULT=KIND:STEP[:N[:ACTION]]
 * stops the writer (SIGKILL, as a crash would) or fails one operation with EIO
 * the N-th time (default 1) it reaches STEP in a flush of KIND.  Kinds: flush
 * (any flush), newpart (the first flush of a part), seal (a flush that closes
 * a row group), rotate (closing a part after its last flush).  Steps of a
 * flush: write-half, write, sync, link, rename, dirsync; of a rotation:
 * unlink0, unlink1, dirsync.  Unset: no faults, one branch per step. */
#ifndef JITTERSCOPE_FAULT_H
#define JITTERSCOPE_FAULT_H

enum fault_kind { FAULT_FLUSH = 1, FAULT_NEWPART = 2, FAULT_SEAL = 4, FAULT_ROTATE = 8 };

/* Reads the environment once; -EINVAL after printing one line for a malformed spec. */
int fault_init(void);
/* kinds: the FAULT_* bits this flush is.  0, or -EIO when the operation must fail;
 * does not return when the spec says kill. */
int fault_at(int kinds, const char *step);

#endif
