/* minicri-monitor: the daemon's requests (protocol.c). */
#ifndef MINICRI_MONITOR_PROTOCOL_H
#define MINICRI_MONITOR_PROTOCOL_H

#include <stddef.h>

#include "state.h"

extern int stopping; /* the pod stopped: no new requests */

/* handle_request serves the request line of c, now or through a wait. */
void handle_request(struct conn *c, const char *line, size_t n);
void waits_check(void);   /* answers the kill and delete waits whose container's exit is final */
void waits_timeout(void); /* the waits past their deadline */
void stop_check(void);    /* answers a stop once the pause and every container exited */

#endif
