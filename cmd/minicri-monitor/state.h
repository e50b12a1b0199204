/* minicri-monitor: the records its files share (state.c): containers, the
 * pause, client connections. */
#ifndef MINICRI_MONITOR_STATE_H
#define MINICRI_MONITOR_STATE_H

#include <sys/types.h>
#include <time.h>

#include "util.h"

#define DIR_FD 4 /* the monitor's directory (monitor.sock, monitor.log) */
#define ID_MAX 128
#define MAX_LINE (16 * 1024) /* crilog.MaxLineSize */
#define MAX_FRAME (64 * 1024)
#define MAX_ATTACH_QUEUE (4 * 1024 * 1024)

enum { FR_STDIN = 1, FR_STDIN_CLOSE, FR_STDOUT, FR_STDERR };

/* One output stream of a container: its pipe (or the TTY master) and the
 * line being assembled for the CRI log. */
struct stream {
	int fd;
	int kind; /* FR_STDOUT or FR_STDERR */
	char *line;
	size_t n;
};

struct ctr {
	struct ctr *next;
	char id[ID_MAX + 1];
	char *ctx;     /* opaque JSON the helper gave at create, handed back to later helpers */
	char *runtime; /* the OCI runtime binary, "" for libcontainer */
	pid_t pid;
	int tty, stdin_once;
	struct stream out, err;
	int stdin_fd, log_fd, dir_fd;
	int log_failed;
	/* OOM watch (systemd cgroups): inotify (v2) or eventfd (v1), the cgroup and its parent. */
	int oom_ino, oom_evt, oom_dir, oom_par;
	int oom_seen, oom_base_ok;
	unsigned long long oom_base;
	/* lifecycle */
	int started;
	struct timespec started_at;
	int reaped, code;
	struct timespec finished_at, reaped_mono;
	int exit_helper_done, exit_helper_oom;
	int final, oom_killed;
	int gone; /* deleted: freed by the loop's sweep */
};

struct pause_state {
	pid_t pid;
	char *ref; /* proc.Ref JSON */
	int exited, code;
	struct timespec exited_at;
};

enum { C_REQ, C_WAIT, C_ATTACH };
enum { W_NONE, W_HELPER, W_KILL_GRACE, W_KILL_FORCE, W_DELETE, W_STOP, W_START, W_CREATED };

/* A client connection: a request line, then a response (C_REQ, C_WAIT), or
 * an attach session (C_ATTACH). */
struct conn {
	struct conn *next;
	int fd, state, wait;
	char id[ID_MAX + 1];
	struct timespec deadline; /* CLOCK_MONOTONIC; W_KILL_*, W_STOP, W_START, W_CREATED */
	int start_fd;             /* W_START: the read end of the init's exec.fifo */
	char *start_fifo;         /* W_START: its path, removed once read */
	struct buf in, out;
	int close_after_flush, dead;
	/* attach */
	int a_stdin, a_stdout, a_stderr, ending;
	struct buf pending; /* stdin data the container has not taken yet */
};

extern struct ctr *ctrs;
extern struct conn *conns;
extern struct pause_state pause_st;

struct ctr *find_ctr(const char *id); /* NULL when unknown or deleted */
struct conn *conn_new(int fd);        /* NULL when out of memory */
void conn_start_end(struct conn *c);  /* closes and forgets the W_START fifo */
void sweep_ctrs(void);                /* frees the containers marked gone */
void sweep_conns(void);               /* frees the connections done with */

#endif
