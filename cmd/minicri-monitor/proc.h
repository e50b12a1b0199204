/* minicri-monitor: which process a pid names (see proc.c). */
#ifndef MINICRI_MONITOR_PROC_H
#define MINICRI_MONITOR_PROC_H

#include <sys/types.h>

/* pid_ok: a pid this monitor may signal or wait for: above 1 and within
 * pid_t. kill(2) reads 0 as the caller's process group, -1 as every process
 * it may signal, 1 as init; a helper's "pid 4294967295" cast to pid_t is -1. */
int pid_ok(long long pid);

/* What /proc/PID/stat and /proc/PID/status say of a process (or zombie). */
struct pinfo {
	pid_t ppid;
	int leader;               /* a thread-group leader (a process, not a thread) */
	unsigned long long start; /* field 22 of stat: clock ticks since boot, never 0 */
};

/* proc_info: 0, or -1 when pid names no process (or /proc cannot say). */
int proc_info(pid_t pid, struct pinfo *pi);

/* proc_descends: 1 when pid is a descendant of ancestor (its child, its
 * child's child, ...), else 0. */
int proc_descends(pid_t pid, pid_t ancestor);

#endif
