/* minicri-monitor: attach sessions (attach.c). */
#ifndef MINICRI_MONITOR_ATTACH_H
#define MINICRI_MONITOR_ATTACH_H

#include <stddef.h>

#include "state.h"

/* attach_start turns c, whose request line is line, into a session. */
void attach_start(struct conn *c, const char *line, size_t n);
void attach_readable(struct conn *c); /* frames from the client */
/* Output of k to the sessions that asked for that stream. */
void attach_broadcast(struct ctr *k, int kind, const char *p, size_t n);
int attach_wants_stdin_out(struct ctr *k); /* stdin data is held for k */
void attach_stdin_writable(struct ctr *k);
void attach_container_final(struct ctr *k); /* k exited: sessions end once flushed */
void attach_container_gone(struct ctr *k);  /* k deleted: sessions end now */
void attach_end_all(void);                  /* the pod stopped */

#endif
