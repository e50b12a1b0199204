/* minicri-monitor: the children it waits for and signals (child.c). */
#ifndef MINICRI_MONITOR_CHILD_H
#define MINICRI_MONITOR_CHILD_H

#include <stddef.h>

#include "helper.h"
#include "state.h"

/* reap_children waits for every child that exited: helpers, the pause, the
 * containers' inits, orphans (host-PID pods), children not named yet. */
void reap_children(void);
/* early_sweep forgets exits no helper still to answer can name. */
void early_sweep(void);
/* named_child checks the process a helper named in r: 1 reaped already
 * (its status in *status), 0 running, -1 refused (why in err). */
int named_child(struct helper *h, struct reply *r, int *status, char *err, size_t n);
/* adopt registers the container id of a process named_child took (reaped:
 * its status, or NULL) with the descriptors in r; it replaces one of the id. */
struct ctr *adopt(const char *id, struct reply *r, const int *reaped);
void free_ctr(struct ctr *k); /* forgets k: descriptors now, memory in sweep_ctrs */
void pause_reaped(int status);
/* signal_child is kill(2) for a child named_child took: never a pid of 1
 * or less (-1 is every process, 0 the monitor's own group). */
int signal_child(pid_t pid, int sig);
void sigkill(struct ctr *k); /* SIGKILL to k's init unless reaped */

#endif
