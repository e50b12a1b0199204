/* minicri-monitor: StartContainer without a helper (start.c). */
#ifndef MINICRI_MONITOR_START_H
#define MINICRI_MONITOR_START_H

#include "state.h"

/* start_direct starts k through its init's exec.fifo: 1 when c now waits
 * (W_START), 0 when the helper must start it. */
int start_direct(struct conn *c, struct ctr *k);
/* start_check reads the init's byte for c (gone: its container is reaped or
 * deleted, there will be no byte) and answers once it is there or cannot come. */
void start_check(struct conn *c, int gone);
void start_waiters(void); /* start_check of the waits whose container is gone */

#endif
