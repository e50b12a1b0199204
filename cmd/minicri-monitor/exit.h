/* minicri-monitor: a container's exit, from its reaping to its record (exit.c). */
#ifndef MINICRI_MONITOR_EXIT_H
#define MINICRI_MONITOR_EXIT_H

#include "state.h"

int exit_code(int status); /* 128 + signal, or the exit status */
/* ctr_reaped: k's init was reaped with status; its exit is final (recorded,
 * k->final) once the helper, the output and the OOM watch are done. */
void ctr_reaped(struct ctr *k, int status);
void maybe_finalize(struct ctr *k);
void finalize_all(void); /* maybe_finalize of every container (their waits time out) */
void oom_check(struct ctr *k);
void oom_event(struct ctr *k); /* the OOM watch's descriptor is readable */

#endif
