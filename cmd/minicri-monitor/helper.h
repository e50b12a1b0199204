/* minicri-monitor: the short-lived Go helpers (see helper.c). */
#ifndef MINICRI_MONITOR_HELPER_H
#define MINICRI_MONITOR_HELPER_H

#include <sys/types.h>

#include "state.h"

#define MAX_FDS 16

/* A helper's answer: "key value" lines, and descriptors named by "fds". */
struct reply {
	char *error, *ctx, *runtime, *state, *ref, *pod, *resp;
	int has_pid;                   /* a "pid" line: the process it started (start_time: which one) */
	long long pid;                 /* -1 when the line is not a number */
	unsigned long long start_time; /* 0 when absent or not a number */
	int oom, tty, stdin_once, started, has_oombase;
	unsigned long long oombase;
	int nfds;
	int fds[MAX_FDS];
	char fdnames[MAX_FDS][16];
};

struct helper;
typedef void (*helper_done)(struct helper *, struct reply *);

struct helper {
	struct helper *next;
	pid_t pid;
	unsigned long long start; /* its start time (/proc): what it starts is started later */
	int sock;                 /* -1 once answered */
	struct conn *conn; /* the client waiting, or NULL */
	char id[ID_MAX + 1];
	helper_done fn;
	int reaped;
};

extern struct helper *helpers;
extern const char *helper_exe, *mon_dir; /* HELPER and DIR of the command line */

int helper_spawn(struct buf *msg, struct conn *c, const char *id, helper_done fn);
int helper_reaped(pid_t pid, int status);
void helper_readable(struct helper *h);
void helper_sweep(void); /* frees helpers that answered and were reaped */
int helpers_unanswered(void); /* how many helpers are still to answer */
int helper_creating(const char *id); /* a helper for container id is still to answer */
/* take_fd: the descriptor r names name, now the caller's; -1 when none. */
int take_fd(struct reply *r, const char *name);

#endif
